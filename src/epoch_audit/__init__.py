"""epoch_audit: a Spark-native batch checker of Kafka and Redpanda logs for replication-safety violations."""

__version__ = "0.1.0"  # kept equal to pyproject.toml's version (tests/unit/test_cli.py checks it)
