"""Leave one source out for ``topoc plan``'s fitted constants (issue 42): the only accuracy the
docs quote for fixed strategies.

The rows of tests/training_rows.py are grouped by their source (the document a row's
``source`` names). For each source, the GEMM curves (``constants``: ``gemm.<generation>.*``)
are refitted without it, with benchmarks/plan_calibration.py's own procedure (coordinate
descent on the RMS log error of the rows marked fit, per generation, from the registry's
values), and every row of the left-out source is predicted with the curves that never saw
it. A generation whose every fit row comes from the left-out source cannot be refitted
without it; its rows are then predicted with the previous generation's curve refitted
without the source (Blackwell with Hopper's, as Ada takes Hopper's figures), and the table
says so. The in-sample figure beside it is the same fit on every fit row, each row predicted
by curves fitted with its own source in.

    .venv/bin/python benchmarks/plan_validation.py [--markdown]

Prints every scored row's held-out and in-sample errors, then the medians and 90th
percentiles of |error| overall and per GPU generation, dense / MoE and BF16 / FP8.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from memory_validation import quantile  # noqa: E402
from plan_calibration import fit_generation  # noqa: E402
from tests.training_rows import NOT_A_STEP, _model_cached, predict, rows  # noqa: E402
from topoc.compiler.training import gemm  # noqa: E402

GENERATIONS = ("ampere", "hopper", "blackwell")
#: A generation with no fit row left takes this one's curve (refitted without the source).
FALLBACK = {"blackwell": "hopper", "hopper": "ampere", "ampere": "hopper"}


def source_of(row) -> str:
    """The document a row comes from: its source up to the first parenthesis or comma."""
    return row.source.split(" (")[0].split(",")[0].strip()


def refit(fit_rows, start: gemm.Curve, gen: str) -> gemm.Curve:
    """plan_calibration's fit for one generation (``fit_generation``) on ``fit_rows``, from
    ``start``; the curve it ends at (``gemm.CURVES`` restored)."""
    saved = gemm.CURVES[gen]
    gemm.CURVES[gen] = start
    try:
        return fit_generation(gen, fit_rows)[0]
    finally:
        gemm.CURVES[gen] = saved


def curves_without(source: str | None, start: dict[str, gemm.Curve],
                   cache: dict) -> tuple[dict[str, gemm.Curve], dict[str, str]]:
    """The curves refitted on the fit rows of every source but ``source`` (None: all), and,
    per generation that has no fit row left, the generation whose curve it borrows."""
    out, borrowed = {}, {}
    for gen in GENERATIONS:
        fit_rows = [r for r in rows() if r.fit and r.generation == gen and
                    source_of(r) != source]
        key = (gen, tuple(sorted(r.id for r in fit_rows)))
        if fit_rows:
            if key not in cache:
                cache[key] = refit(fit_rows, start[gen], gen)
            out[gen] = cache[key]
    for gen in GENERATIONS:
        if gen not in out:
            borrowed[gen] = FALLBACK[gen]
            out[gen] = out[FALLBACK[gen]]
    return out, borrowed


def predicted_error(row, curves: dict[str, gemm.Curve]) -> float | None:
    """The row's error with ``curves`` in place (Ada keeps Hopper's, as gemm.CURVES does)."""
    saved = dict(gemm.CURVES)
    gemm.CURVES.update(curves)
    gemm.CURVES["ada"] = curves["hopper"]
    try:
        return predict(row).error
    finally:
        gemm.CURVES.clear()
        gemm.CURVES.update(saved)


def held_out() -> tuple[list[tuple], dict[str, gemm.Curve]]:
    """Every scored row's (row, source, "dense" or "MoE", held-out error, in-sample error,
    which curve predicted it held out), by source, and the in-sample curves
    (benchmarks/peers/side_by_side.py sets the peers beside these rows)."""
    start = {gen: gemm.CURVES[gen] for gen in GENERATIONS}
    cache: dict = {}
    inside, _ = curves_without(None, start, cache)
    scored = [r for r in rows() if r.id not in NOT_A_STEP]
    by_source: dict[str, list] = {}
    for r in scored:
        by_source.setdefault(source_of(r), []).append(r)
    results = []
    for src in sorted(by_source):
        held, borrowed = curves_without(src, start, cache)
        for r in by_source[src]:
            out, inn = predicted_error(r, held), predicted_error(r, inside)
            if out is None or inn is None:
                continue
            kind = "MoE" if _model_cached(r.id).experts else "dense"
            curve = f"{borrowed[r.generation]}'s (no {r.generation} fit row left)" \
                if r.generation in borrowed else "refitted without the source"
            results.append((r, src, kind, out, inn, curve))
    return results, inside


def main() -> None:
    """The per-row table, then the summaries."""
    results, inside = held_out()
    print("| run | source | generation | kind | precision | role | held-out error | "
          "in-sample error | curve |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r, src, kind, out, inn, curve in results:
        print(f"| {r.id} | {src[:48]} | {r.generation} | {kind} | "
              f"{'fp8' if r.fp8 else 'bf16'} | {'fit' if r.fit else 'validation'} | "
              f"{out:+.1%} | {inn:+.1%} | {curve} |")
    print()
    print("| rows | n | held-out median | held-out 90th pct | in-sample median | "
          "in-sample 90th pct |")
    print("|---|---|---|---|---|---|")

    def line(label: str, sel) -> None:
        picked = [x for x in results if sel(x)]
        if not picked:
            return
        out = [abs(x[3]) for x in picked]
        inn = [abs(x[4]) for x in picked]
        print(f"| {label} | {len(picked)} | {statistics.median(out):.1%} | "
              f"{quantile(out, 0.9):.1%} | {statistics.median(inn):.1%} | "
              f"{quantile(inn, 0.9):.1%} |")
    line("all", lambda x: True)
    for gen in GENERATIONS:
        line(gen, lambda x, g=gen: x[0].generation == g)
    for kind in ("dense", "MoE"):
        line(kind, lambda x, k=kind: x[2] == k)
    for prec in ("bf16", "fp8"):
        line(prec, lambda x, p=prec: ("fp8" if x[0].fp8 else "bf16") == p)
    print()
    print(f"{len({x[1] for x in results})} sources; the in-sample fit from the registry's "
          "values: " + "; ".join(f"{g} {inside[g]}" for g in GENERATIONS))


if __name__ == "__main__":
    main()
