"""Blast radius speed: ``topoc blast`` (every failure-domain class degraded and costed once) on
NVL72 clusters of growing size, in CPU seconds, beside compile alone, with the fitted slope.

    .venv/bin/python benchmarks/blast_speed.py                  # 4, 16 and 64 racks
    .venv/bin/python benchmarks/blast_speed.py --racks 4,16,64,256

Each size runs in a fresh interpreter. Issue 48 asks for every bundled cluster at its
documented maximum in under 10 s; the figures printed say how far that is (at a load average
of 8 on 2 cores: 2.5 / 3.4 / 8.5 / 32.6 s at 4 / 16 / 64 / 256 racks, slope 0.61; 154 s and
2.2 GB at 1,024 racks).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILE = ROOT / "library/nvidia/nvl72_superpod.topo"

CHILD = r"""
import json, resource, sys, time
import topoc
from topoc.compiler.analysis.blast import blast
t0 = time.process_time()
system = topoc.load(sys.argv[1], {"racks": int(sys.argv[2])})
t1 = time.process_time()
found = blast(system)
t2 = time.process_time()
print(json.dumps({"gpus": len(system.gpus), "classes": len(found), "compile_s": t1 - t0,
                  "blast_s": t2 - t1,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", default="4,16,64")
    args = ap.parse_args()
    rows = []
    for racks in [int(r) for r in args.racks.split(",")]:
        out = subprocess.run([sys.executable, "-c", CHILD, str(FILE), str(racks)],
                             capture_output=True, text=True, check=True)
        row = {"racks": racks, **json.loads(out.stdout)}
        rows.append(row)
        print(f"{racks:>6} racks {row['gpus']:>8} GPUs  {row['classes']:>3} classes  compile "
              f"{row['compile_s']:7.2f} s  blast {row['blast_s']:7.2f} s  "
              f"{row['rss_mb']:7.0f} MB", flush=True)
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        slope = math.log(b["blast_s"] / a["blast_s"]) / math.log(b["gpus"] / a["gpus"])
        print(f"slope of blast time in GPUs: {slope:.2f}")


if __name__ == "__main__":
    main()
