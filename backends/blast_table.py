"""``topoc blast``'s outputs: the ranked table (text) and the ``topoc.blast/1`` document."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..compiler.analysis.blast import Domain
from ..compiler.base.diagnostics import plural
from ..compiler.base.units import BYTES, RATE, human

SCHEMA = "topoc.blast/1"


def rows(found: Sequence[Domain]) -> list[dict]:
    """One JSON row per class of failure domains, in rank order."""
    return [{"domain": d.what, "example": d.example, "members": d.members,
             "gpus_lost": d.gpus_lost, "bandwidth_lost": dict(d.bandwidth_lost),
             "connected": d.connected, "allreduce_before": d.time_before,
             "allreduce_after": d.time_after, "slowdown": d.slowdown,
             "step_before": d.step_before, "step_after": d.step_after, "replan": d.replan,
             "impact": round(d.impact, 6)} for d in found]


def document(system_name: str, gpus: int, size: int, parallel: str | None,
             found: Sequence[Domain]) -> str:
    """The JSON document (docs/contracts.md)."""
    doc = {"schema": SCHEMA, "system": system_name, "gpus": gpus, "size": size,
           "parallel": parallel, "domains": rows(found)}
    return json.dumps(doc, indent=1) + "\n"


def table(system_name: str, gpus: int, size: int, parallel: str | None,
          found: Sequence[Domain]) -> str:
    """The ranked text table."""
    lines = [f"blast radius of {system_name}: {plural(gpus, 'GPU')}; reference: world "
             f"all-reduce of {human(size, BYTES, binary=True)}"
             + (f"; strategy '{parallel}' (step time, or exposed communication per step)"
                if parallel else ""),
             f"{'#':<3} {'domain':<14} {'members':>7}  {'example':<34} {'GPUs lost':>9}  "
             f"{'all-reduce':>12}  {'step':>16}  bandwidth lost"]
    for i, d in enumerate(found, 1):
        if d.gpus_total and d.gpus_lost == d.gpus_total:
            ar = "no GPU left"
        elif not d.connected:
            ar = "partitioned"
        elif d.slowdown is None:
            ar = "-"
        else:
            ar = f"x{d.slowdown:.3f}"
        if d.replan:
            st = "replan"
        elif d.step_after is not None and d.step_before is not None:
            st = f"{d.step_before:.3f}->{d.step_after:.3f} s"
        else:
            st = "-"
        lost = ", ".join(f"{cls} {human(v, RATE)}" for cls, v in d.bandwidth_lost) or "none"
        lines.append(f"{i:<3} {d.what:<14} {d.members:>7}  {d.example:<34} {d.gpus_lost:>9}  "
                     f"{ar:>12}  {st:>16}  {lost}")
    return "\n".join(lines) + "\n"
