"""``topoc schedule --format nccl``: orders in the shapes of NCCL's INFO log.

Rings print as NCCL prints them, one line per channel with world ranks::

    Channel 00/02 :    0   1   2   3   4   5   6   7

Trees print per rank as ``Trees [0] d0/d1/d2->rank->up [1] ...`` (-1 where there is none).
"""

from __future__ import annotations

from ..compiler.base.diagnostics import plural
from ..compiler.ir.system import System
from ..compiler.collectives.route import route
from ..compiler.collectives.schedule import Schedule


def render(system: System, sched: Schedule, rank: int | None = None) -> str:
    """The ring or tree orders of ``sched`` (other algorithms list their rounds briefly)."""
    ranks = sched.group.ranks
    lines = [f"# {sched.algorithm} {sched.collective} on {sched.group.name} "
             f"({plural(len(ranks), 'rank')}, {plural(sched.channels, 'channel')}, "
             f"{plural(sched.chunks, 'chunk')})"]
    if sched.rings:
        total = len(sched.rings)
        for c, ring in enumerate(sched.rings):
            lines.append(f"Channel {c:02d}/{total:02d} : " + "".join(f"{ranks[p]:>4}" for p in ring))
    if sched.trees:
        children: list[list[list[int]]] = [[[] for _ in ranks] for _ in sched.trees]
        for t, parent in enumerate(sched.trees):
            for v, p in enumerate(parent):
                if p >= 0:
                    children[t][p].append(v)
        for v in range(len(ranks)):
            if rank is not None and ranks[v] != rank:
                continue
            parts = []
            for t, parent in enumerate(sched.trees):
                down = [ranks[c] for c in sorted(children[t][v])][:3]
                down += [-1] * (3 - len(down))
                up = ranks[parent[v]] if parent[v] >= 0 else -1
                parts.append(f"[{t}] {'/'.join(map(str, down))}->{ranks[v]}->{up}")
            lines.append(f"{ranks[v]:>6} Trees " + " ".join(parts))
    if sched.agents:
        lines.append("NVLS agents: " + " ".join(sched.agents))
    if sched.domains:
        for d, members in enumerate(sched.domains):
            lines.append(f"Domain {d:02d} : " + "".join(f"{ranks[p]:>4}" for p in members))
    if rank is not None:
        lines += steps_of(system, sched, ranks.index(rank))
    return "\n".join(lines) + "\n"


def steps_of(system: System, sched: Schedule, position: int) -> list[str]:
    """One rank's step list: what it sends and receives in every round, and over which links."""
    names = [str(r) for r in sched.group.ranks] + [f"agent:{a}" for a in sched.agents]
    out = [f"# steps of rank {names[position]}"]
    for i, steps in enumerate(route(system, sched, position=position)):
        for t in steps:
            if t.src == t.dst:
                what = f"copy   slot {t.src_chunk} {t.src_buf} -> slot {t.dst_chunk} {t.dst_buf}"
            elif t.src == position:
                what = (f"send   slot {t.src_chunk} {t.src_buf} -> {names[t.dst]} slot "
                        f"{t.dst_chunk} {t.dst_buf} ({t.op})")
            else:
                what = (f"recv   slot {t.dst_chunk} {t.dst_buf} <- {names[t.src]} slot "
                        f"{t.src_chunk} {t.src_buf} ({t.op})")
            out.append(f"round {i:>4}  {what}  {t.bytes} B  via {' '.join(t.links) or '-'}")
    return out
