"""The collector: turns web traffic (middleware, beacons, imports) into events on the Kafka log."""
