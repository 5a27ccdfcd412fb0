"""The streaming runtime: the Kafka worker, the embedded broker, the feeder and the demo.

The detector knows nothing of Kafka; this package is the only place that does."""
