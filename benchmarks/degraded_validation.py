"""Print every published degraded-system row (tests/degraded_rows.py): the cost model's busbw for
the healthy and the degraded configuration next to the measured ones, the ratio degraded/healthy
predicted and measured, the signed errors, and the medians. docs/failures.md (Validation)
carries this output.

    .venv/bin/python benchmarks/degraded_validation.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.degraded_rows import rows, scores  # noqa: E402


def main() -> None:
    print("| row | faults | healthy busbw GB/s (pred / meas) | degraded busbw GB/s (pred / meas) "
          "| ratio (pred / meas) | ratio error | healthy error | degraded error |")
    print("|---|---|---|---|---|---|---|---|")
    errors: dict[str, list[float]] = {"ratio": [], "healthy": [], "degraded": []}
    for row in rows():
        s = scores(row)
        for key in errors:
            errors[key].append(abs(s[f"{key}_error"]))
        faults = " ".join(f"--fail {f}" if "=" not in f else f"--degrade {f}"
                          for f in row["degraded"])
        print(f"| {row['id']} | `{faults}` | {s['healthy']:.1f} / {row['measured_healthy']:g} "
              f"| {s['degraded']:.1f} / {row['measured_degraded']:g} "
              f"| {s['ratio']:.3f} / {s['measured_ratio']:.3f} | {s['ratio_error']:+.1%} "
              f"| {s['healthy_error']:+.1%} | {s['degraded_error']:+.1%} |")
    print()
    for key, label in (("ratio", "degraded/healthy ratio"), ("healthy", "healthy busbw"),
                       ("degraded", "degraded busbw")):
        print(f"median |error| of the {label}: {statistics.median(errors[key]):.1%} "
              f"(worst {max(errors[key]):.1%}, {len(errors[key])} rows)")
    print("\nSources:")
    for row in rows():
        print(f"- {row['id']}: {row['source']} (NCCL {row['nccl'] or 'not stated'}); "
              f"{row['note']}")


if __name__ == "__main__":
    main()
