"""Fit the GEMM efficiency curve of each GPU generation on the published runs marked fit in
tests/training_rows.py (at most a third of them), then print every row's predicted iteration
time and memory next to the measured ones as a Markdown table, fit and validation rows apart
(docs/plan.md carries this output).

    .venv/bin/python benchmarks/plan_calibration.py [--fit] [--ranks]

--fit    search the constants and print them: the global ones (``GLOBALS``: the cost per
         layer and micro-batch of PyTorch's FSDP and Megatron-Core's MoE layers) on every
         scored row and every group of
         measured alternatives, then each generation's GEMM curve on its fit rows (coordinate
         descent on the RMS log error), ``ROUNDS`` times; the printed values are copied into
         compiler/training/constants.py by hand (the registry holds a fixed point of --fit).
         Without it the table uses the registry's values.
--margin F  the search's memory margin for --ranks (default memory.MEMORY_MARGIN; 0 off):
         tight candidates are marked (those over HBM answered after every one that fits,
         ``PlanRow.rank_key``), and the summary counts the published strategies that are
         tight themselves.
--ranks  also run the free search for each row (at the row's GPU memory, with its framework's
         sharding) and print where its published strategy ranks, how far its predicted step
         is from the search's best and from the best with the row's own recompute mode, and,
         for every row over 15 %, the best strategy, the options that differ and why
         (``RANK_MISSES`` in tests/training_rows.py; "not explained" where none is known).
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.training_rows import (CAVEATS, NOT_A_STEP, RANK_MISSES, predict,  # noqa: E402
                                 ranking, rows)
from topoc.compiler.training import compute, gemm  # noqa: E402

STEPS = {"e_max": 0.02, "fp8": 0.02, "c": 16.0, "attention": 0.02, "moe_layer": 0.0005}
LIMITS = {"e_max": (0.4, 0.95), "fp8": (0.3, 0.95), "c": (16.0, 512.0),
          "attention": (0.2, 0.9), "moe_layer": (0.0, 0.02)}


#: Constants fitted on the fit rows of every generation at once (one value for all, not a
#: curve per generation): registry name -> (module, attribute the model reads at call time,
#: search step, search limits). benchmarks/plan_validation.py refits them with each source
#: left out, as it does the curves.
GLOBALS = {"compute.layer_microbatch": (compute, "LAYER_MICROBATCH", 0.00025, (0.0, 0.03))}
#: Rounds of (the global constants, then each generation's curve): each moves the other.
ROUNDS = 2


def globals_now() -> dict[str, float]:
    """The global constants' values the model reads now."""
    return {k: getattr(mod, attr) for k, (mod, attr, _, _) in GLOBALS.items()}


def set_globals(values: dict[str, float]) -> None:
    """Put ``values`` (registry name -> value) where the model reads them."""
    for k, v in values.items():
        mod, attr, _, _ = GLOBALS[k]
        setattr(mod, attr, v)


def source_of(row) -> str:
    """The document a row comes from: its source up to the first parenthesis or comma."""
    return row.source.split(" (")[0].split(",")[0].strip()


def global_rows(leave_out: str | None = None) -> tuple[list, list[list]]:
    """What ``GLOBALS`` are fitted on, the rows of source ``leave_out`` left out: every scored
    row of tests/training_rows.py (its step against the measured one), and every group of
    measured alternatives of tests/training_orderings.py (each alternative's step against
    the measured one relative to its group's: a group says how steps differ, not their
    level). The curves' fit rows alone (a third of the rows, one or two micro-batch counts
    per model) do not fix a cost per layer and micro-batch: it is what alternatives that
    differ in micro-batch, pipeline depth or layers a stage measure."""
    from tests.training_orderings import groups
    scored = [r for r in rows() if r.id not in NOT_A_STEP and source_of(r) != leave_out]
    sets = []
    for g in groups():
        ran = [a.row for a in g.alternatives if not a.oom]
        if len(ran) > 1 and source_of(ran[0]) != leave_out:
            sets.append(ran)
    return scored, sets


def _global_loss(scored, sets) -> float:
    """RMS log error over ``scored`` rows and, centred per group, over ``sets``' rows."""
    errs = []
    for r in scored:
        p = predict(r)
        if p.error is not None:
            errs.append(math.log(p.predicted / p.measured))
    errs = [e * e for e in errs]
    for g in sets:
        logs = []
        for r in g:
            p = predict(r)
            if p.error is not None:
                logs.append(math.log(p.predicted / p.measured))
        if len(logs) > 1:
            mean = sum(logs) / len(logs)
            errs += [(x - mean) ** 2 for x in logs]
    return math.sqrt(sum(errs) / len(errs)) if errs else 0.0


def fit_globals(scored, sets) -> tuple[dict[str, float], float]:
    """Coordinate descent of ``GLOBALS`` on ``global_rows``' ``scored`` rows and ``sets`` of
    alternatives from their current values, with the curves as they are: the values it ends
    at (left in place) and the loss (``_global_loss``)."""
    best = _global_loss(scored, sets)
    for _ in range(3):
        improved = False
        for key, (mod, attr, step, (lo, hi)) in GLOBALS.items():
            for sign in (1, -1):
                while True:
                    cur = getattr(mod, attr)
                    value = min(hi, max(lo, cur + sign * step))
                    if value == cur:
                        break
                    setattr(mod, attr, value)
                    loss = _global_loss(scored, sets)
                    if loss < best - 1e-6:
                        best, improved = loss, True
                    else:
                        setattr(mod, attr, cur)
                        break
        if not improved:
            break
    return globals_now(), best


def fit_all(fit_rows, leave_out: str | None = None, generations=("ampere", "hopper", "blackwell"),
            report: bool = False) -> tuple[dict[str, float], dict[str, gemm.Curve]]:
    """``ROUNDS`` rounds of the global constants on ``global_rows(leave_out)``, then each
    generation's curve on its own rows of ``fit_rows``, from the values in place (left at the
    result): the global values and the curves of the generations that have fit rows."""
    scored, sets = global_rows(leave_out)
    curves: dict[str, gemm.Curve] = {}
    for _ in range(ROUNDS):
        values, loss = fit_globals(scored, sets)
        if report:
            print(f"global: {values} (RMS log error on {len(scored)} rows and "
                  f"{sum(map(len, sets))} alternatives in {len(sets)} groups, each centred "
                  f"on its group, {loss:.3f})")
        for gen in generations:
            mine = [r for r in fit_rows if r.generation == gen]
            if mine:
                curves[gen], best = fit_generation(gen, mine)
                if report:
                    print(f"{gen}: {gemm.CURVES[gen]} (RMS log error on {len(mine)} fit rows "
                          f"{best:.3f})")
    return globals_now(), curves


def _loss(fit_rows) -> float:
    errs = []
    for r in fit_rows:
        p = predict(r)
        if p.error is not None:
            errs.append(math.log(p.predicted / p.measured) ** 2)
    return math.sqrt(sum(errs) / len(errs)) if errs else 0.0


def fit_generation(gen: str, fit_rows) -> tuple[gemm.Curve, float]:
    """Coordinate descent for one generation on ``fit_rows`` from its current curve: the curve
    it ends at and its RMS log error (``gemm.CURVES[gen]`` is left at that curve).
    benchmarks/plan_validation.py runs the same procedure with each source left out."""
    keys = [k for k in STEPS if (k != "fp8" or any(r.fp8 for r in fit_rows)) and
            (k != "moe_layer" or any(r.shape.ep > 1 for r in fit_rows))]
    best = _loss(fit_rows)
    for _ in range(3):
        improved = False
        for key in keys:
            for sign in (1, -1):
                while True:
                    cur = gemm.CURVES[gen]
                    lo, hi = LIMITS[key]
                    value = min(hi, max(lo, getattr(cur, key) + sign * STEPS[key]))
                    if value == getattr(cur, key):
                        break
                    gemm.CURVES[gen] = attrs.evolve(cur, **{key: value})
                    loss = _loss(fit_rows)
                    if loss < best - 1e-6:
                        best, improved = loss, True
                    else:
                        gemm.CURVES[gen] = cur
                        break
        if not improved:
            break
    return gemm.CURVES[gen], best


def fit() -> dict[str, gemm.Curve]:
    """The global constants on every fit row, then each generation's curve on its own fit
    rows (``fit_all``), printed."""
    return fit_all([r for r in rows() if r.fit], report=True)[1]


def table(ranks: bool = False, margin: float | None = None) -> None:
    """One line per row, fit rows first, then the summary."""
    print("| run | GPUs | GPU | strategy | role | predicted s | measured s | error | memory GB "
          "| HBM GB | fits |" + (" rank | vs best | vs best, same recompute |" if ranks else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|" if ranks else ""))
    errors: dict[str, list[float]] = {"fit": [], "validation": []}
    oom, skipped = [], []
    gaps: dict[str, list[float]] = {"free": [], "same": []}
    misses = []
    tight = []
    for role in ("fit", "validation"):
        for r in rows():
            if r.fit != (role == "fit"):
                continue
            p = predict(r)
            s = r.shape
            strat = (f"tp{s.tp} pp{s.pp} cp{s.cp} ep{s.ep} dp{s.dp} v{r.interleave} "
                     f"mb{r.microbatch}")
            if p.predicted is None:
                skipped.append((r.id, p.note))
                continue
            scored = r.id not in NOT_A_STEP
            if scored:
                errors[role].append(abs(p.error))
            if p.fits is False:
                oom.append(r.id)
            extra = ""
            if ranks:
                t0 = time.perf_counter()
                rk = ranking(r, margin=margin)
                extra = f" {rk.rank} of {rk.rows} | {rk.gap:+.1%} | {rk.gap_same:+.1%} |" \
                    if rk else " - | - | - |"
                if rk:
                    gaps["free"].append(rk.gap)
                    gaps["same"].append(rk.gap_same)
                    if rk.gap > 0.15:
                        misses.append((r.id, rk, p.hbm))
                    if rk.published.tight:
                        tight.append(f"{r.id} ({rk.published.memory_per_gpu / p.hbm:.0%})")
                print(f"  ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
            note = "" if scored else f" ({NOT_A_STEP[r.id]})"
            print(f"| {r.id}{note} | {r.gpus} | {r.gpu} | {strat} | {role} | "
                  f"{p.predicted:.2f} | {p.measured:.2f} | {p.error:+.1%} | "
                  f"{p.memory / 1e9:.1f} | {p.hbm / 1e9:.0f} | "
                  f"{'yes' if p.fits else 'NO'} |{extra}")
    print()
    for role, errs in errors.items():
        if errs:
            print(f"{role} rows: {len(errs)}, median |error| {statistics.median(errs):.1%}, "
                  f"worst {max(errs):.1%}")
    print(f"runs called out of memory: {len(oom)} {' '.join(oom)}")
    for key, text in (("free", "the free search's best"),
                      ("same", "the best with the row's recompute mode")):
        if gaps[key]:
            print(f"published strategies within 15 % of {text}: "
                  f"{sum(g <= 0.15 for g in gaps[key])} of {len(gaps[key])} (median "
                  f"{statistics.median(gaps[key]):+.1%}, worst {max(gaps[key]):+.1%})")
    if ranks:
        from topoc.compiler.training.memory import MEMORY_MARGIN
        m = MEMORY_MARGIN if margin is None else margin
        print(f"memory margin {m:g}: published strategies that are tight themselves: "
              f"{len(tight)} of {len(gaps['free'])}" + (f" ({', '.join(tight)})" if tight
                                                         else ""))
    for rid, why in skipped:
        print(f"not reproduced: {rid}: {why}")
    if misses:
        print()
        print("Published strategies more than 15 % from the search's best:")
        print()
        print("| run | published | best | vs best | options that differ | best, same "
              "recompute | vs it | options that differ | why |")
        print("|---|---|---|---|---|---|---|---|---|")
        for rid, rk, hbm in misses:
            same = rk.same or rk.published
            print(f"| {rid} | {_strategy(rk.published, hbm)} | {_strategy(rk.best, hbm)} | "
                  f"{rk.gap:+.1%} | {rk.differs()} | {_strategy(same, hbm)} | "
                  f"{rk.gap_same:+.1%} | {rk.differs(same)} | "
                  f"{RANK_MISSES.get(rid, 'not explained')} |")
    caveats()


def caveats() -> None:
    """The rows tests/training_rows.py's CAVEATS names: their error, why the model cannot
    settle them, and the what-if with the unpublished setting changed (never in the summary)."""
    by_id = {r.id: r for r in rows()}
    for rid, (why, change) in CAVEATS.items():
        r = by_id.get(rid)
        p = predict(r) if r else None
        if p is None or p.error is None:
            continue
        line = f"caveat: {rid} ({p.error:+.1%}): {why}"
        if change:
            q = predict(attrs.evolve(r, **change))
            what = ", ".join(f"{k} {v}" for k, v in change.items())
            fits = "" if q.fits else f", over HBM at {q.memory / 1e9:.1f} GB"
            line += f"; with {what}: {q.error:+.1%}{fits}"
        print(line)


def _strategy(row, hbm: float) -> str:
    """A plan row's strategy, step and memory (and its share of ``hbm``), in one cell."""
    c = row.candidate
    return (f"tp{c.tp} cp{c.cp} ep{c.ep} dp{c.dp} pp{c.pp} v{c.interleave} mb{c.microbatch} "
            f"{c.recompute}{' sp' if c.sequence_parallel else ''}: {row.step_time:.2f} s, "
            f"{row.memory_per_gpu / 1e9:.1f} GB ({row.memory_per_gpu / hbm:.0%})"
            f"{', tight' if row.tight else ''}")


def main() -> None:
    """Fit (with --fit), then the table."""
    if "--fit" in sys.argv:
        fit()
        print()
    margin = float(sys.argv[sys.argv.index("--margin") + 1]) if "--margin" in sys.argv else None
    table("--ranks" in sys.argv, margin)


if __name__ == "__main__":
    main()
