"""Issue #19: real fixture lines, mutated as hostile input arrives, never raise and every line is
accounted for once (parsed + irrelevant + malformed = lines read, per file)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.hostile_lines import line_rows, run_chain

FIXTURES = Path(__file__).parents[1] / "fixtures"
SOURCES = {
    "kafka/zk-3.3-state-change.log": ("cluster=c1/broker-1/state-change.log", "state-change"),
    "kafka/kraft-3.9-controller.log": ("cluster=c1/broker-1/controller.log", "controller"),
    "kafka/server-3.5-3.9.log": ("cluster=c1/broker-1/server.log", "server"),
    "redpanda/v24_1.log": ("cluster=c1/broker-1/redpanda.log", "redpanda"),
    "request/reference_3x.log": ("cluster=c1/broker-1/kafka-request.log", "request"),
}
LINES = {name: (FIXTURES / name).read_text(encoding="utf-8").splitlines() for name in SOURCES}


def _mutate(line: str, kind: int, at: int, byte: int) -> list[str]:
    """One mutation of ``line``: may yield several physical lines (inserted CR/LF)."""
    pos = at % (len(line) + 1)
    if kind == 0:  # byte flip
        return [line[:pos] + chr(byte) + line[pos + 1:]]
    if kind == 1:  # every number made 25 digits long
        import re

        return [re.sub(r"\d+", "9" * 25, line)]
    if kind == 2:  # truncation at every position (a batch of cut lines)
        step = max(1, len(line) // 40)
        return [line[:i] for i in range(0, len(line), step)]
    if kind == 3:  # CR/LF mixes
        return (line[:pos] + "\r\n" + line[pos:] + "\r").split("\n")
    # inserted JSON nesting
    return [line[:pos] + '{"a":[{"b":{"c":[' * 20 + line[pos:]]


mutation = st.tuples(
    st.sampled_from(sorted(SOURCES)), st.integers(0, 10_000), st.integers(0, 4), st.integers(0, 10_000),
    st.integers(0, 255),
)


# Each example is one pass of every parser over a batch of mutated lines (about a minute on a
# loaded 2-core machine): few examples, many lines each.
@settings(max_examples=6)
@given(st.lists(mutation, min_size=10, max_size=30))
def test_mutated_lines_never_raise_and_every_line_is_counted(spark, mutations):
    files: dict[tuple[str, str], list[str]] = {source: [] for source in SOURCES.values()}
    for name, index, kind, at, byte in mutations:
        lines = LINES[name]
        # a flipped byte may be a newline: the file then holds one more line
        mutated = _mutate(lines[index % len(lines)], kind, at, byte)
        files[SOURCES[name]].extend(part for line in mutated for part in line.split("\n"))
    files = {k: v for k, v in files.items() if v}
    expected = {source_file: len(lines) for (source_file, _), lines in files.items()}
    _, _, status = run_chain(spark, line_rows(spark, files))
    counts: dict[str, dict[str, int]] = {}
    for r in status.collect():
        per_file = counts.setdefault(r["source_file"], {"parsed": 0, "irrelevant": 0, "malformed": 0})
        per_file[r["status"]] += 1
    assert {name: sum(c.values()) for name, c in counts.items()} == expected
    for name in expected:  # every line counted once, under one status
        assert len({r["line_number"] for r in status.collect() if r["source_file"] == name}) == expected[name]
