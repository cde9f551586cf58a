"""The plan's disk cache, validated: a file is used only when its shape, its format version,
the hash of the code that wrote it and its checksum all match, and then only the rows whose
every field has the type and range a computed row has. Anything else (an edited row, ``null``,
``[]``, another version's file) is ignored and recomputed, never trusted and never a crash.
Writes go through a temporary file next to the cache that is removed on every failure,
Ctrl-C included."""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path

from ..base.cachefile import Bad as _Bad, read_regular, write_atomic

FORMAT = 2
_INT = ("tp", "cp", "ep", "dp", "pp", "microbatch", "interleave")
_TIME = ("step_time", "compute_time", "comm_time", "bubble_time")
_RECOMPUTE = ("none", "selective", "full")


def checksum(code: str, rows: Mapping) -> str:
    """A hash of the rows keyed by the code's hash: rows edited by hand, or written by other
    code, do not match."""
    body = json.dumps(rows, sort_keys=True, allow_nan=False)
    return hashlib.sha256(f"{FORMAT} {code}\n{body}".encode()).hexdigest()


def _number(value, low: float = 0.0, high: float = math.inf) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and low <= value <= high


def valid_row(row) -> bool:
    """A row has the ``topoc.plan/1`` fields with a computed row's types and ranges."""
    if row is None:
        return True
    if not isinstance(row, dict):
        return False
    if set(row) == {"memory"}:          # a mapping over GPU memory: only its bytes are kept
        return _number(row["memory"]) and row["memory"] > 0
    try:
        ints = all(isinstance(row[k], int) and not isinstance(row[k], bool) and
                   1 <= row[k] <= 2**31 for k in _INT)
        times = all(_number(row[k]) for k in _TIME) and row["step_time"] > 0
        dims = isinstance(row["comm_by_dim"], dict) and all(
            isinstance(k, str) and _number(v) for k, v in row["comm_by_dim"].items())
        links = isinstance(row["links_by_dim"], dict) and all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)
            for k, v in row["links_by_dim"].items())
        term = row["largest_memory_term"]
        largest = isinstance(term, dict) and set(term) == {"term", "bytes"} and \
            isinstance(term["term"], str) and _number(term["bytes"])
        return ints and times and dims and links and largest and row["recompute"] in _RECOMPUTE \
            and isinstance(row["sequence_parallel"], bool) and isinstance(row["fits"], bool) \
            and _number(row["memory_per_gpu"]) and _number(row["mfu"], 0.0, 1.0) \
            and _number(row["tokens_per_s"])
    except (KeyError, TypeError):
        return False


MAX_BYTES = 256 * 2**20


def _read(path: Path) -> bytes | None:
    """The cache file's bytes, at most ``MAX_BYTES``, opened only as a regular file (no
    symbolic link, no FIFO: ``base.cachefile.read_regular``). None when there is no file;
    ``_Bad`` when there is one that is not a cache."""
    return read_regular(path, MAX_BYTES)


def load(path: Path, code: str, key_of: Callable[[dict], str]) -> dict[str, dict | None]:
    """The valid rows of the cache at ``path`` (``load_noted`` without its note)."""
    return load_noted(path, code, key_of)[0]


def load_noted(path: Path, code: str,
               key_of: Callable[[dict], str]) -> tuple[dict[str, dict | None], str | None]:
    """(the valid rows of the cache at ``path``, a note when a file was there but ignored).
    Rows are ``{}`` when the file is missing, not a regular file, damaged, nested past the
    JSON parser's depth bound, of another format or code, or fails its checksum; ``key_of``
    gives a row's candidate key, which must be the key it is stored under. A file of another
    format or code is ignored without a note (an upgrade), anything else with one."""
    def bad(why: str):
        return {}, f"plan cache {path} ignored and rewritten: {why}"
    try:
        raw = _read(path)
    except _Bad as exc:
        return bad(str(exc))
    if raw is None:
        return {}, None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):    # not JSON, not UTF-8, or nested past the bound
        return bad("it is not a cache (damaged JSON, or nested too deeply)")
    if not isinstance(data, dict):
        return bad("it is not a cache (no JSON object)")
    if data.get("format") != FORMAT or data.get("code") != code:
        return {}, None
    rows = data.get("rows")
    if not isinstance(rows, dict):
        return bad("it has no rows")
    try:
        if data.get("checksum") != checksum(code, rows):
            return bad("its checksum does not match (edited by hand?)")
    except (ValueError, RecursionError):      # NaN or infinity: not what save writes
        return bad("it holds values save never writes")
    out = {}
    for key, row in rows.items():
        if valid_row(row) and (row is None or set(row) == {"memory"} or key_of(row) == key):
            out[key] = row
    return out, None


def save(path: Path, rows: dict[str, dict | None], code: str) -> None:
    """Write ``rows`` atomically; a cache that cannot be written costs speed, not
    correctness, and leaves no temporary file behind (``base.cachefile.write_atomic``)."""
    def write(f) -> None:
        text = io.TextIOWrapper(f, encoding="utf-8")
        json.dump({"format": FORMAT, "code": code, "checksum": checksum(code, rows),
                   "rows": rows}, text, sort_keys=True, allow_nan=False)
        text.flush()
        text.detach()
    write_atomic(path, write, mode=0o777)
