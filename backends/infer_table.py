"""``topoc infer`` output: the ranked serving configurations as a text table, ``topoc.infer/1``
JSON or CSV."""

from __future__ import annotations

import json

from ..compiler.analysis.infer import InferResult, InferRow
from .report import seconds
from .ranked_csv import ranked_csv

SCHEMA = "topoc.infer/1"
#: The contract's row fields (docs/contracts.md), in order; JSON rows add the rest.
FIELDS = ("tp", "pp", "ep", "replicas", "gpus", "concurrency", "precision", "kv_precision",
          "ttft", "tpot", "throughput", "throughput_per_gpu", "tokens_per_s_per_user",
          "memory_per_gpu", "kv_capacity_tokens", "fits")
CSV_FIELDS = ("rank", *FIELDS, "attention_dp", "prefill_replicas", "within_limits", "pareto")
#: Open-loop rows (``--request-rate``) add the load's columns.
RATE_FIELDS = ("arrival", "request_rate", "requests", "in_flight", "capacity_rate",
               "utilization", "stable", "ttft_median")
#: Fixed-concurrency rows add the engine's running batch and its queue (per replica).
QUEUE_FIELDS = ("running", "queued")


def _open_loop(result: InferResult) -> bool:
    return bool(result.rows) and bool(result.rows[0].extra)


def _shown(result: InferResult, top: int) -> tuple[InferRow, ...]:
    return result.rows[:top] if top else result.rows


def as_json(result: InferResult, head: dict, top: int = 0) -> str:
    """``{"format": "topoc.infer/1", "schema": ..., ..., "rows": [...]}``: rows ranked by
    output tokens/s per GPU, fitting and within the limits first; seconds, bytes, tokens/s."""
    rows = [{"rank": i + 1, **r.as_dict()} for i, r in enumerate(_shown(result, top))]
    doc = {"format": SCHEMA, "schema": SCHEMA, **head, "considered": result.considered,
           "rejected": list(result.rejected), "evaluated": len(result.rows),
           "fitting": sum(1 for r in result.rows if r.fits),
           "pareto": [i + 1 for i, r in enumerate(result.rows) if r.pareto
                      and (not top or i < top)],
           "rows": rows}
    return json.dumps(doc, indent=2) + "\n"


def as_csv(result: InferResult, top: int = 0) -> str:
    """One line per row: the contract's columns and the search's flags."""
    fields = CSV_FIELDS + (RATE_FIELDS if _open_loop(result) else QUEUE_FIELDS)
    return ranked_csv(_shown(result, top), fields)


def _layout(r: InferRow) -> str:
    c = r.config
    text = f"tp{c.tp} pp{c.pp}" + (f" ep{c.ep}" if c.ep > 1 else "") + \
        (" adp" if c.attention_dp else "")
    return text + (f" P{c.prefill_replicas}:D{c.replicas - c.prefill_replicas}"
                   if c.prefill_replicas else "")


def _load(r: InferRow) -> str:
    """An open-loop row's load: its utilisation of the layout's capacity, or why none."""
    x = dict(r.extra)
    if x["arrival"] == "burst":
        return "burst"
    u = x["utilization"]
    text = f"{u:.0%}" if u < 10 else f"{u:,.0f}x" if u < 1e6 else f"{u:.1e}x"   # not 300 digits
    return text + ("" if r.stable else " over")


def _table(rows, index) -> list[str]:
    rate = bool(rows) and bool(rows[0].extra)
    head = ["#", "layout", "replicas", "conc", *(["load"] if rate else []), "TTFT", "TPOT",
            "tok/s", "tok/s/GPU", "tok/s/user", "memory/GPU", "KV tokens", "fits"]
    out = [head]
    for i, r in zip(index, rows):
        fits = ("yes" if r.fits else "no") + ("" if r.within_limits else " (over limit)")
        out.append([str(i), _layout(r), str(r.config.replicas), str(r.config.concurrency),
                    *([_load(r)] if rate else []),
                    seconds(r.ttft), seconds(r.tpot), f"{r.throughput:,.0f}",
                    f"{r.throughput_per_gpu:,.0f}", f"{r.tokens_per_s_per_user:,.1f}",
                    f"{r.memory_per_gpu / 1e9:.1f} GB", f"{r.kv_capacity_tokens:,}", fits])
    widths = [max(len(row[i]) for row in out) for i in range(len(head))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in out]


def _count(n: int, word: str) -> str:
    """'1 layout', '1,224 layouts'."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def as_text(result: InferResult, head: dict, top: int = 20) -> str:
    """A header, the ranked table, then the Pareto front."""
    fitting = sum(1 for r in result.rows if r.fits)
    lines = [f"serving {head['model']} on {head['system']}: {result.gpus} GPUs, "
             f"{head['isl']} tokens in, {head['osl']} out, {head['precision']} weights, "
             f"{head['kv_precision']} KV cache",
             _count(result.considered, "layout")
             + (f" (some rejected: {_count(len(result.rejected), 'reason')} below)"
                if result.rejected else "")
             + f", {_count(len(result.rows), 'configuration')} costed, {fitting:,} fit"]
    if head.get("arrival") == "burst":
        lines.append(f"load: {head['requests']:,} requests at once (a burst; conc = requests "
                     "in flight, TTFT and TPOT are the run's)")
    elif head.get("arrival") == "poisson":
        lines.append(f"load: {head['request_rate']:g} requests/s over the replicas, Poisson "
                     "(conc = requests in flight by Little's law; load = the rate over the "
                     "layout's capacity)")
    if head.get("client"):
        per = head.get("requests_per_client")
        load = "the request rate's Poisson arrivals" if head["client"] == "poisson" else \
            "each row's concurrency in clients that send their next request when one ends"
        if head["client"] not in ("closed", "poisson"):
            load = f"{head['client']}'s default closed loop: " + load
        count = f"max({head['requests']:,}, {per} x concurrency) requests measured after " \
            f"{head['warmup']:,} warm-up" if per else \
            f"{head['requests']:,} requests ({head['warmup']:,} warm-up)"
        if head.get("length_spread"):
            count += (f", each request's lengths drawn within {head['length_spread']:.0%} of "
                      "--isl and --osl")
        sched = f"{head['engine']}'s scheduler"
        if head.get("engine_by_client"):
            sched += (" as the client launches it (chunked prefill, a token budget tuned to "
                      "the lengths)")
        lines.append(f"simulated client: {load}, {count} against {sched}; TTFT and TPOT are "
                     "the run's means")
    lines.append("")
    shown = _shown(result, top)
    lines += _table(shown, range(1, len(shown) + 1))
    hidden = len(result.rows) - len(shown)
    if hidden > 0:
        lines.append(f"... and {hidden:,} more (--top 0 lists all)")
    if shown and shown[0].extra:
        lines += _rate_notes(result, shown[0], head)
    lines += _queue_notes(shown)
    if shown and "ttft_p90" in dict(shown[0].parts):
        p = dict(shown[0].parts)
        lines.append(f"row 1 simulated: TTFT median {seconds(p['ttft_median'])}, p90 "
                     f"{seconds(p['ttft_p90'])}; TPOT median {seconds(p['tpot_median'])}, p90 "
                     f"{seconds(p['tpot_p90'])}; running batch {p['sim_running']:,.1f} on "
                     f"average, at most {p['sim_queued']:,.0f} waiting, "
                     f"{p['sim_preempted']:,.0f} preempted")
    closed = dict(shown[0].parts).get("ttft_closed_loop") if shown else None
    if closed is not None and closed != shown[0].ttft and not head.get("client"):
        lines.append(f"row 1's TTFT in a fixed-concurrency (closed-loop) benchmark: "
                     f"{seconds(closed)} (ttft_closed_loop, empirical; the table's TTFT is for "
                     "independent arrivals: docs/infer.md)")
    for collective, ranks, names in result.collectives:
        if set(names) <= {"fastest", "nccl"}:
            continue        # a chooser alone: the default, said in docs/infer.md
        lines.append(f"{collective} on {ranks} GPUs costed as {', '.join(names)} "
                     "(topoc cost --algorithm NAME gives the same time)")
    front = [(i + 1, r) for i, r in enumerate(result.rows) if r.pareto]
    if front:
        lines += ["", "Pareto front (tokens/s per GPU against tokens/s per user):"]
        lines += _table([r for _, r in front], [i for i, _ in front])
    for why in result.rejected:
        lines.append(f"rejected: {why}")
    return "\n".join(lines) + "\n"


def _queue_notes(shown) -> list[str]:
    """Under the table: the shown rows whose concurrency is more than their engine runs at
    once (its KV cache or max_batch): the running batch, the queue, and that TTFT holds the
    wait."""
    queued = [(i + 1, dict(r.parts)) for i, r in enumerate(shown)
              if dict(r.parts).get("queued", 0) > 0]
    if not queued:
        return []
    i, p = queued[0]
    more = f" (and {len(queued) - 1:,} more of the rows shown)" if len(queued) > 1 else ""
    return [f"queued: row {i} runs a batch of {p['running']:,.0f} requests per replica (what "
            f"its KV cache and max_batch hold) and {p['queued']:,.0f} per replica wait in the "
            f"engine's queue{more}; their wait is in the TTFT"]


def _rate_notes(result: InferResult, first: InferRow, head: dict) -> list[str]:
    """Under the table of an open-loop run: row 1's median TTFT and capacity, and what an
    over-capacity row's figures mean."""
    p = dict(first.parts)
    lines = [f"row 1: median TTFT {seconds(p['ttft_median'])}, {p['in_flight']:,.1f} requests "
             f"in flight, capacity {p['capacity_rate']:,.2f} requests/s"]
    over = sum(1 for r in result.rows if not r.stable)
    if over and head.get("arrival") == "poisson":
        lines.append(f"over capacity: {over:,} of {len(result.rows):,} configurations cannot "
                     f"sustain {head['request_rate']:g} requests/s; their TTFT and TPOT are "
                     f"for a run of {head['requests']:,} requests and grow with it "
                     "(--requests)")
    return lines


def render(result: InferResult, head: dict, fmt: str = "text", top: int = 20) -> str:
    """The result in ``fmt`` (text, json or csv); ``top`` rows, 0 for all."""
    if fmt == "json":
        return as_json(result, head, top)
    if fmt == "csv":
        return as_csv(result, top)
    return as_text(result, head, top)
