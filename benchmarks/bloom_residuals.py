"""What BLOOM's topology search still asks of the model (issue 42's 17 wrong BLOOM pairs): where
the measured step exceeds the prediction, as a cost per transformer layer and micro-batch, by
tensor-parallel size and micro-batch; the same shortfall on one node (no pipeline, no data
parallelism, no network); and what a cost per layer and micro-batch would order if it were
charged (fitted on BLOOM alone, so a diagnosis: none of it enters the model). Prints figures;
changes nothing (docs/plan.md, "BLOOM's two remaining classes").

    .venv/bin/python benchmarks/bloom_residuals.py

- Residual per layer and micro-batch: every BLOOM alternative (tests/training_orderings.py)
  predicted with the GEMM curves and global constants refitted without BLOOM's source, as
  ``plan_validation.py --orderings`` predicts it; (measured - predicted step) over the
  (m + pp - 1) micro-batch slots of a 1F1B step times the layers of a stage: what a fixed
  cost per layer and micro-batch on every stage would have to be for the row to be exact.
- One node: the page's single-node runs (tp 8 on one node of 8 A100s: "Best TFLOPs",
  02-17, 20B with 8 layers of 14,400; "Max possible TFLOPs check", 02-21, 18B with 6 and 10
  layers of 14,336) predicted the same way on a DGX A100 without Jean Zay's network. The
  02-21 table's heading says GBS 512 and its rows print 2,048; both are shown.
- Charged: a cost per layer and micro-batch, flat or proportional to (tp - 1), added to every
  alternative's predicted step; pairs over 10 % ordered right and winners first, at each
  value tried (in-sample on BLOOM: a diagnosis, not a fit the model may use).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from plan_validation import GENERATIONS, _judged, curves_without, predicted_with  # noqa: E402
from tests.training_orderings import BLOOM, _bloom, groups  # noqa: E402
from tests.training_rows import DEGRADE, _model_cached  # noqa: E402
from topoc.compiler.training import gemm  # noqa: E402


def slots(row) -> float:
    """Layer-micro-batches on a 1F1B step's critical path: (m + pp - 1) micro-batch slots
    times a stage's layers."""
    sh = row.shape
    m = row.batch // (sh.dp * row.microbatch)
    return (m + sh.pp - 1) * _model_cached(row.id).layers / sh.pp


def alternatives(held) -> list[tuple]:
    """Per BLOOM group: (group id, [(label, measured s/seq, predicted s/seq, slots per
    sequence, tp, micro-batch)])."""
    out = []
    for g in groups():
        if g.source != BLOOM:
            continue
        alts = []
        for a in g.alternatives:
            if a.oom:
                continue
            p = predicted_with(a.row, held)
            alts.append((a.label, p.measured / a.row.batch, p.predicted / a.row.batch,
                         slots(a.row) / a.row.batch, a.row.shape.tp, a.row.microbatch))
        out.append((g.id, alts))
    return out


def residuals(data) -> None:
    """Medians of the residual per layer and micro-batch by (tp, micro-batch) and by tp."""
    by: dict[tuple, list[float]] = {}
    for _gid, alts in data:
        for _label, meas, pred, per_seq_slots, tp, mb in alts:
            by.setdefault((tp, mb), []).append((meas - pred) / per_seq_slots)
    print("| tp | micro-batch | alternatives | residual per layer and micro-batch (ms): "
          "median | min | max |")
    print("|---|---|---|---|---|---|")
    for (tp, mb), v in sorted(by.items()):
        print(f"| {tp} | {mb} | {len(v)} | {statistics.median(v) * 1e3:.1f} | "
              f"{min(v) * 1e3:.1f} | {max(v) * 1e3:.1f} |")
    print()
    for tp in sorted({k[0] for k in by}):
        v = [x for (t, _m), xs in by.items() if t == tp for x in xs]
        print(f"tp {tp}: {len(v)} alternatives, median {statistics.median(v) * 1e3:.1f} ms "
              "per layer and micro-batch")
    print()


def one_node(held) -> None:
    """The page's single-node tp 8 runs, predicted on one DGX A100 (no Jean Zay network)."""
    print("| run (one node, tp 8) | GBS | measured s | predicted s | predicted / measured |")
    print("|---|---|---|---|---|")
    for gid, day, hidden, layers, heads, runs in (
            ("n1-20b-0217", "02-17", 14400, 8, 32, ((8, 1, 1, 1, 2048, 769.99),)),
            ("n1-18b-0221", "02-21", 14336, 6, 64, ((8, 1, 1, 2, 512, 119.19),
                                                   (8, 1, 1, 2, 2048, 119.19))),
            ("n1-18b10-0221", "02-21", 14336, 10, 64, ((8, 1, 1, 1, 512, 205.52),
                                                      (8, 1, 1, 1, 2048, 205.52)))):
        g = _bloom(gid, day, hidden, layers, heads, 8, runs, "one node")
        for a in g.alternatives:
            DEGRADE.pop(a.row.id, None)      # one node: no inter-node port to slow down
            p = predicted_with(a.row, held)
            print(f"| {gid} {a.label} | {a.row.batch} | {p.measured:.1f} | "
                  f"{p.predicted:.1f} | {p.predicted / p.measured:.3f} |")
    print()


def charged(data) -> None:
    """Pairs over 10 % ordered right and winners first with a cost per layer and micro-batch
    added to every alternative's prediction (flat, or proportional to tp - 1)."""
    def score(cost) -> tuple[int, int, int]:
        pairs = right = won = 0
        for _gid, alts in data:
            times = [(label, meas, pred + cost(tp) * s, None)
                     for label, meas, pred, s, tp, _mb in alts]
            ps, _top, w = _judged(times, 2)
            pairs += len(ps)
            right += sum(p[5] for p in ps)
            won += w
        return pairs, right, won
    print("| charge per layer and micro-batch | pairs over 10 % | ordered right | "
          f"winners first (of {len(data)} groups) |")
    print("|---|---|---|---|")
    for label, cost in [("none", lambda tp: 0.0)] + \
            [(f"{c:g} ms x (tp - 1)", lambda tp, c=c: c * 1e-3 * (tp - 1))
             for c in (0.5, 1.0, 1.5, 2.0, 3.0)] + \
            [(f"{c:g} ms", lambda tp, c=c: c * 1e-3) for c in (2.0, 4.0, 8.0, 15.0)]:
        pairs, right, won = score(cost)
        print(f"| {label} | {pairs} | {right} ({right / pairs:.0%}) | {won} |")
    print()


def main() -> None:
    start = {gen: gemm.CURVES[gen] for gen in GENERATIONS}
    held, _ = curves_without(BLOOM, start, {})
    data = alternatives(held)
    residuals(data)
    one_node(held)
    charged(data)


if __name__ == "__main__":
    main()
