"""Slurm's topology files from a system: topology.conf (tree or block) and topology.yaml.

topology/tree: one ``SwitchName=`` line per switch, leaves with ``Nodes=`` (the hosts cabled to
them), every higher switch with ``Switches=`` (the switches one tier below it), names in
Slurm's hostlist ranges. Leaves that hold the same hosts (the rails of a rail-optimised
fabric) are merged into one switch, and so are higher switches left with the same children, as
Topograph does: slurmctld wants each node under one leaf ("Multiple leaf switches contain
nodes" otherwise). topology/block: one ``BlockName=`` per NVLink domain with its hosts, and
``BlockSizes=`` a base size and its power-of-two multiples up to all blocks. The base follows
the Slurm version (``SlurmVersion``): before 25.05 every block needs at least the base's count
of nodes (slurmctld stops otherwise), so the base is the smallest block; from 25.05 smaller
blocks are accepted and the base is the domain size. The yaml form (Slurm 25.05+,
topology.yaml(5)) holds both, the tree as the cluster default. Storage NICs and DPUs never
appear (``compiler.analysis.fabric`` keeps them out).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..compiler.analysis.fabric import Fabric
from ..compiler.ir.locality import natural
from ..compiler.base.gcpause import gc_paused
from ..compiler.base.text import visible
from . import names

_TAIL = re.compile(r"^(.*?)(\d+)$")


class ExportError(ValueError):
    """The system cannot be written in the requested form (the message says why)."""


#: Slurm releases whose topology input changed: topology/block arrived in 23.11, topology.yaml
#: in 25.05, and 25.05 dropped the fatal "children count lower than bblock_node_cnt" check
#: (block_record.c) that a block smaller than the base size hit.
BLOCK_PLUGIN = (23, 11)
YAML_FILE = (25, 5)
SMALL_BLOCKS = (25, 5)


def parse_version(text: str) -> tuple[int, int]:
    """``(25, 5)`` from ``25.05``, ``25.05.3`` or ``slurm 24.11.1``; ExportError otherwise."""
    m = re.fullmatch(r"(?:slurm(?:-wlm)?\s+)?(\d{2})\.(\d{1,2})(?:\.\d+)?(?:-\S+)?",
                     text.strip(), re.I)
    if not m:
        raise ExportError(f"'{text}' is not a Slurm version (as 'sinfo -V' prints it: 25.05 "
                          "or 24.11.3)")
    return int(m.group(1)), int(m.group(2))


def _version_text(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]:02d}"


def hostlist(names: Sequence[str]) -> str:
    """Slurm hostlist ranges: ``node[0-3,7],gb-01-[01-18]``; prefixes in order of first
    appearance, numbers sorted, zero padding kept (a range's width is its first number's, as
    Slurm reads ``[09-11]``; ``9`` and ``09`` never share a range)."""
    # dictionaries for what was seen, in first-seen order (a scan of a list per name was
    # quadratic: a spine's 2,048 children)
    groups: dict[str, dict[str, None]] = {}
    order: list[str] = []
    plain: set[str] = set()
    for n in names:
        m = _TAIL.match(n)
        if not m:
            if n not in plain:
                plain.add(n)
                order.append("\0" + n)
            continue
        head, digits = m.groups()
        found = groups.get(head)
        if found is None:
            found = groups[head] = {}
            order.append(head)
        found[digits] = None
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
    """(switch, 'Nodes' or 'Switches', hostlist) per switch, leaves first, with switches that
    hold the same hosts (or, above the leaves, the same children) merged into the first by
    name (``merged_switches`` says which)."""
    return _tree(fab)[0]


def merged_switches(fab: Fabric) -> dict[str, tuple[str, ...]]:
    """Per switch kept in the tree, the switches merged into it (itself first) where more
    than one: ``{'leaf0': ('leaf0', 'leaf1', 'leaf2', 'leaf3')}`` for a rack's four rails."""
    return _tree(fab)[1]


def _tree(fab: Fabric) -> tuple[list[tuple[str, str, str]], dict[str, tuple[str, ...]]]:
    """``tree_lines`` and ``merged_switches`` from one pass, tier by tier: a switch whose set
    of hosts (tier 1) or of kept children (above) equals an earlier one's is merged into it."""
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
    out: list[tuple[str, str, str]] = []
    merged: dict[str, tuple[str, ...]] = {}
    rename: dict[str, str] = {}          # switch -> the switch it was merged into
    for tier in sorted({s.tier for s in fab.switches}):
        kept: dict[tuple[str, ...], list[str]] = {}
        for s in fab.switches:            # in the fabric's order: the first of a set keeps it
            if s.tier != tier:
                continue
            below = children.get(s.name, ())
            if tier == 1:
                key = tuple(sorted({c.split("/", 1)[0] for c in below if "/" in c},
                                   key=order.get))
            else:
                key = tuple(sorted({rename.get(c, c) for c in below if "/" not in c},
                                   key=natural))
            kept.setdefault(key, []).append(s.name)
        for key, members in kept.items():
            for n in members:
                rename[n] = members[0]
            if len(members) > 1:
                merged[members[0]] = tuple(members)
            out.append((members[0], "Nodes" if tier == 1 else "Switches", hostlist(list(key))))
    return out, merged


def block_sizes(fab: Fabric, version: tuple[int, int] | None = None
                ) -> tuple[list[tuple[str, ...]], list[int]]:
    """The blocks (NVLink domains as hosts) and BlockSizes: a base size and its power-of-two
    multiples while they fit in all blocks together. The base is the domain size for Slurm
    25.05 and later, which accept a smaller block; for an older or unnamed ``version`` the
    smallest block, as Slurm before 25.05 stops on a block with fewer nodes than the base
    (Topograph's rule too). Before 23.11 there is no topology/block: ExportError."""
    blocks = [b for b in fab.blocks if b]
    if not blocks:
        raise ExportError("the system has no GPUs in hosts; topology/block needs NVLink domains")
    if version is not None and version < BLOCK_PLUGIN:
        raise ExportError(f"Slurm {_version_text(version)} has no topology/block (it arrived "
                          f"in {_version_text(BLOCK_PLUGIN)}); use --topology tree")
    small = version is not None and version >= SMALL_BLOCKS
    base = max(len(b) for b in blocks) if small else min(len(b) for b in blocks)
    sizes, n = [], base
    while n <= base * len(blocks) and len(sizes) < 16:   # Slurm takes 16 levels at most
        sizes.append(n)
        n *= 2
    return blocks, sizes


@gc_paused()        # a line or more per cable of 18,432 hosts: no collector passes
def render(fab: Fabric, topology: str, fmt: str = "conf", source: str = "",
           version: tuple[int, int] | None = None) -> str:
    """The file text: ``topology`` tree or block, ``fmt`` conf or yaml (yaml holds both,
    ``topology`` naming the cluster default), for Slurm ``version`` (None: any Slurm with the
    plugin; see ``block_sizes``). Every host and switch name is checked first
    (``names.InvalidName``)."""
    names.check(fab, names.SLURM)
    head = (f"# Slurm topology written by topoc from {visible(source or fab.name)}; do not "
            "edit by hand.")
    if fmt == "yaml":
        if version is not None and version < YAML_FILE:
            raise ExportError(f"Slurm {_version_text(version)} reads no topology.yaml (it "
                              f"arrived in {_version_text(YAML_FILE)}); write topology.conf "
                              "(--format conf)")
        return _yaml(fab, topology, head, version or YAML_FILE)
    lines = [head]
    if topology == "tree":
        lines.append("# topology/tree: TopologyPlugin=topology/tree in slurm.conf")
        rows, merged = _tree(fab)
        lines += _merge_notes(fab, merged)
        for name, kind, members in rows:
            lines.append(f"SwitchName={name} {kind}={members}")
    else:
        blocks, sizes = block_sizes(fab, version)
        lines.append("# topology/block: TopologyPlugin=topology/block in slurm.conf; one block "
                     "per NVLink domain")
        lines += _size_note(blocks, sizes, version)
        for i, b in enumerate(blocks):
            lines.append(f"BlockName=block{i} Nodes={hostlist(b)}")
        lines.append("BlockSizes=" + ",".join(map(str, sizes)))
    return "\n".join(lines) + "\n"


def _merge_notes(fab: Fabric, merged: dict[str, tuple[str, ...]]) -> list[str]:
    tier = {s.name: s.tier for s in fab.switches}
    return [f"# {name} stands for {hostlist(list(names))} (same "
            f"{'nodes' if tier[name] == 1 else 'children'})" for name, names in merged.items()]


def _size_note(blocks, sizes, version) -> list[str]:
    if len({len(b) for b in blocks}) < 2:
        return []
    if version is not None and version >= SMALL_BLOCKS:
        return [f"# blocks of {min(map(len, blocks))} to {max(map(len, blocks))} nodes: the "
                f"base size is the largest (Slurm {_version_text(SMALL_BLOCKS)}+ accepts "
                "smaller blocks)"]
    return [f"# blocks of {min(map(len, blocks))} to {max(map(len, blocks))} nodes: the base "
            f"size is the smallest (before Slurm {_version_text(SMALL_BLOCKS)} a smaller block "
            "than the base stops slurmctld; --slurm-version 25.05 uses the largest)"]


def _yaml(fab: Fabric, default: str, head: str, version: tuple[int, int]) -> str:
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
        blocks, sizes = block_sizes(fab, version)
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
