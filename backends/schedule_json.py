"""``topoc schedule --format json``: the ``topoc.schedule/1`` document (docs/contracts.md)."""

from __future__ import annotations

import json
from typing import Any

from ..compiler.ir.system import System
from ..compiler.collectives.paths import Router
from ..compiler.collectives.route import route
from ..compiler.collectives.schedule import Schedule

SCHEMA = "topoc.schedule/1"


def document(system: System, sched: Schedule, rank: int | None = None,
             router: Router | None = None) -> dict[str, Any]:
    """The schedule with every round materialised and routed. With ``rank`` (a world rank of
    the group) only the transfers that rank sends or receives are kept."""
    keep = None if rank is None else sched.group.ranks.index(rank)
    out_rounds = []
    for steps in route(system, sched, router, keep):
        out_rounds.append([
            {"src": t.src, "dst": t.dst, "src_chunk": t.src_chunk, "dst_chunk": t.dst_chunk,
             "op": t.op, "src_buf": t.src_buf, "dst_buf": t.dst_buf, "bytes": t.bytes,
             "links": list(t.links)}
            for t in steps])
    return {"schema": SCHEMA, "collective": sched.collective, "algorithm": sched.algorithm,
            "group": sched.group.name, "ranks": list(sched.group.ranks),
            "devices": list(sched.devices), "agents": list(sched.agents), "root": sched.root,
            "bytes": sched.bytes, "chunks": sched.chunks, "channels": sched.channels,
            "result_buf": sched.result_buf, "rounds": out_rounds}


def render(system: System, sched: Schedule, rank: int | None = None) -> str:
    """The JSON text (compact rounds: one transfer per line)."""
    doc = document(system, sched, rank)
    rounds = doc.pop("rounds")
    head = json.dumps(doc, indent=1)[:-2]
    body = ",\n".join("  [" + ",\n   ".join(json.dumps(t) for t in r) + "]" for r in rounds)
    return f'{head},\n "rounds": [\n{body}\n ]\n}}\n'
