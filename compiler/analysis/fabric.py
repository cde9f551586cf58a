"""The scale-out fabric as cluster tools see it: hosts, their HCA ports, switches in tiers,
every cable with its rate, and the NVLink domains as blocks of hosts.

This is the one view the Slurm, Kubernetes, ibdiagnet and ibsim exporters format, and the one
``diff`` compares fabrics by. Only compute NICs count (a storage NIC or a DPU is kept out of the
compute tree, as Slurm's topology/tree wants); switches the compute NICs cannot reach are left
out too. Tiers: a leaf is a switch cabled to a host's HCA (tier 1); every other switch's tier is
one more than the lowest tier it is cabled to.
"""

from __future__ import annotations

import re
import functools
import itertools
import operator
from collections import defaultdict
from collections.abc import Mapping, Sequence
from operator import itemgetter

import attrs

from ..base.arrays import unique
from ..base.gcpause import gc_paused
from ..ir.hosts import HostInfo, hosts_and_members
from ..ir.modelcodes import model_flags
from ..ir.locality import _natural, natural
from ..ir.system import SCALEOUT_CLASSES, System


#: A NIC's name that carries its identity on the machine: ``mlx5_3`` (as the kernel names the
#: HCA, and an imported dump keeps it) or ``nic3`` (an array element ``nic[3]``).
_NIC_NAME = re.compile(r"^(?:mlx\d+_|nic)(\d+)$")


@attrs.frozen
class Hca:
    """One compute NIC: its host, its index on the host, its device. The index is the HCA's
    identity, ``mlx5_<index>``: the number in the NIC's name (``mlx5_3``, ``nic3``) when every
    compute NIC of the host has a distinct one, else its position among the host's compute
    NICs (``hca_indices``)."""

    host: str
    index: int
    device: str
    model: str


@attrs.frozen
class Switch:
    """A fabric switch: its name (path below the system, dots as underscores), model and tier."""

    name: str
    device: str
    model: str
    tier: int
    radix: int | None


@attrs.frozen
class Cable:
    """``count`` cables of one link type between two ends; an end is a switch name or a
    ``host/index`` HCA name. ``rate`` is bits/s per cable."""

    a: str
    b: str
    cls: str
    rate: float
    count: int
    link_type: str


@attrs.frozen(eq=False)
class CableTable:
    """The cables as columns, one row per cable in the fabric's cable order: its two ends as
    positions in ``names``, its kind as a position in ``kinds`` ((class, rate bits/s, link
    type name)) and its count. 1.79 M cables at 8,192 NVL72 racks: as ``Cable`` objects they
    were seconds of every export's time, so the exporters read these columns and
    ``Fabric.cables`` makes the objects only when asked. Two tables are equal when their
    cables are."""

    names: tuple[str, ...]
    a: object                       # numpy int64 arrays, one entry per cable
    b: object
    kind: object
    count: object
    kinds: tuple[tuple[str, float, str], ...]
    #: ``names`` in natural order with no two alike (a name's position is its natural rank),
    #: as ``fabric`` makes them: a sort of positions is a natural sort of names.
    natural_order: bool = False
    #: Per name, its position in the fabric's ``hcas`` and in its ``switches`` (-1: not
    #: one), when the maker knows them (``fabric``); else ``Fabric.end_positions`` looks the
    #: names up.
    hca: object = None
    switch: object = None

    def __len__(self) -> int:
        return len(self.a)

    def __eq__(self, other) -> bool:
        return isinstance(other, CableTable) and self.cables() == other.cables()

    __hash__ = None

    def cables(self) -> tuple[Cable, ...]:
        """The rows as ``Cable`` objects, in order."""
        names, kinds = self.names, self.kinds
        k = self.kind.tolist()
        return tuple(map(Cable, map(names.__getitem__, self.a.tolist()),
                         map(names.__getitem__, self.b.tolist()),
                         map(itemgetter(0), map(kinds.__getitem__, k)),
                         map(itemgetter(1), map(kinds.__getitem__, k)),
                         self.count.tolist(),
                         map(itemgetter(2), map(kinds.__getitem__, k))))

    @classmethod
    def of(cls, cables: Sequence[Cable]) -> CableTable:
        """The table of ``cables`` (names and kinds numbered by first appearance)."""
        import numpy as np

        names: dict[str, int] = {}
        kinds: dict[tuple[str, float, str], int] = {}
        a, b, kind = [], [], []
        for c in cables:
            a.append(names.setdefault(c.a, len(names)))
            b.append(names.setdefault(c.b, len(names)))
            kind.append(kinds.setdefault((c.cls, c.rate, c.link_type), len(kinds)))
        return cls(tuple(names), np.array(a, dtype=np.int64), np.array(b, dtype=np.int64),
                   np.array(kind, dtype=np.int64),
                   np.array([c.count for c in cables], dtype=np.int64), tuple(kinds))


@attrs.frozen
class Fabric:
    """What the cluster tools need of a system."""

    name: str
    hosts: tuple[HostInfo, ...]
    hcas: tuple[Hca, ...]
    switches: tuple[Switch, ...]
    #: The cables as columns (``cables`` as objects).
    table: CableTable
    #: NVLink domains as tuples of hostnames (only domains spanning hosts' GPUs).
    blocks: tuple[tuple[str, ...], ...]
    #: Made from a system (``fabric``): (``hosts``, ``switches``, each device's position in
    #: ``hosts`` (-1: none) as a numpy array, ``switches``' device indices), for passes that
    #: index devices by number (diff's loose-NIC count), valid while ``hosts`` and
    #: ``switches`` are these same tuples (an ``attrs.evolve`` may replace them); None
    #: otherwise. Not compared.
    device_at: tuple | None = attrs.field(default=None, eq=False, repr=False)

    @functools.cached_property
    def cables(self) -> tuple[Cable, ...]:
        """Every cable: ``count`` cables of one kind between two ends, the ends in natural
        order, in natural order of the ends then the link type's name."""
        return self.table.cables()

    def switch(self, name: str) -> Switch:
        """The switch called ``name`` (KeyError if none); a dictionary built once, so a pass
        over every switch stays linear."""
        return self._by_name[name]

    @functools.cached_property
    def _by_name(self) -> dict[str, Switch]:
        return {s.name: s for s in self.switches}

    def tiers(self) -> int:
        """How many switch tiers the fabric has (0: no switches)."""
        return max((s.tier for s in self.switches), default=0)

    @functools.cached_property
    def end_positions(self):
        """Per name of ``table.names``, its position in ``hcas`` and in ``switches`` (-1:
        not one), as two numpy arrays."""
        import numpy as np

        t = self.table
        if t.hca is not None and t.switch is not None:
            return t.hca, t.switch
        hca = {f"{h.host}/{h.index}": i for i, h in enumerate(self.hcas)}
        switch = {s.name: i for i, s in enumerate(self.switches)}
        return (np.array([hca.get(n, -1) for n in t.names], dtype=np.int64),
                np.array([switch.get(n, -1) for n in t.names], dtype=np.int64))

    def hosts_below(self, switch: str) -> tuple[str, ...]:
        """Hostnames reachable downwards from ``switch`` (for a leaf: its cabled hosts)."""
        down = self.children()
        seen, stack, out = {switch}, [switch], set()
        while stack:
            s = stack.pop()
            for c in down.get(s, ()):
                if "/" in c:
                    out.add(c.split("/", 1)[0])
                elif c not in seen:
                    seen.add(c)
                    stack.append(c)
        order = {h.name: i for i, h in enumerate(self.hosts)}
        return tuple(sorted(out, key=order.__getitem__))

    def down_links(self):
        """(upper, lower) positions in ``table.names`` of every distinct pair of a switch and
        an end one tier below it (an HCA, or a switch of the tier below), sorted by upper
        then lower position; None when the names are not in natural order (``children``
        then sorts names)."""
        import numpy as np

        t = self.table
        if not t.natural_order:
            return None
        _, switch_at = self.end_positions
        is_switch = switch_at >= 0
        tier = np.zeros(len(t.names), dtype=np.int64)
        tier[is_switch] = np.array([s.tier for s in self.switches],
                                   dtype=np.int64)[switch_at[is_switch]]
        up = np.concatenate((t.a, t.b))
        down = np.concatenate((t.b, t.a))
        keep = is_switch[up] & (~is_switch[down] | (tier[down] == tier[up] - 1))
        pair = unique(up[keep] * max(1, len(t.names)) + down[keep])
        return np.divmod(pair, max(1, len(t.names)))

    def children(self) -> dict[str, tuple[str, ...]]:
        """Per switch, the ends one tier below it (switches by name, HCAs as host/index)."""
        import numpy as np

        found = self.down_links()
        if found is None:
            return self._children_by_name()
        up, down = found
        names = self.table.names
        flat = list(map(names.__getitem__, down.tolist()))
        cuts = np.flatnonzero(up[1:] != up[:-1]) + 1 if len(up) else up
        starts = [0, *cuts.tolist()]
        ends = [*cuts.tolist(), len(flat)]
        heads = up[starts].tolist() if len(up) else []
        return {names[u]: tuple(flat[s:e]) for u, s, e in zip(heads, starts, ends)}

    def _children_by_name(self) -> dict[str, tuple[str, ...]]:
        tier = {s.name: s.tier for s in self.switches}
        out: dict[str, set[str]] = defaultdict(set)
        for c in self.cables:
            for up, down in ((c.a, c.b), (c.b, c.a)):
                if up in tier and (down not in tier or tier[down] == tier[up] - 1):
                    out[up].add(down)
        return {k: tuple(sorted(v, key=natural)) for k, v in out.items()}


def hca_indices(device_ids: Sequence[str]) -> tuple[int, ...]:
    """The identities of one host's compute NICs, in order: the numbers in their names
    (``...node3.mlx5_5`` is 5) when every one has a distinct number, else their positions."""
    numbers = []
    for d in device_ids:
        m = _NIC_NAME.match(d.rsplit(".", 1)[-1])
        if not m:
            return tuple(range(len(device_ids)))
        numbers.append(int(m.group(1)))
    if len(set(numbers)) != len(numbers):
        return tuple(range(len(device_ids)))
    return tuple(numbers)


def end_name(system: System, device_id: str) -> str:
    """A switch's fabric name: its path below the system with dots as underscores, so an
    imported dump names it as the .topo does (``plane0_spine3``)."""
    return device_id.split(".", 1)[1].replace(".", "_") if "." in device_id else device_id


@gc_paused()            # 300,000 objects at 1,024 NVL72 racks: no collector passes over them
def fabric(system: System, pattern: str | None = None,
           mapping: Mapping[str, str] | None = None, blocks: bool = True,
           cables: bool = True) -> Fabric:
    """The fabric view of ``system`` with hostnames from ``pattern``/``mapping`` (see
    ``compiler.ir.hosts``). ``blocks`` False leaves the NVLink domains out (``blocks`` empty):
    they are read from the locality table, a large part of the view's time on a large
    system, and ``diff`` and the ibsim, ibdiagnet and Slurm tree files never read them.
    ``cables`` False leaves the cables out (an empty table): ``diff`` of a system with
    itself compares none."""
    import numpy as np

    host_infos, host_at = _host_at(system, pattern, mapping)
    # The scale-out links read from the link arrays (System.ends), no Link object nor id
    # string made per link: device indices, link type codes and lanes, in declaration order.
    src, dst, codes, lanes = system.ends.arrays(lambda t: t.cls in SCALEOUT_CLASSES,
                                                ("src", "dst", "type", "lanes"))
    devices, types = system.devices, system.ends.types
    net = unique(np.concatenate((src, dst)))     # in device order
    ends: dict[int, str] = {}           # device index -> its end name (HCAs, switches)
    # compute NICs on a host, each host's in device order, hosts in order of their first
    # (the models tested once each, not a property per device: 282,624 ends at 32,768 nodes)
    nics = net[model_flags(system, _compute_nic)[net] & (host_at[net] >= 0)]
    # each host's NICs (in device order), hosts in order of their first NIC: one stable sort
    owner = host_at[nics]
    hosts_seen, first = np.unique(owner, return_index=True)
    rank = np.empty(max(1, len(host_infos)), dtype=np.int64)
    rank[hosts_seen[np.argsort(first, kind="stable")]] = np.arange(len(hosts_seen))
    by_host = np.argsort(rank[owner], kind="stable")
    hca_at: list[int] = nics[by_host].tolist()
    hca_host: list[int] = owner[by_host].tolist()
    # each NIC's own name (the last part of its id), made by map, and the identities per
    # host from them, once per distinct tuple of names (every copy of a node has one)
    own = list(map(itemgetter(2), map(str.rpartition, map(_ID, map(devices.__getitem__,
                                                                    hca_at)),
                                      itertools.repeat("."))))
    cuts = np.flatnonzero(np.diff(rank[owner][by_host])) + 1 if len(nics) else nics
    bounds = [0, *cuts.tolist(), len(hca_at)] if len(nics) else [0]
    shapes: dict[tuple[str, ...], tuple[int, ...]] = {}     # NICs' own names -> identities
    hca_index: list[int] = []
    for lo, hi in zip(bounds, bounds[1:]):
        names = tuple(own[lo:hi])
        found = shapes.get(names)
        if found is None:
            found = shapes[names] = hca_indices(names)
        hca_index += found
    hostnames = [h.name for h in host_infos]
    hca_name = list(map(hostnames.__getitem__, hca_host))
    ends.update(zip(hca_at, map("{}/{}".format, hca_name, hca_index)))
    hca_order = np.argsort(np.array(hca_at, dtype=np.int64), kind="stable").tolist()
    hca_dev = [devices[hca_at[k]] for k in hca_order]
    hcas = list(map(Hca, map(hca_name.__getitem__, hca_order),
                    map(hca_index.__getitem__, hca_order), map(_ID, hca_dev),
                    [d.model.name for d in hca_dev]))
    switch_at = net[model_flags(system, lambda m: m.kind == "net_switch")[net]].tolist()
    switch_names = [end_name(system, devices[i].id) for i in switch_at]
    ends.update(zip(switch_at, switch_names))
    # Each end name's natural sort key (``_natural_text``), an HCA's from its host's: what
    # ``_natural_text(name)`` gives, as '/' ends the host's last run of digits (None: a name
    # holds NUL, and ``_natural`` sorts them all)
    keys: dict[str, str] | None = None
    host_keys = _natural_texts(hostnames)
    switch_keys = _natural_texts(switch_names)
    if host_keys is not None and switch_keys is not None:
        index_key = {n: _natural_text(str(n)) for n in set(hca_index)}
        keys = dict(zip(map(ends.__getitem__, hca_at),
                        map("{}/{}".format, map(host_keys.__getitem__, hca_host),
                            map(index_key.__getitem__, hca_index))))
        keys.update(zip(switch_names, switch_keys))
    tier = _tiers(len(devices), src, dst, hca_at, switch_at)
    switches = tuple(Switch(ends[i], devices[i].id, devices[i].model.name, tier[i],
                            devices[i].model.port_budget("infiniband")
                            or devices[i].model.port_budget("ethernet"))
                     for i in switch_at if tier[i] > 0)
    kept = np.zeros(len(devices), dtype=np.bool_)
    kept[hca_at] = True
    switch_kept = [i for i in switch_at if tier[i] > 0]
    kept[switch_kept] = True
    if cables:
        table = _cables(ends, keys, src, dst, codes, lanes, types, kept,
                        np.array(hca_at, dtype=np.int64)[np.array(hca_order, dtype=np.int64)],
                        np.array(switch_kept, dtype=np.int64))
    else:
        none = np.zeros(0, dtype=np.int64)
        table = CableTable((), none, none, none, none, (), True, none, none)
    return Fabric(system.name, host_infos, tuple(hcas), switches, table,
                  _blocks(system, host_infos, host_at) if blocks else (),
                  (host_infos, switches, host_at, switch_kept))


def _compute_nic(model) -> bool:
    """``Device.compute_nic`` of a model's devices."""
    return model.kind == "nic" and model.attr("role", "compute") == "compute"


def _host_at(system: System, pattern: str | None, mapping: Mapping[str, str] | None):
    """The hosts (``ir.hosts.hosts``) and each device's host as its position among them (-1:
    on none), a numpy array by device index: no dictionary of every host device's id."""
    import numpy as np

    infos, members = hosts_and_members(system, pattern, mapping)
    host_at = np.full(len(system.devices), -1, dtype=np.int64)
    if members:
        flat = np.fromiter(itertools.chain.from_iterable(members), dtype=np.int64)
        host_at[flat] = np.repeat(np.arange(len(members), dtype=np.int64),
                                  [len(m) for m in members])
    return infos, host_at


def _tiers(n: int, src, dst, hca_at: list[int], switch_at: list[int]) -> list[int]:
    """Each device's tier (0: not a switch the compute HCAs reach through switches): 1 for a
    switch cabled to an HCA, else one more than the lowest tier it is cabled to; a
    breadth-first search by levels over the cables between HCAs and switches, in numpy."""
    import numpy as np

    is_hca = np.zeros(n, dtype=np.bool_)
    is_hca[hca_at] = True
    is_switch = np.zeros(n, dtype=np.bool_)
    is_switch[switch_at] = True
    # both directions of every cable between two ends (an HCA or a switch)
    both = (is_hca[src] | is_switch[src]) & (is_hca[dst] | is_switch[dst])
    a = np.concatenate((src[both], dst[both]))
    b = np.concatenate((dst[both], src[both]))
    tier = np.zeros(n, dtype=np.int64)
    frontier = unique(b[is_hca[a] & is_switch[b]])
    level = 1
    while len(frontier):
        tier[frontier] = level
        reached = np.zeros(n, dtype=np.bool_)
        reached[frontier] = True
        step = b[reached[a] & is_switch[b]]
        frontier = unique(step[tier[step] == 0])
        level += 1
    return tier.tolist()


def _cables(ends: dict[int, str], keys: dict[str, str] | None, src, dst, codes, lanes,
            types, kept, hca_at, switch_at) -> CableTable:
    """The cables between kept ends: one per pair of ends (in natural order) and link type
    (class, rate and name), counting lanes, in natural order of the ends then the type's
    name, first seen first on a tie; in numpy over the links. ``keys``: each end name's
    natural sort key (None: made here by ``_natural``); ``hca_at``, ``switch_at``: the
    device indices of the fabric's HCAs and switches, in its order."""
    import numpy as np

    if keys is None:
        # each name's key once (the cached ``natural`` holds 65,536: 80,000 ends would churn)
        keys = dict(zip(distinct := list(set(ends.values())), map(_natural, distinct)))
    named = sorted(zip(keys.values(), keys), key=itemgetter(0))
    ordered = list(map(itemgetter(0), named))
    if any(map(operator.eq, ordered, ordered[1:])):
        return CableTable.of(_cables_by_name(ends, src, dst, codes, lanes, types, kept))
    names = list(map(itemgetter(1), named))
    rank_of = dict(zip(names, range(len(names))))
    rank = np.full(len(kept), -1, dtype=np.int64)
    rank[np.fromiter(ends, dtype=np.int64, count=len(ends))] = np.fromiter(
        map(rank_of.__getitem__, ends.values()), dtype=np.int64, count=len(ends))
    keep = kept[src] & kept[dst]
    ra, rb = rank[src[keep]], rank[dst[keep]]
    lo, hi = np.minimum(ra, rb), np.maximum(ra, rb)
    # link types alike in class, rate and name are one kind of cable
    kinds = {(t.cls, t.bandwidth * 8, t.name): None for t in types}
    kind_list = list(kinds)
    kind_of = np.array([kind_list.index((t.cls, t.bandwidth * 8, t.name)) for t in types]
                       or [0], dtype=np.int64)
    by_name = sorted(range(len(kind_list)), key=lambda k: kind_list[k][2])  # stable
    name_rank = np.empty(max(1, len(kind_list)), dtype=np.int64)
    name_rank[by_name] = np.arange(len(by_name))
    kind = kind_of[codes[keep].astype(np.int64)]
    m, nk = len(names), max(1, len(kind_list))
    key = (lo * m + hi) * nk + kind
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    count = np.bincount(inverse, weights=lanes[keep]).astype(np.int64)
    pair, k = np.divmod(uniq, nk)
    a, b = np.divmod(pair, m)
    order = np.lexsort((first, name_rank[k], b, a))
    hca = np.full(m, -1, dtype=np.int64)
    hca[rank[hca_at]] = np.arange(len(hca_at))
    switch = np.full(m, -1, dtype=np.int64)
    switch[rank[switch_at]] = np.arange(len(switch_at))
    return CableTable(tuple(names), a[order], b[order], k[order], count[order],
                      tuple(kind_list), True, hca, switch)


_ID = operator.attrgetter("id")


def _digits_token(m: re.Match) -> str:
    digits = str(int(m.group()))
    return f"\0{chr(len(digits) + 1)}{digits}"


def _natural_text(name: str) -> str:
    """A string that sorts (and ties) as ``natural(name)`` does, for a name without NUL: each
    run of digits becomes NUL, its value's length and its value's digits. A plain string sort
    of these is several times faster than one of ``natural``'s tuples of text and numbers.
    Where the tuples compare a text part with a longer one, the shorter's NUL (or its end)
    sorts first, as the shorter text does; where they compare two numbers, the two runs are
    at the same place and compare by length, then digits, as the numbers do."""
    return _DIGIT_RUN.sub(_digits_token, name)


_DIGIT_RUN = re.compile(r"\d+")


def _natural_texts(names: Sequence[str]) -> list[str] | None:
    """``_natural_text`` of each name; None when one holds NUL (``_natural`` sorts them).
    The names are joined by U+0001 and split at their runs of digits once (no Python call
    per run: 235,000 names at 8,192 NVL72 racks), each run made as ``_digits_token`` makes
    it; names that hold U+0001 are made one by one."""
    text = "\x01".join(names)
    if "\0" in text:
        return None
    if text.count("\x01") != max(0, len(names) - 1):
        return list(map(_natural_text, names))
    parts = _DIGIT_SPLIT.split(text)
    parts[1::2] = [f"\0{chr(len(d) + 1)}{d}" for d in map(str, map(int, parts[1::2]))]
    return "".join(parts).split("\x01") if names else []


_DIGIT_SPLIT = re.compile(r"(\d+)")


def _cables_by_name(ends: dict[int, str], src, dst, codes, lanes, types,
                    kept) -> tuple[Cable, ...]:
    """``_cables`` one link at a time, for ends whose names sort alike (``node01/0`` and
    ``node1/0``): ties keep the order the links first give them."""
    cables: dict[tuple, int] = defaultdict(int)
    key = {e: natural(e) for e in ends.values()}    # once per end, not per cable
    for x, y, t, n in zip(src.tolist(), dst.tolist(), codes.tolist(), lanes.tolist()):
        if kept[x] and kept[y]:
            a, b, t = ends[x], ends[y], types[t]
            if key[b] < key[a]:             # the two in natural order (one compare, no sort)
                a, b = b, a
            cables[(a, b, t.cls, t.bandwidth * 8, t.name)] += n
    return tuple(Cable(a, b, cls, rate, n, lt)
                 for (a, b, cls, rate, lt), n in sorted(
                     cables.items(), key=lambda kv: (key[kv[0][0]], key[kv[0][1]], kv[0][4])))


def _blocks(system: System, host_infos: Sequence[HostInfo],
            host_at) -> tuple[tuple[str, ...], ...]:
    """NVLink domains as hostnames, in rank order; single-host domains count too (a DGX).
    ``host_at``: each device's position in ``host_infos`` (-1: on no host). A domain is its
    root's name (a GPU in none is its own); the domains come in order of their first GPU on
    a host, each one's hosts in order of their first GPU there: numbers and one sort in
    numpy, no Python step per GPU beyond a dictionary's (589,824 GPUs at 8,192 racks)."""
    import numpy as np

    loc = system.locality
    gpu_host = host_at[loc.gpu_index]
    on = np.flatnonzero(gpu_host >= 0)
    if not len(on):
        return ()
    on_list = on.tolist()
    roots = list(map(loc.domain_root.__getitem__, on_list))
    if None in roots:
        gpus = system.gpus
        roots = [r if r is not None else gpus[k].id for r, k in zip(roots, on_list)]
    number = {r: n for n, r in enumerate(dict.fromkeys(roots))}    # first seen first
    domain = np.fromiter(map(number.__getitem__, roots), dtype=np.int64, count=len(roots))
    hosts = max(1, len(host_infos))
    pair, first = np.unique(domain * hosts + gpu_host[on], return_index=True)
    order = np.lexsort((first, pair // hosts))     # domains in number order, hosts first seen
    pair = pair[order]
    dom, host = np.divmod(pair, hosts)
    names = [h.name for h in host_infos]
    flat = list(map(names.__getitem__, host.tolist()))
    cuts = (np.flatnonzero(dom[1:] != dom[:-1]) + 1).tolist()
    return tuple(tuple(flat[s:e]) for s, e in zip([0, *cuts], [*cuts, len(flat)]))


@attrs.frozen
class Wire:
    """One cable with port numbers at both ends (1-based, in cable order per end)."""

    a: str
    a_port: int
    b: str
    b_port: int
    rate: float
    cls: str


def wiring(fab: Fabric, ports: Mapping[tuple[str, str], Sequence[tuple[int, int]]] | None = None
           ) -> tuple[Wire, ...]:
    """Every cable of ``fab`` on numbered ports: each end numbers its cables from 1 in the
    fabric's cable order (down-links of a switch in end-name order come with it). ``ports``
    ((end, end) in sorted order -> port pairs in that order, as a dump reported them:
    ``topoc.importers.ports``) numbers the cables it lists so; the others take each end's
    lowest free ports."""
    given: dict[tuple[str, str], list[tuple[int, int]]] = {}
    used: dict[str, set[int]] = defaultdict(set)
    for (x, y), pairs in (ports or {}).items():
        given[(x, y)] = list(pairs)
        for px, py in pairs:
            used[x].add(px)
            used[y].add(py)
    next_port: dict[str, int] = defaultdict(lambda: 1)

    def free(end: str) -> int:
        while next_port[end] in used[end]:
            next_port[end] += 1
        port = next_port[end]
        used[end].add(port)
        return port
    if ports is None:
        # no dump to follow: each end's ports from 1 in cable order (one pass, no lookups of
        # given pairs: 786,432 wires at 32,768 DGX nodes)
        columns = wire_ends(fab)
        if columns is not None:
            return _wires_of(fab, *columns)
        out = []
        for c in fab.cables:
            a, b = c.a, c.b
            pa, pb = next_port[a], next_port[b]
            n = c.count
            if a == b:              # one end at both: its counter moves twice per wire
                out.extend(Wire(a, pa + k, b, pa + k, c.rate, c.cls) for k in range(0, 2 * n, 2))
                next_port[a] = pa + 2 * n
                continue
            next_port[a], next_port[b] = pa + n, pb + n
            if n == 1:
                out.append(Wire(a, pa, b, pb, c.rate, c.cls))
            else:
                out.extend(Wire(a, pa + k, b, pb + k, c.rate, c.cls) for k in range(n))
        return tuple(out)
    out = []
    for c in fab.cables:
        flip = (c.b, c.a) in given and (c.a, c.b) not in given
        listed = given.get((c.b, c.a) if flip else (c.a, c.b), [])
        for _ in range(c.count):
            if listed:
                pa, pb = listed.pop(0)
                if flip:
                    pa, pb = pb, pa
            elif ports is None:
                pa, pb = next_port[c.a], next_port[c.b]
                next_port[c.a] += 1
                next_port[c.b] += 1
            else:
                pa, pb = free(c.a), free(c.b)
            out.append(Wire(c.a, pa, c.b, pb, c.rate, c.cls))
    return tuple(out)


def wire_ends(fab: Fabric):
    """``wiring(fab)`` as columns, for exporters that write a line per cable end: every
    wire end (each cable's ``count`` wires, in cable order, each wire its first end then its
    second) grouped by end, the ends in the fabric's order (``switches``, then ``hcas``),
    each end's wires in port order. Returns (per wire end: its end, its port, its peer, the
    peer's port, its cable's row; all positions in ``table.names`` or rows of ``table``)
    and the index in those columns where each end's run starts; None where the fabric's
    ports are not numbered so (a cable with one end at both, a cable end that is no HCA or
    switch of the fabric): ``wiring`` then numbers them one at a time."""
    import numpy as np

    t = fab.table
    hca_at, switch_at = fab.end_positions
    if np.any(t.a == t.b):
        return None
    row = np.repeat(np.arange(len(t), dtype=np.int64), t.count)
    end = np.empty(2 * len(row), dtype=np.int64)
    end[0::2], end[1::2] = t.a[row], t.b[row]
    place = np.where(switch_at >= 0, switch_at, len(fab.switches) + hca_at)
    if np.any((switch_at < 0) & (hca_at < 0) & np.isin(np.arange(len(t.names)), end)):
        return None
    order = np.argsort(place[end], kind="stable")     # by end, each end's in wire order
    mine = end[order]
    starts = np.flatnonzero(np.r_[True, mine[1:] != mine[:-1]]) if len(mine) else \
        np.zeros(0, dtype=np.int64)
    # each end numbers its wires from 1 in wire order: the position in its run, plus one
    port = np.empty(len(end), dtype=np.int64)
    port[order] = np.arange(len(end)) - np.repeat(starts, np.diff(np.r_[starts, len(end)])) + 1
    peer_of = order ^ 1                 # the wire's other end (ends of a wire are 2w, 2w + 1)
    return (mine, port[order], end[peer_of], port[peer_of], row[order >> 1]), starts


def _wires_of(fab: Fabric, columns, starts) -> tuple[Wire, ...]:
    """``Wire`` objects from ``wire_ends``' columns, in wire order."""
    import numpy as np

    end, port, peer, peer_port, row = columns
    # a wire's first end is its cable's first end (the two differ); wire order is row order
    # then the wire's place in its cable, which the first end's port keeps
    t = fab.table
    is_first = t.a[row] == end
    first = np.flatnonzero(is_first)
    first = first[np.lexsort((port[first], row[first]))]
    names, kinds = t.names, t.kinds
    rate = [kinds[k][1] for k in t.kind[row[first]].tolist()]
    cls = [kinds[k][0] for k in t.kind[row[first]].tolist()]
    return tuple(map(Wire, map(names.__getitem__, end[first].tolist()), port[first].tolist(),
                     map(names.__getitem__, peer[first].tolist()),
                     peer_port[first].tolist(), rate, cls))
