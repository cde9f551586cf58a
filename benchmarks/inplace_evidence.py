"""The evidence for the measurement convention (docs/cost.md): every row of
library/calibration.csv whose source prints both of nccl-tests' columns (out-of-place and
in-place), how far apart the two calls are and which one is slower.

nccl-tests times the same collective twice per size, out-of-place first, then in-place
(send buffer = receive buffer). For all-reduce, all-gather and all-to-all the two move the same
bytes over the same links; if the model's time is the collective's, the two columns should
agree, and where they do not, whatever separates them (noise, first use of a buffer or a
connection, the first size of a sweep) only adds time. The script prints per row the ratio of
the out-of-place to the in-place time (busbw rows: the inverse ratio of busbw) and a summary:
how often the two differ by more than 2, 5 and 10 %, and in which direction.

    .venv/bin/python benchmarks/inplace_evidence.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.calibration_rows import (inplace_ratio as ratio, out_of_place_time,  # noqa: E402
                                    rows)


def main() -> None:
    both = [r for r in rows() if r.get("inplace") and r["role"] != "exclude"]
    print("| role | system | -D | collective | size | out-of-place | in-place | out / in time |")
    print("|---|---|---|---|---|---|---|---|")
    for r in both:
        unit = "us" if r["time_us"] else "GB/s"
        out = r["time_us"] or r["busbw"]
        print(f"| {r['role']} | {r['system']} | {r['defines']} | {r['collective']} | "
              f"{r['size']} | {out} {unit} | {r['inplace']} {unit} | {ratio(r):.3f} |")
    ratios = [ratio(r) for r in both]
    print(f"\n{len(both)} rows print both columns (validate, fit and inconsistent rows).\n")
    print("| apart by more than | rows | out-of-place slower | in-place slower |")
    print("|---|---|---|---|")
    for limit in (0.02, 0.05, 0.10):
        apart = [x for x in ratios if abs(x - 1) > limit]
        print(f"| {limit:.0%} | {len(apart)} | {sum(x > 1 for x in apart)} | "
              f"{sum(x < 1 for x in apart)} |")
    small = [ratio(r) for r in both if out_of_place_time(r) < 1e-3]
    print(f"\nCalls under 1 ms: {len(small)} rows, {sum(abs(x - 1) > 0.05 for x in small)} "
          f"apart by more than 5 %; from 1 ms up: "
          f"{sum(abs(x - 1) > 0.05 for x in ratios) - sum(abs(x - 1) > 0.05 for x in small)}"
          f" of {len(ratios) - len(small)}.")


if __name__ == "__main__":
    main()
