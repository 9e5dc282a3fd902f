"""Consumer-group protocol state machines, offset semantics and __consumer_offsets codecs (pure)."""

from .. import native

# The classic group state machine is compiled with mypyc (setup.py): its fresh builds run, or else
# all three sources (never a stale build, never a mix).
CLASSIC_COMPILED = native.builds_or_sources(
    __name__, ("classic_member", "classic_group_base", "classic_group")
)
