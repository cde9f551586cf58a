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

import re
import string
from collections.abc import Mapping

import attrs

from .system import System, device_indices

#: Link classes that stay inside one host when hosts are inferred.
LOCAL_CLASSES = ("pcie", "nvlink_c2c", "inter_socket")
_STEP = re.compile(r"^(.*?)(\d+)$")


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
    """The field names a pattern reads (``{rack:02}`` -> ``rack``)."""
    try:
        return [f for _, f, _, _ in string.Formatter().parse(pattern) if f is not None]
    except ValueError as exc:
        raise HostnameError(f"hostname pattern '{pattern}': {exc}") from None


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


def _prefixes(device_id: str, itself: bool) -> list[str]:
    """The id's dotted prefixes, longest first (the id itself first when ``itself``)."""
    parts = device_id.split(".")
    top = len(parts) if itself else len(parts) - 1
    return [".".join(parts[:n]) for n in range(top, 0, -1)]


def _inferred(system: System) -> list[tuple[str, tuple[str, ...]]]:
    """(id, device ids) per host when the file marks none: CPU-local components."""
    parent = {d.id: d.id for d in system.devices}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for link in system.links:
        if link.cls in LOCAL_CLASSES:
            a, b = find(link.src), find(link.dst)
            if a != b:
                parent[max(a, b)] = min(a, b)
    members: dict[str, list[str]] = {}
    for d in system.devices:
        members.setdefault(find(d.id), []).append(d.id)
    merged: dict[str, list[str]] = {}
    for ids in members.values():
        if not any(system.device(i).kind == "cpu" for i in ids):
            continue
        common = ids[0].split(".")[:-1]
        for i in ids[1:]:
            parts = i.split(".")[:-1]
            n = 0
            while n < min(len(common), len(parts)) and common[n] == parts[n]:
                n += 1
            common = common[:n]
        host_id = ".".join(common) if len(common) > 1 else ids[0].rsplit(".", 1)[0]
        # CPU islands under one instance (a GB200 tray's two Graces) are one host.
        merged.setdefault(host_id, []).extend(ids)
    # Devices no CPU reaches over local links (a DGX's NVSwitches) belong to the host whose
    # instance holds them; switches outside every host (a leaf, an NVL72 switch tray) to none.
    taken = {i for ids in merged.values() for i in ids}
    for d in system.devices:
        if d.id not in taken:
            owner = next((p for p in _prefixes(d.id, False) if p in merged), None)
            if owner is not None:                      # the longest: the innermost instance
                merged[owner].append(d.id)
    position = device_indices(system)
    out = [(h, tuple(sorted(ids, key=position.__getitem__))) for h, ids in merged.items()]
    out.sort(key=lambda h: position[h[1][0]])
    return out


def hosts(system: System, pattern: str | None = None,
          mapping: Mapping[str, str] | None = None) -> tuple[HostInfo, ...]:
    """Every host of the system with its hostname, in declaration order.

    Raises ``HostnameError`` for a pattern that reads an index the path lacks, or when two
    hosts would get one name.
    """
    if system.hosts:
        groups = []
        by_prefix = {h.id: [] for h in system.hosts}
        order = {h.id: n for n, h in enumerate(system.hosts)}
        for d in system.devices:
            # the first declared host whose id is the device's or a dotted prefix of it,
            # found among the id's prefixes (a cluster has thousands of hosts)
            owner = min((p for p in _prefixes(d.id, True) if p in order), key=order.__getitem__,
                        default=None)
            if owner is not None:
                by_prefix[owner].append(d.id)
        for h in system.hosts:
            groups.append((h.id, h.indices, h.pattern, tuple(by_prefix[h.id])))
    else:
        groups = [(i, _steps(system, i), None, ids) for i, ids in _inferred(system)]
    out: list[HostInfo] = []
    seen: dict[str, str] = {}
    for n, (host_id, indices, own, ids) in enumerate(groups):
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
        out.append(HostInfo(host_id, name, ids))
    return tuple(out)


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
