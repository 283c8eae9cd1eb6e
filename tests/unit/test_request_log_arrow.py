"""The request log's FETCH and PRODUCE lines read a batch at a time in Arrow
(``bronze.parsers.request_log_arrow``) give exactly the rows the per-line parser gives: the same
events, columns, types, ``details`` maps (key order included), line statuses and quarantine, on the
lab's real request logs and on lines made to differ where Spark's JSON reading and Arrow's could."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from epoch_audit.bronze.log_pass import REQUEST_BATCH_MIN
from tests.unit.both_ways import read_both_ways

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REQUEST_LOGS = sorted(FIXTURES.glob("lab/*/kafka-request.log")) + sorted((FIXTURES / "request").glob("*.log"))
TAIL = " (kafka.request.logger)"


def _messages(kinds: tuple[str, ...] = ("FETCH", "PRODUCE")) -> list[str]:
    """The lab's and the fixtures' request-log lines of ``kinds``."""
    lines = []
    for path in REQUEST_LOGS:
        for line in path.read_text(encoding="utf-8").splitlines():
            if any(f'"requestApiKeyName":"{k}"' in line for k in kinds) and line.endswith(TAIL):
                lines.append(line)
    return lines


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "cluster=c1" / "broker-3" / "kafka-request.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("path", REQUEST_LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_request_logs_read_alike(path):
    read_both_ways(path)


def test_real_fetch_and_produce_lines_are_read_by_arrow(tmp_path):
    lines = _messages()
    assert len(lines) >= 30
    rows, batched = read_both_ways(_write(tmp_path, lines * 3))
    events = [r for r in rows if r["row_kind"] == "event"]
    # every one-partition line of the lab's logs is one the batches read
    assert batched >= len(lines) * 2
    assert {r["event_type"] for r in events} >= {"request_fetch", "request_produce"}


def _body(line: str) -> dict:
    return json.loads(line[line.index("Completed request:") + len("Completed request:"):-len(TAIL)])


def _line(template: str, body: dict | str) -> str:
    text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return template[:template.index("Completed request:") + len("Completed request:")] + text + TAIL


def _variants(line: str) -> list[str]:
    """``line`` changed where Spark's reading and Arrow's could differ (each stays one line)."""
    body = _body(line)
    text = json.dumps(body, separators=(",", ":"))
    api = body["requestHeader"]["requestApiKeyName"]
    topics = "topics" if api == "FETCH" else "topicData"
    parts = "partitions" if api == "FETCH" else "partitionData"
    rparts = "partitions" if api == "FETCH" else "partitionResponses"
    out = [
        text.replace('"correlationId":', '"correlationId":7,"correlationId":', 1),  # a repeated key
        text.replace('"correlationId":', '"correlationId":2147483648,"x":', 1),  # beyond int32
        text.replace('"correlationId":', '"correlationId":1.0,"x":', 1),  # a fraction
        text.replace('"correlationId":', '"correlationId":"12","x":', 1),  # a string for a number
        text.replace('"clientId":', '"clientId":12,"x":', 1),  # a number for a string
        text.replace('"clientId":', '"clientId":{"a":[1,2.50]},"x":', 1),  # an object for a string
        text.replace('"clientId":"', '"clientId":"\\ud800', 1),  # a lone surrogate
        text.replace('"clientId":"', '"clientId":"\\ud83d\\ude00', 1),  # a surrogate pair
        text.replace('"clientId":"', '"clientId":"tab\there', 1),  # a control character
        text[:-1] + ',"extra":NaN}',  # NaN / Infinity tokens in a field nobody reads
        text[:-1] + ',"extra":Infinity}',
        text[:-1] + ',"extra":-Infinity}',
        text[:-1] + ',"extra":' + "[" * 1100 + "]" * 1100 + "}",  # nesting beyond Jackson's limit
        text[:-1] + ',"extra":0.' + "1" * 1001 + "}",  # a number beyond Jackson's length limit
        text[:-1] + ',"extra":' + "1" * 400 + "}",  # an integer beyond a double
        text + " trailing",  # text after the object (the line is cut there by the tail)
        text.replace('"requestHeader":', '"requestHeader":null,"x":', 1),
        text.replace('"requestApiKeyName":"' + api + '"', '"requestApiKeyName":"' + api.lower() + '"', 1),
        '{"requestApiKeyName":"PRODUCE",' + text[1:],  # the first API name wins
        text.replace('"request":{', '"request":{"' + topics + '":null,"y":', 1),
    ]
    for change in (
        lambda b: b["request"][topics].append(b["request"][topics][0]),  # two topics
        lambda b: b["request"][topics][0][parts].append(dict(b["request"][topics][0][parts][0])),  # two partitions
        lambda b: b["response"]["responses"][0][rparts].clear(),  # no response partition
        lambda b: b["response"]["responses"].append(b["response"]["responses"][0]),
        lambda b: b["response"]["responses"][0].update(topicId="AAAAAAAAAAAAAAAAAAAAAQ", name=None, topic=None),
        lambda b: b["request"][topics][0].update(topicId="AAAAAAAAAAAAAAAAAAAAAQ", name=None, topic=None),
        lambda b: b["request"][topics][0].update(name="other", topic="other"),
        lambda b: b["response"]["responses"][0][rparts][0].update(partitionIndex=99, index=99),
        lambda b: b["request"][topics][0][parts][0].update(partition=None, index=None),
        lambda b: b["request"][topics].insert(0, None),
        lambda b: b["response"].update(errorCode=74),
        lambda b: b["response"]["responses"][0][rparts][0].update(errorCode=None),
        lambda b: b["response"]["responses"][0][rparts][0].update(errorCode=9999),
        lambda b: b["request"].update(replicaState=None, replicaId=-1),
        lambda b: b["response"]["responses"][0][rparts][0].update(currentLeader={"leaderId": 3, "leaderEpoch": 9}),
        lambda b: b["response"]["responses"][0][rparts][0].update(divergingEpoch={"epoch": 4, "endOffset": 70}),
        lambda b: b["response"]["responses"][0][rparts][0].update(errorMessage="é \u2028 \\ \" /"),
        lambda b: b.pop("response"),
    ):
        changed = json.loads(text)
        change(changed)
        out.append(json.dumps(changed, separators=(",", ":"), ensure_ascii=False))
    return [_line(line, v) for v in out]


def test_lines_made_to_differ_read_alike(tmp_path):
    bases = _messages()
    fetch = next(line for line in bases if '"FETCH"' in line and '"name"' not in line)
    produce = next(line for line in bases if '"PRODUCE"' in line)
    lines: list[str] = []
    for base in (fetch, produce):
        for variant in _variants(base):
            # each among good lines, in batches large enough for Arrow
            lines += [base] * REQUEST_BATCH_MIN + [variant]
    rows, batched = read_both_ways(_write(tmp_path, lines))
    assert batched >= len(lines) * 0.8
    malformed = [r for r in rows if r["row_kind"] == "quarantine"]
    assert len(malformed) >= 16  # the variants Spark refuses stay refused


def test_a_batch_arrow_refuses_whole_and_a_short_batch(tmp_path):
    fetch = next(line for line in _messages(("FETCH",)))
    # a repeated key (the last wins in Spark too), beyond int32, a fraction, a string for a number
    refused = _variants(fetch)[:4]
    rows, batched = read_both_ways(_write(tmp_path, refused * 20))
    assert batched == 0
    assert sum(r["row_kind"] == "quarantine" for r in rows) == 20 * 3
    rows, batched = read_both_ways(_write(tmp_path, [fetch] * (REQUEST_BATCH_MIN - 1)))
    assert batched == 0 and sum(r["row_kind"] == "event" for r in rows) == REQUEST_BATCH_MIN - 1


def test_lines_around_the_framing_shortcut_read_alike(tmp_path):
    """A chunk with a secret, a carriage return, a NUL or a non-ASCII character is framed line by
    line; a request line followed by a continuation, cut, or with an impossible time is no
    one-line record of the layout: each reads as the per-line framing reads it."""
    good = _messages()[:REQUEST_BATCH_MIN]
    fetch = good[0]
    stamp = fetch[:fetch.index("]") + 1]
    odd = [
        fetch.replace('"clientId":"', '"clientId":"password=hunter2 ', 1),  # redacted
        fetch + "\r",
        fetch.replace('"clientId":"', '"clientId":"caf\u00e9 \u2028 ', 1),
        fetch.replace("2026-", "2026-13-", 1).replace("-11-", "-", 1) if "2026-11-" in fetch else fetch,
        "[2026-02-30 10:00:00,000] DEBUG " + fetch[fetch.index("Completed request:"):],  # no such day
        fetch.replace("] DEBUG ", "] TRACE ", 1),
        fetch.replace("] DEBUG ", "] NOTICE ", 1),  # no level: a continuation of the line above
        fetch[:-1],  # no tail: cut
        fetch.replace("(kafka.request.logger)", "(kafka.request.logger) [thread-1]"),
        "\tat kafka.server.KafkaApis.handle(KafkaApis.scala:1)",  # a stack trace line: a continuation
        fetch.replace("Completed request:{", "Completed request:{ ", 1),
        fetch.replace('"requestApiKeyName":"FETCH"', '"requestApiKeyName":"FETCH"}', 1),
        stamp + " DEBUG Completed request:{} (kafka.request.logger)",
        stamp + " WARN Something else entirely (kafka.server.KafkaApis)",
    ]
    lines = ["an orphan before any record", ""]
    for line in odd:
        lines += good + [line] + good
    lines.append(fetch.replace('"clientId":"', '"clientId":"nul\x00', 1))
    lines += good * 2
    path = _write(tmp_path, lines)
    rows, batched = read_both_ways(path)
    assert batched >= len(good) * len(odd)
    assert any("[redacted]" in (r.get("raw") or "") for r in rows)
    # a chunk of the file's own, with a cut line in it (longer than the reader keeps)
    long_line = fetch.replace('"clientId":"', '"clientId":"' + "x" * 2_000_000, 1)
    path.write_text("".join(line + "\n" for line in good + [long_line] + good), encoding="utf-8")
    read_both_ways(path)


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/St_Johns", "UTC"])
def test_local_times_across_daylight_saving_changes_read_alike(tmp_path, zone):
    fetch = next(line for line in _messages(("FETCH",)))
    rest = fetch[fetch.index("]"):]
    stamps = [f"2024-03-31 0{h}:{m:02d}:{s:02d},{ms:03d}" for h in (1, 2, 3) for m in (0, 59) for s in (0, 59)
              for ms in (0, 999)]
    stamps += [f"2024-10-27 0{h}:30:00,500" for h in (1, 2, 3)] + ["2024-11-03 01:30:00,000", "2024-02-29 23:59:59,999"]
    lines = ["[" + stamp + rest for stamp in stamps] * 2
    rows, batched = read_both_ways(_write(tmp_path, lines), zone)
    assert batched == len(lines)


_TOPIC_IDS = {"orders": "AAAAAAAAAAAAAAAAAAAAAQ", "payments": "AAAAAAAAAAAAAAAAAAAAAg"}


def _named(topic: str, keys: tuple[str, ...]) -> dict:
    """A topic entry naming ``topic`` by the ``keys`` given (``topic``: its name, ``topicId``: its id)."""
    return {key: topic if key == "topic" else _TOPIC_IDS[topic] for key in keys}


def _fetch_body(request: list[tuple[str, list[int]]], response: list[tuple[str, list[int]]], by_id: bool,
                response_keys: tuple[str, ...] | None = None) -> dict:
    keys = ("topicId",) if by_id else ("topic",)
    rkeys = response_keys or keys
    return {
        "requestHeader": {"requestApiKey": 1, "requestApiVersion": 15 if by_id else 12, "correlationId": 7,
                          "clientId": "broker-2-fetcher-0", "requestApiKeyName": "FETCH"},
        "request": {"replicaState": {"replicaId": 2, "replicaEpoch": 31}, "maxWaitMs": 500, "sessionId": 99,
                    "sessionEpoch": 4,
                    "topics": [{**_named(t, keys), "partitions": [{"partition": p, "currentLeaderEpoch": 5, "fetchOffset": 100 + p,
                                                        "lastFetchedEpoch": 5, "logStartOffset": 0,
                                                        "partitionMaxBytes": 1048576} for p in ps]}
                               for t, ps in request]},
        "response": {"throttleTimeMs": 0, "errorCode": 0, "sessionId": 99,
                     "responses": [{**_named(t, rkeys), "partitions": [{"partitionIndex": p, "errorCode": 0, "highWatermark": 200 + p,
                                                           "lastStableOffset": 200 + p, "logStartOffset": 0,
                                                           "preferredReadReplica": -1, "recordsSizeInBytes": 64}
                                                          for p in ps]} for t, ps in response]},
    }


def test_replica_fetches_of_many_partitions_and_fetch_sessions_are_read_by_arrow(tmp_path):
    """A replica fetcher names every partition it follows from a leader; an incremental fetch
    session lists only what changed and is answered for partitions it does not list."""
    template = next(line for line in _messages(("FETCH",)))
    shapes = [
        ([("orders", list(range(12))), ("payments", [0, 3, 7])], [("orders", list(range(12))), ("payments", [0, 3, 7])]),
        ([], [("orders", [1, 4])]),  # nothing listed, two answered
        ([("orders", [2])], [("orders", [2, 5]), ("payments", [1])]),  # answered beyond the request
        ([("orders", [2, 5])], [("orders", [5])]),  # one listed partition not answered
        ([("orders", [1]), ("orders", [1])], [("orders", [1, 1])]),  # repeated entries: the first answer
        ([("orders", list(range(60)))], [("orders", list(range(59, -1, -1)))]),  # answered in another order
    ]
    lines = []
    for request, response in shapes:
        for by_id in (False, True):
            lines += [_line(template, _fetch_body(request, response, by_id))] * REQUEST_BATCH_MIN
    # one side by name, the other by id or by both (the topic rule's name-less and id branches)
    for keys, rkeys in [(("topicId",), ("topic", "topicId")), (("topic", "topicId"), ("topicId",)),
                        (("topic",), ("topicId",)), (("topic", "topicId"), ("topic",))]:
        body = _fetch_body(shapes[2][0], shapes[2][1], False, rkeys)
        for topic in body["request"]["topics"]:
            name = topic.pop("topic")
            topic.update(_named(name, keys))
        lines += [_line(template, body)] * REQUEST_BATCH_MIN
    rows, batched = read_both_ways(_write(tmp_path, lines))
    events = [r for r in rows if r["row_kind"] == "event"]
    assert batched == len(events) and len(events) > len(lines)
    assert {r["details"]["in_request"] for r in events} == {"true", "false"}
    assert max(r["sub_index"] for r in events) == 59


def test_a_chunk_is_plain_only_when_the_guard_would_find_nothing():
    """A request-log chunk in which one RE2 pass finds no secret hint and nothing the Arrow reader's
    guard looks for skips that guard: no line the guard stops may be in a plain chunk."""
    from epoch_audit.bronze.log_pass import _request_chunk
    from epoch_audit.bronze.parsers.request_log_arrow import _NOT_ARROWS

    bases = _messages()
    assert _request_chunk(bases) == (True, True)
    fetch = next(line for line in bases if '"FETCH"' in line)
    produce = next(line for line in bases if '"PRODUCE"' in line)
    guarded = [v for base in (fetch, produce) for v in _variants(base) if _NOT_ARROWS.search(v)]
    assert len(guarded) >= 8
    at = fetch.index('"clientId":"') + len('"clientId":"')
    for token in ("\t", "\x1f", "\x0b", "NaN", "INF", "Inf"):
        for before in ":,[ +-":
            guarded.append(fetch[:at - 1] + "0," + '"x":' + before + token + "," + fetch[at - 1:])
    guarded.append(fetch[:at] + "1" * 900 + fetch[at:])
    for line in guarded:
        assert _request_chunk([fetch, line, produce])[1] is False, line[:200]
    # plain never hides a line the guard stops; a secret hint is no clean chunk
    assert _request_chunk([fetch, fetch.replace('"clientId":"', '"clientId":"Token ', 1)]) == (False, False)
    assert _request_chunk([fetch, fetch[:at] + "1" * 899 + fetch[at:]]) == (True, True)


def test_chunks_of_whole_request_lines_read_alike(tmp_path, monkeypatch):
    """A chunk (``REQUEST_BATCH`` lines) of nothing but whole request lines goes to the waiting batch
    at once. Among its lines: other APIs (read by the per-line parsers; their events' times raise the
    file's running max the Arrow-read events' ``own_time`` carries), times going back, a line the
    guard stops in a chunk otherwise whole, and a continuation line right after a chunk's last line."""
    from epoch_audit.bronze import log_pass

    whole_chunks = []
    original = log_pass._whole_request_lines
    monkeypatch.setattr(log_pass, "_whole_request_lines",
                        lambda chunk, zone: whole_chunks.append(original(chunk, zone)) or whole_chunks[-1])
    fast = _messages()
    others = [line for line in _messages(("LEADER_AND_ISR", "STOP_REPLICA", "METADATA", "ALTER_PARTITION",
                                          "UPDATE_METADATA")) if '"FETCH"' not in line and '"PRODUCE"' not in line]
    assert len(fast) >= 30 and len(others) >= 10

    def stamped(line: str, ms: int) -> str:
        seconds, milli = divmod(ms, 1000)
        minutes, second = divmod(seconds, 60)
        return f"[2026-11-20 10:{minutes % 60:02d}:{second:02d},{milli:03d}]" + line[line.index("]") + 1:]

    lines = []
    for i in range(log_pass.REQUEST_BATCH * 3 + 100):
        if i % 97 == 5:
            lines.append(stamped(others[i % len(others)], i * 5 + 20_000))  # ahead of the lines around it
        elif i % 89 == 7:
            lines.append(stamped(fast[i % len(fast)], i * 5 - 30_000))  # behind them
        else:
            lines.append(stamped(fast[i % len(fast)], i * 5))
    lines[log_pass.REQUEST_BATCH] = "\tat kafka.server.KafkaApis.handle(KafkaApis.scala:1)"
    at = lines[2 * log_pass.REQUEST_BATCH + 3].index('"clientId":"') + len('"clientId":"')
    guarded = 2 * log_pass.REQUEST_BATCH + 3
    lines[guarded] = lines[guarded][:at] + "x NaN " + lines[guarded][at:]
    rows, batched = read_both_ways(_write(tmp_path, lines))
    taken = [entries for entries in whole_chunks if entries is not None]
    # the first chunk, the third (guarded, not plain) and the fourth; the second starts with a continuation
    assert len(taken) >= 3
    assert batched >= len(lines) * 0.8
    assert sum(r["row_kind"] == "quarantine" for r in rows) == 0
    events = [r for r in rows if r["row_kind"] == "event"]
    assert {r["event_type"] for r in events} > {"request_fetch", "request_produce"}
