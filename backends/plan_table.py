"""``topoc plan`` output: the ranked strategies as a text table, ``topoc.plan/1`` JSON or CSV."""

from __future__ import annotations

import csv
import io
import json

from ..compiler.analysis.plan import PlanResult, PlanRow
from .report import seconds
from .ranked_csv import ranked_csv

SCHEMA = "topoc.plan/1"
CSV_FIELDS = ("rank", "tp", "cp", "ep", "dp", "pp", "microbatch", "recompute", "interleave",
              "sequence_parallel", "zero", "step_time", "compute_time", "comm_time", "bubble_time",
              "memory_per_gpu", "fits", "mfu", "tokens_per_s", "tight")


def _shown(result: PlanResult, top: int) -> tuple[PlanRow, ...]:
    return result.rows[:top] if top else result.rows


def as_json(result: PlanResult, head: dict, top: int = 0) -> str:
    """``{"schema": "topoc.plan/1", "format": "topoc.plan/1", ..., "rows": [...]}``: rows
    ranked by step time, those that fit first (tight ones, within ``memory_margin`` of HBM,
    marked among them), those over HBM but tight after; times in seconds, memory in
    bytes."""
    rows = [{"rank": i + 1, **r.as_dict()} for i, r in enumerate(_shown(result, top))]
    doc = {"schema": SCHEMA, "format": SCHEMA, **head, "memory_margin": result.margin,
           "candidates": result.considered,
           "rejected": result.invalid, "over_memory": result.over_memory,
           "evaluated": len(result.rows),
           "fitting": sum(1 for r in result.rows if r.fits), "tight": result.tight,
           "rows": rows}
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def as_csv(result: PlanResult, top: int = 0) -> str:
    """One line per row with the contract's columns."""
    return ranked_csv(_shown(result, top), CSV_FIELDS)


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
             f"(layers, heads, batch or experts do not divide, or too few micro-batches for an "
             f"interleaved pipeline), {result.over_memory:,} over "
             f"GPU memory{' by more than the uncertainty' if result.margin else ''} (not "
             f"costed), {len(result.rows):,} costed", ""]
    if result.margin:
        lines.insert(2, f"{result.tight:,} tight ({result.tight_over:,} of them over HBM): "
                        f"inside the memory model's measured uncertainty ({result.margin:.0%}) "
                        "either side of HBM, so they may not fit or may fit though predicted "
                        "over; answered and marked, those over HBM ranked after every one that "
                        "fits (--memory-margin 0 turns it off)")
    del fitting
    head_row = ["#", "tp", "cp", "ep", "dp", "pp", "mb", "recompute", "v", "sp", "zero", "step",
                "compute", "exposed comm", "bubble", "memory/GPU", "MFU", "tokens/s",
                "links crossed"]
    rows = [head_row]
    for i, r in enumerate(_shown(result, top)):
        c = r.candidate
        over = (r.memory_per_gpu - head["hbm_per_gpu"]) / 1e9 if head.get("hbm_per_gpu") else 0
        memory = f"{r.memory_per_gpu / 1e9:.1f} GB" + ("" if r.fits else
                                                        f" ({over:.1f} GB over; "
                                                        f"{_largest(r)})") + \
            (" tight" if r.tight else "")
        rows.append([str(i + 1), str(c.tp), str(c.cp), str(c.ep), str(c.dp), str(c.pp),
                     str(c.microbatch), c.recompute, str(c.interleave),
                     "yes" if c.sequence_parallel else "no", str(c.zero), seconds(r.step_time),
                     seconds(r.compute_time), _comm(r), seconds(r.bubble_time), memory,
                     f"{r.mfu:.1%}", f"{r.tokens_per_s:,.0f}", _links(r)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(head_row))]
    for row in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    hidden = len(result.rows) - len(rows) + 1
    if hidden > 0:
        lines.append(f"... and {hidden:,} more (--top 0 lists all)")
    return "\n".join(lines) + "\n"


GOODPUT_CSV_FIELDS = CSV_FIELDS + ("goodput", "goodput_tokens_per_s")


def _goodput_head(ranking, checkpoint: float, restart: float) -> list[str]:
    """One line per GPU count of ``ranking.estimates`` (a ranking's or a goodput curve's):
    the interruptions, MTBF, Daly interval and goodput behind it."""
    lines = []
    for n, est in ranking.estimates:
        daly = f"checkpoint every {est.daly / 60:.1f} min of work (Daly)" \
            if est.daly is not None else "no interruption expected"
        mtbf = f"MTBF {est.mtbf / 3600:.2f} h" if est.per_day else "MTBF infinite"
        lines.append(f"goodput on {n:,} GPUs ({est.rates.study} rates): {est.per_day:.3g} "
                     f"interruptions a day, {mtbf}; checkpoint {checkpoint:g} s, restart "
                     f"{restart:g} s: {daly}, {est.goodput:.1%} of wall time useful")
    return lines


def render_goodput(result: PlanResult, ranking, head: dict, fmt: str = "text", top: int = 20,
                   checkpoint: float = 0.0, restart: float = 0.0) -> str:
    """``--goodput``: the rows of ``ranking`` (``analysis.goodput``) with the goodput fraction
    and goodput tokens/s, ranked by the latter."""
    shown = ranking.rows[:top] if top else ranking.rows
    if fmt == "csv":
        return ranked_csv(shown, GOODPUT_CSV_FIELDS)
    if fmt == "json":
        doc = json.loads(as_json(result, head, top))
        doc["ranked_by"] = "goodput_tokens_per_s"
        doc["goodput"] = {"checkpoint_seconds": checkpoint, "restart_seconds": restart,
                          "estimates": [{"gpus": n, **est.to_json()}
                                        for n, est in ranking.estimates]}
        doc["rows"] = [{"rank": i + 1, **g.as_dict()} for i, g in enumerate(shown)]
        return json.dumps(doc, indent=2, sort_keys=False) + "\n"
    plain = PlanResult(tuple(g.row for g in ranking.rows), result.considered, result.invalid,
                       result.cached, result.gpus, result.runner, result.over_memory,
                       result.smallest, result.margin, result.hbm, result.cache_note)
    text = as_text(plain, head, top).split("\n")
    start = next(i for i, line in enumerate(text) if line.startswith("#"))
    table = text[start:start + len(shown) + 1]      # the head row and one line per row shown
    extra = [["goodput", "goodput tokens/s"]] + [
        [f"{g.fraction:.1%}", f"{g.tokens_per_s:,.0f}"] for g in shown]
    width = max(len(line) for line in table)
    w0 = max(len(e[0]) for e in extra)
    merged = [line.ljust(width) + "  " + e[0].ljust(w0) + "  " + e[1]
              for line, e in zip(table, extra)]
    return "\n".join(text[:start] + _goodput_head(ranking, checkpoint, restart) + [""]
                     + merged + text[start + len(table):])


def render(result: PlanResult, head: dict, fmt: str = "text", top: int = 20) -> str:
    """The plan in ``fmt`` (text, json or csv); ``top`` rows, 0 for all."""
    if fmt == "json":
        return as_json(result, head, top)
    if fmt == "csv":
        return as_csv(result, top)
    return as_text(result, head, top)


def _tight(r: PlanRow) -> str:
    return " tight" if r.tight else ""


def _largest(r: PlanRow) -> str:
    """'optimizer 38.3 GB the largest': the term to shrink first of a row over HBM."""
    return f"{r.largest[0]} {r.largest[1] / 1e9:.1f} GB the largest"


def render_comparison(cmp, head: dict, fmt: str = "text") -> str:
    """``--compare``: the strategy's rank and the terms that separate it from #1."""
    wanted = ",".join(f"{k}={v}" for k, v in cmp.wanted)
    if fmt == "json":
        doc = {"schema": SCHEMA, "format": SCHEMA, **head, "compare": dict(cmp.wanted),
               "rank": cmp.rank, "row": cmp.row.as_dict() if cmp.row else None,
               "best": cmp.best.as_dict() if cmp.best else None, "slower": cmp.slower,
               "terms": [{"term": n, "this": a, "best": b} for n, a, b in cmp.terms],
               **({"microbatches": {"this": cmp.microbatches[0], "best": cmp.microbatches[1]}}
                  if cmp.microbatches else {})}
        return json.dumps(doc, indent=2) + "\n"
    if cmp.row is None:
        return (f"{wanted}: not among the {head['model']} strategies that run and fit on "
                f"{head['gpus']} GPUs (rejected by the model, or over GPU memory by more than "
                "the memory model's uncertainty)\n")
    lines = [f"{wanted}: rank {cmp.rank} ({cmp.row.candidate.key}{_tight(cmp.row)}), step "
             f"{seconds(cmp.row.step_time)}, {cmp.slower:+.1%} against #1 "
             f"({cmp.best.candidate.key}{_tight(cmp.best)}, {seconds(cmp.best.step_time)})",
             "",
             ""]
    w = max([18] + [len(n) for n, _, _ in cmp.terms])
    lines[-1] = f"{'term':<{w}}  {'this':<10}  {'#1':<10}  difference"
    for name, a, b in cmp.terms:
        lines.append(f"{name:<{w}}  {seconds(a):<10}  {seconds(b):<10}  {seconds(a - b)}")
    lines.append(f"{'memory/GPU':<{w}}  {cmp.row.memory_per_gpu / 1e9:.1f} GB{'':<3}  "
                 f"{cmp.best.memory_per_gpu / 1e9:.1f} GB")
    if cmp.microbatches:
        lines.append(f"{'micro-batches':<{w}}  {cmp.microbatches[0]:<10,}  "
                     f"{cmp.microbatches[1]:<10,}  (a step, per pipeline)")
    if cmp.row.tight and cmp.row.fits:
        lines.append("this strategy is tight: it fits, within the memory model's uncertainty "
                     "of HBM, which could push it over; ranked by its step time, measure its "
                     "memory before relying on it")
    elif cmp.row.tight:
        over = (cmp.row.memory_per_gpu - head["hbm_per_gpu"]) / 1e9 \
            if head.get("hbm_per_gpu") else 0.0
        lines.append(f"this strategy is tight: predicted {over:.1f} GB over HBM "
                     f"({_largest(cmp.row)}), but within the memory model's uncertainty, so "
                     "it may run; it ranks after every candidate that fits")
    return "\n".join(lines) + "\n"


#: Why a row that runs shows no MFU.
NO_MFU = "no MFU: the GPU model declares no dense peak (tflops_bf16)"


def render_scaling(curve, fmt: str = "text", goodput=None) -> str:
    """``--scaling``: per GPU count, the best strategy of strong and weak scaling with step
    time, throughput, speedup and efficiency, and where adding GPUs stops paying; with
    ``goodput`` (``analysis.goodput.GoodputCurve``) also the goodput fraction, goodput tokens/s
    and efficiency at each count and where adding GPUs stops paying in goodput."""
    rows = []
    for p in curve.points:
        for mode in ("strong", "weak"):
            r = getattr(p, mode)
            rows.append({"gpus": p.gpus, "mode": mode,
                         "batch": curve.batch if mode == "strong" else p.weak_batch,
                         "strategy": r.candidate.key if r else None,
                         "step_time": r.step_time if r else None,
                         "tokens_per_s": r.tokens_per_s if r else None,
                         "speedup": curve.speedup(mode, p),
                         "efficiency": curve.efficiency(mode, p),
                         "mfu": r.mfu if r else None,
                         "tight": r.tight if r else None,
                         **({"goodput": goodput.fraction(p.gpus),
                             "goodput_tokens_per_s": goodput.tokens_per_s(mode, p),
                             "goodput_efficiency": goodput.efficiency(mode, p)}
                            if goodput else {}),
                         "why": p.why(mode) if r is None else
                         None if r.mfu else NO_MFU})
    knees = {m: curve.knee(m) for m in ("strong", "weak")}
    good_knees = {m: goodput.knee(m) for m in ("strong", "weak")} if goodput else {}
    if fmt == "json":
        return json.dumps({"schema": "topoc.scaling/1", "model": curve.model,
                           "batch": curve.batch, "stops_paying": knees,
                           **({"goodput_stops_paying": good_knees} if goodput else {}),
                           "points": rows},
                          indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        keys = list(rows[0]) if rows else []
        w.writerow(keys)
        for r in rows:
            w.writerow([r[k] for k in keys])
        return buf.getvalue()
    lines = [f"scaling of {curve.model}: strong at batch {curve.batch}, weak at "
             f"{curve.batch / curve.points[0].gpus:g} sequences per GPU", ""]
    table = [["GPUs", "mode", "batch", "best strategy", "step", "tokens/s", "speedup",
              "efficiency", "MFU"] + (["goodput", "goodput tokens/s", "goodput eff."]
                                      if goodput else [])]
    notes: dict[str, int] = {}          # a reason and its footnote, shared by equal reasons
    for r in rows:
        mark = f" [{notes.setdefault(r['why'], len(notes) + 1)}]" if r["why"] else ""
        ran = r["strategy"] is not None
        table.append([str(r["gpus"]), r["mode"], str(r["batch"]),
                      (r["strategy"] + (" (tight)" if r["tight"] else "")) if ran else "-" + mark,
                      seconds(r["step_time"]) if r["step_time"] else "-",
                      f"{r['tokens_per_s']:,.0f}" if r["tokens_per_s"] else "-",
                      f"{r['speedup']:.2f}" if r["speedup"] else "-",
                      f"{r['efficiency']:.0%}" if r["efficiency"] else "-",
                      f"{r['mfu']:.1%}" if r["mfu"] else "-" + (mark if ran else "")]
                     + ([f"{r['goodput']:.1%}",
                         f"{r['goodput_tokens_per_s']:,.0f}" if ran else "-",
                         f"{r['goodput_efficiency']:.0%}" if r["goodput_efficiency"] else "-"]
                        if goodput else []))
    widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
    for t in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip())
    lines.append("")
    lines += [f"[{n}] {why}" for why, n in notes.items()]
    lines += [""] if notes else []
    for mode, n in knees.items():
        lines.append(f"{mode} scaling: " + (f"adding GPUs stops paying at {n} (efficiency under "
                                             "50 % or no more throughput)" if n else
                                             "pays all the way"))
    for mode, n in good_knees.items():
        lines.append(f"{mode} scaling in goodput tokens/s: " + (
            f"adding GPUs stops paying at {n}" if n else "pays all the way"))
    if goodput and goodput.estimates:
        first = goodput.estimates[0][1]
        lines += [""] + _goodput_head(goodput, first.checkpoint, first.restart)
    return "\n".join(lines) + "\n"
