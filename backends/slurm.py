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

import functools
import re
from collections.abc import Sequence

from ..compiler.analysis.fabric import Fabric
from ..compiler.ir.locality import natural
from ..compiler.base.arrays import unique
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
        if len(nums) == 1:
            out.append(key + nums[0])
            continue
        # runs of consecutive numbers with the same zero padding as their first (``_fits``),
        # each number's value read once (16,914 lists at 8,192 NVL72 racks)
        values = list(map(int, nums))
        parts = []
        first = 0
        for j in range(1, len(nums) + 1):
            if j < len(nums) and values[j] == values[j - 1] + 1 and _fits(nums[first], nums[j]):
                continue
            a, b = nums[first], nums[j - 1]
            parts.append(a if j - 1 == first else
                         f"{a}-{values[j - 1]:0{len(a)}d}" if _padded(a) else f"{a}-{b}")
            first = j
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
    keys = _Keys(fab)
    out: list[tuple[str, str, str]] = []
    merged: dict[str, tuple[str, ...]] = {}
    rename: dict[str, str] = {}          # switch -> the switch it was merged into
    for tier in sorted({s.tier for s in fab.switches}):
        kept: dict[tuple[str, ...], list[str]] = {}
        of = keys.of(tier, rename)
        for s in fab.switches:            # in the fabric's order: the first of a set keeps it
            if s.tier == tier:
                kept.setdefault(of(s.name), []).append(s.name)
        for key, members in kept.items():
            for n in members:
                rename[n] = members[0]
            if len(members) > 1:
                merged[members[0]] = tuple(members)
            out.append((members[0], "Nodes" if tier == 1 else "Switches", hostlist(list(key))))
    return out, merged


class _Keys:
    """What ``_tree`` merges switches by: a leaf's hosts (in host order), a higher switch's
    children as the switches they were merged into (in natural order). From the fabric's
    down-links in numpy when its cable ends are its own (``Fabric.down_links``), a sorted
    set of positions per switch; else from ``Fabric.children`` one name at a time."""

    def __init__(self, fab: Fabric):
        self.fab = fab
        found = None if any("/" in h.name for h in fab.hosts) else fab.down_links()
        self.children = fab.children() if found is None else None
        self.at: dict[str, int] | None = None        # name -> position, made when needed
        self.order = {h.name: i for i, h in enumerate(fab.hosts)}
        if found is not None:
            import numpy as np

            self.up, self.down = found
            self.hca_at, self.switch_at = fab.end_positions
            self.host_of = np.array([self.order[x.host] for x in fab.hcas], dtype=np.int64)
            self.tier = np.zeros(len(fab.table.names), dtype=np.int64)
            on = self.switch_at >= 0
            self.tier[on] = np.array([s.tier for s in fab.switches],
                                     dtype=np.int64)[self.switch_at[on]]

    def of(self, tier: int, rename: dict[str, str]):
        """The key of each switch of ``tier`` by name, once the tiers below are merged
        (``rename``)."""
        if self.children is not None:
            return functools.partial(self._by_name, tier, rename)
        import numpy as np

        up, down, names = self.up, self.down, self.fab.table.names
        mine = self.tier[up] == tier
        if tier == 1:
            sel = mine & (self.hca_at[down] >= 0)
            below = self.host_of[self.hca_at[down[sel]]]
            labels = [h.name for h in self.fab.hosts]
        else:
            sel = mine & (self.switch_at[down] >= 0)
            # each child as the name it was merged into (positions in the names' natural
            # order, so a sort of positions is a natural sort of names)
            merged_into = np.arange(len(names), dtype=np.int64)
            moved = [(a, b) for a, b in rename.items() if a != b]
            if moved:
                if self.at is None:
                    self.at = {n: i for i, n in enumerate(names)}
                moved = [(self.at[a], self.at[b]) for a, b in moved]
                merged_into[[a for a, _ in moved]] = [b for _, b in moved]
            below = merged_into[down[sel]]
            labels = names
        width = max(1, len(labels))
        pairs = unique(up[sel] * width + below)
        head, item = np.divmod(pairs, width)
        cuts = (np.flatnonzero(head[1:] != head[:-1]) + 1).tolist()
        flat = list(map(labels.__getitem__, item.tolist()))
        keys = {names[h]: tuple(flat[a:b]) for h, a, b in zip(
            head[[0, *cuts]].tolist() if len(head) else [], [0, *cuts], [*cuts, len(flat)])}
        return lambda name: keys.get(name, ())

    def _by_name(self, tier: int, rename: dict[str, str], name: str) -> tuple[str, ...]:
        below = self.children.get(name, ())
        if tier == 1:
            return tuple(sorted({c.split("/", 1)[0] for c in below if "/" in c},
                                key=self.order.get))
        return tuple(sorted({rename.get(c, c) for c in below if "/" not in c}, key=natural))


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
