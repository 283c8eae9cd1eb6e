"""The class archive's bookkeeping (epoch_audit.class_archive): which JVM options a session gets,
and the claim that keeps two sessions from writing it at once. Pure Python; the real JVM writing
and mapping it is tests/e2e/test_class_archive.py."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from epoch_audit import class_archive


@pytest.fixture
def spark_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EPOCH_AUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(class_archive.ARCHIVE_ENV, raising=False)
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "spark-core.jar").write_bytes(b"core")
    return home


def test_first_session_claims_and_writes_at_exit(spark_home: Path) -> None:
    options, tmp, final = class_archive.java_options(str(spark_home))
    assert tmp is not None and final is not None
    assert tmp.is_file() and tmp.stat().st_size == 0  # the claim
    assert f"-XX:ArchiveClassesAtExit={tmp}" in options
    assert final.parent == Path(os.environ["EPOCH_AUDIT_CACHE"]) / "class-archive"
    # a session starting meanwhile neither writes nor maps one
    assert class_archive.java_options(str(spark_home)) == ([], None, None)


def test_a_written_archive_is_mapped(spark_home: Path) -> None:
    final = class_archive.archive_path(str(spark_home))
    assert final is not None
    final.parent.mkdir(parents=True)
    final.write_bytes(b"archive")
    options, tmp, _ = class_archive.java_options(str(spark_home))
    assert options[0] == f"-XX:SharedArchiveFile={final}" and tmp is None


def test_other_jars_name_another_archive(spark_home: Path) -> None:
    before = class_archive.archive_path(str(spark_home))
    (spark_home / "jars" / "delta.jar").write_bytes(b"delta")
    assert class_archive.archive_path(str(spark_home)) != before


def test_a_stale_claim_is_taken_over(spark_home: Path) -> None:
    final = class_archive.archive_path(str(spark_home))
    assert final is not None
    final.parent.mkdir(parents=True)
    dead = final.with_name(f"{final.name}.1.tmp")
    dead.touch()
    old = time.time() - class_archive.STALE_SECONDS - 10
    os.utime(dead, (old, old))
    _, tmp, _ = class_archive.java_options(str(spark_home))
    assert tmp is not None and not dead.exists()


def test_mapping_marks_used_and_a_new_archive_removes_unused_ones(spark_home: Path) -> None:
    final = class_archive.archive_path(str(spark_home))
    assert final is not None
    final.parent.mkdir(parents=True)
    unused, recent = final.with_name("spark-0000000000000001.jsa"), final.with_name("spark-0000000000000002.jsa")
    for archive, age in ((unused, class_archive.UNUSED_SECONDS + 60), (recent, class_archive.UNUSED_SECONDS - 3600)):
        archive.write_bytes(b"archive")
        os.utime(archive, (time.time() - age, time.time() - age))
    _, tmp, _ = class_archive.java_options(str(spark_home))  # this jar set has none yet: it writes one
    assert tmp is not None and not unused.exists() and recent.exists()
    # an archive that is mapped is used: its time moves on, so it is never the one removed
    (spark_home / "jars" / "delta.jar").write_bytes(b"delta")
    other = class_archive.archive_path(str(spark_home))
    assert other is not None
    other.write_bytes(b"archive")
    old = time.time() - class_archive.UNUSED_SECONDS - 60
    os.utime(other, (old, old))
    options, _, _ = class_archive.java_options(str(spark_home))
    assert options[0] == f"-XX:SharedArchiveFile={other}"
    assert time.time() - other.stat().st_mtime < 60


def test_off_and_sessions_that_do_not_write(spark_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert class_archive.java_options(str(spark_home), write=False) == ([], None, None)
    monkeypatch.setenv(class_archive.ARCHIVE_ENV, "off")
    assert class_archive.java_options(str(spark_home)) == ([], None, None)


def test_no_jvm_of_ours_releases_the_claim(spark_home: Path) -> None:
    _, tmp, final = class_archive.java_options(str(spark_home))
    assert tmp is not None and final is not None
    class_archive.rename_when_written(None, tmp, final)
    assert not tmp.exists() and not final.exists()


def test_short_run_heap_options() -> None:
    from epoch_audit.spark import short_run_java_options

    assert short_run_java_options("2g").endswith("-XX:+UseParallelGC -XX:NewRatio=1 -Xms2g")
    assert short_run_java_options("512m").endswith("-Xms512m")
    assert short_run_java_options("6g").endswith("-Xms2g")  # the test session's heap is not committed whole
    assert "-Xms" not in short_run_java_options("1.5g")  # not a JVM size: left to the JVM


def test_every_local_run_uses_the_parallel_collector() -> None:
    # G1's 1 MB regions at a 1 GB heap make Spark's 1 MB and 4 MB buffers humongous (the 10^7 OOM)
    from epoch_audit.spark import run_java_options

    for short_run in (True, False):
        for heap in ("1g", "2g", "6g"):
            options = run_java_options(short_run, heap).split()
            assert "-XX:+UseParallelGC" in options and "-XX:+UseG1GC" not in options
    assert "TieredStopAtLevel" not in run_java_options(False, "1g")  # a long run keeps C2
    for heap in ("1g", "2g"):  # a mid-size run: C1 alone, the parallel collector too
        options = run_java_options(False, heap, c2_compiler=False).split()
        assert "-XX:TieredStopAtLevel=1" in options and "-XX:+UseParallelGC" in options


def _watch_an_ended_process(tmp: Path, final: Path) -> None:
    import subprocess
    import sys

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    subprocess.run([sys.executable, "-c", class_archive._WATCHER, str(ended.pid), str(tmp), str(final)],
                   check=True, timeout=60)


def test_the_watcher_names_only_a_whole_archive(tmp_path: Path) -> None:
    final = tmp_path / "spark-x.jsa"
    cut = tmp_path / "spark-x.jsa.1.tmp"
    cut.write_bytes(b"\0" * 4096)  # killed while writing: HotSpot writes the header last
    _watch_an_ended_process(cut, final)
    assert not cut.exists() and not final.exists()
    whole = tmp_path / "spark-x.jsa.2.tmp"
    whole.write_bytes(bytes.fromhex("a8ab0bf0") + b"\0" * 4096)
    _watch_an_ended_process(whole, final)
    assert not whole.exists() and final.read_bytes().startswith(bytes.fromhex("a8ab0bf0"))
