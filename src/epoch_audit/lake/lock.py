"""One writer per lake: a lock file with a lease, taken before Spark starts.

Two runs writing one lake at once duplicate state keys, bronze event ids and ledger rows, so a run
holds ``<lake>/_epoch_audit.lock`` for as long as it writes. The file names its holder (host, pid,
start time, command) and a lease that a background thread renews. A lock is stale, and is taken
over, when its holder is on this host and its pid is gone (a killed run: the re-run proceeds at
once), or when its lease expired (a holder on another host that stopped renewing). Taking over is
atomic: the stale file is renamed away first, and only the run whose rename succeeded creates the
new lock, so two runs that both see a stale lock never both proceed.

On an object store (``s3://`` ...) the lock is the object ``<lake>/_epoch_audit.lock``, read and
written through ``pyarrow.fs``, which offers no create-if-absent: a run writes its record, waits
for a concurrent writer's record to land, and proceeds only if the object then holds its own
token (the store's last write wins, and both runs read the same winner). A second run started
while one holds the lake is refused as on a disk.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from epoch_audit import objstore

LOCK_NAME = "_epoch_audit.lock"
LEASE_SECONDS = 600
RENEW_SECONDS = 60
STORE_SETTLE_SECONDS = 1.0  # object-store lock: how long a written record is left to be overwritten


class LakeBusyError(RuntimeError):
    """Another run holds the lake."""


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _read(path: Path | str) -> dict | None:
    try:
        raw = path.read_text(encoding="utf-8") if isinstance(path, Path) else objstore.read_bytes(path).decode()
        return json.loads(raw)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # unreadable or half-written: judged by its age below


def _mtime(path: Path | str) -> float:
    if isinstance(path, Path):
        return path.stat().st_mtime
    found = objstore.info(path)
    if found.type == objstore.pafs.FileType.NotFound:
        raise FileNotFoundError(path)
    return found.mtime.timestamp() if found.mtime else 0.0


def is_stale(holder: dict, path: Path | str, now: dt.datetime | None = None) -> bool:
    """A holder on this host whose process is gone, or any holder whose lease has expired."""
    now = now or _now()
    if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int):
        if not _pid_alive(holder["pid"]):
            return True
    try:
        lease_until = dt.datetime.fromisoformat(holder["lease_until"])
    except (KeyError, TypeError, ValueError):
        # no readable lease: a file older than one lease is abandoned
        try:
            age = now.timestamp() - _mtime(path)
        except FileNotFoundError:
            return True
        return age > LEASE_SECONDS
    return now > lease_until


def describe(holder: dict) -> str:
    return (
        f"host {holder.get('host', '?')}, pid {holder.get('pid', '?')}, started {holder.get('started_at', '?')}"
        f" ({holder.get('command', '?')})"
    )


def _create(path: Path, record: dict) -> bool:
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(record, out)
    return True


def _record(command: str) -> dict:
    now = _now()
    return {
        "host": socket.gethostname(), "pid": os.getpid(), "started_at": now.isoformat(timespec="seconds"),
        "command": command, "token": uuid.uuid4().hex,
        "lease_until": (now + dt.timedelta(seconds=LEASE_SECONDS)).isoformat(),
    }


def _acquire_on_store(lake: str, command: str) -> dict:
    """The object-store lock (see the module docstring): write, let it settle, read back."""
    uri = objstore.join(lake, LOCK_NAME)
    record = _record(command)
    for _ in range(3):
        holder = _read(uri)
        if holder is not None and holder.get("token") != record["token"] and not is_stale(holder, uri):
            raise LakeBusyError(f"lake {lake} is held by another run: {describe(holder)}; lock object {uri}")
        objstore.write_bytes(uri, json.dumps(record).encode())
        time.sleep(STORE_SETTLE_SECONDS)
        if (_read(uri) or {}).get("token") == record["token"]:
            return record
    raise LakeBusyError(f"lake {lake}: could not take the lock object {uri}")


def acquire(lake: str, command: str) -> dict:
    """Take the lake's lock or raise LakeBusyError naming the holder. Returns this run's lock record."""
    if objstore.is_remote(lake):
        return _acquire_on_store(lake, command)
    root = Path(lake)
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_NAME
    record = _record(command)
    for _ in range(3):
        if _create(path, record):
            return record
        holder = _read(path)
        if holder is None:
            continue  # released between our two calls
        if not is_stale(holder, path):
            raise LakeBusyError(f"lake {lake} is held by another run: {describe(holder)}; lock file {path}")
        aside = path.with_name(f"{LOCK_NAME}.stale-{record['token']}")
        try:
            os.rename(path, aside)  # atomic: of two runs taking over, one rename finds the file
        except FileNotFoundError:
            continue
        aside.unlink(missing_ok=True)
    raise LakeBusyError(f"lake {lake}: could not take the lock file {path}")


def _renew(path: Path | str, record: dict, stop: threading.Event) -> None:
    while not stop.wait(RENEW_SECONDS):
        current = _read(path)
        if not current or current.get("token") != record["token"]:
            return  # taken over: nothing of ours to renew
        renewed = dict(record, lease_until=(_now() + dt.timedelta(seconds=LEASE_SECONDS)).isoformat())
        if isinstance(path, str):  # an object: one PUT replaces it whole
            objstore.write_bytes(path, json.dumps(renewed).encode())
            continue
        tmp = path.with_name(f"{LOCK_NAME}.renew-{record['token']}")
        tmp.write_text(json.dumps(renewed), encoding="utf-8")
        os.replace(tmp, path)


def _lock_path(lake: str) -> Path | str:
    return objstore.join(lake, LOCK_NAME) if objstore.is_remote(lake) else Path(lake) / LOCK_NAME


def release(lake: str, record: dict) -> None:
    path = _lock_path(lake)
    current = _read(path)
    if current and current.get("token") == record["token"]:
        if isinstance(path, str):
            objstore.delete_file(path)
        else:
            path.unlink(missing_ok=True)


@contextmanager
def lake_lock(lake: str, command: str) -> Iterator[dict]:
    """Hold the lake (a path, or an S3 URI) for the body. Other stores (``gs://``, ``abfss://``,
    ``dbfs:/``) are not locked here: their credentials are often the Spark session's, not the
    environment's that ``pyarrow.fs`` reads, so only one run at a time must be scheduled there."""
    if objstore.is_remote(lake) and objstore.scheme(lake) not in objstore.S3_SCHEMES:
        yield {}
        return
    lake = lake.removeprefix("file://")
    record = acquire(lake, command)
    stop = threading.Event()
    renewer = threading.Thread(
        target=_renew, args=(_lock_path(lake), record, stop), name="lake-lock-lease", daemon=True
    )
    renewer.start()
    try:
        yield record
    finally:
        stop.set()
        release(lake, record)
