"""Leaves framed as NVIDIA's SuperPOD reference architecture draws a fabric: the leaf switches
of one scalable unit (the machines they all serve) in one frame, each named by its rail.

A leaf's unit is the set of machines (top-level instances: nodes, racks) it is wired to; leaves
with the same set form one frame: 'SU 0' for a DGX SuperPOD's scalable unit (the frame's tooltip
names its machines: 'SU 0: nodes 0-31'), 'rack3 leaves' for an NVL72 rack's four rail leaves. A leaf all of whose links go to the
same NIC index of each machine (nic3 of every node) is that rail's leaf and says so ('rail 3').
The frames are Graphviz clusters: ``layout`` places them in the leaves' row, in index order.
"""

from __future__ import annotations

import re
from collections import defaultdict

import attrs

from ..compiler.ir.kinds import is_endpoint
from ..compiler.ir.summary import scaleout_levels
from ..compiler.ir.system import System
from .layout import natural, parts, stem as _stem, top_level
from .style import Node

_INDEX = re.compile(r"(\d+)$")


def _span(machines: list[str]) -> str:
    """'nodes 0-31', 'racks 0, 2' or 'node0, rack1' for the machines of one unit."""
    names = [parts(m)[-1] for m in machines]
    if len(names) == 1:
        return names[0]
    stems = {_stem(n) for n in names}
    if len(stems) == 1 and all(n != _stem(n) for n in names):
        stem = stems.pop()
        idx = [int(n[len(stem):]) for n in names]
        run = idx == list(range(idx[0], idx[-1] + 1))
        nums = f"{idx[0]}-{idx[-1]}" if run else ", ".join(map(str, idx))
        return f"{stem}s {nums}"
    return ", ".join(names)


def frame_leaves(system: System, nodes: list[Node]) -> tuple[list[Node], list[Node]]:
    """``nodes`` with each leaf switch box drawn at the top level labelled with its rail, once
    moved into its scalable unit's frame and once left in place: (framed, plain), from one
    pass over the links (the drawing keeps the plain row when the frames cost legibility).
    Both are ``nodes`` unchanged when no unit has two leaves."""
    level = scaleout_levels(system)
    kind = {d.id: d.kind for d in system.devices}
    leaves = [n for n in nodes if kind.get(n.id) == "net_switch" and level.get(n.id) == 1
              and n.cluster in ("", system.name)]
    if len(leaves) < 2:
        return nodes, nodes
    ids = {n.id for n in leaves}
    serves: dict[str, set[str]] = defaultdict(set)
    rails: dict[str, set[str]] = defaultdict(set)
    for link in system.links:
        for a, b in ((link.src, link.dst), (link.dst, link.src)):
            if a in ids and kind.get(b) != "net_switch":
                serves[a].add(top_level(system.name, b))
                m = _INDEX.search(parts(b)[-1])
                rails[a].add(m.group(1) if m and is_endpoint(kind.get(b, "")) else "?")
    units: dict[frozenset, list[str]] = defaultdict(list)
    for leaf in sorted(ids, key=natural):
        if serves[leaf]:
            units[frozenset(serves[leaf])].append(leaf)
    if not any(len(v) > 1 for v in units.values()):
        return nodes, nodes
    frame: dict[str, str] = {}
    ordered = sorted(units.items(), key=lambda kv: natural(kv[1][0]))
    for i, (machines, members) in enumerate(ordered):
        if len(members) < 2:
            continue
        ms = sorted(machines, key=natural)
        # short titles: they sit between the lines that drop into the leaves
        title = f"{_span(ms)} leaves" if len(ms) == 1 else f"SU {i}"
        for leaf in members:
            frame[leaf] = f"{system.name}.{title}"
    framed, plain = [], []
    for n in nodes:
        if n.id in frame:
            label = n.label
            rail = rails.get(n.id, set())
            if len(rail) == 1 and "?" not in rail:
                first, _, rest = label.partition("\n")
                label = f"{first}\nrail {rail.pop()}" + (f"\n{rest}" if rest else "")
            n = attrs.evolve(n, label=label)
            framed.append(attrs.evolve(n, cluster=frame[n.id]))
        else:
            framed.append(n)
        plain.append(n)
    return framed, plain
