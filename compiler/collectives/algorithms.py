"""Round generators: the steps each algorithm takes, over participant positions and slots.

A step is ``(src, dst, src_chunk, dst_chunk, op, src_buf, dst_buf)``; a round is a list of
steps that read their sources as they were when the round began (docs/contracts.md). The
functions here know nothing of links: ``compiler.route`` places every step on the graph.

Every generator takes ``only``: a position whose steps alone are wanted (those it sends or
receives), generated directly in time linear in the group rather than filtered from the whole
schedule, with the same rounds, in the same order, as the whole schedule has. That is what lets
one rank's steps of a 73,728-rank ring be listed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Step = tuple[int, int, int, int, str, str, str]
Rounds = list[list[Step]]


def merge(*phases: Rounds) -> Rounds:
    """Run independent round lists side by side (round i of each becomes round i)."""
    out: Rounds = []
    for phase in phases:
        for i, steps in enumerate(phase):
            if i == len(out):
                out.append([])
            out[i].extend(steps)
    return out


def _senders(order: Sequence[int], only: int | None, wrap: bool) -> Sequence[int]:
    """Indices i whose step i -> i+1 involves ``only`` (every index when None), ascending."""
    n = len(order)
    last = n if wrap else n - 1
    if only is None:
        return range(last)
    if only not in order:
        return ()
    at = order.index(only)
    found = {at, (at - 1) % n} if wrap else {at, at - 1}
    return sorted(i for i in found if 0 <= i < last)


def ring_reduce_scatter(order: Sequence[int], owned: Callable[[int], Sequence[int]],
                        only: int | None = None) -> Rounds:
    """n-1 rounds; position ``order[x]`` ends holding its slots ``owned(order[x])`` fully
    reduced. In round s ring index i passes the partial sum of ``order[i-s-1]``'s slots on."""
    n = len(order)
    senders = _senders(order, only, wrap=True)
    rounds = []
    for s in range(n - 1):
        steps = []
        for i in senders:
            owner = order[(i - s - 1) % n]
            steps += [(order[i], order[(i + 1) % n], c, c, "reduce", "in", "in")
                      for c in owned(owner)]
        rounds.append(steps)
    return rounds


def ring_all_gather(order: Sequence[int], owned: Callable[[int], Sequence[int]],
                    only: int | None = None) -> Rounds:
    """n-1 rounds; every position ends with every position's ``owned`` slots. In round s ring
    index i forwards those of ``order[i-s]`` (its own first, then what it just received)."""
    n = len(order)
    senders = _senders(order, only, wrap=True)
    rounds = []
    for s in range(n - 1):
        steps = []
        for i in senders:
            owner = order[(i - s) % n]
            steps += [(order[i], order[(i + 1) % n], c, c, "copy", "in", "in")
                      for c in owned(owner)]
        rounds.append(steps)
    return rounds


def chain(order: Sequence[int], slots: Sequence[int], op: str, only: int | None = None) -> Rounds:
    """Pipelined chain: ``order[k]`` passes slot j to ``order[k+1]`` in round k + j.
    ``copy`` from the head is a broadcast; ``reduce`` towards the tail is a reduce."""
    rounds: Rounds = [[] for _ in range(max(0, len(order) - 2 + len(slots)))]
    for k in _senders(order, only, wrap=False):
        for j, c in enumerate(slots):
            rounds[k + j].append((order[k], order[k + 1], c, c, op, "in", "in"))
    return rounds


def heights(parent: Sequence[int]) -> list[int]:
    """Height of every node of a tree given as parent indices (-1 at the root)."""
    h = [0] * len(parent)
    depth = depths(parent)
    for v in sorted(range(len(parent)), key=lambda v: -depth[v]):
        if parent[v] >= 0:
            h[parent[v]] = max(h[parent[v]], h[v] + 1)
    return h


def depths(parent: Sequence[int]) -> list[int]:
    """Distance from the root of every node (iterative: no recursion on deep chains)."""
    depth = [-1] * len(parent)
    for v in range(len(parent)):
        path = []
        while v >= 0 and depth[v] < 0:
            path.append(v)
            v = parent[v]
        base = depth[v] if v >= 0 else -1
        for u in reversed(path):
            base += 1
            depth[u] = base
    return depth


def _tree_rounds(parent: Sequence[int], top: int, slots: Sequence[int]) -> Rounds:
    """Empty rounds for a pipelined tree: every level below ``top`` sends in some round, so
    exactly the last of ``top + len(slots)`` rounds would stay empty (all of them for a lone
    root); it is left out."""
    busy = top + len(slots) - 1 if slots and any(p >= 0 for p in parent) else 0
    return [[] for _ in range(busy)]


def tree_reduce(parent: Sequence[int], slots: Sequence[int], only: int | None = None) -> Rounds:
    """Pipelined reduction to the root: a node of height h sends slot j up in round h + j,
    after everything below it has arrived."""
    h = heights(parent)
    rounds = _tree_rounds(parent, max(h), slots)
    for v, p in enumerate(parent):
        if p >= 0 and only in (None, v, p):
            for j, c in enumerate(slots):
                rounds[h[v] + j].append((v, p, c, c, "reduce", "in", "in"))
    return rounds


def tree_broadcast(parent: Sequence[int], slots: Sequence[int],
                   only: int | None = None) -> Rounds:
    """Pipelined broadcast from the root: a node at depth d sends slot j down in round d + j."""
    d = depths(parent)
    rounds = _tree_rounds(parent, max(d), slots)
    for v, p in enumerate(parent):
        if p >= 0 and only in (None, v, p):
            for j, c in enumerate(slots):
                rounds[d[p] + j].append((p, v, c, c, "copy", "in", "in"))
    return rounds


def btree(n: int) -> list[int]:
    """NCCL's binary tree over 0..n-1 (src/graph/trees.cc, ncclGetBtree): parent of r is found
    from its lowest set bit; 0 is the root with a single child. Returns parent indices."""
    parent = [-1] * n
    for r in range(1, n):
        bit = 1
        while bit < n and not bit & r:
            bit <<= 1
        up = (r ^ bit) | (bit << 1)
        parent[r] = up if up < n else r ^ bit
    return parent


def double_btree(n: int) -> tuple[list[int], list[int]]:
    """NCCL's double binary tree: the second tree is the first shifted by one for an odd n and
    mirrored (r -> n-1-r) for an even n, so a leaf of one is an inner node of the other."""
    first = btree(n)
    if n % 2:
        # node r of the second tree plays first-tree node (r - 1) mod n
        second = [-1 if first[(r - 1) % n] < 0 else (first[(r - 1) % n] + 1) % n
                  for r in range(n)]
    else:
        second = [-1 if first[n - 1 - r] < 0 else n - 1 - first[n - 1 - r] for r in range(n)]
    return first, second


def star(agents: Sequence[int], ranks: Sequence[int], slots: Sequence[int], up: str,
         down: Sequence[int] | None, src_ranks: Sequence[int] | None = None,
         only: int | None = None) -> Rounds:
    """In-switch (NVLS) pattern: ``src_ranks`` send each slot to its agent (``up``: reduce or
    copy), then the agent sends it back to ``down`` (every rank when None)."""
    def agent(c: int) -> int:
        return agents[c % len(agents)]
    first = [(r, agent(c), c, c, up, "in", "in")
             for r in (src_ranks if src_ranks is not None else ranks) for c in slots
             if only in (None, r, agent(c))]
    second = [(agent(c), r, c, c, "copy", "in", "in")
              for c in slots for r in (ranks if down is None else down(c))
              if only in (None, r, agent(c))]
    return [first, second]


def alltoall_direct(n: int, k: int, only: int | None = None) -> Rounds:
    """One round: block j of every rank i goes to block i of rank j's out buffer."""
    everyone = range(n)
    return [[(i, j, j * k + t, i * k + t, "copy", "in", "out")
             for i in everyone for j in (everyone if only in (None, i) else (only,))
             for t in range(k)]]


def alltoall_pairwise(n: int, k: int, only: int | None = None) -> Rounds:
    """n rounds: in round s rank i exchanges with rank (i + s) mod n (round 0 is the local
    copy of its own block)."""
    def senders(s: int) -> Sequence[int]:
        return range(n) if only is None else sorted({only, (only - s) % n})
    return [[(i, (i + s) % n, ((i + s) % n) * k + t, i * k + t, "copy", "in", "out")
             for i in senders(s) for t in range(k)] for s in range(n)]


def sendrecv(n: int, chunks: int, only: int | None = None) -> Rounds:
    """Pipeline stages: stage s sends its activations (in) to stage s+1 (out), chunk by chunk."""
    stages = _senders(range(n), only, wrap=False)
    return [[(s, s + 1, c, c, "copy", "in", "out") for s in stages] for c in range(chunks)]
