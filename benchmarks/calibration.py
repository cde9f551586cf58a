"""Print the cost model's predictions next to every published row of library/calibration.csv
as a Markdown table, then the median and worst error per system class (docs/cost.md carries
this output).

    .venv/bin/python benchmarks/calibration.py
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.calibration_rows import predict, rows, size_of, system_class  # noqa: E402
from topoc.compiler.collectives.cost import BUS_FACTOR  # noqa: E402


def main() -> None:
    """One line per row, then one per class: median and worst |error| of busbw (time below
    1 MiB, where nccl-tests' busbw is mostly latency)."""
    print("| system | -D | GPUs | size | asked | predicted (algorithm, protocol) | time us | "
          "busbw GB/s | published | error |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    errors: dict[str, list[float]] = defaultdict(list)
    for row in rows():
        c = predict(row)
        n, size = int(row["gpus"]), size_of(row["size"])
        published = float(row["busbw"])
        if size <= 2**20:
            t = (float(row["time_us"]) if row["time_us"]
                 else size * BUS_FACTOR["allreduce"](n) / (published * 1e9) * 1e6)
            err = c.time * 1e6 / t - 1
            shown = f"time {err:+.1%}"
        else:
            err = c.busbw / 1e9 / published - 1
            shown = f"{err:+.1%}"
        errors[system_class(row)].append(abs(err))
        print(f"| {row['system']} | {row['defines'] or ''} | {n} | {row['size']} | "
              f"{row['algorithm']} | {c.algorithm}, {c.protocol} | {c.time * 1e6:.1f} | "
              f"{c.busbw / 1e9:.1f} | {published} | {shown} |")
    print()
    print("| class | rows | median abs error | worst abs error |")
    print("|---|---|---|---|")
    for name in sorted(errors):
        e = errors[name]
        print(f"| {name} | {len(e)} | {statistics.median(e):.1%} | {max(e):.1%} |")


if __name__ == "__main__":
    main()
