"""Instantiation by layout: a whole system's devices, hosts and links built from each group
template's layout once, for ``elaborate`` (``instantiate``).

Every instance of a template lays its devices out alike: the members in declaration order, an
array's elements one after the other, a nested group's devices in its own layout. A member's
first device is at ``Member.start`` and one element of it takes ``Template.devices`` devices
(one for a device model), so every link a connection writes is two offsets into that layout
(``Chunk``: ``fastconn`` computes them in numpy, the loop alongside the names). A template's
layout (``Layout``: its devices' names relative to an instance, models, spans, hosts, sites and
link columns) is made once, from its members' layouts: an array of 8,192 racks is one numpy
``add.outer`` of the rack's link offsets and the racks' first devices, and the system's device
ids one string join per device, with no dictionary from ids to indices and no per-instance
Python step. The links, their order and type codes are those the per-instance walk
(``elaborate._instantiate``) records in ``System.ends``; tests/compiler/ir/test_links.py
and tests/compiler/lang/test_elaborate_append.py compare the two on every library file.

The walk still runs when links may merge (``elaborate._may_merge``) and when a group's member
names could spell one element two ways (``ambiguous``: ``l2[5]`` and ``l[25]`` are both
``l25``), where an id, not a place in the layout, decides which device a link reaches.
"""

from __future__ import annotations

import bisect
import itertools
import re
from array import array
from typing import Any

import attrs

from ..ir.incidence import Ends
from ..ir.system import Host, make_devices

_NAMES: dict[tuple[str, int | None], list[str]] = {}


def element_names(name: str, size: int | None) -> list[str]:
    """The element names of a member (``tray0`` .. ``tray17``), made once per name and size
    rather than once per instance (a list of f-strings for each of 147,456 trays)."""
    key = (name, size)
    found = _NAMES.get(key)
    if found is None:
        found = [name] if size is None else [f"{name}{i}" for i in range(size)]
        if len(_NAMES) < 4096 and len(found) <= 4096:       # a bounded memo
            _NAMES[key] = found
    return found


@attrs.define(slots=True)
class Chunk:
    """The links one connection statement wrote in a template: their ends as offsets in the
    template's layout (``src``, ``dst``: lists or int64 arrays; None in an ``ambiguous``
    template), their ends' names when the loop made them (``names``: two lists; None when
    ``fastconn`` made only offsets), and what every link of the statement shares."""

    src: Any
    dst: Any
    names: tuple[list[str], list[str]] | None
    type: Any
    lanes: int
    duplex: bool
    span: Any

    def __len__(self) -> int:
        return len(self.src) if self.src is not None else len(self.names[0])

    def offsets(self):
        """The ends' offsets as two int64 numpy arrays."""
        import numpy as np

        return np.asarray(self.src, dtype=np.int64), np.asarray(self.dst, dtype=np.int64)


def ambiguous(t) -> bool:
    """Whether two members of template ``t`` could give an element the same name: one's name
    is the other's followed by digits (``gpu`` and ``gpu0``, ``l`` and ``l2``). Then a link's
    device is the one its name reaches (the walk), not a place in the layout."""
    found = t.ambiguous
    if found is None:
        by_stem: dict[str, list[str]] = {}
        for name in t.members:
            by_stem.setdefault(name.rstrip("0123456789"), []).append(name)
        found = any(q != p and q.startswith(p) for names in by_stem.values() if len(names) > 1
                    for p in names for q in names)
        t.ambiguous = found
    return found


def names(t, memo: dict | None = None) -> list[str]:
    """The devices of one instance of ``t`` named relative to it (``tray0.sc1.gpu0``), in
    layout order; ``memo`` keeps each nested template's list."""
    if memo is None:
        memo = {}
    found = memo.get(id(t))
    if found is None:
        found = memo[id(t)] = _names(t, "", memo)
    return found


def _names(t, prefix: str, memo: dict) -> list[str]:
    out: list[str] = []
    for m in t.members.values():
        elements = element_names(m.name, m.size)
        if m.model is not None:
            out.extend([prefix + n for n in elements])
            continue
        inner = names(m.template, memo)
        for n in elements:
            out.extend(map(f"{prefix}{n}.".__add__, inner))
    return out


def chunk_names(t, chunk: Chunk, memo: dict) -> tuple[list[str], list[str]]:
    """A chunk's two ends as names relative to the template (from its offsets when the loop
    did not name them)."""
    if chunk.names is not None:
        return chunk.names
    table = names(t, memo)
    src, dst = chunk.offsets()
    return list(map(table.__getitem__, src.tolist())), list(map(table.__getitem__, dst.tolist()))


def tuples(t, memo: dict | None = None):
    """The template's links as (src name, dst name, type, lanes, duplex, span), in order: what
    the per-instance walk reads."""
    if memo is None:
        memo = {}
    for chunk in t.links:
        a, b = chunk_names(t, chunk, memo)
        lt, lanes, duplex, span = chunk.type, chunk.lanes, chunk.duplex, chunk.span
        for x, y in zip(a, b):
            yield x, y, lt, lanes, duplex, span


@attrs.define(slots=True)
class Layout:
    """One template's instance, relative to its first device: device names, models and spans
    in order, hosts as (name, index chain, pattern, span, first device, devices), sites by
    member path, and the links as int32 columns (ends' offsets, type codes, lanes, rows)."""

    names: list
    models: list
    spans: list
    hosts: list
    sites: dict
    links: tuple | None             # (src, dst, code, lanes, row) numpy arrays, or None


class _Builder:
    def __init__(self):
        self.codes: dict[int, int] = {}     # id(link type) -> its code, in first use
        self.types: list = []
        self.row_table: list[tuple] = []    # (duplex, span) per template statement
        self.layouts: dict[int, Layout] = {}

    def layout(self, t) -> Layout:
        found = self.layouts.get(id(t))
        if found is None:
            found = self.layouts[id(t)] = self.compose(t, "", "")
        return found

    def compose(self, t, prefix: str, stem: str) -> Layout:
        """``t``'s layout with every name after ``prefix`` and every site after ``stem``:
        members first (a nested template's layout once, copied per element), then the
        template's own links, as the walk appends them."""
        import numpy as np

        names_: list[str] = []
        models: list = []
        spans: list = []
        hosts: list = []
        sites: dict = {}
        parts: list[tuple] = []
        for m in t.members.values():
            elements = element_names(m.name, m.size)
            count = len(elements)
            sites.setdefault(stem + m.name, m.span)
            indices = [None] if m.size is None else range(m.size)
            if m.model is not None:
                names_.extend([prefix + n for n in elements])
                models.extend([m.model] * count)
                spans.extend([m.span] * count)
                if m.host:
                    hosts.extend((prefix + n, ((m.name, i),), m.hostname, m.span, m.start + k, 1)
                                 for k, (n, i) in enumerate(zip(elements, indices)))
                continue
            inner = self.layout(m.template)
            unit = len(inner.names)
            for k, (n, i) in enumerate(zip(elements, indices)):
                pre = f"{prefix}{n}."
                first = m.start + k * unit
                if m.host:
                    hosts.append((prefix + n, ((m.name, i),), m.hostname, m.span, first, unit))
                names_.extend(map(pre.__add__, inner.names))
                if inner.hosts:
                    step = (m.name, i)
                    hosts.extend((pre + h, (step, *chain), pattern, span, first + at, size)
                                 for h, chain, pattern, span, at, size in inner.hosts)
            models.extend(inner.models * count)
            spans.extend(inner.spans * count)
            for k, v in inner.sites.items():
                sites.setdefault(f"{stem}{m.name}.{k}", v)
            if inner.links is not None:
                src, dst, code, lanes, row = inner.links
                firsts = m.start + np.arange(count, dtype=np.int32) * np.int32(unit)
                parts.append((np.add.outer(firsts, src).ravel(), np.add.outer(firsts, dst).ravel(),
                              np.tile(code, count), np.tile(lanes, count), np.tile(row, count)))
        for chunk in t.links:
            n = len(chunk)
            code = self.codes.get(id(chunk.type))
            if code is None:
                code = self.codes[id(chunk.type)] = len(self.types)
                self.types.append(chunk.type)
            # one row per statement: its links share direction and span (``Links``)
            row = len(self.row_table)
            self.row_table.append((chunk.duplex, chunk.span))
            src, dst = chunk.offsets()
            parts.append((src.astype(np.int32), dst.astype(np.int32),
                          np.full(n, code, dtype=np.uint16), np.full(n, chunk.lanes, np.int32),
                          np.full(n, row, dtype=np.int32)))
        links = None
        if parts:
            links = tuple(p[0] if len(parts) == 1 else np.concatenate(p)
                          for p in zip(*parts))
        return Layout(names_, models, spans, hosts, sites, links)


def _model_memo(models: list) -> dict:
    """``ir.modelcodes``' memo entries (``model_ids``, ``model_numbers``) from the devices'
    models: the distinct models found once per object (a dictionary over the list, in C)
    rather than by an id per device in numpy and a sort of 1.7 M of them. Numbered as
    ``model_ids`` numbers them: in order of the models' ``id``."""
    import numpy as np

    distinct = sorted({id(m): m for m in models}.values(), key=id)
    number = {id(m): k for k, m in enumerate(distinct)}
    numbers = np.fromiter(map(number.__getitem__, map(id, models)), dtype=np.int32,
                          count=len(models))
    ids = np.array([id(m) for m in distinct], dtype=np.int64)
    return {"model_ids": (ids[numbers], {id(m): m for m in distinct}),
            "model_numbers": (numbers, distinct)}


def _array(typecode: str, column) -> array:
    import numpy as np

    out = array(typecode)
    out.frombytes(memoryview(np.ascontiguousarray(column)).cast("B"))     # copied once
    return out


def instantiate(t, prefix: str, stem: str):
    """The system ``t`` makes at ``prefix`` (sites under ``stem``): (devices, hosts, sites,
    ``Ends``, the (duplex, span) of each connection statement of a template, each link's
    entry there, each host's first device and device count as two arrays
    (``ir.hosts.HOST_RANGES``), and the model memo entries (``_model_memo``)), as the walk makes them for a system whose links are all rows
    (``elaborate``); the walk numbers one row per link of a template, this one per statement
    (the same ``Link`` objects, and no 1.9 M-entry table for 8,192 racks' own wiring)."""
    import numpy as np

    b = _Builder()
    root = b.compose(t, prefix, stem)
    devices = make_devices(root.names, root.models, root.spans)
    memo = _model_memo(root.models)
    hosts = [Host(h, chain, pattern, span) for h, chain, pattern, span, _, _ in root.hosts]
    # each host's devices, a run of the layout (``ir.hosts``: no look-up by id prefix)
    ranges = (array("i", [h[4] for h in root.hosts]), array("i", [h[5] for h in root.hosts]))
    if root.links is None:
        src = dst = lanes = row = np.zeros(0, dtype=np.int32)
        code = np.zeros(0, dtype=np.uint16)
    else:
        src, dst, code, lanes, row = root.links
    types = tuple(b.types)
    ends = Ends(_array("i", src.astype(np.int32)), _array("i", dst.astype(np.int32)),
                _array("B", code.astype(np.uint8)) if len(types) <= 256 else
                _array("H", code.astype(np.uint16)),
                types, _array("i", lanes.astype(np.int32)))
    return devices, hosts, root.sites, ends, b.row_table, _array("i", row.astype(np.int32)), \
        ranges, memo


_ELEMENT = re.compile(r"(.*?)(\d+)")


def _members(t):
    """The template's members with numpy arrays of their first devices, element sizes and
    whether each is a nested template."""
    import numpy as np

    members = list(t.members.values())
    starts = np.array([m.start for m in members], dtype=np.int64)
    units = np.array([max(1, m.template.devices) if m.template is not None else 1
                      for m in members], dtype=np.int64)
    nested = np.array([m.template is not None for m in members], dtype=np.bool_)
    return members, starts, units, nested


def over_budget(t) -> bool:
    """Whether the template's own links give one of its direct device members more lanes of a
    class than the member's model has ports for. Links only add lanes, so the finished system
    then fails verify's port-budget check (E220) whatever the groups above add. An end is a
    direct device when its name has no dot; a chunk of offsets counts its ends in numpy and
    names only the devices it reaches."""
    import numpy as np

    used: dict[tuple[str, str], int] = {}
    found = None
    for chunk in t.links:
        cls, lanes = chunk.type.cls, chunk.lanes
        if chunk.names is not None or ambiguous(t):
            a, b = chunk_names(t, chunk, {})
            for end in itertools.chain(a, b):
                if "." not in end:
                    key = (end, cls)
                    used[key] = used.get(key, 0) + lanes
            continue
        if found is None:
            found = _members(t)
        members, starts, _, nested = found
        offsets = np.concatenate(chunk.offsets())
        direct = offsets[~nested[np.searchsorted(starts, offsets, side="right") - 1]]
        counts = np.bincount(direct)
        values = counts.nonzero()[0]
        firsts = starts.tolist()
        for o, n in zip(values.tolist(), counts[values].tolist()):
            m = members[bisect.bisect_right(firsts, o) - 1]
            key = (m.name if m.size is None else f"{m.name}{o - m.start}", cls)
            used[key] = used.get(key, 0) + n * lanes
    for (end, cls), lanes in used.items():
        member = t.members.get(end)
        if member is None:
            m = _ELEMENT.fullmatch(end)
            member = t.members.get(m.group(1)) if m else None
        if member is None or member.model is None:
            continue
        budget = member.model.port_budget(cls)
        if budget is not None and lanes > budget:
            return True
    return False


def may_merge(templates) -> bool:
    """True when two links of the system could join the same pair with one link type (and so
    be merged into one link of more lanes). Links of different instances can only coincide
    when a group wires two devices inside one element of a member (``tray3.gpu0 <->
    tray3.gpu1``), so without such a connection and without a pair wired twice by one group,
    instantiation appends links and keeps no key per link. Read from the chunks' offsets in
    numpy (from the names in an ``ambiguous`` template)."""
    for t in templates:
        if t is None or not t.links:
            continue
        found = None if ambiguous(t) else _merge_by_offsets(t)
        if found is None:
            found = _merge_by_names(t)
        if found:
            return True
    return False


def _merge_by_offsets(t) -> bool | None:
    """``may_merge`` for one template from its links' offsets; None when the pairs' keys
    would not fit in 64 bits."""
    import numpy as np

    members, starts, units, nested = _members(t)
    pairs = [c.offsets() for c in t.links]
    src = np.concatenate([p[0] for p in pairs])
    dst = np.concatenate([p[1] for p in pairs])

    def element(offsets):
        """Each end's element of a nested member (its first device), -1 for a direct device."""
        k = np.searchsorted(starts, offsets, side="right") - 1
        first = starts[k] + (offsets - starts[k]) // units[k] * units[k]
        return np.where(nested[k], first, -1)

    a = element(src)
    if bool(np.any((a >= 0) & (a == element(dst)))):
        return True
    by_name: dict[str, int] = {}
    codes = [by_name.setdefault(c.type.name, len(by_name)) for c in t.links]
    n, kinds = max(1, t.devices), len(by_name)
    if n * n * kinds * 2 >= 2**62:
        return None
    sizes = [len(p[0]) for p in pairs]
    code = np.repeat(np.array(codes, dtype=np.int64), sizes)
    duplex = np.repeat(np.array([c.duplex for c in t.links], dtype=np.bool_), sizes)
    lo = np.where(duplex, np.minimum(src, dst), src)
    hi = np.where(duplex, np.maximum(src, dst), dst)
    keys = ((lo * n + hi) * kinds + code) * 2 + duplex
    keys.sort()
    return bool(np.any(keys[1:] == keys[:-1]))


def _merge_by_names(t) -> bool:
    links = list(tuples(t))
    # one element's two devices: ``a`` has a dot and ``b`` starts with ``a``'s first part and
    # its dot
    if any(b.startswith(a[:a.find(".") + 1]) for a, b, *_ in links if "." in a):
        return True
    keys = {((a, b, lt.name, True) if a < b else (b, a, lt.name, True)) if duplex
            else (a, b, lt.name, False) for a, b, lt, _, duplex, _ in links}
    return len(keys) != len(links)
