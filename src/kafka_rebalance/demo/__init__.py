"""The demo: the whole toolkit end to end on an embedded default (`kafka-rebalance demo`)."""
