"""The archiver's Kafka consumer group: a name the health checks and the rollup read, in a module
of its own so that they do not load the archiver (and pyarrow) to know it."""

GROUP = "footfall-archiver"
