"""Entry points and I/O: CLI, Spark session, lakehouse storage, pipeline stages."""
