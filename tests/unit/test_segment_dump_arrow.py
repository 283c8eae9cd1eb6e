"""Segment dumps read a chunk at a time in Arrow (``bronze.parsers.segment_dump_arrow``, the
ingest pass's ``log_pass._segment_file``) give exactly the rows, statuses, families and quarantine
of the per-line reader, on the lab's real dumps and on dumps made to differ from them: chunks
cut anywhere (a control batch's marker in the next chunk), legacy and malformed batch lines,
numbers beyond their columns, times beyond a datetime, sections that change mid-chunk."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from epoch_audit.bronze import log_pass
from tests.unit.both_ways import read_both_ways

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LAB_DUMPS = sorted(FIXTURES.glob("lab/*/kafka-dump-log-*.log.txt"))
NAME = "kafka-dump-log-orders-3-00000000000000000000.log.txt"


def _dump(tmp_path: Path, lines: list[str], name: str = NAME) -> Path:
    path = tmp_path / "cluster=c1" / "broker-2" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("path", LAB_DUMPS + sorted(FIXTURES.glob("dumps/segment-*.txt")), ids=lambda p: p.name)
def test_real_segment_dumps_read_alike(path, tmp_path):
    copy = tmp_path / "cluster=c1" / "broker-2" / path.name
    copy.parent.mkdir(parents=True)
    shutil.copy(path, copy)
    read_both_ways(copy)


def _batch(offset: int, **changes: str) -> str:
    fields = {
        "baseOffset": str(offset), "lastOffset": str(offset + 4), "count": "5", "baseSequence": "0",
        "lastSequence": "4", "producerId": "1000", "producerEpoch": "0", "partitionLeaderEpoch": "7",
        "isTransactional": "false", "isControl": "false", "deleteHorizonMs": "OptionalLong.empty",
        "position": str(offset * 100), "CreateTime": str(1_709_629_934_012 + offset), "size": "100", "magic": "2",
        "compresscodec": "none", "crc": "3114220127", "isvalid": "true",
    }
    fields.update(changes)
    return " ".join(f"{k}: {v}" for k, v in fields.items() if v is not None)


def test_chunks_cut_anywhere_read_alike(tmp_path, monkeypatch):
    monkeypatch.setattr(log_pass, "REQUEST_BATCH", 7)  # many chunk boundaries
    lab = LAB_DUMPS[-1].read_text(encoding="utf-8").splitlines()
    odd = [
        "Dumping /var/lib/kafka/data/payments-11/00000000000000000200.log",  # a new section mid-chunk
        "Log starting offset: 200",
        _batch(200, deleteHorizonMs="OptionalLong[1709629934999]"),
        _batch(205, deleteHorizonMs=None),  # 2.x-3.1: no deleteHorizonMs
        _batch(210, partitionLeaderEpoch="3000000000", producerEpoch="-40000"),  # beyond int32
        _batch(215, producerId="1234567890123456789012"),  # beyond a long
        _batch(220, CreateTime=None, LogAppendTime="1709629934100"),
        _batch(225, CreateTime=None, NoTimestampType="-1"),
        _batch(230, CreateTime="-5"),
        _batch(235, CreateTime="999999999999999999"),  # beyond a datetime
        _batch(240, isControl="true", isTransactional="true"),
        "| offset: 240 CreateTime: 1709629934012 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 0",
        _batch(245, isControl="true"),
        "| offset: 245 CreateTime: 1709629934012 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "controlType: LEADER_CHANGE(2)",
        "offset: 250 position: 0 LogAppendTime: 1500000000123 size: 120 magic: 1 compresscodec: GZIP crc: 4021 "
        "isvalid: true",
        "offset: 251 position: 4096",  # an index entry, no batch
        "baseOffset: x lastOffset: 3",  # malformed
        _batch(260) + "\r",
        _batch(265, compresscodec="zstd") + " password=hunter2",
        "Dumping 00000000000000000300.log",  # no partition directory in the path: the file's
        _batch(300),
        "Dumping /var/lib/kafka/data/caf\u00e9-1/00000000000000000000.log",
        _batch(305),
        "",
    ]
    lines = lab + odd + lab[1:] + odd[::-1] + lab
    rows, batched = read_both_ways(_dump(tmp_path, lines))
    events = [r for r in rows if r["row_kind"] == "event" and r["event_type"] == "data_batch"]
    assert batched >= len(events) // 2
    assert {r["record_type"] for r in events} >= {"COMMIT", "LEADER_CHANGE"}
    assert any(r["row_kind"] == "quarantine" for r in rows)


def test_a_dump_outside_a_partition_directory_and_one_long_chunk(tmp_path):
    lines = ["Dumping 00000000000000000000.log", "Log starting offset: 0"]
    lines += [_batch(5 * k) for k in range(5000)]
    rows, batched = read_both_ways(_dump(tmp_path, lines, "00000000000000000000.log.dump.txt"))
    assert batched == 5000
    assert {r["topic"] for r in rows if r["row_kind"] == "event"} <= {None, "orders"}


def test_batch_line_fields_split_at_spaces_equal_the_patterns_groups():
    """A chunk's matching batch lines are split at their spaces instead of extracted by the pattern's
    groups: the same strings, every layout and value form, and no line that does not match."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from epoch_audit.bronze.parsers import segment_dump_arrow as arrow

    forms = [
        {}, {"deleteHorizonMs": "OptionalLong[1709629934999]"}, {"deleteHorizonMs": "OptionalLong[-3]"},
        {"count": "null", "baseSequence": "-1", "producerId": "-1", "producerEpoch": "-1"},
        {"isTransactional": "true", "isControl": "true", "compresscodec": "zstd", "isvalid": "false"},
        {"producerId": "1234567890123456789012"},
    ]
    with_horizon = [_batch(5 * k, **form) for k, form in enumerate(forms)]
    with_horizon += [with_horizon[0].replace("CreateTime: ", "LogAppendTime: "),
                     with_horizon[0].replace("CreateTime: 1709629934012", "NoTimestampType: -1")]
    without = [line.replace(" deleteHorizonMs: OptionalLong.empty", "") for line in with_horizon[:1] + with_horizon[3:]]
    assert arrow._groups(pa.array(with_horizon)) is not None and arrow._groups(pa.array(without)) is not None
    for lines in (with_horizon, without, with_horizon + without):
        array = pa.array(lines)
        groups = pc.extract_regex(array, arrow._PATTERN)
        expected = {f.name: pc.struct_field(groups, f.name).to_pylist() for f in groups.type}
        got = arrow._groups(array)
        assert {name: values.to_pylist() for name, values in got.items()} == expected
    assert arrow._groups(pa.array([with_horizon[0], with_horizon[1] + " extra"])) is None
    assert arrow._groups(pa.array([with_horizon[0].replace("count: 5", "count:  5")])) is None
