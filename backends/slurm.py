"""Slurm's topology files from a system: topology.conf (tree or block) and topology.yaml.

topology/tree: one ``SwitchName=`` line per switch, leaves with ``Nodes=`` (the hosts cabled to
them), every higher switch with ``Switches=`` (the switches one tier below it), names in
Slurm's hostlist ranges. topology/block: one ``BlockName=`` per NVLink domain with its hosts,
and ``BlockSizes=`` the domain size and its power-of-two multiples up to all blocks. The yaml
form (Slurm 24.11+, topology.yaml(5)) holds both, the tree as the cluster default. Storage
NICs and DPUs never appear (``compiler.analysis.fabric`` keeps them out).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..compiler.analysis.fabric import Fabric
from ..compiler.base.text import visible
from . import names

_TAIL = re.compile(r"^(.*?)(\d+)$")


class ExportError(ValueError):
    """The system cannot be written in the requested form (the message says why)."""


def hostlist(names: Sequence[str]) -> str:
    """Slurm hostlist ranges: ``node[0-3,7],gb-01-[01-18]``; prefixes in order of first
    appearance, numbers sorted, zero padding kept (a range's width is its first number's, as
    Slurm reads ``[09-11]``; ``9`` and ``09`` never share a range)."""
    groups: dict[str, list[str]] = {}
    order: list[str] = []
    plain: list[str] = []
    for n in names:
        m = _TAIL.match(n)
        if not m:
            if n not in plain:
                plain.append(n)
                order.append("\0" + n)
            continue
        if m.group(1) not in groups:
            groups[m.group(1)] = []
            order.append(m.group(1))
        if m.group(2) not in groups[m.group(1)]:
            groups[m.group(1)].append(m.group(2))
    out = []
    for key in order:
        if key.startswith("\0"):
            out.append(key[1:])
            continue
        nums = sorted(groups[key], key=lambda d: (int(d), len(d)))
        runs: list[list[str]] = []
        for d in nums:
            run = runs[-1] if runs else None
            if run is not None and int(d) == int(run[-1]) + 1 and _fits(run[0], d):
                run.append(d)
            else:
                runs.append([d])
        if len(nums) == 1:
            out.append(key + nums[0])
            continue
        parts = [r[0] if len(r) == 1 else
                 f"{r[0]}-{int(r[-1]):0{len(r[0])}d}" if _padded(r[0]) else f"{r[0]}-{r[-1]}"
                 for r in runs]
        out.append(f"{key}[{','.join(parts)}]")
    return ",".join(out)


def _padded(digits: str) -> bool:
    return len(digits) > 1 and digits.startswith("0")


def _fits(first: str, d: str) -> bool:
    """Whether ``d`` continues a range that starts at ``first`` (same zero padding)."""
    if _padded(first):
        return len(d) == len(first)
    return not _padded(d)


def tree_lines(fab: Fabric) -> list[tuple[str, str, str]]:
    """(switch, 'Nodes' or 'Switches', hostlist) per switch, leaves first."""
    if not fab.switches:
        raise ExportError("the system has no scale-out switches; topology/tree needs at least "
                          "one (a single node needs no topology.conf)")
    cabled = {x.host for x in fab.hcas}     # a set: a scan of every HCA per host was quadratic
    unplaced = [h.name for h in fab.hosts if h.name not in cabled]
    if unplaced:
        raise ExportError(f"host '{unplaced[0]}' has no compute NIC cabled to a switch; Slurm "
                          "needs every node under one (topology.conf(5))")
    children = fab.children()
    order = {h.name: i for i, h in enumerate(fab.hosts)}
    out = []
    for s in sorted(fab.switches, key=lambda s: s.tier):
        below = children.get(s.name, ())
        if s.tier == 1:
            hosts = sorted({c.split("/", 1)[0] for c in below if "/" in c}, key=order.get)
            out.append((s.name, "Nodes", hostlist(hosts)))
        else:
            out.append((s.name, "Switches", hostlist([c for c in below if "/" not in c])))
    return out


def block_sizes(fab: Fabric) -> tuple[list[tuple[str, ...]], list[int]]:
    """The blocks (NVLink domains as hosts) and BlockSizes: the base size and its power-of-two
    multiples while they fit in all blocks together."""
    blocks = [b for b in fab.blocks if b]
    if not blocks:
        raise ExportError("the system has no GPUs in hosts; topology/block needs NVLink domains")
    base = max(len(b) for b in blocks)
    sizes, n = [], base
    while n <= base * len(blocks):
        sizes.append(n)
        n *= 2
    return blocks, sizes


def render(fab: Fabric, topology: str, fmt: str = "conf", source: str = "") -> str:
    """The file text: ``topology`` tree or block, ``fmt`` conf or yaml (yaml holds both,
    ``topology`` naming the cluster default). Every host and switch name is checked first
    (``names.InvalidName``)."""
    names.check(fab, names.SLURM)
    head = f"# Slurm topology written by topoc from {visible(source or fab.name)}; do not edit by hand."
    if fmt == "yaml":
        return _yaml(fab, topology, head)
    lines = [head]
    if topology == "tree":
        lines.append("# topology/tree: TopologyPlugin=topology/tree in slurm.conf")
        for name, kind, members in tree_lines(fab):
            lines.append(f"SwitchName={name} {kind}={members}")
    else:
        blocks, sizes = block_sizes(fab)
        lines.append("# topology/block: TopologyPlugin=topology/block in slurm.conf; one block "
                     "per NVLink domain")
        for i, b in enumerate(blocks):
            lines.append(f"BlockName=block{i} Nodes={hostlist(b)}")
        lines.append("BlockSizes=" + ",".join(map(str, sizes)))
    return "\n".join(lines) + "\n"


def _yaml(fab: Fabric, default: str, head: str) -> str:
    lines = [head, "---"]
    parts: list[list[str]] = []
    try:
        tree = tree_lines(fab)
    except ExportError:
        if default == "tree":
            raise
        tree = []
    if tree:
        part = ["- topology: tree", f"  cluster_default: {str(default == 'tree').lower()}",
                "  tree:", "    switches:"]
        for name, kind, members in tree:
            part += [f"      - switch: {name}",
                     f"        {'nodes' if kind == 'Nodes' else 'children'}: \"{members}\""]
        parts.append(part)
    try:
        blocks, sizes = block_sizes(fab)
    except ExportError:
        if default == "block":
            raise
        blocks = []
    if blocks:
        part = ["- topology: block", f"  cluster_default: {str(default == 'block').lower()}",
                "  block:", "    block_sizes:"]
        part += [f"      - {n}" for n in sizes]
        part.append("    blocks:")
        for i, b in enumerate(blocks):
            part += [f"      - block: block{i}", f"        nodes: \"{hostlist(b)}\""]
        parts.append(part)
    for p in parts:
        lines += p
    return "\n".join(lines) + "\n"
