"""Reading a gzip file as far as it decompresses: a cut or corrupt rotated log keeps its readable
prefix (``gzip.open`` raises at the cut and, read in blocks, loses the block it was in).

``GzipPrefix`` is a small read-only file object (``read``, forward ``seek``); after the data ends,
``problem`` says why it ended early (``truncated gzip at compressed byte N`` /
``corrupt gzip at compressed byte N``), or is None for a complete stream.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from epoch_audit import objstore

GZIP_MAGIC = b"\x1f\x8b"
_PIECE = 64 << 10  # compressed bytes fed at a time: bounds the output of one step (ratio <= ~1032)
_SMALL_PIECE = 512  # after a zlib error the piece is re-fed in these steps, keeping what precedes the bad byte


class GzipPrefix:
    """Decompressed bytes of a (possibly multi-member) gzip file, up to where it stops decompressing."""

    def __init__(self, path: str | Path) -> None:
        # a local path or an object-store URI (read through pyarrow.fs)
        self._fh = objstore.open_input(str(path))
        self._inflater = zlib.decompressobj(wbits=31)
        self._pending = bytearray()
        self._fed = 0  # compressed bytes fed to the inflater so far
        self._done = False
        self.problem: str | None = None

    def __enter__(self) -> GzipPrefix:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._fh.close()

    def _stop(self, problem: str | None) -> None:
        self._done = True
        self.problem = problem

    def _inflate(self, data: bytes) -> None:
        """Feed compressed bytes; a member's end starts the next member (zero padding is allowed)."""
        while data and not self._done:
            if self._inflater.eof:
                data = data.lstrip(b"\x00")
                if not data:
                    return
                if not data.startswith(GZIP_MAGIC[: len(data)]):
                    self._stop(f"corrupt gzip at compressed byte {self._fed - len(data)}")
                    return
                self._inflater = zlib.decompressobj(wbits=31)
            saved = self._inflater.copy()
            try:
                self._pending += self._inflater.decompress(data)
                data = self._inflater.unused_data if self._inflater.eof else b""
            except zlib.error:
                self._inflater = saved
                data = self._inflate_small(data)

    def _inflate_small(self, data: bytes) -> bytes:
        """Re-feed a piece that failed in small steps: keep the output before the bad byte.
        Returns the bytes after a member's end (the next member), else b""."""
        start = self._fed - len(data)
        for offset in range(0, len(data), _SMALL_PIECE):
            try:
                self._pending += self._inflater.decompress(data[offset: offset + _SMALL_PIECE])
            except zlib.error:
                self._stop(f"corrupt gzip at compressed byte {start + offset}")
                return b""
            if self._inflater.eof:
                return self._inflater.unused_data + data[offset + _SMALL_PIECE:]
        return b""

    def _fill(self, wanted: int) -> None:
        while len(self._pending) < wanted and not self._done:
            data = self._fh.read(_PIECE)
            if not data:
                if self._fed == 0 or self._inflater.eof:
                    self._stop(None)
                else:
                    self._stop(f"truncated gzip at compressed byte {self._fed}")
                return
            self._fed += len(data)
            self._inflate(data)

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` decompressed bytes (all that is left when negative); b"" at the end."""
        if size < 0:
            while not self._done:
                self._fill(len(self._pending) + _PIECE)
            size = len(self._pending)
        self._fill(size)
        out = bytes(self._pending[:size])
        del self._pending[:size]
        return out

    def seek(self, position: int) -> None:
        """Skip forward to ``position`` (only from the start, as the readers here use it)."""
        while position > 0:
            skipped = len(self.read(min(position, 8 << 20)))
            if not skipped:
                return
            position -= skipped
