"""Derived view: each device's links, without the networkx graph (``System.incidence``).

Lint's way back to a user's line and the cost model's per-GPU facts ask for the links of a
handful of devices; building the whole networkx graph for them costs more than every check
together on a large cluster. This view is one pass over the links, a list per device, and
``System.links_of`` reads it (or the graph, when something already built it) in the graph's
own order: by neighbour in the order each first appeared, then in declaration order.
"""

from __future__ import annotations

from array import array
from itertools import compress

from ..base.gcpause import gc_paused
from . import system
from .system import Link, System


@gc_paused()
def incidence(system: System) -> dict[str, list[Link]]:
    """Device id -> the links with it at one end, in declaration order (a self-loop once);
    filled on the links' integer ends (a list per device index), keyed by id at the end."""
    ends, devices = system.ends, system.devices
    per: list[list[Link] | None] = [None] * len(devices)
    for link, a, b in zip(system.links, ends.src, ends.dst):
        found = per[a]
        if found is None:
            per[a] = [link]
        else:
            found.append(link)
        if b != a:
            found = per[b]
            if found is None:
                per[b] = [link]
            else:
                found.append(link)
    return {devices[i].id: found for i, found in enumerate(per) if found is not None}


system.VIEWS["incidence"] = incidence


class Adjacency:
    """The networkx graph's adjacency (``graph._adj``: device -> neighbour -> link id -> edge
    data) without the graph: each device's entry is built from the incidence view the first
    time something reads it, in the graph's own order, so the router and the cost model see
    exactly what the graph would show them while touching only the devices they route
    through (a world all-reduce on 8,192 racks reads a small part of 13.7 M links)."""

    __slots__ = ("_incidence", "_known", "_built")

    def __init__(self, system: System):
        self._incidence = system.incidence
        self._known = system.device_index
        self._built: dict[str, dict[str, dict[str, dict]]] = {}

    def __contains__(self, device_id: object) -> bool:
        return device_id in self._known

    def __getitem__(self, device_id: str) -> dict[str, dict[str, dict]]:
        found = self._built.get(device_id)
        if found is None:
            if device_id not in self._known:
                raise KeyError(device_id)
            found = self._built[device_id] = {}
            for link in self._incidence.get(device_id, ()):
                keys = found.get(other := link.dst if link.src == device_id else link.src)
                if keys is None:
                    keys = found[other] = {}
                add_edge_data(keys, link)
        return found


def edge_data(link: Link) -> dict:
    """A link's edge attributes in the graph: the IR object, class, lanes, bandwidth (bytes/s
    per direction over all lanes) and latency (s)."""
    t = link.type
    return {"link": link, "cls": t.cls, "lanes": link.lanes,
            "bandwidth": t.bandwidth * link.lanes, "latency": t.latency}


def add_edge_data(keys: dict, link: Link) -> None:
    """Enter ``link`` among the edges of one device pair (keyed by link id), as networkx's
    ``add_edge`` does: a key seen before has its data updated."""
    data = keys.get(link.id)
    if data is None:
        keys[link.id] = edge_data(link)
    else:
        data.update(edge_data(link))


def adjacency(system: System):
    """The graph's own adjacency when something built the graph, else the lazy one."""
    if system.has_view("graph"):
        return system.graph._adj
    return Adjacency(system)


system.VIEWS["adjacency"] = adjacency


class Ends:
    """The links as integer arrays, in declaration order: ``src[i]`` and ``dst[i]`` index
    ``system.devices``, ``type[i]`` indexes ``types`` (the distinct link types), ``lanes[i]``.
    Whole-system passes (locality's union-finds, port budgets, W401, W404) read these instead
    of each link object's strings: no hash of a 40-character id per end and pass, and a
    link class is looked up once per link type."""

    __slots__ = ("src", "dst", "type", "types", "lanes")

    def __init__(self, src: array, dst: array, type_: array, types: tuple, lanes: array):
        if type_.typecode != "B" and len(types) <= 256:
            type_ = array("B", type_)       # one byte a link: selectors by bytes.translate
        self.src, self.dst, self.type, self.types, self.lanes = src, dst, type_, types, lanes

    def mask(self, keep) -> bytes | list[bool]:
        """One flag per link, true where ``keep(link type)``: made in C by translating the
        type codes (a selector for ``itertools.compress``)."""
        flags = bytes(bool(keep(t)) for t in self.types)
        if self.type.typecode == "B":
            return self.type.tobytes().translate(flags + bytes(256 - len(flags)))
        return [bool(flags[c]) for c in self.type]


def links_in(system: System, classes: tuple[str, ...]) -> tuple[Link, ...]:
    """The links of these classes in declaration order (the scale-out fabric is a small part
    of a large cluster's links), selected in C and kept per system."""
    key = ("links_in", classes)
    found = system.memo.get(key)
    if found is None:
        found = system.memo[key] = tuple(
            compress(system.links, system.ends.mask(lambda t: t.cls in classes)))
    return found


def ends(system: System) -> Ends:
    """``System.ends``: what elaborate recorded while it made the links, or one pass over them."""
    found = system.memo.get("ends")
    if found is not None:
        return found
    index = {d.id: i for i, d in enumerate(system.devices)}
    codes: dict[int, int] = {}
    types: list = []
    src, dst, kind, lanes = array("i"), array("i"), array("H"), array("i")
    for link in system.links:
        t = link.type
        code = codes.get(id(t))
        if code is None:
            code = codes[id(t)] = len(types)
            types.append(t)
        src.append(index[link.src])
        dst.append(index[link.dst])
        kind.append(code)
        lanes.append(link.lanes)
    found = system.memo["ends"] = Ends(src, dst, kind, tuple(types), lanes)
    return found


system.VIEWS["ends"] = ends
