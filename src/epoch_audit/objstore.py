"""Object stores (``s3://``, ``gs://``, ``abfss://``) next to local paths: one small file API for
the inputs, the delta-rs engine's file handling, the lake lock, staging and the report.

Local paths keep using the operating system (``open``, ``os.scandir``: symlinks, FIFOs and
permissions are judged there). A URI with a scheme goes through ``pyarrow.fs``, which the driver and
the executors' Python workers both have: listing, sizes, modification times and byte ranges
(``open_input_file`` is seekable, so a grown file is read from the byte the ledger resumes at).

Credentials never pass through here as values: ``pyarrow.fs``, delta-rs and Hadoop's s3a each read
the standard environment (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``,
profiles, instance roles; ``GOOGLE_APPLICATION_CREDENTIALS``; ``AZURE_STORAGE_*``). What this module
derives from the environment is only where the store is: ``AWS_ENDPOINT_URL`` (an S3-compatible
endpoint: MinIO, Ceph, moto), whether it is plain HTTP, and the region.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from urllib.parse import urlparse

import pyarrow.fs as pafs

# A URI's scheme: two characters or more (``C:/`` is a Windows path); ``dbfs:/x`` has one slash.
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]+):/")
S3_SCHEMES = ("s3", "s3a")

# Hadoop's s3a for Spark's own reads and writes of an S3 lake (the tables' Parquet files, staging).
# hadoop-aws must match the Hadoop pyspark bundles (pyspark 4.1.4: hadoop-client-api 3.4.2), and
# its AWS SDK v2 the version that Hadoop release is built with. hadoop-aws asks for the SDK's
# `bundle` jar (641 MB); the four modules it uses (17 MB with their dependencies) do the same.
HADOOP_AWS_PACKAGES = (
    "org.apache.hadoop:hadoop-aws:3.4.2",
    "software.amazon.awssdk:s3:2.29.52",
    "software.amazon.awssdk:s3-transfer-manager:2.29.52",
    "software.amazon.awssdk:sts:2.29.52",
    "software.amazon.awssdk:apache-client:2.29.52",
)
HADOOP_AWS_EXCLUDES = "software.amazon.awssdk:bundle"


def scheme(uri: str) -> str:
    """The URI's scheme, lower case ("" for a plain path)."""
    match = _SCHEME.match(uri)
    return match.group(1).lower() if match else ""


def is_remote(uri: str) -> bool:
    """An object-store URI (``s3://``, ``gs://``, ``abfss://`` ...), not a path or ``file://``."""
    return scheme(uri) not in ("", "file")


def join(base: str, *parts: str) -> str:
    """``base`` and ``parts`` joined by ``/`` (a URI's ``//`` after the scheme kept)."""
    out = base.rstrip("/")
    for part in parts:
        out = f"{out}/{part.strip('/')}" if part else out
    return out


def name(uri: str) -> str:
    """The last path segment."""
    return uri.rstrip("/").rsplit("/", 1)[-1]


def s3_endpoint() -> str | None:
    """The S3-compatible endpoint the environment names (``AWS_ENDPOINT_URL_S3`` wins, as in the AWS
    SDKs), or None for AWS itself."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def s3_region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


@lru_cache(maxsize=16)
def _store(kind: str, authority: str, endpoint: str | None, region: str) -> pafs.FileSystem:
    """One filesystem per store and settings, per process (connections are reused)."""
    if kind in S3_SCHEMES:
        options: dict = {"region": region}
        if endpoint:
            parsed = urlparse(endpoint)
            options.update(endpoint_override=parsed.netloc or endpoint, scheme=parsed.scheme or "https")
        # A short connect timeout: an unreachable endpoint fails the path check in seconds, not minutes.
        return pafs.S3FileSystem(
            connect_timeout=5, request_timeout=60,
            retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=3), **options,
        )
    filesystem, _ = pafs.FileSystem.from_uri(f"{kind}://{authority}/")
    return filesystem


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """The ``pyarrow.fs`` filesystem of ``uri`` and the path within it (``bucket/key`` on S3)."""
    kind = scheme(uri)
    if kind in ("", "file"):
        return pafs.LocalFileSystem(), os.path.abspath(re.sub(r"^file:(//)?", "", uri))
    parsed = urlparse(uri)
    if kind in S3_SCHEMES:
        return _store(kind, "", s3_endpoint(), s3_region()), f"{parsed.netloc}{parsed.path}".rstrip("/")
    filesystem_, path = pafs.FileSystem.from_uri(uri)
    return filesystem_, path.rstrip("/")


def info(uri: str) -> pafs.FileInfo:
    fs, path = filesystem(uri)
    return fs.get_file_info(path)


def is_file(uri: str) -> bool:
    return info(uri).type == pafs.FileType.File


def is_dir(uri: str) -> bool:
    """A directory; on an object store: a prefix some object lies under."""
    return info(uri).type == pafs.FileType.Directory


def listed_form(uri: str) -> str:
    """``uri`` as :func:`list_files` names what lies below it: the URI on a store, else the absolute
    path (a relative path or ``file:`` URI made absolute)."""
    return uri.rstrip("/") if is_remote(uri) else filesystem(uri)[1]


def list_files(uri: str) -> list[tuple[str, int, float]]:
    """(URI, size, modification time in epoch seconds) of every object below ``uri``, sorted."""
    fs, path = filesystem(uri)
    base = listed_form(uri)
    out = []
    for entry in fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True)):
        if entry.type == pafs.FileType.File:
            mtime = entry.mtime.timestamp() if entry.mtime is not None else 0.0
            # the URI as given, plus the part below it (an abfss:// authority is not in entry.path)
            out.append((f"{base}{entry.path[len(path):]}", entry.size or 0, mtime))
    return sorted(out)


def dir_names(uri: str) -> set[str]:
    """The names of the folders (on a store: common prefixes) directly under ``uri``."""
    fs, path = filesystem(uri)
    found = fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True))
    return {entry.base_name for entry in found if entry.type == pafs.FileType.Directory}


def open_input(uri: str):
    """``uri`` opened for reading: seekable, with ``read(n)`` and ``seek(pos)`` (byte ranges)."""
    if not is_remote(uri):
        return open(re.sub(r"^file:(//)?", "", uri), "rb")  # noqa: SIM115 - callers use `with`
    fs, path = filesystem(uri)
    return fs.open_input_file(path)


def read_bytes(uri: str) -> bytes:
    with open_input(uri) as fh:
        return fh.read()


def write_bytes(uri: str, data: bytes) -> None:
    """Write one object / file whole (an object store shows it only once complete)."""
    fs, path = filesystem(uri)
    if not is_remote(uri):
        fs.create_dir(os.path.dirname(path), recursive=True)
    # compression=None: pyarrow would otherwise gzip anything named *.gz a second time
    with fs.open_output_stream(path, compression=None) as out:
        out.write(data)


def delete_file(uri: str) -> None:
    fs, path = filesystem(uri)
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass


def delete_dir(uri: str) -> None:
    """Remove ``uri`` and everything below it (nothing there: nothing to do)."""
    fs, path = filesystem(uri)
    try:
        if fs.get_file_info(path).type != pafs.FileType.NotFound:
            fs.delete_dir(path)
    except FileNotFoundError:
        pass


def move(src: str, dst: str) -> None:
    """Move one file (on S3 a copy and a delete: objects have no rename)."""
    fs, src_path = filesystem(src)
    _, dst_path = filesystem(dst)
    if not is_remote(dst):
        os.makedirs(os.path.dirname(dst_path), exist_ok=True)
    fs.move(src_path, dst_path)


def upload_dir(local_dir: str, uri: str) -> None:
    """Copy the files of a local directory tree to ``uri`` (the report, Data Docs)."""
    for root, _dirs, files in os.walk(local_dir):
        for file_name in files:
            rel = os.path.relpath(os.path.join(root, file_name), local_dir).replace(os.sep, "/")
            with open(os.path.join(root, file_name), "rb") as fh:
                write_bytes(join(uri, rel), fh.read())


def download_dir(uri: str, local_dir: str) -> None:
    """Copy the objects under ``uri`` into a local directory tree (nothing there: nothing copied)."""
    for where, _size, _mtime in list_files(uri):
        target = os.path.join(local_dir, *where[len(uri.rstrip("/")):].strip("/").split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
            out.write(read_bytes(where))


def reports_root(lake: str, report_dir: str | None = None) -> str:
    """Where reports and Data Docs go: ``report_dir`` when given, else ``<lake>/reports`` (a local
    lake's as a path)."""
    if report_dir:
        return report_dir
    if is_remote(lake):
        return join(lake, "reports")
    return os.path.join(re.sub(r"^file:(//)?", "", lake), "reports")


def check_reachable(uri: str) -> str | None:
    """Why the store of ``uri`` cannot be used (unreachable endpoint, missing bucket, denied), or
    None. Asks for the bucket / container itself: a missing one is an error, an empty prefix is not."""
    fs, path = filesystem(uri)
    root = path.split("/", 1)[0]
    try:
        found = fs.get_file_info(root)
    except OSError as err:
        return reason(err)
    if found.type == pafs.FileType.NotFound:
        return f"bucket {root} does not exist"
    return None


def reason(err: OSError) -> str:
    """The first line of a pyarrow / AWS SDK error, which names what failed."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text[:300]


def delta_storage_options(uri: str) -> dict[str, str] | None:
    """delta-rs ``storage_options`` for a lake at ``uri``: where the store is, never credentials
    (delta-rs reads those from the environment itself). None: a local lake.

    S3 has no atomic rename-if-absent for delta-rs's commits without a locking provider;
    ``AWS_S3_ALLOW_UNSAFE_RENAME`` is safe here because one run writes a lake at a time (the lake
    lock, :mod:`epoch_audit.lake.lock`). A user who sets ``AWS_S3_LOCKING_PROVIDER`` (DynamoDB)
    gets delta-rs's own locking instead.
    """
    kind = scheme(uri)
    if kind not in S3_SCHEMES:
        return None if not is_remote(uri) else {}
    options = {"AWS_REGION": s3_region()}
    endpoint = s3_endpoint()
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"
    if not os.environ.get("AWS_S3_LOCKING_PROVIDER"):
        options["AWS_S3_ALLOW_UNSAFE_RENAME"] = "true"
    return options


def spark_s3a_conf() -> dict[str, str]:
    """Spark settings for an S3 lake through Hadoop's s3a: ``s3://`` served by S3AFileSystem too
    (the same URI for Spark and delta-rs), and the endpoint the environment names. Credentials come
    from s3a's default provider chain (environment variables, profiles, instance roles)."""
    conf = {
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.endpoint.region": s3_region(),
        # A task's files renamed (on S3: copied) once, not twice: what a failed write leaves
        # behind is in no Delta commit (delta-rs) or in the run's own scratch space (staging).
        "spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "2",
    }
    endpoint = s3_endpoint()
    if endpoint:
        conf.update({
            "spark.hadoop.fs.s3a.endpoint": endpoint,
            # An S3-compatible server rarely serves bucket.host names: bucket in the path.
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": str(endpoint.startswith("https://")).lower(),
        })
    return conf
