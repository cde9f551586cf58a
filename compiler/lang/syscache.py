"""The compiled-system cache: a checked System kept on disk, so that verbs run one after the
other on the same large file (the CI recipe: compile, lint, cost) elaborate it once.

An entry is keyed by a hash of everything the System depends on: the text and path of the
file and of every file it ``use``s (read and parsed again each time, which is cheap and
size-independent: the elaboration is what grows), the ``-D`` parameters, the limits, topoc's
version and the hash of its compiler and grammar source, and the Python version. Only systems
that verified without error and have at least ``MIN_LINKS`` links are stored: smaller ones
compile in well under a second. Entries live in ``cache_dir()/systems`` (``$TOPOC_CACHE``,
default ``~/.cache/topoc``); the newest ``KEEP_ENTRIES`` within ``KEEP_BYTES`` are kept.

An entry is a header line (format, key, payload length, CRC-32) and two pickles: the devices
and the hosts as columns (ids, model, span and pattern codes, each host's index chain as its
members' names once per shape and the indices in one array) and the rest of the System with
its compact links' arrays. It is opened only as a regular file of at most ``MAX_BYTES`` (no symbolic link, no
FIFO: ``base.cachefile``), its length and checksum are checked before anything is unpickled,
and the unpickler builds only topoc's own IR classes and a few standard containers, so a
file that is not an entry (damaged, edited, of another key) is ignored with a note and the
file compiled again, never trusted and never a traceback. Writers write a temporary file and
rename it (two processes writing one entry leave one whole entry). docs/scale.md has the
figures.
"""

from __future__ import annotations

import copyreg
import hashlib
import io
import itertools
import os
import pickle
import sys
import time
import types
import zlib
from array import array
from collections.abc import Mapping
from operator import attrgetter
from pathlib import Path

from ..base.cachefile import Bad, cache_dir, code_hash, open_regular, write_atomic
from ..base.gcpause import gc_paused
from ..base import limits
from ..base.version import VERSION
from ..ir.hosts import HOST_RANGES
from ..ir.incidence import Ends
from ..ir.links import Links
from ..ir.modelcodes import model_numbers
from ..ir.system import System, make_devices, make_hosts

FORMAT = 2
MAGIC = b"topoc-system-cache"
#: Systems with fewer links are not stored (a 72-rack NVL72 cluster, 120 k links, compiles in
#: about 0.3 s; the cache pays from a few hundred racks up); ``$TOPOC_SYSTEM_CACHE_MIN_LINKS``
#: sets another threshold (0: every system).
MIN_LINKS = 100_000
#: The largest entry read (8,192 NVL72 racks, 13.7 M links, are about 0.35 GB).
MAX_BYTES = 2 * 2**30
#: What the folder keeps after a write: the newest entries, at most this many and bytes.
KEEP_ENTRIES = 16
KEEP_BYTES = 4 * 2**30
#: The memo entries stored with the System: elaborate's integer ends (``System.ends``),
#: verify's findings (none: only clean systems are stored), each device's distance from
#: the NICs (``summary.level_array``, which compile's summary, lint and the cost model read;
#: stored as bytes) and each host's run of devices (``ir.hosts.HOST_RANGES``). Each device's model number is rebuilt from the device columns.
MEMO = ("ends", "verify", "level_array", HOST_RANGES)
#: Standard callables an entry may name, besides classes of ``topoc.compiler``.
_STANDARD = {("builtins", n) for n in ("tuple", "list", "dict", "set", "frozenset", "complex",
                                       "bytearray", "slice", "range")} | \
    {("array", "array"), ("array", "_array_reconstructor"), ("fractions", "Fraction"),
     ("collections", "OrderedDict"), ("collections", "Counter"),
     ("copyreg", "_reconstructor")}
_OURS = "topoc.compiler."
_SPAN = attrgetter("span")


def min_links() -> int:
    """The smallest system stored: ``$TOPOC_SYSTEM_CACHE_MIN_LINKS`` when it is a whole
    number, else ``MIN_LINKS``."""
    text = os.environ.get("TOPOC_SYSTEM_CACHE_MIN_LINKS", "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) < 19 else MIN_LINKS


def folder() -> Path:
    """Where the entries live."""
    return cache_dir() / "systems"


def key(sources, defines: Mapping[str, int] | None) -> str:
    """The entry's key: every input of the System (module docstring). ``sources`` are the
    program's ``Source`` objects (``Program.sources``: the root file and every file used)."""
    h = hashlib.sha256()
    h.update(f"{FORMAT} {VERSION} {code_hash()} {sys.implementation.cache_tag} "
             f"{limits.LIMITS!r} {limits.MEMORY_COST!r}\n".encode())
    h.update(f"{sorted((defines or {}).items())!r}\n".encode())
    for src in sources:
        path, text = src.path.encode("utf-8", "surrogatepass"), \
            src.text.encode("utf-8", "surrogatepass")
        h.update(f"{len(path)} {len(text)}\n".encode())
        h.update(path)
        h.update(text)
    return h.hexdigest()[:40]


def path_of(entry_key: str) -> Path:
    return folder() / f"{entry_key}.system"


def _allowed(module: str, name: str) -> bool:
    return (module, name) in _STANDARD or module.startswith(_OURS)


class _Unsafe(Exception):
    """A System holds a callable an entry may not name: it is not stored."""


class _Pickler(pickle.Pickler):
    """Writes the System with its devices left out (the first pickle holds them as columns)
    and its compact links as their arrays; refuses to name any callable ``_Unpickler`` would
    refuse to build, so every entry written can be read."""

    def __init__(self, file, devices, hosts):
        super().__init__(file, protocol=5)
        self._devices = devices
        self._hosts = hosts
        self.dispatch_table = copyreg.dispatch_table.copy()
        self.dispatch_table[Links] = lambda lk: (Links, (lk._devices, lk._ends, lk._rows,
                                                         lk._row))
        self.dispatch_table[Ends] = lambda e: (Ends, (e.src, e.dst, e.type, e.types, e.lanes))

    def persistent_id(self, obj):
        if obj is self._devices:
            return "devices"
        return "hosts" if obj is self._hosts and obj else None

    def reducer_override(self, obj):
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            module = getattr(obj, "__module__", None) or ""
            if not _allowed(module, obj.__qualname__) or \
                    (module.startswith(_OURS) and not isinstance(obj, type)):
                raise _Unsafe(f"{module}.{obj.__qualname__}")
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    """Builds only what ``_Pickler`` writes: classes of ``topoc.compiler`` and ``_STANDARD``."""

    def __init__(self, file):
        super().__init__(file)
        self.devices = None         # set between the two loads
        self.hosts = None

    def find_class(self, module, name):
        if not _allowed(module, name):
            raise pickle.UnpicklingError(f"it names {module}.{name}")
        found = super().find_class(module, name)
        if module.startswith(_OURS) and not isinstance(found, type):
            raise pickle.UnpicklingError(f"it names {module}.{name}, not a class")
        return found

    def persistent_load(self, pid):
        if pid == "devices" and self.devices is not None:
            return self.devices
        if pid == "hosts" and self.hosts is not None:
            return self.hosts
        raise pickle.UnpicklingError("it refers to an unknown object")


def _device_columns(system: System) -> tuple | None:
    """The devices as (ids joined by newlines, model codes, span codes, models, spans); None
    when an id holds a newline (the columns could not be split again). The codes are numbered
    in numpy over the objects' ``id`` (``modelcodes``: a call a device took seconds at 8,192
    racks)."""
    import numpy as np

    devices = system.devices
    ids = "\n".join([d.id for d in devices])
    if ids.count("\n") != max(len(devices) - 1, 0):
        return None
    numbers, model_list = model_numbers(system)
    m = array("i", numbers.astype(np.int32).tobytes())
    span_ids = np.fromiter(map(id, map(_SPAN, devices)), dtype=np.int64, count=len(devices))
    _, first, codes = np.unique(span_ids, return_index=True, return_inverse=True)
    span_list = [devices[i].span for i in first.tolist()]
    s = array("i", codes.reshape(-1).astype(np.int32).tobytes())
    return ids, m, s, list(model_list), span_list


def _host_columns(hosts) -> tuple | None:
    """The hosts as (ids joined by newlines, shape codes, shapes: each the member names of an
    index chain, every chain's indices in one array (-1 for a member that is not an array),
    pattern codes, patterns, span codes, spans); None when an id holds a newline. Pickled as
    objects, each host cost a Python ``__getstate__`` (1.5 s for 147,456 trays) and as much
    again to load."""
    ids = "\n".join([h.id for h in hosts])
    if ids.count("\n") != max(len(hosts) - 1, 0):
        return None
    shapes: dict[tuple, int] = {}
    patterns: dict = {}
    spans: dict[int, tuple] = {}
    shape_codes, pattern_codes, span_codes, flat = array("i"), array("i"), array("i"), \
        array("q")
    for h in hosts:
        names = tuple([n for n, _ in h.indices])
        shape_codes.append(shapes.setdefault(names, len(shapes)))
        flat.extend([-1 if i is None else i for _, i in h.indices])
        pattern_codes.append(patterns.setdefault(h.pattern, len(patterns)))
        span_codes.append(spans.setdefault(id(h.span), (len(spans), h.span))[0])
    return (ids, shape_codes, list(shapes), flat, pattern_codes, list(patterns), span_codes,
            [span for _, span in spans.values()])


def _hosts(columns) -> tuple:
    """The hosts ``_host_columns`` stored (a ``Bad`` entry when the columns disagree)."""
    ids, shape_codes, shapes, flat, pattern_codes, patterns, span_codes, spans = columns
    ids = ids.split("\n") if ids else []
    if not len(ids) == len(shape_codes) == len(pattern_codes) == len(span_codes):
        raise Bad("its host columns differ in length")
    flat = flat.tolist()
    if min(flat, default=0) < 0:
        flat = [None if i < 0 else i for i in flat]
    depths = {len(names) for names in shapes}
    if len(depths) == 1:
        # every chain as deep: the indices cut into rows and zipped with the names in C
        depth = depths.pop()
        if depth * len(ids) != len(flat):
            raise Bad("its host columns differ in length")
        rows = zip(*[iter(flat)] * depth) if depth else itertools.repeat((), len(ids))
        chains = list(map(tuple, map(zip, map(shapes.__getitem__, shape_codes), rows)))
    else:
        chains = []
        at = 0
        for code in shape_codes.tolist():
            names = shapes[code]
            chains.append(tuple(zip(names, flat[at:at + len(names)])))
            at += len(names)
        if at != len(flat):
            raise Bad("its host columns differ in length")
    return tuple(make_hosts(ids, chains, map(patterns.__getitem__, pattern_codes),
                            map(spans.__getitem__, span_codes)))


class _Crc:
    """A binary file that counts and checksums what is written through it."""

    def __init__(self, f):
        self.f, self.crc, self.n = f, 0, 0

    def write(self, data) -> int:
        self.crc = zlib.crc32(data, self.crc)
        size = memoryview(data).nbytes
        self.n += size
        return self.f.write(data)


def _header(entry_key: str, length: int, crc: int) -> bytes:
    return f"{MAGIC.decode()} {FORMAT} {entry_key} {length:016d} {crc:08x}\n".encode()


@gc_paused()
def save(entry_key: str, system: System) -> bool:
    """Store ``system`` (checked, without errors) under ``entry_key``; False when it was not
    stored (too small, a callable an entry may not name, an unwritable folder)."""
    if len(system.links) < min_links():
        return False
    columns = _device_columns(system)
    hosts = _host_columns(system.hosts)
    if columns is None or hosts is None:
        return False
    from ..ir.summary import level_array
    memo = {k: system.memo[k] for k in MEMO if k in system.memo and k != "level_array"}
    levels = level_array(system)
    if len(levels) and -1 <= levels.min() and levels.max() < 127:
        memo["level_array"] = array("b", levels.astype("int8").tobytes())
    head = len(_header(entry_key, 0, 0))

    def write(f):
        f.write(b"\0" * head)               # the header, once the payload's size is known
        out = _Crc(f)
        # one pickler for both, so the second shares the first's objects (spans, sources:
        # lint compares sources by identity)
        pickler = _Pickler(out, system.devices, system.hosts)
        pickler.dump((*columns, hosts))
        pickler.dump((system, memo))
        f.seek(0)
        f.write(_header(entry_key, out.n, out.crc))
    try:
        done = write_atomic(path_of(entry_key), write)
    except (_Unsafe, pickle.PicklingError, RecursionError, TypeError, AttributeError):
        return False
    if done:
        prune(keep=path_of(entry_key))
    return done


def _read_exact(fd: int, size: int) -> bytes:
    """``size`` bytes from ``fd`` as one bytes object (one read for a regular file; the
    unpickler's stream then shares it rather than copying it)."""
    data = os.read(fd, size)
    if len(data) < size:
        parts = [data]
        got = len(data)
        while got < size:
            part = os.read(fd, min(size - got, 1 << 26))
            if not part:
                raise Bad("it is shorter than its header says")
            parts.append(part)
            got += len(part)
        data = b"".join(parts)
    return data


@gc_paused()
def load(entry_key: str) -> tuple[System | None, str | None]:
    """(the System stored under ``entry_key``, None) on a hit; (None, None) when there is no
    entry; (None, a note) when a file is there but cannot be used (it is then replaced)."""
    path = path_of(entry_key)
    try:
        opened = open_regular(path, MAX_BYTES)
    except Bad as exc:
        return None, _note(path, str(exc))
    if opened is None:
        return None, None
    fd, size = opened
    try:
        head = os.read(fd, 256)
        line, sep, _ = head.partition(b"\n")
        parts = line.split(b" ")
        if not sep or len(parts) != 5 or parts[0] != MAGIC:
            return None, _note(path, "it is not a system cache entry")
        if parts[1] != str(FORMAT).encode() or parts[2] != entry_key.encode():
            return None, _note(path, "it was written for other input or by other code")
        try:
            length, crc = int(parts[3]), int(parts[4], 16)
        except ValueError:
            return None, _note(path, "its header is damaged")
        if len(line) + 1 + length != size:
            return None, _note(path, "its size does not match its header (truncated?)")
        os.lseek(fd, len(line) + 1, os.SEEK_SET)
        payload = _read_exact(fd, length)
        if zlib.crc32(payload) != crc:
            return None, _note(path, "its checksum does not match (damaged?)")
        unpickler = _Unpickler(io.BytesIO(payload))
        ids, m, s, models, spans, host_columns = unpickler.load()
        ids = ids.split("\n") if ids else []
        if not len(ids) == len(m) == len(s):
            return None, _note(path, "its device columns differ in length")
        devices = tuple(make_devices(ids, map(models.__getitem__, m), map(spans.__getitem__, s)))
        unpickler.devices = devices
        unpickler.hosts = hosts = _hosts(host_columns)
        system, memo = unpickler.load()
        if not isinstance(system, System) or not isinstance(memo, dict) \
                or system.devices is not devices or (hosts and system.hosts is not hosts):
            return None, _note(path, "it does not hold a system")
    except Bad as exc:
        return None, _note(path, str(exc))
    except Exception as exc:        # noqa: BLE001 - a damaged entry is recompiled, whatever broke
        return None, _note(path, f"it cannot be read ({type(exc).__name__}: {exc})"[:300])
    finally:
        os.close(fd)
    _restore_memo(system, memo, m, models)
    try:
        os.utime(path)          # the newest entries are the ones kept
    except OSError:
        pass
    return system, None


def _restore_memo(system: System, memo: dict, m: array, models: list) -> None:
    """The stored memo entries back on ``system``, and each device's model number and model
    ``id`` from the device columns (``summary.model_numbers``, ``summary.model_ids``)."""
    import numpy as np

    for k, v in memo.items():
        if k not in MEMO:
            continue
        if k == "level_array":
            if not isinstance(v, array) or len(v) != len(system.devices):
                continue
            v = np.frombuffer(v, dtype=np.int8).astype(np.int64)
        elif k == HOST_RANGES and not (isinstance(v, tuple) and len(v) == 2 and
                                       all(isinstance(x, array) for x in v)):
            continue
        system.memo[k] = v
    if models and len(m) == len(system.devices):
        numbers = np.frombuffer(m, dtype=np.int32) if m.itemsize == 4 else \
            np.asarray(m, dtype=np.int32)
        system.memo["model_numbers"] = (numbers, list(models))
        ids = np.array([id(x) for x in models], dtype=np.int64)
        system.memo["model_ids"] = (ids[numbers], {id(x): x for x in
                                                   sorted(models, key=id)})


def _note(path: Path, why: str) -> str:
    return f"system cache {path} ignored and rewritten: {why}"


def prune(keep: Path | None = None) -> None:
    """Remove entries past the newest ``KEEP_ENTRIES`` or ``KEEP_BYTES`` (never ``keep``), and
    temporary files left by a writer that died over an hour ago. Only regular files whose
    names an entry or a temporary file has are touched."""
    try:
        with os.scandir(folder()) as it:
            found = []
            now = time.time()
            for e in it:
                if not e.is_file(follow_symlinks=False):
                    continue
                st = e.stat(follow_symlinks=False)
                if e.name.startswith(".") and e.name.endswith(".tmp"):
                    if now - st.st_mtime > 3600:
                        os.unlink(e.path)
                elif e.name.endswith(".system"):
                    found.append((st.st_mtime, st.st_size, e.path))
    except OSError:
        return
    found.sort(reverse=True)
    total = 0
    for n, (_, size, path) in enumerate(found):
        total += size
        if (n >= KEEP_ENTRIES or total > KEEP_BYTES) and (keep is None or Path(path) != keep):
            try:
                os.unlink(path)
            except OSError:
                pass
