"""Hosts: which devices share one OS image, and what each is called on the network.

A host is a group instance (or device) marked ``host`` in the file: a DGX node, a GB200
compute tray with its two Graces. A file without the marker gets the default: the devices a CPU
reaches over PCIe, NVLink-C2C and socket links (never NVLink, InfiniBand or Ethernet) form one
host, named after the deepest group instance that holds them all; islands that share that
instance (a GB200 tray's two Superchips) are one host. Hostnames come, first match
wins, from a mapping (host id or default name -> hostname), a pattern given by the caller
(``--hostnames "gb-{rack:02}-{tray:02}"``), the pattern written in the file, or the default:
the host's path below the system with dots as dashes (``rack0-tray3``).
"""

from __future__ import annotations

import itertools
import os
import re
import string
from collections.abc import Mapping
from operator import attrgetter, itemgetter

import attrs

from ..base.limits import LIMITS
from ..base.text import visible
from .modelcodes import model_flags
from .system import System

#: Link classes that stay inside one host when hosts are inferred.
LOCAL_CLASSES = ("pcie", "nvlink_c2c", "inter_socket")
_STEP = re.compile(r"^(.*?)(\d+)$")
#: The width of a format spec (``[[fill]align][sign][#][0][width]...``): the digits after the
#: optional fill/align, sign, '#' and '0'.
_WIDTH = re.compile(r"(?:.?[<>=^])?[+\- ]?#?0?([0-9]*)")
#: Characters of the widest index a pattern fills in (an array holds at most 1,000,000).
_INDEX_DIGITS = 20


class HostnameError(ValueError):
    """A hostname pattern or mapping that cannot name the hosts (the message says why)."""


@attrs.frozen
class HostInfo:
    """One host: its id (path), its hostname and its devices' ids in declaration order."""

    id: str
    name: str
    devices: tuple[str, ...]


def _steps(system: System, host_id: str) -> tuple[tuple[str, int | None], ...]:
    """(member, index) per path step below the system, read back from the id."""
    out = []
    for part in host_id.split(".")[1:]:
        m = _STEP.match(part)
        out.append((m.group(1), int(m.group(2))) if m else (part, None))
    return tuple(out)


def pattern_fields(pattern: str) -> list[str]:
    """The field names a pattern reads (``{rack:02}`` -> ``rack``); ``HostnameError`` for a
    pattern whose longest name (literal text plus field widths) could pass
    ``LIMITS.hostname``, or whose spec holds a nested field, before any name is built (a width
    of ``02900000000`` asked for gigabytes per name)."""
    shown = visible(pattern[:80] + ("..." if len(pattern) > 80 else ""))
    try:
        parts = list(string.Formatter().parse(pattern))
    except ValueError as exc:
        raise HostnameError(f"hostname pattern '{shown}': {exc}") from None
    longest = 0
    for literal, field, spec, conversion in parts:
        longest += len(literal)
        if field is None:
            continue
        if "{" in (spec or "") or conversion:
            raise HostnameError(f"hostname pattern '{shown}': field '{field}' has a nested field "
                                "or a conversion; write an index with a format such as "
                                "{node:02}")
        width = _WIDTH.match(spec or "")
        digits = width.group(1) if width else ""
        wide = len(digits) > 5 or (digits and int(digits) > LIMITS.hostname)
        longest += (LIMITS.hostname + 1 if wide else int(digits or 0)) + _INDEX_DIGITS
        if longest > LIMITS.hostname:
            break
    if longest > LIMITS.hostname:
        raise HostnameError(f"hostname pattern '{shown}' can make names longer than "
                            f"{LIMITS.hostname} characters, the longest a hostname can be")
    return [f for _, f, _, _ in parts if f is not None]


def format_hostname(pattern: str, indices, ordinal: int) -> str:
    """Fill a pattern: ``{member}`` is that array's index on the host's path, ``{host}`` the
    host's position among all hosts; format specs as Python's (``{tray:02}``)."""
    values: dict[str, int] = {"host": ordinal}
    for name, idx in indices:
        if idx is not None:
            values[name] = idx
    for f in pattern_fields(pattern):
        if f == "":
            raise HostnameError(f"hostname pattern '{pattern}': name the index in each "
                                "{}, as in {node:02}")
        if f not in values:
            known = ", ".join(sorted(values))
            raise HostnameError(f"hostname pattern '{pattern}' reads '{{{f}}}', but the host "
                                f"path has no array '{f}' (it has {known})")
    try:
        return pattern.format(**values)
    except (ValueError, KeyError, IndexError) as exc:
        raise HostnameError(f"hostname pattern '{pattern}': {exc}") from None


def _components(n: int, src, dst):
    """Each of ``n`` devices' component over the links ``src[i] <-> dst[i]`` (numpy arrays of
    device indices), named by its smallest device index (``locality._components``, in numpy:
    a union-find in Python took 1.6 s over the 330,000 local links of 16,384 DGX nodes)."""
    import numpy as np

    from .locality import _components as components
    return components(np.arange(n, dtype=np.int64), src.astype(np.int64), dst.astype(np.int64))


def _inferred(system: System) -> list[tuple[str, list[int]]]:
    """(id, device indices in device order) per host when the file marks none: CPU-local
    components."""
    import numpy as np

    # The local links' arrays (System.ends), no Link object made for them; components in
    # numpy, each named by its first device, as a union-find towards the smaller index names.
    devices = system.devices
    n = len(devices)
    src, dst = system.ends.arrays(lambda t: t.cls in LOCAL_CLASSES)
    label = _components(n, src, dst)
    cpu = model_flags(system, lambda m: m.kind == "cpu")
    with_cpu = np.zeros(n, dtype=np.bool_)
    with_cpu[label[cpu]] = True
    kept = np.flatnonzero(with_cpu[label])          # devices of components with a CPU
    kept = kept[np.argsort(label[kept], kind="stable")]    # by component, in device order
    roots = label[kept]
    cuts = (np.flatnonzero(roots[1:] != roots[:-1]) + 1).tolist()
    merged: dict[str, list[int]] = {}
    kept_list = kept.tolist()
    for a, b in zip([0, *cuts], [*cuts, len(kept_list)] if kept_list else []):
        members = kept_list[a:b]
        ids = [devices[i].id for i in members]
        # The dotted prefix all ids share but their last part: the parts before the last dot
        # of the longest common prefix of the smallest and the largest id (that of them all).
        common = os.path.commonprefix([min(ids), max(ids)])
        cut = common.rfind(".")
        parts = common[:cut].split(".") if cut > 0 else []
        host_id = ".".join(parts) if len(parts) > 1 else ids[0].rsplit(".", 1)[0]
        # CPU islands under one instance (a GB200 tray's two Graces) are one host.
        merged.setdefault(host_id, []).extend(members)
    # Devices no CPU reaches over local links (a DGX's NVSwitches) belong to the host whose
    # instance holds them (the longest host id that prefixes theirs, found by walking the id's
    # own prefixes: a scan of every host per device was quadratic); switches outside every
    # host (a leaf, an NVL72 switch tray) to none.
    for i in np.flatnonzero(~with_cpu[label]).tolist():
        prefix = devices[i].id
        while "." in prefix:
            prefix = prefix.rsplit(".", 1)[0]
            found = merged.get(prefix)
            if found is not None:
                found.append(i)
                break
    out = [(h, sorted(members)) for h, members in merged.items()]
    out.sort(key=lambda h: h[1][0])
    return out


#: ``System.memo`` key of each marked host's devices as a run of device indices: (first
#: indices, counts), two ``array("i")`` in ``System.hosts`` order. Elaborate's layout knows
#: them (an instance's devices are consecutive); a system made otherwise has none.
HOST_RANGES = "host_ranges"


def _ranges(system: System) -> list[list[int]] | None:
    """Each marked host's device indices from ``HOST_RANGES``, when the memo holds them for
    these hosts and devices."""
    found = system.memo.get(HOST_RANGES)
    if found is None:
        return None
    import numpy as np

    firsts, counts = (np.asarray(x, dtype=np.int64) for x in found)
    if len(firsts) != len(system.hosts) or len(counts) != len(firsts) or len(firsts) and (
            firsts.min() < 0 or counts.min() < 0 or (firsts + counts).max() > len(system.devices)):
        return None
    return list(map(list, map(range, firsts.tolist(), (firsts + counts).tolist())))


def _groups(system: System) -> list[tuple[str, tuple, str | None, list[int]]]:
    """(host id, index steps, own pattern, member device indices in device order) per host."""
    ranges = _ranges(system) if system.hosts else None
    if ranges is not None:
        return [(h.id, h.indices, h.pattern, r) for h, r in zip(system.hosts, ranges)]
    if system.hosts:
        by_prefix: dict[str, list[int]] = {h.id: [] for h in system.hosts}
        # Hosts do not nest, so a device belongs to the host whose id is a prefix of its id
        # (or is its id): one dictionary probe per dot of the id, linear in devices (a scan of
        # every host per device took minutes at 18,432 hosts). The first two probes (the id
        # itself, then its parent: where nearly every host device stops) are made for every
        # device at once with ``map``; the walk goes on only for the others.
        ids = list(map(_ID, system.devices))
        own = map(by_prefix.get, ids)
        parent = map(by_prefix.get, map(itemgetter(0), map(str.rpartition, ids,
                                                            itertools.repeat("."))))
        for i, (found, up) in enumerate(zip(own, parent)):
            if found is not None:
                found.append(i)
                continue
            if up is not None:
                up.append(i)
                continue
            prefix = ids[i]
            while True:
                members = by_prefix.get(prefix)
                if members is not None:
                    members.append(i)
                    break
                cut = prefix.rfind(".")
                if cut < 0:
                    break
                prefix = prefix[:cut]
        return [(h.id, h.indices, h.pattern, by_prefix[h.id]) for h in system.hosts]
    return [(i, _steps(system, i), None, members) for i, members in _inferred(system)]


def _named(groups, pattern: str | None, mapping: Mapping[str, str] | None):
    """(host id, hostname, members) per group, raising ``HostnameError`` as ``hosts`` says."""
    seen: dict[str, str] = {}
    for n, (host_id, indices, own, members) in enumerate(groups):
        default = host_id.split(".", 1)[1].replace(".", "-") if "." in host_id else host_id
        if mapping and (host_id in mapping or default in mapping):
            name = mapping.get(host_id) or mapping[default]
        elif pattern or own:
            name = format_hostname(pattern or own, indices, n)
        else:
            name = default
        if name in seen:
            raise HostnameError(f"hosts '{seen[name]}' and '{host_id}' would both be called "
                                f"'{name}'")
        seen[name] = host_id
        yield host_id, name, members


def hosts(system: System, pattern: str | None = None,
          mapping: Mapping[str, str] | None = None) -> tuple[HostInfo, ...]:
    """Every host of the system with its hostname, in declaration order.

    Raises ``HostnameError`` for a pattern that reads an index the path lacks, or when two
    hosts would get one name.
    """
    return hosts_and_members(system, pattern, mapping)[0]


def hosts_and_members(system: System, pattern: str | None = None,
                      mapping: Mapping[str, str] | None = None
                      ) -> tuple[tuple[HostInfo, ...], list[list[int]]]:
    """``hosts(system, pattern, mapping)`` and each host's device indices in device order
    (for views that index devices by number: the fabric's)."""
    devices = system.devices
    infos, indices = [], []
    for host_id, name, members in _named(_groups(system), pattern, mapping):
        infos.append(HostInfo(host_id, name, tuple(map(_ID, map(devices.__getitem__,
                                                                  members)))))
        indices.append(members)
    return tuple(infos), indices


_ID = attrgetter("id")


def host_members(system: System) -> list[tuple[str, list[int]]]:
    """(host id, its devices' indices in device order) per host of ``hosts(system)``, in its
    order, with no id string per device; ``HostnameError`` when ``hosts`` raises it."""
    return [(host_id, members) for host_id, _, members in _named(_groups(system), None, None)]


def read_mapping(text: str) -> dict[str, str]:
    """A hostname mapping file: ``<host id or default name> <hostname>`` per line (spaces,
    tabs or one comma between); ``#`` starts a comment."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = re.split(r"[\s,]+", line)
        if len(parts) != 2:
            raise HostnameError(f"line {number}: expected '<host> <hostname>', found '{line}'")
        out[parts[0]] = parts[1]
    return out
