"""One bounded reader for every input: files, ``use`` imports, importer inputs, standard input
and pipes. It reads at most the limit plus one byte, so ``/dev/zero``, a sparse 3 GB file or an
endless pipe cost 8 MiB and an answer, never all the memory; a UTF-8 byte-order mark is
dropped (editors on Windows write one)."""

from __future__ import annotations

import os
from typing import BinaryIO

from .limits import LIMITS

CHUNK = 1 << 20


class TooLarge(ValueError):
    """An input longer than the limit; ``path`` and ``limit`` say which and how long."""

    def __init__(self, path: str, limit: int):
        super().__init__(f"{path} is larger than the limit of {limit:,} bytes "
                         f"({limit / 2**20:g} MiB); nothing was read past it")
        self.path, self.limit = path, limit


def read_stream(stream: BinaryIO, name: str = "<stdin>",
                limit: int | None = None) -> bytes:
    """At most ``limit`` bytes of ``stream``; ``TooLarge`` once one more byte arrives."""
    limit = LIMITS.file_bytes if limit is None else limit
    parts, size = [], 0
    while size <= limit:
        part = stream.read(min(CHUNK, limit + 1 - size))
        if not part:
            break
        parts.append(part)
        size += len(part)
    if size > limit:
        raise TooLarge(name, limit)
    return b"".join(parts)


def read_bytes(path: str | os.PathLike, limit: int | None = None) -> bytes:
    """A file's bytes, bounded; OSError goes to the caller (a folder, a missing file)."""
    with open(path, "rb") as f:
        return read_stream(f, os.fspath(path), limit)


def decode(data: bytes) -> str:
    """UTF-8 text with a leading byte-order mark dropped; UnicodeDecodeError when not UTF-8."""
    return data.decode("utf-8-sig")


def strip_bom(text: str) -> str:
    """``text`` without a leading byte-order mark (text handed over by an API caller)."""
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | os.PathLike, limit: int | None = None) -> str:
    """A file's UTF-8 text, bounded (``TooLarge``); OSError and UnicodeDecodeError go to the
    caller."""
    return decode(read_bytes(path, limit))
