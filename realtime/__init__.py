"""The speed layer: Kafka consumer workers keeping minutely counters in Redis."""
