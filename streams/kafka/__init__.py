"""Kafka: client configuration, the producer, topic creation and the client SDK."""
