"""Simulator tests: determinism, fault ground truth + evidence, reference formats, clean histories."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest
from epoch_audit_tools.simulator import simulate
from epoch_audit_tools.simulator.config import FAULTS, parse_faults

SMALL = {"brokers": 5, "partitions": 12, "hours": 0.75, "produce_rate": 4.0, "progress": False}
LOG4J = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (.*) \(([^()]+)\)$")
STRIMZI = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (.*) "
                     r"\(([^()]+)\) \[([^\]]+)\]$")
SEASTAR = re.compile(r"^(TRACE|DEBUG|INFO |WARN |ERROR) (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) "
                     r"\[shard \d+(:\w+)?\] raft - \[group_id:\d+, \{kafka/[\w-]+/\d+\}\] [\w.]+:\d+ - .+$")
WRAPPERS = [re.compile(r"^redpanda-\d+ +\| "), re.compile(r"^[A-Z][a-z]{2} \d{2} \d{2}:\d{2}:\d{2} \S+ rpk\[\d+\]: "),
            re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z (stdout|stderr) F ")]


def _read(path: Path) -> list[str]:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return fh.read().splitlines()
    return path.read_text(encoding="utf-8").splitlines()


def _truth(out: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (out / "truth.jsonl").read_text().splitlines()]


def _lines(out: Path, name: str, broker: int | None = None) -> list[str]:
    """All lines of files named ``name*`` (rotated, gzipped, late) of one or every broker."""
    host = f"broker-{broker}" if broker is not None else "broker-*"
    res: list[str] = []
    for root in (out / "cluster=prod-eu1", out / "late" / "cluster=prod-eu1"):
        for f in sorted(root.glob(f"{host}/{name}*")):
            res.extend(_read(f))
    return res


def _tree_hash(out: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in out.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(out)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def kraft(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kraft")
    simulate(out, seed=7, mode="kafka-kraft", kafka_version="3.6", **SMALL)
    return out


@pytest.fixture(scope="module")
def zk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("zk")
    simulate(out, seed=7, mode="kafka-zk", kafka_version="3.4.0", **SMALL)
    return out


def test_determinism(tmp_path: Path) -> None:
    args = dict(SMALL, hours=0.5)
    simulate(tmp_path / "a", seed=3, **args)
    simulate(tmp_path / "b", seed=3, **args)
    simulate(tmp_path / "c", seed=4, **args)
    assert _tree_hash(tmp_path / "a") == _tree_hash(tmp_path / "b")
    assert _tree_hash(tmp_path / "a") != _tree_hash(tmp_path / "c")


def test_every_kraft_fault_in_truth(kraft: Path) -> None:
    got = {r["invariant"] for r in _truth(kraft)}
    assert got == {k for k, (modes, _) in FAULTS.items() if "kafka-kraft" in modes}
    manifest = json.loads((kraft / "manifest.json").read_text())
    assert manifest["truth_count"] == len(_truth(kraft))
    assert manifest["seed"] == 7 and manifest["late_files"] and manifest["duplicate_shipments"]


def test_every_zk_fault_in_truth(zk: Path) -> None:
    got = {r["invariant"] for r in _truth(zk)}
    assert got == {k for k, (modes, _) in FAULTS.items() if "kafka-zk" in modes}


def test_stale_stop_replica_evidence(zk: Path) -> None:
    row = next(r for r in _truth(zk) if r["invariant"] == "stale_stop_replica_accepted")
    b, tp, le = row["broker_id"], f"{row['topic']}-{row['partition']}", row["leader_epoch"]
    sc = _lines(zk, "state-change.log", b)
    received = [x for x in sc if f"StopReplicaPartitionState(partitionIndex={row['partition']}, leaderEpoch={le}," in x
                and x.endswith(f"for partition {tp} (state.change.logger)")]
    assert received
    corr = re.search(r"correlation id (\d+)", received[-1]).group(1)
    assert not [x for x in sc if "Ignoring StopReplica" in x and f"correlation id {corr} " in x and tp in x]
    assert any(f"Removed fetcher for partitions Set({tp})" in x for x in _lines(zk, "server.log", b))
    reqs = [json.loads(x.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
            for x in _lines(zk, "kafka-request.log", b) if '"STOP_REPLICA"' in x]
    assert any(r["request"]["topicStates"][0]["partitionStates"][0]["leaderEpoch"] == le
               and r["response"]["partitionErrors"][0]["errorCode"] == 0 for r in reqs)


def test_benign_refusals_present(zk: Path) -> None:
    sc = _lines(zk, "state-change.log")
    assert any("is smaller than the current leader epoch" in x and "Ignoring StopReplica" in x for x in sc)  # S5
    assert any("leaderEpoch=-2, deletePartition=true" in x for x in sc)  # deletion sentinel
    assert any("leaderEpoch=-1, deletePartition=false" in x for x in sc)  # no-epoch sentinel
    assert any("matches the current leader epoch" in x and "Ignoring StopReplica" in x for x in sc)  # S6 <= 3.4.0


def test_equal_epoch_accepted_from_341(tmp_path: Path) -> None:
    simulate(tmp_path, seed=7, mode="kafka-zk", kafka_version="3.4.1", faults="none", **SMALL)
    sc = _lines(tmp_path, "state-change.log")
    assert not any("Ignoring StopReplica" in x and "matches the current leader epoch" in x for x in sc)
    assert any("Handling StopReplica request" in x for x in sc)
    assert _truth(tmp_path) == []


def test_kraft_evidence(kraft: Path) -> None:
    rows = {r["invariant"]: r for r in _truth(kraft)}
    dump = _lines(kraft, "metadata-dump/__cluster_metadata-0.txt", 3000)
    assert dump[0].startswith("Dumping ") and dump[1] == "Log starting offset: 0"
    r = rows["fenced_replica_in_isr"]
    assert any('"BROKER_REGISTRATION_CHANGE_RECORD"' in x and f'"brokerId":{r["broker_id"]},' in x
               and '"fenced":1' in x for x in dump)
    r = rows["stale_broker_epoch_isr_join"]
    ctl = _lines(kraft, "kafka-request.log")
    assert any('"ALTER_PARTITION"' in x and '"newIsrWithEpochs"' in x and '"errorCode":0' in x for x in ctl)
    r = rows["two_leaders_same_epoch"]
    tp = f"{r['topic']}-{r['partition']}"
    claims = [x for x in _lines(kraft, "state-change.log") if f"Leader {tp} with topic id" in x
              and f"starts at leader epoch {r['leader_epoch']} " in x]
    assert len(claims) >= 2
    r = rows["write_accepted_by_fenced_leader"]
    assert any('"PRODUCE"' in x and '"acks":1' in x for x in _lines(kraft, "kafka-request.log", r["broker_id"]))
    r = rows["epoch_start_offset_divergence"]
    ck = _read(kraft / f"cluster=prod-eu1/broker-{r['broker_id']}/data/{r['topic']}-{r['partition']}/"
                       "leader-epoch-checkpoint")
    assert ck[0] == "0" and int(ck[1]) == len(ck) - 2 and any(x.startswith(f"{r['leader_epoch']} ") for x in ck[2:])


@pytest.mark.parametrize("mode,version", [("kafka-kraft", "3.6"), ("kafka-zk", "2.8"), ("redpanda", "3.6")])
def test_faults_none_is_clean(tmp_path: Path, mode: str, version: str) -> None:
    m = simulate(tmp_path, seed=11, mode=mode, kafka_version=version, faults="none", **SMALL)
    assert _truth(tmp_path) == [] and m["truth_count"] == 0


def test_log4j_formats(kraft: Path, zk: Path) -> None:
    for out in (kraft, zk):
        for name in ("state-change.log", "server.log", "controller.log", "kafka-request.log"):
            lines = _lines(out, name)
            for x in lines:
                if x.startswith("\t") or x.startswith("java."):
                    continue  # stack-trace continuation lines
                assert LOG4J.match(x), x
    leader = [x for x in _lines(kraft, "state-change.log") if "] Leader " in x]
    assert leader and all(" . Previous leader " in x for x in leader)  # 3.6 template, empty under-min-isr


def test_strimzi_and_dump_formats(tmp_path: Path) -> None:
    simulate(tmp_path, seed=5, mode="kafka-kraft", kafka_version="3.9", faults="none", strimzi=True,
             **dict(SMALL, hours=0.3))
    lines = _lines(tmp_path, "state-change.log")
    assert lines and all(STRIMZI.match(x) for x in lines)
    batch = re.compile(r"^baseOffset: \d+ lastOffset: \d+ count: \d+ baseSequence: -?\d+ lastSequence: -?\d+ "
                       r"producerId: -?\d+ producerEpoch: -?\d+ partitionLeaderEpoch: \d+ isTransactional: false "
                       r"isControl: false deleteHorizonMs: OptionalLong.empty position: \d+ CreateTime: \d+ "
                       r"size: \d+ magic: 2 compresscodec: none crc: \d+ isvalid: true$")
    dumps = sorted((tmp_path / "cluster=prod-eu1").glob("broker-*/kafka-dump-log/*.txt"))
    assert dumps
    for d in dumps:
        text = _read(d)
        assert text[0].startswith("Dumping /var/lib/kafka/data/") and text[1] == "Log starting offset: 0"
        assert all(batch.match(x) for x in text[2:])


def test_redpanda_format_and_truth(tmp_path: Path) -> None:
    simulate(tmp_path, seed=9, mode="redpanda", **SMALL)
    assert {r["invariant"] for r in _truth(tmp_path)} == {"leader_epoch_regression", "two_leaders_same_epoch"}
    lines = _lines(tmp_path, "redpanda.log")
    assert lines
    for x in lines:
        for w in WRAPPERS:
            x = w.sub("", x, count=1)
        assert SEASTAR.match(x), x


# Terms a Redpanda node logs as its own current term (spec, leader_epoch_regression), never the
# candidate's "received N", a step-down line or an ``*_offset_term`` field.
RP_OWN_TERM = re.compile(r"becoming the leader term:(\d+)$|became the leader term: ?(\d+)$|"
                         r"Received vote request with larger term .*, current (\d+)$|"
                         r"Append entries request term: (\d+) is greater than current: \d+\. Setting new term$|"
                         r"Recovered persistent state from kvstore: .*, term: (\d+)$|started raft, .*, term: (\d+), ")
RP_NTP = re.compile(r"\{kafka/([\w-]+)/(\d+)\}")


def _own_terms(out: Path, broker: int, topic: str, partition: int) -> list[int]:
    """The node's own current terms for one partition in its own log order (rotated files first)."""
    files = sorted((out / "cluster=prod-eu1" / f"broker-{broker}").glob("redpanda.log*"),
                   key=lambda f: (f.name == "redpanda.log", f.name))
    terms: list[int] = []
    for f in files:
        for x in _read(f):
            ntp, m = RP_NTP.search(x), RP_OWN_TERM.search(x)
            if ntp and m and (ntp.group(1), int(ntp.group(2))) == (topic, partition):
                terms.append(int(next(g for g in m.groups() if g is not None)))
    return terms


@pytest.mark.parametrize("seed", [7, 9, 1])
def test_redpanda_regression_truth_is_provable(tmp_path: Path, seed: int) -> None:
    """Each injected term regression goes below a term the node itself logged as its current term."""
    simulate(tmp_path, seed=seed, mode="redpanda", **SMALL)
    rows = [r for r in _truth(tmp_path) if r["invariant"] == "leader_epoch_regression"]
    assert rows
    for r in rows:
        terms = _own_terms(tmp_path, int(r["broker_id"]), str(r["topic"]), int(r["partition"]))
        le = int(r["leader_epoch"])
        assert any(b == le and max(terms[:i], default=-1) > le for i, b in enumerate(terms)), (r, terms)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_redpanda_every_fault_injected_at_low_rate(tmp_path: Path, seed: int) -> None:
    """A one-hour election step must not drop faults scheduled after the last election tick, and a
    term regression is injected even before any follower has logged a term of its own."""
    simulate(tmp_path, seed=seed, mode="redpanda", cluster_id="prod-eu1", brokers=3, partitions=4, hours=2,
             produce_rate=0.05, progress=False)
    rows = _truth(tmp_path)
    assert [r["invariant"] for r in rows].count("leader_epoch_regression") == 2
    assert [r["invariant"] for r in rows].count("two_leaders_same_epoch") == 2
    for r in rows:
        if r["invariant"] == "leader_epoch_regression":
            terms = _own_terms(tmp_path, int(r["broker_id"]), str(r["topic"]), int(r["partition"]))
            le = int(r["leader_epoch"])
            assert any(b == le and max(terms[:i], default=-1) > le for i, b in enumerate(terms)), (r, terms)


def test_parse_faults() -> None:
    assert parse_faults("none", "kafka-kraft") == {}
    assert "stale_stop_replica_accepted" not in parse_faults("default", "kafka-kraft")
    assert parse_faults("two_leaders_same_epoch:2", "redpanda") == {"two_leaders_same_epoch": 2.0}
    with pytest.raises(ValueError):
        parse_faults("nope", "kafka-zk")


SAMPLE = {"brokers": 3, "partitions": 4, "hours": 2.0, "produce_rate": 0.05, "progress": False}
DUMP_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .* partitionLeaderEpoch: (\d+) ")


@pytest.mark.parametrize("mode,version,seed,faults", [
    ("kafka-kraft", "3.6", 1, "default"), ("kafka-zk", "3.4.0", 5, "default"), ("kafka-zk", "3.9", 6, "default"),
    # fault-free: a follower stopped by StopReplica(-1) while in the ISR must not miss acknowledged
    # batches that it is then elected without (seed 6 once left replicas disagreeing at offset 16)
    ("kafka-zk", "3.9", 6, "none"), ("kafka-zk", "2.8.2", 3, "none"),
])
def test_replica_logs_match(tmp_path: Path, mode: str, version: str, seed: int, faults: str) -> None:
    """Log matching in the simulated segment dumps (epoch_start_offset_divergence must come only from
    truth): each replica's dump is contiguous from offset 0 (a follower fetches sequentially, so a
    replica that joins the ISR holds every batch before it), and two replicas never hold batches of
    different epochs at one offset, except the injected stale writes of a deposed leader."""
    simulate(tmp_path, seed=seed, mode=mode, kafka_version=version, faults=faults,
             **(SAMPLE if faults == "default" else {**SAMPLE, "hours": 1.0}))
    stale = {(int(r["broker_id"]), f"{r['topic']}-{r['partition']}") for r in _truth(tmp_path)
             if r["invariant"] == "write_accepted_by_fenced_leader"}
    epoch_at: dict[str, dict[int, set[tuple[int, int]]]] = {}
    dumps = sorted((tmp_path / "cluster=prod-eu1").glob("broker-*/kafka-dump-log/*.txt"))
    assert dumps
    for d in dumps:
        broker = int(d.parent.parent.name.split("-")[1])
        tp = d.name.split("-00000000000000000000")[0]
        nxt = 0
        for x in _read(d)[2:]:
            m = DUMP_BATCH.match(x)
            assert m, x
            base, last, epoch = (int(g) for g in m.groups())
            assert base == nxt, (d, x)
            nxt = last + 1
            if (broker, tp) not in stale:
                for o in range(base, last + 1):
                    epoch_at.setdefault(tp, {}).setdefault(o, set()).add((epoch, broker))
    for tp, offs in epoch_at.items():
        for o, held in offs.items():
            assert len({e for e, _ in held}) == 1, (tp, o, sorted(held))
