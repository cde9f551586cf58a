"""NCCL's CollNet all-reduce over SHARP: in-network reduction in InfiniBand switches.

A fabric is SHARP-capable when every network switch a group's NICs attach to declares
``sharp = true`` (devices.topo: QM9700SHARP); the declaration says the fabric is set up for it
(nccl-rdma-sharp-plugins and NCCL_COLLNET_ENABLE=1), so ``auto`` weighs CollNet only then.

CollNet chain (NCCL's COLLNET_CHAIN, from 2.14): inside every island the ranks form a chain that reduces
towards the channel's head and broadcasts back; each head sends its share of the buffer up
to the switches, which reduce it across islands and send the result back down. So the network
carries the buffer once each way (a ring all-reduce carries it twice), spread over the heads:
NCCL opens its CollNet channels over the island's NICs, two per NIC as for rings.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.system import SCALEOUT_CLASSES, System
from .. import orders
from ..loads import Loads, Resources
from ..tuning import COLLNET_CHAIN_LAT, Profile
from .base import Algorithm, CostError, Group, Shape, gpu_ids, since


def sharp_fabric(system: System, ranks: Sequence[int]) -> bool:
    """True when every network switch the group's NICs link to declares ``sharp = true``."""
    loc = system.locality
    if loc.system.devices is system.devices:
        return _sharp_arrays(system, loc, ranks)
    found = False
    for nic in {loc.nic(r) for r in ranks} - {""}:
        for link in system.links_of(nic):
            if link.cls not in SCALEOUT_CLASSES:
                continue
            other = system.device(link.dst if link.src == nic else link.src)
            if other.kind == "net_switch":
                if not other.model.attr("sharp"):
                    return False
                found = True
    return found


def _sharp_arrays(system: System, loc, ranks: Sequence[int]) -> bool:
    """``sharp_fabric`` over the scale-out links' integer ends: the group's own NICs by device
    index, every neighbour of theirs at once (a world of 590,000 GPUs asked each NIC's links,
    and built every device's link list for it)."""
    import numpy as np

    from ...ir.incidence import arrays_in
    from ...ir.modelcodes import model_flags

    nics = loc.nic_index[np.asarray(ranks, dtype=np.int64)] if len(ranks) else \
        np.zeros(0, np.int64)
    chosen = np.zeros(len(system.devices), dtype=np.bool_)
    chosen[nics[nics >= 0]] = True
    a, b, _ = arrays_in(system, SCALEOUT_CLASSES)
    others = np.concatenate((b[chosen[a]], a[chosen[b]]))
    switch = model_flags(system, lambda m: m.kind == "net_switch")[others]
    plain = model_flags(system, lambda m: m.kind == "net_switch" and not m.attr("sharp"))
    return bool(switch.any()) and not bool(plain[others].any())


def chain_loads(res: Resources, system: System, ranks: Sequence[int]) -> Loads:
    """One pass of CollNet chain, in bytes per unit size: the chain inside each island (each
    hop carries the buffer up and back down), and every channel's head to and from its
    NIC's switch with its share of the buffer."""
    loads = Loads(res)
    gpu = gpu_ids(system)
    loc = system.locality
    channels = orders.net_channels(system, ranks)
    for part in orders.islands_ranks(system, ranks):
        for a, b in zip(part, part[1:]):
            loads.add(gpu[b], gpu[a], 1.0)
            loads.add(gpu[a], gpu[b], 1.0)
        for c in range(channels):
            head = part[(c * len(part) // channels) % len(part)]
            nic = loc.nic(head)
            switch = _switch_of(system, nic)
            if switch:
                loads.add(gpu[head], switch, 1.0 / channels, c)
                loads.add(switch, gpu[head], 1.0 / channels, c)
    return loads


def _switch_of(system: System, nic: str) -> str:
    """The network switch ``nic`` links to ('' when none)."""
    for link in system.links_of(nic) if nic else ():
        other = link.dst if link.src == nic else link.src
        if system.device(other).kind == "net_switch":
            return other
    return ""


def shape(g: Group) -> Shape:
    if len({g.system.locality.island[r] for r in g.ranks}) < 2 or \
            not sharp_fabric(g.system, g.ranks):
        raise CostError("CollNet needs two or more islands on network switches that all "
                        "declare 'sharp = true'")
    return Shape(((chain_loads(g.res, g.system, g.sample), 1.0),))


def latency(p: Profile, collective: str, n: int, proto: int) -> float:
    """The chain down and up each island, one trip to the switches (tuning.cc hwLat)."""
    return 2 * (n // p.islands - 1) * COLLNET_CHAIN_LAT[0] + COLLNET_CHAIN_LAT[1]


def eligible(g: Group) -> bool:
    """CollNet where the fabric declares SHARP, across two or more islands."""
    return orders.island_count(g.system, g.ranks) >= 2 and sharp_fabric(g.system, g.ranks)


COLLNET_CHAIN = Algorithm(
    "collnetchain", "CollNet chain",
    collectives=("allreduce",), protocols=("Simple",),
    shape=shape, latency=latency, bus=lambda p, c, n, size, proto, raw: raw,
    net_steps=lambda p, c: 1.0,
    # NCCL_ALGO_COLLNET_CHAIN appears in src/include/devcomm.h at v2.14.3-1 (not v2.13.4-1)
    nccl={"allreduce": since((2, 14))},
    eligible=eligible)
