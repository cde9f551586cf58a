"""``topoc export nccl-graph``: the rings and trees topoc chose, as NCCL's ``NCCL_GRAPH_FILE``.

NCCL reads one node's share of each graph: ``graphs version="1" > graph id pattern nchannels
speedintra speedinter typeintra typeinter ... > channel > net|gpu``, devices numbered locally
(the shape of NCCL's own graph dumps). Graph 0 holds the rings (pattern 4), graph 1 the trees
(pattern 3, NCCL_TOPO_PATTERN_TREE: a channel's inter-node traffic through its head GPU, as the
cost model routes it), one channel each, with NCCL's channel count (two per NIC across nodes)
and per-channel speeds in NCCL's units. A channel lists the NICs it uses only where the group
leaves its NVLink island.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..compiler.ir.system import System
from ..compiler.ir.groups import RankGroup
from ..compiler.collectives.loads import CLASS_EFFICIENCY, nvlink_gbs
from ..compiler.collectives.orders import (CHANNELS_PER_NIC, MAX_GRAPH_CHANNELS, islands, net_channels,
                               ring_orders, tree_parents)
from .nccl_topo import ExportError, pick_node, serialize


def _nvlink_peers(system: System, device_id: str) -> set[str]:
    return {lk.dst if lk.src == device_id else lk.src
            for lk in system.links_of(device_id) if lk.cls == "nvlink"}


def _type(system: System, a: str, b: str) -> str:
    """NCCL's path type between two GPUs: NVL over NVLink (directly or through an NVLink
    switch), PIX under one PCIe switch, PHB through their CPU, SYS across sockets."""
    peers_a, peers_b = _nvlink_peers(system, a), _nvlink_peers(system, b)
    if b in peers_a or any(system.device(n).kind == "switch" for n in peers_a & peers_b):
        return "NVL"
    loc = system.locality
    ra, rb = loc.rank_of[a], loc.rank_of[b]
    switch = loc.pcie_switch(ra)
    if switch and switch == loc.pcie_switch(rb):
        return "PIX"
    return "PHB" if loc.socket(ra) == loc.socket(rb) else "SYS"


def default_channels(system: System, group: RankGroup) -> int:
    """NCCL's channel count for the group: across islands two per NIC (2 to 16), inside one
    island one per NVLink lane of a GPU (2 to 16; 2 without NVLink)."""
    if len(islands(system, group.ranks)) > 1:
        return net_channels(system, group.ranks)
    lanes = sum(lk.lanes for lk in system.links_of(system.gpus[group.ranks[0]].id)
                if lk.cls == "nvlink")
    return max(2, min(MAX_GRAPH_CHANNELS, lanes))


def build(system: System, group: RankGroup, node: str | None = None,
          channels: int | None = None) -> ET.Element:
    """Graphs 0 (rings, pattern 4) and 1 (trees, pattern 3: each channel's inter-node traffic
    through its head GPU) for one node of ``group``."""
    prefix, members = pick_node(system, node)
    local = {d.id: i for i, d in enumerate(d for d in members if d.kind == "gpu")}
    nic_index = {d.id: i for i, d in enumerate(d for d in members if d.compute_nic)}
    devices = [system.gpus[r].id for r in group.ranks]
    if not any(d in local for d in devices):
        raise ExportError(f"no rank of the group sits on node {prefix}")
    loc = system.locality
    channels = channels or default_channels(system, group)
    # NET hops only where the group leaves its NVLink island (an NVL72 rack's trays meet over
    # NVLink, not over their NICs).
    spans = len({loc.island[r] for r in group.ranks}) > 1
    sm = system.gpus[group.ranks[0]].model.attr("sm")
    lanes = min((sum(lk.lanes for lk in system.links_of(d) if lk.cls == "nvlink")
                 for d in devices if d in local), default=0)
    per_gpu = lanes * nvlink_gbs(sm) if lanes else 24.0           # NCCL's units, GB/s
    nic_gbs = max((system.device(n).model.attr("rate", 0) for n in nic_index), default=0) / 1e9
    inter = nic_gbs * CLASS_EFFICIENCY["infiniband"] / CHANNELS_PER_NIC

    def graph(gid: int, pattern: int, orders: list[list[int]]) -> None:
        mine = [[p for p in order if devices[p] in local] for order in orders]
        intra = per_gpu / max(1, len(orders))
        first = [devices[p] for p in mine[0]] if mine and mine[0] else []
        typeintra = _type(system, first[0], first[1]) if len(first) > 1 else "LOC"
        el = ET.SubElement(root, "graph", {
            "id": str(gid), "pattern": str(pattern), "crossnic": "0",
            "nchannels": str(len(mine)), "speedintra": f"{intra:.4g}",
            "speedinter": f"{(inter if spans else intra):.4g}", "latencyinter": "0",
            "typeintra": typeintra, "typeinter": "PIX" if spans else typeintra,
            "samechannels": "1" if all(m == mine[0] for m in mine) else "0"})
        for order in mine:
            ch = ET.SubElement(el, "channel")
            if spans and order:
                ET.SubElement(ch, "net", dev=str(nic_index.get(
                    loc.nic(group.ranks[order[0]]), 0)))
            for p in order:
                ET.SubElement(ch, "gpu", dev=str(local[devices[p]]))
            if spans and order:
                last = order[0] if pattern == 3 else order[-1]
                ET.SubElement(ch, "net", dev=str(nic_index.get(loc.nic(group.ranks[last]), 0)))
    root = ET.Element("graphs", version="1")
    graph(0, 4, [list(r) for r in ring_orders(system, group.ranks, channels)])
    trees = tree_parents(system, group.ranks, 0, channels)[::2]     # one tree of each channel
    graph(1, 3, [sorted(range(len(t)), key=lambda v: _depth(t, v)) for t in trees])
    return root


def _depth(parent, v: int) -> int:
    d = 0
    while parent[v] >= 0:
        v, d = parent[v], d + 1
    return d


def render(system: System, group: RankGroup, node: str | None = None,
           channels: int | None = None) -> str:
    """The graph XML text."""
    return serialize(build(system, group, node, channels))
