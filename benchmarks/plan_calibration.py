"""Fit the GEMM efficiency curve of each GPU generation on the published runs marked fit in
tests/training_rows.py (at most a third of them), then print every row's predicted iteration
time and memory next to the measured ones as a Markdown table, fit and validation rows apart
(docs/plan.md carries this output).

    .venv/bin/python benchmarks/plan_calibration.py [--fit] [--ranks]

--fit    search the constants (coordinate descent on the RMS log error of the fit rows) and
         print them; without it the table uses the constants in compiler/training/gemm.py.
--ranks  also run the free search for each row and print where its published strategy ranks
         and how far its predicted step is from the search's best, and from the best with the
         row's own recompute mode (slow: minutes).
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

from tests.training_rows import CAVEATS, NOT_A_STEP, predict, rank_in_search, rows  # noqa: E402
from topoc.compiler.training import gemm  # noqa: E402

STEPS = {"e_max": 0.02, "fp8": 0.02, "c": 16.0, "attention": 0.02, "moe_layer": 0.0005}
LIMITS = {"e_max": (0.4, 0.95), "fp8": (0.3, 0.95), "c": (16.0, 512.0),
          "attention": (0.2, 0.9), "moe_layer": (0.0, 0.02)}


def _loss(fit_rows) -> float:
    errs = []
    for r in fit_rows:
        p = predict(r)
        if p.error is not None:
            errs.append(math.log(p.predicted / p.measured) ** 2)
    return math.sqrt(sum(errs) / len(errs)) if errs else 0.0


def fit() -> dict[str, gemm.Curve]:
    """Coordinate descent per generation over the fit rows of that generation."""
    out = {}
    for gen in ("ampere", "hopper", "blackwell"):
        fit_rows = [r for r in rows() if r.fit and r.generation == gen]
        if not fit_rows:
            continue
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
        out[gen] = gemm.CURVES[gen]
        print(f"{gen}: {gemm.CURVES[gen]} (RMS log error on {len(fit_rows)} fit rows "
              f"{best:.3f})")
    return out


def table(ranks: bool = False) -> None:
    """One line per row, fit rows first, then the summary."""
    print("| run | GPUs | GPU | strategy | role | predicted s | measured s | error | memory GB "
          "| HBM GB | fits |" + (" rank | vs best | vs best, same recompute |" if ranks else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|" if ranks else ""))
    errors: dict[str, list[float]] = {"fit": [], "validation": []}
    oom, skipped = [], []
    gaps: dict[str, list[float]] = {"free": [], "same": []}
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
                rk = rank_in_search(r)
                same = rank_in_search(r, same_recompute=True) if rk else None
                extra = (f" {rk[0]} of {rk[1]} | {rk[2]:+.1%} |" if rk else " - | - |") + \
                    (f" {same[2]:+.1%} |" if same else " - |")
                if rk:
                    gaps["free"].append(rk[2])
                    gaps["same"].append(same[2] if same else rk[2])
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
    for rid, why in skipped:
        print(f"not reproduced: {rid}: {why}")
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


def main() -> None:
    """Fit (with --fit), then the table."""
    if "--fit" in sys.argv:
        fit()
        print()
    table("--ranks" in sys.argv)


if __name__ == "__main__":
    main()
