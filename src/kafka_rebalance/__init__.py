"""kafka-rebalance: Kafka-exact consumer-group and cluster rebalancing toolkit."""

__version__ = "0.1.0"
