"""Partition assignors that give Apache Kafka's exact output (pure: no I/O, no clock)."""
