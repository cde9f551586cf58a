"""``topoc schedule --format json``: the ``topoc.schedule/1`` document (docs/contracts.md)."""

from __future__ import annotations

import json
from typing import Any

from ..compiler.ir.system import System
from ..compiler.collectives.paths import Router
from ..compiler.base.gcpause import gc_paused
from ..compiler.collectives.route import route, routed_steps
from ..compiler.collectives.schedule import Schedule

SCHEMA = "topoc.schedule/1"


def _head(sched: Schedule) -> dict[str, Any]:
    """The document's fields before its rounds."""
    return {"schema": SCHEMA, "collective": sched.collective, "algorithm": sched.algorithm,
            "group": sched.group.name, "ranks": list(sched.group.ranks),
            "devices": list(sched.devices), "agents": list(sched.agents), "root": sched.root,
            "bytes": sched.bytes, "chunks": sched.chunks, "channels": sched.channels,
            "result_buf": sched.result_buf}


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
    return {**_head(sched), "rounds": out_rounds}


@gc_paused()        # a million transfers' text for a 512-rank ring: no collector passes
def render(system: System, sched: Schedule, rank: int | None = None) -> str:
    """The JSON text (compact rounds: one transfer per line), ``document`` as ``json.dumps``
    writes it, each transfer's line formatted from its fields as they are routed (no dict nor
    ``Transfer`` per step; the links' text once per path): a 512-rank ring all-reduce writes
    a million transfers, 290 MB."""
    keep = None if rank is None else sched.group.ranks.index(rank)
    head = json.dumps(_head(sched), indent=1)[:-2]
    text: dict[Any, str] = {}           # a buffer name's or a path's JSON, made once

    def quoted(value) -> str:
        found = text.get(value)
        if found is None:
            found = text[value] = json.dumps(list(value) if isinstance(value, tuple) else value)
        return found
    rounds = []
    for steps in routed_steps(system, sched, None, keep):
        rounds.append("  [" + ",\n   ".join(
            f'{{"src": {s}, "dst": {d}, "src_chunk": {sc}, "dst_chunk": {dc}, '
            f'"op": {quoted(op)}, "src_buf": {quoted(sb)}, "dst_buf": {quoted(db)}, '
            f'"bytes": {n}, "links": {quoted(links)}}}'
            for s, d, sc, dc, op, sb, db, n, links in steps) + "]")
    body = ",\n".join(rounds)
    del rounds
    return f'{head},\n "rounds": [\n{body}\n ]\n}}\n'
