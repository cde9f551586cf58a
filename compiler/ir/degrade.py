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

import fnmatch
import re
from collections.abc import Iterable, Sequence

import attrs

from ..base.diagnostics import CompileError, Source, Span, error, plural, suggest
from ..base.units import RATE, Quantity, human
from .system import Link, LinkType, System, device_indices

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

    def __bool__(self) -> bool:
        return bool(self.fail or self.degrade)

    @classmethod
    def read(cls, text: str, path: str) -> Faults:
        """A failure file: one ``fail SELECTOR`` or ``degrade SELECTOR = RATE`` per line, ``#``
        comments, blank lines; a line of anything else is a CompileError at that line."""
        fail, slow, errors = [], [], []
        source = Source(path, text)
        for n, raw in enumerate(source.lines, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            verb, _, rest = line.partition(" ")
            rest = rest.strip()
            col = raw.index(verb) + 1
            if verb == "fail" and rest and "=" not in rest:
                fail.append(rest)
            elif verb == "degrade" and (m := _RATE.match(rest)):
                slow.append((m.group(1), m.group(2)))
            else:
                errors.append(error(
                    "E170", "a failure file line is 'fail SELECTOR' or 'degrade SELECTOR = "
                    "RATE' (docs/failures.md)", Span(source, n, col, n, len(raw) + 1)))
        if errors:
            raise CompileError(errors)
        return cls(tuple(fail), tuple(slow))

    def __add__(self, other: Faults) -> Faults:
        return Faults(self.fail + other.fail, self.degrade + other.degrade)

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


def _touches(s: int, d: int, ends) -> bool:
    """Whether a link between device indices ``s`` and ``d`` is one ``ends`` names."""
    a, b = ends
    if b is None:
        return s in a or d in a
    return (s in a and d in b) or (s in b and d in a)


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
    index = device_indices(system)
    gone: set[int] = set()
    cut: list = []
    for selector in faults.fail:
        if "<->" in selector:
            cut.append(_link_pairs(system, selector, "--fail"))
        else:
            gone.update(_select(system, selector, "--fail"))
    slow = [(_link_pairs(system, sel, "--degrade"), rate) for sel, rate in faults.degrade]
    links: list[Link] = []
    lost: list[Link] = []
    degraded = 0
    # (rate text, link type) -> the slowed type: each rate parsed and checked once per type
    types: dict[tuple[str, str], LinkType] = {}
    changed: list[tuple[str, str]] = []
    for link in system.links:
        s, d = index[link.src], index[link.dst]
        if s in gone or d in gone or any(_touches(s, d, ends) for ends in cut):
            lost.append(link)
            changed.append((link.src, link.dst))
            continue
        for ends, rate in slow:
            if _touches(s, d, ends):
                key = (rate, link.type.name)
                if key not in types:
                    types[key] = attrs.evolve(link.type,
                                              bandwidth=_rate(rate, link, "--degrade " + rate))
                link = attrs.evolve(link, type=types[key])
                degraded += 1
                changed.append((link.src, link.dst))
        links.append(link)
    devices = tuple(d for i, d in enumerate(system.devices) if i not in gone)
    survivors = sum(1 for d in devices if d.kind == "gpu")
    kept, dropped = [], []
    for p in system.parallels:
        if p.world == survivors:
            kept.append(p)
        else:
            dropped.append((p.name, f"it maps {p.world} GPUs and {survivors} survive; plan "
                                    "again on what is left (topoc plan --fail ...)"))
    hosts = system.hosts
    if gone:                # the hosts that still hold a device
        holding = {p for d in devices for p in (*holders_of(d.id), d.id)}
        hosts = tuple(h for h in system.hosts if h.id in holding or h.id == system.name)
    out = attrs.evolve(system, devices=devices, links=tuple(links), parallels=tuple(kept),
                       hosts=hosts, skipped=())
    # The instances that hold a fault (a failed device, an end of a failed or slow link): the
    # cost model samples a few islands of a large group as alike, and must sample these too.
    touched = [system.devices[i].id for i in gone] + [e for link in changed for e in link]
    out.memo["faults"] = frozenset(p for d in touched for p in holders_of(d))
    return Degraded(out, tuple(system.devices[i].id for i in sorted(gone)), tuple(lost),
                    degraded, tuple(dropped), len(system.gpus))


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
