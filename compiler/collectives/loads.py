"""Link loads for the cost model: which shared resource each transfer crosses, and its capacity.

Contention is counted per *bundle*, not per physical link, because traffic spreads over
equivalent parallel links: NCCL's channels use all of a GPU's NVLinks to the switch chips of
its fabric, and ECMP or adaptive routing spreads a leaf's flows over its spines. A hop going
up (towards switches) uses the bundle of the lower device's links to every sibling of the upper
one (a GPU's 18 NVLinks to 18 switch chips, a leaf's uplinks to its spines); a hop going down
uses the bundle of the lower device's links from every sibling of the upper one; a hop between
peers (GPU-GPU NVLink, a socket link) is its own resource. Siblings share a *class*: the id
with its array indices removed (``rack0.nvswitch_tray3.chip1`` -> ``rack.nvswitch_tray.chip``).

Capacities are in NCCL's units, what its kernels reach rather than the signalling rate: NVLink
per lane by GPU generation (src/graph/topo.h), PCIe at NCCL's 24/48 GB/s for Gen4/Gen5 x16,
InfiniBand at 96 % of line rate (CX-7 NDR reaches 46-49 GB/s, nccl-tests issues 267 and 290).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping

from ..base.figures import nvlink_nominal
from ..ir.kinds import KINDS
from ..ir.system import SCALEOUT_CLASSES, System
from . import transports
from .orders import CHANNELS_PER_NIC
from .paths import RailRouter
from ..ir.summary import scaleout_levels

#: NCCL's NVLink bandwidth per link in GB/s by compute capability (src/graph/topo.h:
#: SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1).
NCCL_NVLINK_GBS = ((100, 40.1), (90, 20.6), (70, 20.0), (0, 18.0))
#: Usable fraction of the raw rate: PCIe as NCCL models a x16 link (24 of 31.5, 48 of 63 GB/s);
#: scale-out at 96 % (46-49 of 50 GB/s for NDR); C2C and socket links are in NCCL's figures
#: already (the library takes them from NCCL dumps and topo.h).
CLASS_EFFICIENCY = {"pcie": 48 / 63, "infiniband": 0.96, "ethernet": 0.96,
                    "nvlink_c2c": 1.0, "inter_socket": 1.0}
#: Per-link latencies (s) that NCCL's per-hop figures (tuning.cc hwLat) already cover: the
#: library's links.topo values, which are NCCL's LL hop latencies. A file that declares more
#: adds the difference to every hop over such a link; less never goes below NCCL's figure.
REFERENCE_LATENCY = {"nvlink": 0.6e-6, "nvlink_c2c": 0.6e-6, "pcie": 1e-6,
                     "inter_socket": 1e-6, "infiniband": 0.3e-6, "ethernet": 0.3e-6}
_OUTER = {"nvlink": 0, "nvlink_c2c": 1, "pcie": 2, "inter_socket": 3, "ethernet": 4,
          "infiniband": 4}
_INDEX = re.compile(r"\d+(?=\.|$)")


def nvlink_gbs(sm: int | None) -> float:
    """NCCL's per-link NVLink bandwidth (GB/s) for a GPU of compute capability ``sm``."""
    sm = 90 if sm is None else int(sm)
    return next(bw for floor, bw in NCCL_NVLINK_GBS if sm >= floor)


def nvlink_efficiency(sm: int | None) -> float:
    """What NCCL's kernels reach of a lane's nominal rate: 40.1 of 50 GB/s on Blackwell,
    20.6 of 25 on Hopper, 20 of 25 on Ampere and Volta."""
    return nvlink_gbs(sm) * 1e9 / nvlink_nominal(sm)[0]


def device_class(device_id: str) -> str:
    """The id without array indices: siblings of an array share it."""
    return _INDEX.sub("", device_id)


class Resources:
    """Shared resources (link bundles) of one system, their capacities, and the resources a
    transfer between two devices crosses (paths from the router, cached)."""

    def __init__(self, system: System, sm: int | None):
        self.system = system
        self.graph = system.adjacency
        self.router = RailRouter(system)
        self.nvlink_eff = nvlink_efficiency(sm)
        self.kind = self.router.kind
        self._levels: dict[str, int] | None = None
        self._paths: dict[tuple[str, str], tuple[tuple, ...]] = {}
        self._marked: dict[tuple[str, str], tuple[tuple[tuple, bool], ...]] = {}
        self._links_at: dict[str, dict[str, object]] = {}
        self._classes: dict[str, str] = {}
        self._latency: dict[tuple[str, str], float] = {}
        self.capacity: dict[tuple, float] = {}
        self.example: dict[tuple, tuple[str, str]] = {}     # resource -> (link id, link class)

    @classmethod
    def of(cls, system: System, sm: int | None) -> Resources:
        """The system's shared resources for GPUs of compute capability ``sm``, built once:
        paths and capacities are facts of the system, so every cost call (plan makes
        thousands) reuses what earlier ones routed."""
        found = system.memo.get((cls, sm))
        if found is None:
            found = system.memo[cls, sm] = cls(system, sm)
        return found

    def tier(self, device_id: str) -> int:
        """Height in the hierarchy: GPUs 0, NVSwitches and PCIe switches 1, CPUs 2, NICs 3,
        network switches 4 and up by their distance from the NICs."""
        kind = self.kind[device_id]
        if kind != "net_switch":
            return KINDS[kind].height
        if self._levels is None:
            self._levels = scaleout_levels(self.system)
        return KINDS[kind].height + self._levels.get(device_id, 0)

    def _efficiency(self, link) -> float:
        """The fraction of a declared link's bandwidth NCCL's kernels reach (an efficiency,
        never a replacement: the file's figure drives the cost)."""
        if link.cls == "nvlink":
            return self.nvlink_eff
        if link.cls in SCALEOUT_CLASSES:        # a NIC's own link: its transport's fraction
            for end in (link.src, link.dst):
                if self.kind.get(end) == "nic":
                    return transports.of_nic(self.system.device(end).model, link.cls).efficiency
        return CLASS_EFFICIENCY.get(link.cls, 1.0)

    def extra_latency(self, src: str, dst: str) -> float:
        """What the file declares for the path from ``src`` to ``dst`` beyond the reference
        latencies NCCL's per-hop figures already hold (s, never negative): the sum over its
        links of declared minus REFERENCE_LATENCY for the link's class."""
        key = (src, dst)
        found = self._latency.get(key)
        if found is None:
            at, found = src, 0.0
            for link_id in self._path(src, dst):
                link = self._link(at, link_id)
                at = link.dst if link.src == at else link.src
                found += link.type.latency - REFERENCE_LATENCY.get(link.cls, 0.0)
            found = max(0.0, found)
            self._latency[key] = found
        return found

    def _bundle(self, u: str, v: str, link) -> tuple:
        """The resource a hop u -> v over ``link`` uses; its capacity is computed once."""
        tu, tv = self.tier(u), self.tier(v)
        if tu == tv:
            key: tuple = ("link", link.id, u if link.duplex else "")
            links = [link]
        else:
            low, high, way = (u, v, "up") if tu < tv else (v, u, "down")
            cls = self._device_class(high)
            pool = self._pool(low) if link.cls in SCALEOUT_CLASSES else (low,)
            key = (way, pool[0], cls, link.cls)
            links = [] if key in self.capacity else [
                d["link"] for member in pool for w, edges in self.graph[member].items()
                if self._device_class(w) == cls for d in edges.values()
                if d["link"].cls == link.cls]
        if key not in self.capacity:
            self.capacity[key] = sum(x.bandwidth * self._efficiency(x) for x in links)
            first = min(links, key=lambda x: x.id)
            self.example[key] = (first.id, first.cls)
        return key

    def _device_class(self, device_id: str) -> str:
        """``device_class``, once per device (a hop's bundle asks at every new path)."""
        found = self._classes.get(device_id)
        if found is None:
            found = self._classes[device_id] = device_class(device_id)
        return found

    def _pool(self, device_id: str) -> tuple[str, ...]:
        """The NICs one GPU drives together (``Locality.nic_pool``): one resource of their
        summed capacity, as NCCL's net plugins (aws-ofi-nccl) and NCCL_IB_MERGE_NICS stripe
        a GPU's channels over all of them; any other device alone."""
        if self.kind.get(device_id) != "nic":
            return (device_id,)
        return self.system.locality.nic_pool(device_id)

    def crossed(self, src: str, dst: str) -> tuple[tuple, ...]:
        """The resources a transfer from device ``src`` to ``dst`` crosses, in path order; a
        host-staged GPU pair adds its staging (``staging``)."""
        key = (src, dst)
        found = self._paths.get(key)
        if found is None:
            found = tuple(self._hops(src, dst))
            staging = self.staging(src, dst, found)
            if staging is not None:
                found += (staging,)
            self._paths[key] = found
        return found

    def crossed_nics(self, src: str, dst: str) -> tuple[tuple[tuple, bool], ...]:
        """``crossed`` with, for each resource, whether it is a NIC's scale-out bundle (one
        ``net_channel`` shares per channel): once per pair, so a ring's transfers on every
        channel ask only about the resources that have shares."""
        key = (src, dst)
        found = self._marked.get(key)
        if found is None:
            found = self._marked[key] = tuple((r, self._nic_bundle(r))
                                              for r in self.crossed(src, dst))
        return found

    def staging(self, src: str, dst: str, hops: tuple[tuple, ...]) -> tuple | None:
        """Two GPUs with no peer-to-peer path (``Locality.staged``) move data as NCCL's SHM
        transport does: the sender copies into host memory, the receiver copies out. topoc
        costs the two copies back to back, so the pair gets half the bandwidth of its slowest
        link (a resource of its own on top of the links' shared ones); None for other pairs."""
        loc = self.system.locality
        ranks = loc.rank_of
        if src not in ranks or dst not in ranks or not loc.staged(ranks[src], ranks[dst]):
            return None
        key = ("staged", src, dst)
        if key not in self.capacity:
            slowest = min(hops, key=lambda h: self.capacity[h])   # the link that limits
            self.capacity[key] = self.capacity[slowest] / 2
            self.example[key] = self.example[slowest]
        return key

    def _hops(self, src: str, dst: str):
        at = src
        for link_id in self._path(src, dst):
            link = self._link(at, link_id)
            nxt = link.dst if link.src == at else link.src
            yield self._bundle(at, nxt, link)
            at = nxt

    def _path(self, src: str, dst: str) -> tuple[str, ...]:
        """The route stage's path (``route.RailRouter``): the links costed are the links a
        schedule's transfers are routed over."""
        return self.router.path(src, dst)

    def net_channel(self, resource: tuple, channel: int) -> tuple | None:
        """The per-channel share of a NIC's scale-out bundle: NCCL drives a NIC with
        CHANNELS_PER_NIC channels, each at that fraction of the NIC (docs/cost.md). None when
        ``resource`` is not a NIC's scale-out bundle."""
        if not self._nic_bundle(resource):
            return None
        way, low = resource[0], resource[1]
        key = ("netchan", low, way, channel)
        if key not in self.capacity:
            self.capacity[key] = self.capacity[resource] / CHANNELS_PER_NIC
            self.example[key] = self.example[resource]
        return key

    def _nic_bundle(self, resource: tuple) -> bool:
        """Whether ``resource`` is a NIC's scale-out bundle (what ``net_channel`` shares)."""
        return resource[0] in ("up", "down") and resource[3] in SCALEOUT_CLASSES and \
            self.kind.get(resource[1]) == "nic"

    def _link(self, at: str, link_id: str):
        """The link ``link_id`` at device ``at``, from a table of the device's links by id
        made when first asked (the adjacency files each link under its id): a path's hop
        through an NVLink switch chip no longer spells out the ids of its 72 links."""
        table = self._links_at.get(at)
        if table is None:
            table = self._links_at[at] = {}
            for edges in self.graph[at].values():
                for k, d in edges.items():
                    table.setdefault(k, d["link"])
        return table[link_id]

    def classes(self, resources) -> set[str]:
        """Link classes of ``resources``."""
        return {self.example[r][1] for r in resources}


def totals(phases) -> dict[tuple, float]:
    """Bytes per unit size on each resource over all of an algorithm's phases (a phase's
    loads times its rounds): what one group puts on the links in one call."""
    out: dict[tuple, float] = defaultdict(float)
    for loads, rounds in phases:
        for r, b in loads.bytes.items():
            out[r] += b * rounds
    return dict(out)


def crowding(phases, background: Mapping[tuple, float] | None) -> dict[tuple, float]:
    """The factor on each resource's bytes when other groups of the same traffic line load it
    at the same time (``background``: their bytes per unit of this group's size): the
    resource is shared in proportion to what each group puts on it, so this group's bytes
    take (own + others) / own as long, the time the resource needs to drain them all. Only
    resources both load are in it (empty: the group is alone)."""
    if not background:
        return {}
    own = totals(phases)
    return {r: (b + background[r]) / b for r, b in own.items()
            if b > 0 and background.get(r, 0.0) > 0}


class Loads:
    """Bytes per resource, accumulated transfer by transfer."""

    def __init__(self, resources: Resources):
        self.resources = resources
        self.bytes: dict[tuple, float] = defaultdict(float)

    def add(self, src: str, dst: str, nbytes: float, channel: int | None = None) -> None:
        """Account one transfer of ``nbytes`` from device ``src`` to ``dst``; with ``channel``,
        also on that channel's share of every NIC it crosses."""
        if src == dst:
            return
        found = self.bytes
        if channel is None:
            for r in self.resources.crossed(src, dst):
                found[r] += nbytes
            return
        resources = self.resources
        for r, nic in resources.crossed_nics(src, dst):
            found[r] += nbytes
            if nic:
                found[resources.net_channel(r, channel)] += nbytes

    def busiest(self, crowd: Mapping[tuple, float] | None = None) -> tuple[float, tuple | None]:
        """Seconds the busiest resource needs for its bytes, and that resource; among equally
        busy ones the outermost (network before PCIe before NVLink) is named. ``crowd``: a
        factor (at least 1) on the bytes of the resources other groups load at the same
        time (``crowding``); the others keep their time exactly."""
        cap, example = self.resources.capacity, self.resources.example
        crowd = crowd or {}
        best_t, best_rank, which = 0.0, (-1, ""), None
        for r in self.bytes:
            b = self.bytes[r] * crowd[r] if r in crowd else self.bytes[r]
            t = b / cap[r] if cap[r] > 0 else float("inf")
            rank = (_OUTER.get(example[r][1], 0), repr(r))
            tie = abs(t - best_t) <= 1e-9 * max(t, best_t)
            if (t > best_t and not tie) or (tie and rank > best_rank):
                best_t, best_rank, which = max(t, best_t), rank, r
        return best_t, which
