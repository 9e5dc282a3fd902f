"""Consumer-group protocol state machines, offset semantics and __consumer_offsets codecs (pure)."""
