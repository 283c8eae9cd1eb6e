"""Local file paths and the URIs Spark names them by: matching a scan's ``_metadata.file_path`` to
the files of a Delta log (see ``epoch_audit.lake.delta_rs``)."""

from __future__ import annotations

import os
import re
import string
import unicodedata

from pyspark.sql import Column
from pyspark.sql import functions as F

from epoch_audit import objstore

_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def norm_uri(uri: str) -> str:
    """The local path a file URI or path names. A URI (``file:/a%20b`` in a scan's
    ``_metadata.file_path``, ``file:///a%20b`` from ``input_file_name()``) is percent-decoded; a
    plain path (what delta-rs ``file_uris()`` returns) is taken as it is — a partition directory
    such as ``cluster_id=x%3Dy`` holds a literal ``%``. Relative paths are made absolute, as Spark
    qualifies them. See ``norm_uri_col`` for the same in Spark."""
    from urllib.parse import unquote, urlparse

    if objstore.is_remote(uri):  # an object store's URI: the bucket is part of the name
        parsed = urlparse(uri)
        return f"{parsed.scheme}://{parsed.netloc}{os.path.normpath(unquote(parsed.path))}"
    if _URI_SCHEME.match(uri):
        return os.path.normpath(unquote(urlparse(uri).path))
    return os.path.abspath(uri)


def norm_uri_col(uri: Column) -> Column:
    """``norm_uri`` of a Spark file URI (``_metadata.file_path``, ``input_file_name()``) as a
    Column: drop the scheme and the authority, percent-decode. ``url_decode`` would read a '+' as
    a space: a URI path's '+' is literal, so it is escaped first. Hadoop paths are already
    normalised."""
    path = F.regexp_replace(uri, r"^[A-Za-z][A-Za-z0-9+.-]+:(//[^/]*)?", "")
    return F.url_decode(F.regexp_replace(path, r"\+", "%2B"))


# The ASCII characters java.net.URI leaves as they are in a path (Hadoop ``Path.toUri()``); it
# escapes the others, and of the non-ASCII ones the space separators and the C1 controls.
_URI_PATH_CHARS = frozenset(string.ascii_letters + string.digits + "-_.!~*'();:@&=+$,/")


def spark_file_uris(path: str) -> list[str]:
    """What Spark names the local file ``path`` (absolute, normalised) by: its
    ``Path.toUri().toString()``, under a ``file:`` (``_metadata.file_path``) or a ``file://``
    (``input_file_name()``, Spark 3.4+) prefix. A fast path
    only: a form this misses is matched through ``norm_uri_col``."""
    out = []
    for ch in path:
        if ord(ch) < 0x80:
            out.append(ch if ch in _URI_PATH_CHARS else f"%{ord(ch):02X}")
        elif ord(ch) <= 0x9F or unicodedata.category(ch) in ("Zs", "Zl", "Zp"):
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
        else:
            out.append(ch)
    quoted = "".join(out)
    return [f"file://{quoted}", f"file:{quoted}"]
