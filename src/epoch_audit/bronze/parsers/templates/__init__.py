"""Template tables: the log message shapes the parsers recognise, as data (one module per log family).

Kafka templates are :class:`epoch_audit.bronze.parsers.line_template.LineTemplate` rows, compiled by
:mod:`epoch_audit.bronze.parsers.kafka_log4j`; the Redpanda raft templates are
:class:`RaftTemplate` rows of :mod:`.redpanda_raft`, compiled by :mod:`epoch_audit.bronze.parsers.redpanda`.
"""
