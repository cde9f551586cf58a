"""What topoc's disk caches share: where they live, the hash of the code that wrote an entry,
opening an entry only as a regular file of bounded size, and writing one atomically.

Two caches use it: ``topoc plan``'s rows (``compiler.analysis.plan_cache``) and the compiled
systems (``compiler.lang.syscache``). A cache costs speed, never correctness: an entry that
cannot be read is recomputed, one that cannot be written is skipped, and nothing here follows
a symbolic link, blocks on a FIFO or reads past a bound.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def cache_dir() -> Path:
    """$TOPOC_CACHE, else $XDG_CACHE_HOME/topoc, else ~/.cache/topoc."""
    if os.environ.get("TOPOC_CACHE"):
        return Path(os.environ["TOPOC_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "topoc"


@functools.lru_cache(maxsize=1)
def code_hash() -> str:
    """A hash of the compiler's own source and the grammar: an entry written by other code is
    never reused, even between two commits of one version."""
    h = hashlib.sha256()
    top = Path(__file__).resolve().parents[1]          # the compiler package
    grammar = top.parent / "grammar"
    for root in (top, grammar):
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".lark")):
            h.update(path.relative_to(root.parent).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


class Bad(Exception):
    """A cache file that is there but cannot be used (the message says why)."""


def open_regular(path: Path, max_bytes: int) -> tuple[int, int] | None:
    """(a descriptor open for reading, the file's size) for the cache file at ``path``, opened
    only as a regular file: not through a symbolic link (O_NOFOLLOW), never blocking on a FIFO
    (O_NONBLOCK), its kind and size checked with fstat on the descriptor just opened (no race
    with a swap after a stat). None when there is no file; ``Bad`` when there is one that is
    not a cache (a link, a folder, a FIFO, past ``max_bytes``). The caller closes the
    descriptor."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):     # no entry, or no cache folder
        return None
    except OSError as exc:
        raise Bad(f"cannot open it ({exc.strerror or exc}; a symbolic link is not followed)")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Bad("it is not a regular file")
        if st.st_size > max_bytes:
            raise Bad(f"it is larger than {max_bytes // 2**20:,} MiB")
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def read_regular(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of the cache file at ``path`` (``open_regular``'s checks), at most
    ``max_bytes`` read even when the file grows while it is read. None when there is no file;
    ``Bad`` when it cannot be used."""
    opened = open_regular(path, max_bytes)
    if opened is None:
        return None
    fd, _ = opened
    try:
        parts, size = [], 0
        while size <= max_bytes:
            part = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not part:
                break
            parts.append(part)
            size += len(part)
        if size > max_bytes:
            raise Bad(f"it is larger than {max_bytes // 2**20:,} MiB")
        return b"".join(parts)
    except OSError as exc:
        raise Bad(f"cannot read it ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def write_atomic(path: Path, write: Callable[[BinaryIO], None], mode: int = 0o700) -> bool:
    """Write the file at ``path`` through ``write(file)`` into a temporary file next to it,
    renamed over ``path`` when complete (``os.replace``: a reader, or another writer of the
    same entry, sees the old file or the new one, never a part). The folder is made (``mode``)
    when missing. False when it could not be written (a read-only or full disk, a folder of
    that name, Ctrl-C): the temporary file is removed on every failure."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=mode)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
        tmp = None
        return True
    except (OSError, ValueError):
        return False
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
