"""Adapters to real Kafka clients: assignor plug-ins, Admin API, parallel consumer, test brokers."""
