"""``epoch-audit lab``: a real Kafka cluster on loopback, driven, faulted, collected and audited (issue #21)."""
