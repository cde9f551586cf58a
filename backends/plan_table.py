"""``topoc plan`` output: the ranked strategies as a text table, ``topoc.plan/1`` JSON or CSV."""

from __future__ import annotations

import csv
import io
import json

from ..compiler.analysis.plan import PlanResult, PlanRow
from .report import seconds

SCHEMA = "topoc.plan/1"
CSV_FIELDS = ("rank", "tp", "cp", "ep", "dp", "pp", "microbatch", "recompute", "interleave",
              "sequence_parallel", "step_time", "compute_time", "comm_time", "bubble_time",
              "memory_per_gpu", "fits", "mfu", "tokens_per_s")


def _shown(result: PlanResult, top: int) -> tuple[PlanRow, ...]:
    return result.rows[:top] if top else result.rows


def as_json(result: PlanResult, head: dict, top: int = 0) -> str:
    """``{"schema": "topoc.plan/1", "format": "topoc.plan/1", ..., "rows": [...]}``: rows
    ranked by step time, fitting ones first; times in seconds, memory in bytes."""
    rows = [{"rank": i + 1, **r.as_dict()} for i, r in enumerate(_shown(result, top))]
    doc = {"schema": SCHEMA, "format": SCHEMA, **head, "candidates": result.considered,
           "rejected": result.invalid, "evaluated": len(result.rows),
           "fitting": sum(1 for r in result.rows if r.fits), "rows": rows}
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def as_csv(result: PlanResult, top: int = 0) -> str:
    """One line per row with the contract's columns."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for i, r in enumerate(_shown(result, top)):
        d = {"rank": i + 1, **r.as_dict()}
        w.writerow([d[k] for k in CSV_FIELDS])
    return buf.getvalue()


def _links(r: PlanRow) -> str:
    return " ".join(f"{dim}:{'+'.join(cls)}" for dim, cls in r.links_by_dim if cls) or "-"


def _comm(r: PlanRow) -> str:
    parts = [f"{dim} {seconds(t)}" for dim, t in r.comm_by_dim if t > 0]
    return ", ".join(parts) or "-"


def as_text(result: PlanResult, head: dict, top: int = 20) -> str:
    """A header with the counts, then the ranked table."""
    fitting = sum(1 for r in result.rows if r.fits)
    lines = [f"plan for {head['model']} on {head['system']}: {result.gpus} GPUs, batch "
             f"{head['batch']} x {head['seq']} tokens",
             f"{result.considered:,} candidates: {result.invalid:,} rejected by the model "
             f"(layers, heads, batch or experts do not divide), {len(result.rows):,} costed, "
             f"{fitting:,} fit in memory", ""]
    head_row = ["#", "tp", "cp", "ep", "dp", "pp", "mb", "recompute", "v", "sp", "step",
                "compute", "exposed comm", "bubble", "memory/GPU", "MFU", "tokens/s",
                "links crossed"]
    rows = [head_row]
    for i, r in enumerate(_shown(result, top)):
        c = r.candidate
        over = (r.memory_per_gpu - head["hbm_per_gpu"]) / 1e9 if head.get("hbm_per_gpu") else 0
        memory = f"{r.memory_per_gpu / 1e9:.1f} GB" + ("" if r.fits else
                                                        f" ({over:.1f} GB over)")
        rows.append([str(i + 1), str(c.tp), str(c.cp), str(c.ep), str(c.dp), str(c.pp),
                     str(c.microbatch), c.recompute, str(c.interleave),
                     "yes" if c.sequence_parallel else "no", seconds(r.step_time),
                     seconds(r.compute_time), _comm(r), seconds(r.bubble_time), memory,
                     f"{r.mfu:.1%}", f"{r.tokens_per_s:,.0f}", _links(r)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(head_row))]
    for row in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    hidden = len(result.rows) - len(rows) + 1
    if hidden > 0:
        lines.append(f"... and {hidden:,} more (--top 0 lists all)")
    return "\n".join(lines) + "\n"


def render(result: PlanResult, head: dict, fmt: str = "text", top: int = 20) -> str:
    """The plan in ``fmt`` (text, json or csv); ``top`` rows, 0 for all."""
    if fmt == "json":
        return as_json(result, head, top)
    if fmt == "csv":
        return as_csv(result, top)
    return as_text(result, head, top)
