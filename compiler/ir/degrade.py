"""Degraded systems: the machine that is left when parts fail (``degrade``).

A ``Faults`` value says what is down or slow: ``fail`` selectors remove devices (and every
link they end) or the links between two sets of devices; ``degrade`` selectors keep links at a
reduced rate (a cable that trained at a lower speed, a NIC port at half rate). A selector names

- a device by id, or everything under a group instance by its id (``cluster.node3``,
  ``rack.tray4``: a compute tray and all it holds);
- devices by a glob over ids (``cluster.node*.nic3``: NIC 3 of every node, a rail);
- links as ``A<->B`` with a device selector on each side (``rack.tray0.gpu0<->rack.nvswitch*``).

``degrade`` takes ``SELECTOR=RATE``: a fraction of the declared rate (``50%``) or a rate per lane
and direction (``200 Gb/s``); a device selector alone degrades every link it ends.

Failed GPUs leave the rank space: the survivors keep their order and are ranked 0..n-1, as
NCCL numbers the ranks of a job started on them. A parallel block whose size no longer matches
the surviving GPUs is left out, with the reason (``Degraded.dropped``): the mapping has to be
planned again on what is left (``topoc plan --fail ...``). Everything downstream (routes,
rings, trees, NVLS groups, the tuner, lint) reads the degraded system as it reads any other.
"""

from __future__ import annotations

import contextlib
import fnmatch
import itertools
import re
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from ..base.diagnostics import CompileError, Source, Span, error, plural, suggest
from ..base.units import RATE, Quantity, human
from . import reisland, relocate
from .incidence import Ends, MaskedIncidence
from .links import Links
from .summary import LEVELS_BASE
from .system import SCALEOUT_CLASSES, Link, LinkType, System

#: A degrade selector's rate: '50%' or a rate with its unit.
_RATE = re.compile(r"^\s*(.+?)\s*=\s*(.+?)\s*$")


class FaultError(ValueError):
    """A selector that names nothing in the system, or a rate that is not one (the message
    says which and suggests the closest id)."""


@attrs.frozen
class Faults:
    """What is down (``fail``) and what runs slow (``degrade``: selector, rate), as given."""

    fail: tuple[str, ...] = ()
    degrade: tuple[tuple[str, str], ...] = ()
    #: where a failure file wrote each selector (None for a command-line word), so that one
    #: that names nothing is reported at its line
    fail_at: tuple[Span | None, ...] = attrs.field(default=(), eq=False, repr=False)
    degrade_at: tuple[Span | None, ...] = attrs.field(default=(), eq=False, repr=False)

    def __bool__(self) -> bool:
        return bool(self.fail or self.degrade)

    @classmethod
    def read(cls, text: str, path: str) -> Faults:
        """A failure file: one ``fail SELECTOR`` or ``degrade SELECTOR = RATE`` per line, ``#``
        comments, blank lines; a line of anything else is a CompileError at that line."""
        fail, slow, errors, fail_at, slow_at = [], [], [], [], []
        source = Source(path, text)
        for n, raw in enumerate(source.lines, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            verb, _, rest = line.partition(" ")
            rest = rest.strip()
            col = raw.index(verb) + 1
            at = raw.index(rest, col + len(verb) - 1) + 1 if rest else col
            if verb == "fail" and rest and "=" not in rest:
                fail.append(rest)
                fail_at.append(Span(source, n, at, n, at + len(rest)))
            elif verb == "degrade" and (m := _RATE.match(rest)):
                slow.append((m.group(1), m.group(2)))
                slow_at.append(Span(source, n, at, n, at + len(m.group(1))))
            else:
                errors.append(error(
                    "E170", "a failure file line is 'fail SELECTOR' or 'degrade SELECTOR = "
                    "RATE' (docs/failures.md)" + suggest(verb, ("fail", "degrade")),
                    Span(source, n, col, n, len(raw) + 1)))
        if errors:
            raise CompileError(errors)
        return cls(tuple(fail), tuple(slow), tuple(fail_at), tuple(slow_at))

    def __add__(self, other: Faults) -> Faults:
        def where(f: Faults) -> tuple:
            return (f.fail_at + (None,) * len(f.fail))[:len(f.fail)], \
                (f.degrade_at + (None,) * len(f.degrade))[:len(f.degrade)]
        (fa, da), (fb, db) = where(self), where(other)
        return Faults(self.fail + other.fail, self.degrade + other.degrade, fa + fb, da + db)

    @classmethod
    def parse(cls, fail: Iterable[str] = (), degrade: Iterable[str] = ()) -> Faults:
        """From command-line words: ``--fail SEL`` and ``--degrade SEL=RATE``."""
        pairs = []
        for text in degrade:
            m = _RATE.match(text)
            if not m:
                raise FaultError(f"--degrade {text}: write SELECTOR=RATE, as in "
                                 "'cluster.node0.nic3=50%' or 'cluster.node0.nic3=200Gb/s'")
            pairs.append((m.group(1), m.group(2)))
        return cls(tuple(fail), tuple(pairs))


@attrs.frozen
class Mask:
    """What faults take away, over the healthy system's arrays: the failed devices (indices
    into ``system.devices``, ascending) and each link's flag, lost or kept (a numpy bool
    array in link order)."""

    devices: tuple[int, ...]
    lost: Any = attrs.field(eq=False, repr=False)
    #: links named by ``A<->B`` selectors are among ``lost`` (else every lost link ends at a
    #: failed device)
    cut: bool = False


@attrs.frozen
class Degraded:
    """A degraded system and what the faults did to the original."""

    system: System
    failed_devices: tuple[str, ...]
    #: the original system's links the faults removed (blast sums what they carried)
    lost: tuple[Link, ...]
    degraded_links: int
    #: parallel blocks left out: (name, why)
    dropped: tuple[tuple[str, str], ...]
    gpus_before: int

    @property
    def failed_links(self) -> int:
        return len(self.lost)

    def summary(self) -> list[str]:
        """One line per effect, for a note on stderr or a report."""
        out = []
        gpus = self.gpus_before - len(self.system.gpus)
        if self.failed_devices:
            out.append(f"failed: {plural(len(self.failed_devices), 'device')} "
                       f"({plural(gpus, 'GPU')}), {plural(self.failed_links, 'link')} gone; "
                       f"{len(self.system.gpus)} of {self.gpus_before} GPUs survive")
        elif self.failed_links:
            out.append(f"failed: {plural(self.failed_links, 'link')}")
        if self.degraded_links:
            out.append(f"degraded: {plural(self.degraded_links, 'link')}")
        out += [f"parallel block '{name}' left out: {why}" for name, why in self.dropped]
        return out


def _ids(system: System, selector: str) -> list[int]:
    """Indices of the devices a selector names: an id, an instance (id prefix), or a glob."""
    devices = system.devices
    if any(c in selector for c in "*?["):
        return [i for i, d in enumerate(devices) if fnmatch.fnmatchcase(d.id, selector)]
    prefix = selector + "."
    return [i for i, d in enumerate(devices) if d.id == selector or d.id.startswith(prefix)]


def _select(system: System, selector: str, flag: str) -> list[int]:
    found = _ids(system, selector.strip())
    if not found:
        names = {d.id for d in system.devices}
        raise FaultError(f"{flag} {selector}: no device, instance or glob match in "
                         f"'{system.name}'" + suggest(selector.strip(), names))
    return found


def _link_pairs(system: System, selector: str, flag: str):
    """(src ids, dst ids) for ``A<->B``, or (ids, None) for a device selector alone."""
    if "<->" in selector:
        a, b = selector.split("<->", 1)
        return set(_select(system, a, flag)), set(_select(system, b, flag))
    return set(_select(system, selector, flag)), None


def _rate(text: str, link: Link, flag: str) -> float:
    """The reduced per-lane rate: a fraction of the declared one, or an absolute rate (never
    above the declared rate: a degraded cable does not speed up)."""
    text = text.strip()
    if text.endswith("%"):
        try:
            share = float(text[:-1]) / 100
        except ValueError:
            share = -1.0
        if not 0 < share <= 1:
            raise FaultError(f"{flag}: '{text}' is not a share between 0 % (exclusive) and 100 %")
        return link.type.bandwidth * share
    m = re.fullmatch(r"([\d.]+(?:[eE][+-]?\d+)?)\s*(\S+)", text)
    q = None
    if m:
        try:
            q = Quantity.parse(m.group(1), m.group(2))
        except ValueError:
            q = None
    if q is None or q.dim != RATE or q.value <= 0:
        raise FaultError(f"{flag}: '{text}' is not a rate: write a share ('50%') or a rate per "
                         "lane and direction ('200 Gb/s')")
    rate = float(q.as_number())
    if rate > link.type.bandwidth:
        raise FaultError(f"{flag}: {human(rate, RATE)} is above the link's declared "
                         f"{human(link.type.bandwidth, RATE)} ({link.type.name})")
    return rate


def degrade(system: System, faults: Faults) -> Degraded:
    """The system with ``faults`` applied (see the module docstring); FaultError for a
    selector that names nothing."""
    gone: set[int] = set()
    cut: list = []
    for selector, at in itertools.zip_longest(faults.fail, faults.fail_at[:len(faults.fail)]):
        flag = "--fail" if at is None else "fail"
        with _at_line(at):
            if "<->" in selector:
                cut.append(_link_pairs(system, selector, flag))
            else:
                gone.update(_select(system, selector, flag))
    slow = []
    for (sel, rate), at in itertools.zip_longest(faults.degrade,
                                                 faults.degrade_at[:len(faults.degrade)]):
        with _at_line(at):
            slow.append((_link_pairs(system, sel, "--degrade" if at is None else "degrade"),
                         rate))
    return degrade_mask(system, mask(system, gone, cut), slow)


@contextlib.contextmanager
def _at_line(at: Span | None):
    """A selector from a failure file that names nothing is E171 at its line (a diagnostic
    in that file, exit 1); from the command line it stays a FaultError (a usage error)."""
    try:
        yield
    except FaultError as exc:
        if at is None:
            raise
        raise CompileError([error("E171", str(exc), at)]) from None


def mask(system: System, gone: Iterable[int], cut: Sequence = ()) -> Mask:
    """The mask of failed devices (indices into ``system.devices``) and of the links they end
    or the ``cut`` pairs name (``_link_pairs``), over the system's integer link ends: one pass
    in numpy, no ``Link`` object made."""
    import numpy as np

    src, dst = system.ends.arrays()
    failed = np.zeros(len(system.devices), dtype=np.bool_)
    failed[sorted(gone)] = True
    lost = failed[src] | failed[dst]
    for a, b in cut:
        lost |= _touching(len(system.devices), src, dst, (a, b))
    return Mask(tuple(np.flatnonzero(failed).tolist()), lost, bool(cut))


def _touching(n: int, src, dst, ends):
    """Each link's flag: one end in ``a`` (``b`` None), or one end in ``a`` and the other in
    ``b`` (``_link_pairs``' sets of device indices)."""
    import numpy as np

    a, b = ends
    fa = np.zeros(n, dtype=np.bool_)
    fa[sorted(a)] = True
    if b is None:
        return fa[src] | fa[dst]
    fb = np.zeros(n, dtype=np.bool_)
    fb[sorted(b)] = True
    return (fa[src] & fb[dst]) | (fb[src] & fa[dst])


def degrade_mask(system: System, m: Mask, slow: Sequence = ()) -> Degraded:
    """The degraded system of a mask (``mask``) and the ``slow`` (link ends, rate) pairs:
    what ``degrade`` returns, made from the healthy system's arrays. The surviving links keep
    their order; on a compact link list (``ir.links.Links``) the new one is the same arrays
    with the lost rows left out, so no ``Link`` object is made but the lost and slowed ones."""
    import numpy as np

    links_in = system.links
    src, dst = system.ends.arrays()
    lost_at = np.flatnonzero(m.lost).tolist()
    lost = [links_in[i] for i in lost_at]
    changed: list[tuple[str, str]] = [(link.src, link.dst) for link in lost]
    # link index -> its slowed type, in link order as the selectors apply one after another
    retyped: dict[int, LinkType] = {}
    degraded = 0
    # (rate text, link type) -> the slowed type: each rate parsed and checked once per type
    types: dict[tuple[str, str], LinkType] = {}
    if slow:
        hits = [_touching(len(system.devices), src, dst, ends) & ~m.lost for ends, _ in slow]
        for i in np.flatnonzero(np.logical_or.reduce(hits)).tolist():
            link = links_in[i]
            for (_, rate), hit in zip(slow, hits):
                if hit[i]:
                    key = (rate, link.type.name)
                    if key not in types:
                        types[key] = attrs.evolve(
                            link.type, bandwidth=_rate(rate, link, "--degrade " + rate))
                    link = attrs.evolve(link, type=types[key])
                    degraded += 1
                    changed.append((link.src, link.dst))
            retyped[i] = link.type
    failed = set(m.devices)
    if failed:
        # the slices between failed devices, joined in C (not a test per device)
        cuts = [-1, *sorted(failed), len(system.devices)]
        devices = tuple(itertools.chain.from_iterable(
            system.devices[a + 1:b] for a, b in zip(cuts, cuts[1:])))
    else:
        devices = system.devices
    links = _kept_links(system, devices, m, retyped)
    survivors = len(system.gpus) - sum(1 for i in failed if system.devices[i].kind == "gpu")
    kept, dropped = [], []
    for p in system.parallels:
        if p.world == survivors:
            kept.append(p)
        else:
            dropped.append((p.name, f"it maps {p.world} GPUs and {survivors} survive; plan "
                                    "again on what is left (topoc plan --fail ...)"))
    hosts = system.hosts
    if failed:              # the hosts that still hold a device
        hosts = _holding(system, failed)
    out = attrs.evolve(system, devices=devices, links=links, parallels=tuple(kept),
                       hosts=hosts, skipped=())
    if isinstance(links, Links):
        out.memo["ends"] = links.ends
    if "device_indices" in system.memo:     # system.device_indices'
        out.memo["device_indices"] = ShiftedIndex(
            system.memo["device_indices"], sorted(failed),
            {system.devices[i].id for i in failed}) if failed else system.memo["device_indices"]
    _share_models(system, out, m.devices)
    _share_views(system, out, m, lost, retyped)
    if not retyped and not isinstance(out.links, tuple):
        loc = reisland.patched(system, out, m.devices, m.lost)
        if loc is not None:
            object.__setattr__(out, "locality", loc)
    # The instances that hold a fault (a failed device, an end of a failed or slow link): the
    # cost model samples a few islands of a large group as alike, and must sample these too.
    touched = [system.devices[i].id for i in sorted(failed)] + \
        [e for link in changed for e in link]
    out.memo["faults"] = frozenset(p for d in touched for p in holders_of(d))
    fault_ranks(system, out, m.devices)
    return Degraded(out, tuple(system.devices[i].id for i in sorted(failed)), tuple(lost),
                    degraded, tuple(dropped), len(system.gpus))


def _share_models(system: System, out: System, failed: tuple[int, ...]) -> None:
    """The degraded system's device models by number (``modelcodes``): the healthy arrays
    less the failed devices, when every model keeps a device (else its model list would
    name one it lacks: it is made again when asked)."""
    import numpy as np

    if "model_ids" not in system.memo or "model_numbers" not in system.memo:
        return
    (ids, by_id), (numbers, models) = system.memo["model_ids"], system.memo["model_numbers"]
    if failed:
        at = list(failed)
        ids, numbers = np.delete(ids, at), np.delete(numbers, at)
        if not np.bincount(numbers, minlength=len(models)).all():
            return
    out.memo["model_ids"] = (ids, by_id)
    out.memo["model_numbers"] = (numbers, models)


def _share_views(system: System, out: System, m: Mask, lost: list[Link],
                 retyped: dict) -> None:
    """Hand the degraded system what the healthy one has already built and the faults
    provably leave as it was, so it is not rebuilt over the whole system: each device's
    links (the healthy incidence, keyed by id, less the lost links), the distances from the
    NICs when no scale-out link is lost (only those links and the NICs and DPUs they end
    make the levels), and the reach labels as a bound (links taken away join nothing:
    labels that differ still mean no path, equal ones send the router to search, which
    answers itself). Nothing is shared past a slowed link (its type differs)."""
    import numpy as np

    if retyped:
        return
    if system.has_view("locality"):
        # the locality facts searched GPU by GPU are copied but for the host parts the
        # failure touches (``ir.relocate``)
        out.memo["locality.base"] = relocate.Base(system.locality, m.devices, lost)
    if system.has_view("incidence"):
        object.__setattr__(out, "incidence", MaskedIncidence(system.incidence, lost))
    if not any(x.cls in SCALEOUT_CLASSES for x in lost) or \
            (not m.cut and levels_kept(system, set(m.devices))):
        # every survivor keeps its distance from the NICs: the healthy levels less the
        # failed devices
        if system.has_view("levels"):
            levels = system.levels
            gone = [d for d in (system.devices[i].id for i in m.devices) if d in levels]
            if gone:
                levels = dict(levels)
                for d in gone:
                    del levels[d]
            object.__setattr__(out, "levels", levels)
        if "level_array" in system.memo:       # summary.level_array's
            out.memo["level_array"] = np.delete(system.memo["level_array"], list(m.devices)) \
                if m.devices else system.memo["level_array"]
    elif system.has_view("levels") and "level_array" in system.memo:
        # the levels are found again over the degraded links; their dict is patched from
        # the healthy one where they differ (``summary._levels``)
        out.memo[LEVELS_BASE] = (system.levels, np.delete(system.memo["level_array"],
                                                          list(m.devices)),
                                 [system.devices[i].id for i in m.devices])
    for key in [k for k in system.memo if isinstance(k, tuple) and k[0] == "reach_labels"]:
        # every link classes' labels (``locality.reach_labels``), the failed devices' left out
        out.memo[key] = np.delete(system.memo[key], list(m.devices)) if m.devices \
            else system.memo[key]
    out.memo[REACH_BASE] = (system, tuple(m.devices))


#: A degraded system's memo entry: (the healthy system, the failed device indices), whose
#: reach labels bound the degraded one's (``reach_bound``).
REACH_BASE = "reach_labels.base"


def reach_bound(system: System, classes: tuple[str, ...] | None):
    """``locality.reach_labels`` where a router reads them, or on a degraded system the
    healthy system's less the failed devices (made there once, for every degraded copy):
    links taken away join nothing, so labels that differ still mean no path, and equal ones
    send the router to search, which answers NoRoute itself. A router on a degraded system
    asked for labels of link classes the healthy system never needed (a leaf's loss sends a
    search where none went before) joined every link of the degraded system, a second at
    8,192 racks, per failure class."""
    from .locality import reach_labels

    key = ("reach_labels", classes)
    found = system.memo.get(key)
    if found is not None:
        return found
    base = system.memo.get(REACH_BASE)
    if base is None:
        return reach_labels(system, classes)
    import numpy as np

    healthy, failed = base
    found = reach_bound(healthy, classes)
    found = system.memo[key] = np.delete(found, list(failed)) if failed else found
    return found


def _kept_links(system: System, devices: tuple, m: Mask, retyped: dict[int, LinkType]):
    """The surviving links in order: a compact list over the kept rows of the healthy arrays
    (device indices renumbered past the failed devices, slowed links given their type), or a
    tuple of objects for a system whose links are objects."""
    import numpy as np

    links_in = system.links
    keep = ~m.lost
    if not isinstance(links_in, Links):
        out = []
        for i in np.flatnonzero(keep).tolist():
            link = links_in[i]
            if i in retyped:
                link = attrs.evolve(link, type=retyped[i])
            out.append(link)
        return tuple(out)
    e = system.ends
    src, dst, code, lanes = e.arrays(None, ("src", "dst", "type", "lanes"))
    renumber = (np.cumsum(~_flags(len(system.devices), m.devices)) - 1).astype(np.int32)
    types = list(e.types)
    typecode = e.type.typecode
    if retyped:
        code, typecode = code.astype(np.uint16), "H"
        for i, t in retyped.items():
            if t not in types:
                types.append(t)
            code[i] = types.index(t)
    ends = Ends(column_array("i", renumber[src[keep]]), column_array("i", renumber[dst[keep]]),
                column_array(typecode, code[keep]), tuple(types),
                column_array("i", lanes[keep]))
    return links_in.kept(devices, ends, keep)


def column_array(typecode: str, column) -> array:
    """A numpy column as the ``array.array`` of ``typecode`` that ``Ends`` holds, copied
    once from the column's buffer (13.7 M rows at 8,192 racks: no bytes object between)."""
    import numpy as np

    dtype = {"i": np.int32, "H": np.uint16, "B": np.uint8}[typecode]
    out = array(typecode)
    out.frombytes(memoryview(np.ascontiguousarray(column, dtype=dtype)).cast("B"))
    return out


#: A degraded system's device id -> index (``system.device_indices``) read from the healthy
#: system's, the failed ids left out and the rest moved down (``reisland.Shifted``).
ShiftedIndex = reisland.Shifted


def _flags(n: int, indices):
    import numpy as np

    out = np.zeros(n, dtype=np.bool_)
    out[list(indices)] = True
    return out


def _holding(system: System, failed: set[int]) -> tuple:
    """``system.hosts`` less those that no longer hold a device. Only a host that is or holds
    a failed device can go; those are looked up among the devices by their id prefixes."""
    ids = {system.devices[i].id for i in failed}
    hit = {p for d in ids for p in (*holders_of(d), d)} & \
        {h.id for h in system.hosts if h.id != system.name}
    if not hit:
        return system.hosts
    from .instances import MEMO
    tree = system.memo.get(MEMO)
    if tree is not None:
        # each hit host's devices (itself, if a device, and those its id prefixes) read from
        # the instance table blast made, not found by a prefix test of every device
        from .system import device_indices
        index = device_indices(system)
        holding = set()
        for h in hit:
            held = list(tree.devices(h) or ())
            if h in index:
                held.append(index[h])
            if any(i not in failed for i in held):
                holding.add(h)
        return tuple(h for h in system.hosts if h.id not in hit or h.id in holding)
    prefixes = tuple(hit) + tuple(h + "." for h in hit)
    holding = set()
    for d in system.devices:
        if d.id.startswith(prefixes) and d.id not in ids:
            holding.update(p for p in (*holders_of(d.id), d.id) if p in hit)
    return tuple(h for h in system.hosts if h.id not in hit or h.id in holding)


def levels_kept(system: System, failed: set[int]) -> bool:
    """Whether every device that survives the failure of ``failed`` (device indices; the
    lost links being those they end) keeps its distance from the NICs (``summary.levels``):
    each surviving scale-out neighbour of a failed device at level l > 0 keeps a surviving
    neighbour at level l - 1, and one at level 0 (a NIC) keeps a scale-out link. Distances
    only grow when devices go; a survivor whose distance grew, taken at its least healthy
    level, lost the neighbour its shortest path came through, so it is such a neighbour, and
    the one at l - 1 it kept still is at l - 1: none grew. Only the neighbours of a failed
    device are read."""
    from .summary import level_array
    from .system import device_indices

    level, index, devices = level_array(system), device_indices(system), system.devices
    ids = {devices[i].id for i in failed}
    incidence = system.incidence
    for i in failed:
        for link in incidence.get(devices[i].id, ()):
            w = link.dst if link.src == devices[i].id else link.src
            if w in ids or link.cls not in SCALEOUT_CLASSES:
                continue
            lv = int(level[index[w]])
            if lv < 0:
                continue
            kept = [u for x in incidence.get(w, ()) if x.cls in SCALEOUT_CLASSES and
                    (u := x.dst if x.src == w else x.src) not in ids]
            if not (kept if lv == 0 else any(level[index[u]] == lv - 1 for u in kept)):
                return False
    return True


#: A degraded system's memo entry: a numpy bool array over its ranks, whether an instance of
#: its ``faults`` holds the GPU (what the cost model's sampling reads, ``fault_ranks``).
FAULT_RANKS = "fault_ranks"


def fault_ranks(system: System, out: System, failed: Sequence[int]) -> None:
    """Set ``out.memo[FAULT_RANKS]`` (``out``: ``system`` degraded, ``failed`` its failed
    device indices) from the healthy system's instance table, where one was made (``blast``
    makes it): each rank's GPU against the instances of ``out.memo["faults"]`` in numpy,
    instead of a prefix test of every GPU's id per degraded system."""
    import numpy as np

    from .instances import MEMO
    from .modelcodes import model_flags

    tree = system.memo.get(MEMO)
    if tree is None:
        return
    rows = np.flatnonzero(model_flags(system, lambda m: m.kind == "gpu"))
    hit = tree.under(out.memo["faults"], rows)
    if len(failed):
        hit = hit[~np.isin(rows, np.asarray(failed, dtype=np.int64))]
    out.memo[FAULT_RANKS] = hit


def holders_of(device_id: str) -> list[str]:
    """The instances below the system that hold a device, outermost first, not the device
    itself (``c.node5.nic3`` -> ``c.node5``; a top-level ``c.leaf3`` -> none)."""
    parts = device_id.split(".")
    return [".".join(parts[:k]) for k in range(2, len(parts))]


def apply(system: System, fail: Sequence[str] = (), degrade_: Sequence[str] = (),
          faults: Faults = Faults()) -> Degraded:
    """``degrade`` from command-line words and a failure file's faults (what the CLI and the
    Python API call)."""
    return degrade(system, faults + Faults.parse(fail, degrade_))
