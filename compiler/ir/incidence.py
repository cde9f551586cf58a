"""Derived view: each device's links, without the networkx graph (``System.incidence``).

Lint's way back to a user's line and the cost model's per-GPU facts ask for the links of a
handful of devices; building the whole networkx graph for them costs more than every check
together on a large cluster. This view is one pass over the links, a list per device, and
``System.links_of`` reads it (or the graph, when something already built it) in the graph's
own order: by neighbour in the order each first appeared, then in declaration order.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping

from ..base.gcpause import gc_paused
from . import system
from .system import Link, System, device_indices


class Incidence(Mapping):
    """Device id -> the links with it at one end, in declaration order (a self-loop once): the
    mapping ``System.incidence`` promises, read from a compressed table over the links' integer
    ends. Making the table is one stable sort of the ends in C (0.13 s at 1,024 racks, where a
    list of links per device was 0.8 s of Python); a device's list is made when first read, so
    the cost model's few dozen lookups touch a few dozen lists, not 13.7 M links. Only devices
    with links are keys, as before."""

    def __init__(self, system: System):
        import numpy as np

        self._links = system.links
        self._devices = system.devices
        self._index = device_indices(system)
        src, dst = system.ends.arrays()
        # both ends of link i sit at 2i and 2i + 1 (a self-loop's second end left out), so a
        # stable sort by device keeps each device's links in declaration order
        both = np.empty(2 * len(src), dtype=np.int32)
        both[0::2] = src
        both[1::2] = np.where(src == dst, -1, dst)
        order = np.argsort(both, kind="stable")
        counts = np.bincount(both[both >= 0], minlength=len(system.devices))
        skip = int(len(both) - counts.sum())        # the left-out ends sort first
        self._order = (order[skip:] >> 1).astype(np.int64)
        self._start = np.concatenate(([0], np.cumsum(counts))).tolist()
        self._built: dict[str, list[Link]] = {}

    def __getitem__(self, device_id: str) -> list[Link]:
        found = self._built.get(device_id)
        if found is None:
            i = self._index[device_id]
            a, b = self._start[i], self._start[i + 1]
            if a == b:
                raise KeyError(device_id)
            links = self._links
            found = self._built[device_id] = [links[j] for j in self._order[a:b].tolist()]
        return found

    def __contains__(self, device_id: object) -> bool:
        i = self._index.get(device_id)     # type: ignore[arg-type]
        return i is not None and self._start[i] != self._start[i + 1]

    def __iter__(self) -> Iterator[str]:
        start = self._start
        return (d.id for i, d in enumerate(self._devices) if start[i] != start[i + 1])

    def __len__(self) -> int:
        start = self._start
        return sum(1 for i in range(len(self._devices)) if start[i] != start[i + 1])


class MaskedIncidence(Mapping):
    """The healthy incidence (device id -> its links in declaration order) less the lost
    links, each device's list filtered when first read: what ``System.incidence`` promises,
    without the whole-system sort that makes a new incidence."""

    def __init__(self, healthy, lost):
        self._healthy = healthy
        self._lost = {id(link) for link in lost}
        self._keep = lost            # the lost links stay alive while their ids are keys
        self._built: dict[str, list] = {}

    def __getitem__(self, device_id: str) -> list:
        found = self._built.get(device_id)
        if found is None:
            found = [x for x in self._healthy[device_id] if id(x) not in self._lost]
            if not found:
                raise KeyError(device_id)
            self._built[device_id] = found
        return found

    def __contains__(self, device_id: object) -> bool:
        try:
            self[device_id]         # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self):
        return (d for d in self._healthy if d in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


@gc_paused()
def incidence(system: System) -> Incidence:
    """``System.incidence``: the lazy mapping above."""
    return Incidence(system)


system.VIEWS["incidence"] = incidence


def neighbour_lists(system: System, classes: tuple[str, ...] | None = None
                    ) -> tuple[list[int], list[int]]:
    """Each device's other ends over its links of these classes (every link when None), as
    device indices in declaration order, a link to itself once (the incidence view's links,
    read from the arrays: no ``Link`` object): ``flat[start[i]:start[i + 1]]`` for device
    ``i``. Kept per system; for passes that ask every host which devices its devices touch."""
    key = ("neighbour_lists", classes)
    found = system.memo.get(key)
    if found is None:
        import numpy as np

        src, dst = system.ends.arrays(None if classes is None else
                                      (lambda t: t.cls in classes))
        # both ends of link i at 2i and 2i + 1, so a stable sort keeps declaration order
        both = np.empty(2 * len(src), dtype=np.int64)
        both[0::2] = src
        both[1::2] = np.where(src == dst, -1, dst)
        other = np.empty_like(both)
        other[0::2] = dst
        other[1::2] = src
        keep = both >= 0
        both, other = both[keep], other[keep]
        order = np.argsort(both, kind="stable")
        counts = np.bincount(both, minlength=len(system.devices))
        found = system.memo[key] = (other[order].tolist(),
                                    np.concatenate(([0], np.cumsum(counts))).tolist())
    return found


class Adjacency:
    """The networkx graph's adjacency (``graph._adj``: device -> neighbour -> link id -> edge
    data) without the graph: each device's entry is built from the incidence view the first
    time something reads it, in the graph's own order, so the router and the cost model see
    exactly what the graph would show them while touching only the devices they route
    through (a world all-reduce on 8,192 racks reads a small part of 13.7 M links)."""

    __slots__ = ("_incidence", "_known", "_built")

    def __init__(self, system: System):
        self._incidence = system.incidence
        self._known = device_indices(system)
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

    def arrays(self, keep=None, columns: tuple[str, ...] = ("src", "dst")) -> tuple:
        """These columns ("src", "dst", "type", "lanes") as numpy arrays, of the links where
        ``keep(link type)`` holds (every link when None), in declaration order: the one way
        whole-system passes read the links in numpy. Device indices and lanes are int32,
        type codes uint8 (uint16 past 256 types). A selection is a copy; every link's column
        reads the array in place (read-only, and it pins the array's buffer: do not keep it)."""
        import numpy as np

        dtypes = {"src": np.int32, "dst": np.int32, "lanes": np.int32,
                  "type": np.uint8 if self.type.typecode == "B" else np.uint16}
        if not len(self.src):
            return tuple(np.zeros(0, dtypes[c]) for c in columns)
        out = tuple(np.frombuffer(getattr(self, c), dtype=dtypes[c]) for c in columns)
        if keep is None:
            return out
        # one flag per link type, spread over the links by their type codes
        kept = np.array([bool(keep(t)) for t in self.types], dtype=np.bool_)
        flags = kept[np.frombuffer(self.type, dtype=dtypes["type"])]
        return tuple(column[flags] for column in out)


def arrays_in(system: System, classes: tuple[str, ...]):
    """The links of these classes in declaration order as numpy arrays: source and
    destination device indices and bandwidths (``Link.bandwidth``: per-lane bandwidth times
    lanes, in float64 as Python computes it), kept per system."""
    key = ("arrays_in", classes)
    found = system.memo.get(key)
    if found is None:
        import numpy as np

        e = system.ends
        src, dst, codes, lanes = e.arrays(lambda t: t.cls in classes,
                                          ("src", "dst", "type", "lanes"))
        per_lane = np.array([t.bandwidth for t in e.types], dtype=np.float64)
        found = system.memo[key] = (src.astype(np.int64), dst.astype(np.int64),
                                    per_lane[codes] * lanes)
    return found


def columns_in(system: System, classes: tuple[str, ...]) -> tuple[list[str], list[str],
                                                                  list[float]]:
    """The links of these classes in declaration order as three columns: source ids,
    destination ids and bandwidths (bytes/s per direction over all lanes, as
    ``Link.bandwidth`` computes it), kept per system. What the scale-out passes read (levels,
    tiers, W405, W406, W408): no ``Link`` object is made for them."""
    key = ("columns_in", classes)
    found = system.memo.get(key)
    if found is None:
        src, dst, bandwidth = arrays_in(system, classes)
        devices = system.devices
        found = system.memo[key] = ([devices[i].id for i in src.tolist()],
                                    [devices[i].id for i in dst.tolist()], bandwidth.tolist())
    return found


def ends(system: System) -> Ends:
    """``System.ends``: what elaborate recorded while it made the links, or one pass over them."""
    found = system.memo.get("ends")
    if found is not None:
        return found
    index = device_indices(system)
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
