"""Outputs: where verdicts go (files in batch mode; Kafka topics in the streaming runtime)."""
