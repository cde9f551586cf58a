"""Fit the default GEMM efficiency of each GPU model on the published Megatron runs marked
``fit`` in tests/training_rows.py, then print every row's predicted iteration time and memory
next to the measured ones as a Markdown table (docs/plan.md carries this output).

    .venv/bin/python benchmarks/plan_calibration.py [--no-fit]
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.training_rows import ROWS, report  # noqa: E402


def fit(gpu: str) -> float:
    """The efficiency (to 0.01) that minimises the RMS log error of ``gpu``'s fit rows."""
    rows = [r for r in ROWS if r.fit and r.gpu == gpu]
    best = None
    for e in range(35, 96):
        eff = e / 100
        err = math.sqrt(sum(math.log(report(r, f"gemm_efficiency = {eff}").total / r.time) ** 2
                            for r in rows) / len(rows))
        if best is None or err < best[1]:
            best = (eff, err)
    return best[0]


def main() -> None:
    """The fitted efficiencies, then one line per row with its error."""
    if "--no-fit" not in sys.argv:
        for gpu in sorted({r.gpu for r in ROWS}):
            print(f"fitted gemm_efficiency for {gpu}: {fit(gpu):.2f}")
        print()
    print("| run | source | GPUs | role | predicted s | measured s | error | MFU | "
          "memory GiB | measured GiB | error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    worst = {"fit": 0.0, "validation": 0.0, "memory": 0.0}
    for r in ROWS:
        rep = report(r)
        err = rep.total / r.time - 1
        role = "fit" if r.fit else "validation"
        worst[role] = max(worst[role], abs(err))
        mem = rep.memory.total / 2**30
        if r.memory_gib:
            merr = mem / r.memory_gib - 1
            worst["memory"] = max(worst["memory"], abs(merr))
            mtext = f"{mem:.1f} | {r.memory_gib} | {merr:+.1%}"
        else:
            mtext = f"{mem:.1f} | - | -"
        print(f"| {r.name} | {r.source} | {rep.gpus} | {role} | {rep.total:.2f} | {r.time:.2f} | "
              f"{err:+.1%} | {rep.mfu:.1%} | {mtext} |")
    print()
    print(f"worst time error: fit rows {worst['fit']:.1%}, validation rows "
          f"{worst['validation']:.1%}; worst memory error {worst['memory']:.1%}")


if __name__ == "__main__":
    main()
