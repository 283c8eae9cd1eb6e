"""Issue #19 item 5: secret values are redacted in the staged text of every line, and counted."""

from __future__ import annotations

from tests.unit.hostile_lines import line_rows, run_chain

JAAS = (
    "[2024-03-05 09:12:44,201] INFO KafkaConfig values: sasl.jaas.config = "
    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p4ss\"; "
    "(kafka.server.KafkaConfig)"
)
LINES = [
    JAAS,
    "\tssl.keystore.password = hunter2",
    "\tssl.truststore.password=hunter3",
    "\tssl.key.password: hunter4",
    "\tssl.keystore.password = null",
    "\tssl.key.password = [hidden]",
    '{"ssl.keystore.password":"hunter5","other":"x"}',
    'login failed for user x, password="hunter6" token=abc123',
    "[2024-03-05 09:12:44,202] INFO no secret on this line (kafka.server.KafkaConfig)",
]


def test_secrets_are_redacted_and_counted(spark):
    source = "cluster=c1/broker-1/server.log"
    marked, _, status = run_chain(spark, line_rows(spark, {(source, "server"): LINES}))
    rows = {r["line_number"]: r for r in marked.collect()}
    text = {n: r["text"] for n, r in rows.items()}
    for secret in ("p4ss", "hunter2", "hunter3", "hunter4", "hunter5", "hunter6", "abc123", 'username="u"'):
        assert not any(secret in t for t in text.values()), secret
    assert text[1].startswith("[2024-03-05 09:12:44,201] INFO KafkaConfig values: sasl.jaas.config = [redacted]")
    assert text[1].endswith("(kafka.server.KafkaConfig)")
    assert text[2] == "\tssl.keystore.password = [redacted]"
    assert text[3] == "\tssl.truststore.password=[redacted]"
    assert text[4] == "\tssl.key.password: [redacted]"
    assert text[5] == LINES[4] and text[6] == LINES[5]  # nothing to hide
    assert text[7] == '{"ssl.keystore.password":"[redacted]","other":"x"}'
    assert text[8] == 'login failed for user x, password="[redacted]" token=[redacted]'
    assert text[9] == LINES[8]
    assert [rows[n]["redacted"] for n in range(1, 10)] == [1, 1, 1, 1, 0, 0, 1, 2, 0]
    # the redaction does not make a line look cut at max_line_chars
    assert all(r["reason"] is None or "longer" not in r["reason"] for r in status.collect())


def test_ingest_stores_no_secret_and_counts_the_redactions(spark, tmp_path):
    from deltalake import DeltaTable

    from epoch_audit.config import AppConfig
    from epoch_audit.lake.storage import DeltaRsStorage
    from epoch_audit.stages.ingest import EVENTS_TABLE, QUARANTINE_TABLE, ingest

    host = tmp_path / "in" / "cluster=c1" / "broker-1"
    host.mkdir(parents=True)
    (host / "server.log.2024-03-05-09").write_text("\n".join(LINES) + "\n")
    lake = tmp_path / "lake"
    result = ingest(spark, DeltaRsStorage(spark, str(lake)), [str(tmp_path / "in")], AppConfig(), "r1")
    assert result.lines_read == len(LINES) and result.redacted_secrets == 7  # the per-line counts above
    stored = " ".join(
        str(v)
        for table in (EVENTS_TABLE, QUARANTINE_TABLE)
        if (lake / table).exists()
        for row in DeltaTable(str(lake / table)).to_pyarrow_table().to_pylist()
        for v in row.values()
    )
    for secret in ("p4ss", "hunter2", "hunter3", "hunter4", "hunter5", "hunter6", "abc123"):
        assert secret not in stored, secret
