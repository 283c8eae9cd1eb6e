"""A class-data-sharing archive of the local Spark JVM's classes: the next JVM maps them instead of
loading them.

A local run's JVM loads about 25,000 classes from Spark's 280 jars before and while it runs its
first queries; on a 2-core machine that is seconds of every run (the session started in 2.2 s
instead of 4.3 s and its first query ran in 1.4 s instead of 3.0 s with the archive). HotSpot
writes such an archive of everything a JVM loaded when it exits (``-XX:ArchiveClassesAtExit``, JDK
13+) and maps it at the next start (``-XX:SharedArchiveFile``).

One archive per Java installation and set of Spark jars, in the cache directory (``EPOCH_AUDIT_CACHE``
or ``~/.cache/epoch-audit``, beside Ivy's). The first local session without one writes it to a
temporary name when its JVM exits (after this process, about ten seconds, in the background; the
empty file, made at the start, keeps sessions starting meanwhile from writing one too); a detached
watcher renames it once that JVM is gone, so a session never maps a half-written file.
HotSpot checks an archive against the JVM and the class path it was written with and ignores one
that does not match. Each session that maps an archive marks it used (its modification time); a
session that writes a new one removes the archives of other jar sets unused for 30 days (each
about 180 MB: an upgraded Spark or a new virtualenv names a new one). ``EPOCH_AUDIT_CLASS_ARCHIVE=off``
turns all of this off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ARCHIVE_ENV = "EPOCH_AUDIT_CLASS_ARCHIVE"
# HotSpot's CDS messages (thousands of "Skipping ...: Signed JAR" lines while it dumps) stay quiet.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
# A temporary archive older than this belongs to a JVM that died while writing it.
STALE_SECONDS = 3600
# An archive no session has mapped for this long belongs to a Spark or Java no longer run here.
UNUSED_SECONDS = 30 * 86400

# Renames the archive once the JVM (argv[1]) has exited; started detached, outlives this process.
_WATCHER = """
import os, sys, time
pid, tmp, final = int(sys.argv[1]), sys.argv[2], sys.argv[3]
DYNAMIC_ARCHIVE_MAGIC = bytes.fromhex("a8ab0bf0")  # CDS_DYNAMIC_ARCHIVE_MAGIC 0xf00baba8, little-endian
deadline = time.time() + 86400  # a long run's JVM: it writes the archive when it ends
while time.time() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    except PermissionError:
        pass
    time.sleep(0.2)
else:
    sys.exit(0)
try:
    with open(tmp, "rb") as archive:
        magic = archive.read(4)
    if magic == DYNAMIC_ARCHIVE_MAGIC:  # HotSpot writes the header last: a whole archive
        os.replace(tmp, final)
    else:  # the JVM wrote nothing or was killed while writing: free the claim
        os.unlink(tmp)
except OSError:
    pass
"""


def cache_root() -> Path:
    """Where this machine's fetched and generated artefacts live (Ivy's jars, the class archive):
    ``EPOCH_AUDIT_CACHE``, else ``~/.cache/epoch-audit``; outside any repository and lake."""
    root = os.environ.get("EPOCH_AUDIT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "epoch-audit")
    return Path(root)


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return Path(found).resolve() if found and os.path.exists(found) else None


def archive_path(spark_home: str) -> Path | None:
    """This installation's archive: named by the Java binary and Spark's jars (names, sizes, times).
    None when there is no Java to name it by."""
    java = _java()
    if java is None:
        return None
    digest = hashlib.sha256()
    stat = java.stat()
    digest.update(f"{java}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    jars = Path(spark_home) / "jars"
    for jar in sorted(jars.glob("*.jar")) if jars.is_dir() else []:
        st = jar.stat()
        digest.update(f"{jar.name}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return cache_root() / "class-archive" / f"spark-{digest.hexdigest()[:16]}.jsa"


def java_options(spark_home: str, write: bool = True) -> tuple[list[str], Path | None, Path | None]:
    """(JVM options, temporary file the JVM will write, final archive): map the archive when it
    exists, else (``write``) have the JVM write one at exit, unless another session claimed that."""
    if os.environ.get(ARCHIVE_ENV, "").lower() in {"off", "0", "false", "no"}:
        return [], None, None
    if os.name != "posix":  # the watcher's liveness probe (signal 0) would end a process elsewhere
        return [], None, None
    final = archive_path(spark_home)
    if final is None:
        return [], None, None
    claimed = False
    now = time.time()
    for other in final.parent.glob("*.tmp") if final.parent.is_dir() else []:
        try:
            if now - other.stat().st_mtime >= STALE_SECONDS:
                other.unlink()  # left by a JVM that died, or a watcher that gave up
            elif other.name.startswith(final.name + "."):
                claimed = True  # another session's JVM writes it: there next time
        except OSError:
            continue
    if final.is_file():
        try:
            os.utime(final)  # used now: not pruned while this Spark is run here
        except OSError:
            pass
        return [f"-XX:SharedArchiveFile={final}", QUIET], None, None
    if not write or claimed:
        return [], None, None
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return [], None, None
    _remove_unused(final.parent, now)
    tmp = final.with_name(f"{final.name}.{os.getpid()}.tmp")
    try:
        tmp.touch()  # the claim: other sessions starting meanwhile do not write one too
    except OSError:
        return [], None, None
    return [f"-XX:ArchiveClassesAtExit={tmp}", QUIET], tmp, final


def _remove_unused(directory: Path, now: float) -> None:
    """Remove the archives no session has mapped for :data:`UNUSED_SECONDS`."""
    for archive in directory.glob("spark-*.jsa"):
        try:
            if now - archive.stat().st_mtime >= UNUSED_SECONDS:
                archive.unlink()
        except OSError:
            continue


def rename_when_written(jvm_pid: int | None, tmp: Path, final: Path) -> None:
    """Start the detached watcher that moves ``tmp`` to ``final`` once the JVM ``jvm_pid`` exited
    (it writes the archive on its way out, after this process is gone). No JVM of ours (``None``:
    the session reused one that was running): release the claim."""
    if jvm_pid is None:
        tmp.unlink(missing_ok=True)
        return
    try:
        subprocess.Popen(
            [sys.executable, "-c", _WATCHER, str(jvm_pid), str(tmp), str(final)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        pass  # no archive this time: the next session writes one
