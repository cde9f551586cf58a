"""Print the cost model's predictions next to every published row of tests/data/calibration.csv
as a Markdown table (docs/cost.md carries its output).

    .venv/bin/python benchmarks/calibration.py
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import topoc  # noqa: E402
from topoc.compiler.cost import BUS_FACTOR, cost  # noqa: E402
from topoc.compiler.ranks import RankGroup  # noqa: E402
from topoc.compiler.units import Quantity  # noqa: E402


def main() -> None:
    """One line per row: system, GPUs, size, algorithm asked and taken, busbw, error."""
    data = ROOT / "tests" / "data" / "calibration.csv"
    rows = csv.DictReader(line for line in data.read_text().splitlines()
                          if not line.startswith("#"))
    systems: dict[str, topoc.System] = {}
    print("| system | GPUs | size | asked | predicted (algorithm, protocol) | time us | "
          "busbw GB/s | published | error |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        name = row["system"]
        if name not in systems:
            systems[name] = topoc.load(ROOT / "library" / "nvidia" / f"{name}.topo")
        number = row["size"].rstrip("KMGiB")
        size = int(Quantity.parse(number, row["size"][len(number):]).value)
        n = int(row["gpus"])
        c = cost(systems[name], RankGroup("ranks", tuple(range(n))), "allreduce", size,
                 row["algorithm"])
        published = float(row["busbw"])
        if size <= 32 * 1024:
            t = (float(row["time_us"]) if row["time_us"]
                 else size * BUS_FACTOR["allreduce"](n) / (published * 1e9) * 1e6)
            error = f"time x{c.time * 1e6 / t:.2f}"
        else:
            error = f"{c.busbw / 1e9 / published - 1:+.1%}"
        print(f"| {name} | {n} | {row['size']} | {row['algorithm']} | {c.algorithm}, "
              f"{c.protocol} | {c.time * 1e6:.1f} | {c.busbw / 1e9:.1f} | {published} | "
              f"{error} |")


if __name__ == "__main__":
    main()
