"""topoc's memory per GPU against published peak memory (tests/fixtures/training/memory_runs.csv,
read by tests/memory_rows.py): every row's predicted and measured peak, the error, fit and
validation rows apart, the rows listed and not scored with the reason, the distribution of
measured / predicted from which ``memory.MEMORY_MARGIN`` (the memory model's uncertainty:
``topoc plan``'s "tight" band either side of HBM, ``memory.band``) is derived, and that margin
left one source out. docs/plan.md carries this output.

    .venv/bin/python benchmarks/memory_validation.py [--loss auto]

--loss auto  predicts every row with its framework's default loss kernel (``cross_entropy =
             "auto"``, the figure before the rows named theirs): the before/after of the fix.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.memory_rows import GIB, predict, rows  # noqa: E402
from topoc.compiler.training.memory import MEMORY_MARGIN, margin_from  # noqa: E402


def quantile(values: list[float], q: float) -> float:
    """The q-quantile by linear interpolation between order statistics."""
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def source_of(row) -> str:
    """The document a row comes from (its source up to the first comma or parenthesis): the
    unit left out together."""
    return row.source.split(",")[0].split(" (")[0]


def loso(overrides: dict) -> None:
    """Leave one source out: the margin from the other sources' rows, and each held-out row's
    measured / predicted against the band it gives (``memory.band``: inside it, below it, a
    prediction refused that would fit, or above it, an understatement the band misses).
    Nothing in the memory model is fitted, so the rows' errors are out of sample already; the
    margin is the one figure refitted."""
    by: dict[str, list[float]] = {}
    for r in rows():
        if r.scored == "yes":
            by.setdefault(source_of(r), []).append(predict(r, **overrides).ratio)
    print()
    print("leave one source out (the margin from the other sources; the held-out rows' "
          "measured / predicted against its band 1 - m .. 1 / (1 - m)):")
    print("| source left out | rows | ratios | margin without it | inside | below | above |")
    print("|---|---|---|---|---|---|---|")
    margins, counts = [], [0, 0, 0]
    for src in sorted(by):
        held = by[src]
        m = margin_from([x for s, v in by.items() if s != src for x in v])
        margins.append(m)
        below = sum(x < 1 - m for x in held)
        above = sum(x > 1 / (1 - m) for x in held)
        inside = len(held) - below - above
        for i, n in enumerate((inside, below, above)):
            counts[i] += n
        print(f"| {src} | {len(held)} | {min(held):.2f}-{max(held):.2f} | {m:.3f} | {inside} | "
              f"{below} | {above} |")
    total = sum(counts)
    print(f"margin left one source out: {min(margins):.3f}-{max(margins):.3f}; held-out rows "
          f"inside their band {counts[0]} of {total}, below it (would be refused though "
          f"measured to fit) {counts[1]}, above it {counts[2]}")


def main() -> None:
    """The table, then the distribution and the margin it gives."""
    overrides = {"cross_entropy": "auto"} if "--loss" in sys.argv else {}
    print("| run | GPUs | GPU | strategy | recompute | fp8 | compile | loss | role | "
          "predicted GiB | measured GiB | error | measured / predicted | largest term |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {"fit": [], "validation": []}
    errors: dict[str, list[float]] = {"fit": [], "validation": []}
    unscored = []
    for role in ("fit", "validation"):
        for r in rows():
            if r.fit != (role == "fit"):
                continue
            if r.scored != "yes":
                unscored.append(r)
                continue
            p = predict(r, **overrides)
            s = r.shape
            strat = (f"tp{s.tp} cp{s.cp} pp{s.pp} dp{s.dp} v{r.interleave} mb{r.microbatch} "
                     f"x {r.seq // 1024}K")
            terms = {k: v for k, v in p.terms.items() if k not in ("reserve", "stage")}
            big = max(terms, key=terms.get)
            loss = overrides.get("cross_entropy", r.cross_entropy)
            print(f"| {r.id} | {r.gpus} | {r.gpu} | {strat} | {r.recompute} | "
                  f"{'yes' if r.fp8 else 'no'} | {'yes' if r.compiled else 'no'} | {loss} | "
                  f"{role} | {p.predicted / GIB:.1f} | {r.measured / GIB:.1f} | "
                  f"{p.error:+.1%} | {p.ratio:.2f} | {big} {terms[big] / GIB:.1f} |")
            ratios[role].append(p.ratio)
            errors[role].append(abs(p.error))
    print()
    for role in ("fit", "validation"):
        if errors[role]:
            print(f"{role} rows: {len(errors[role])}, median |error| "
                  f"{statistics.median(errors[role]):.1%}, worst {max(errors[role]):.1%}")
        else:
            print(f"{role} rows: 0 (no memory constant is fitted)")
    v = ratios["validation"]
    if v:
        print(f"measured / predicted over the {len(v)} validation rows: min {min(v):.2f}, "
              f"10th percentile {quantile(v, 0.1):.2f}, median {statistics.median(v):.2f}, "
              f"90th percentile {quantile(v, 0.9):.2f}, max {max(v):.2f}; "
              f"{sum(x > 1 for x in v)} of {len(v)} over 1")
        print(f"margin from them (margin_from: 1 - 1 / the 90th percentile of measured / "
              f"predicted): {margin_from(v):.3f}; memory.MEMORY_MARGIN = {MEMORY_MARGIN}")
    loso(overrides)
    for r in unscored:
        p = predict(r, **overrides)
        print(f"listed, not scored: {r.id} (measured {r.measured / GIB:.1f} GiB, topoc "
              f"{p.predicted / GIB:.1f} GiB for its nearest mode): {r.scored[4:]}")


if __name__ == "__main__":
    main()
