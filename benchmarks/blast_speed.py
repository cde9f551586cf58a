"""Blast radius speed: ``topoc blast`` (every failure-domain class degraded and costed once) on
NVL72 clusters of growing size, in CPU seconds, beside compile alone, with the fitted slope.

    .venv/bin/python benchmarks/blast_speed.py                  # 4, 16 and 64 racks
    .venv/bin/python benchmarks/blast_speed.py --racks 16,64,256
    .venv/bin/python benchmarks/blast_speed.py --file nvl72_fourtier.topo --racks 8192

Each size runs in a fresh interpreter: compile (not in the target), then ``blast``, with how
many classes were costed on the healthy system's shared views (``ir.masked.isolate``: a switch
of the scale-out fabric) and how many were degraded in full. Issue 48 asks for every bundled
cluster at its documented maximum in under 10 s; docs/failures.md ("Limits") has the figures
measured and how far they are from it.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "library/nvidia"

CHILD = r"""
import json, resource, sys, time
import topoc
from topoc.compiler.analysis import blast as b
from topoc.compiler.ir import masked
t0 = time.process_time()
system = topoc.load(sys.argv[1], {sys.argv[3]: int(sys.argv[2])})
t1 = time.process_time()
shared = []
isolate = masked.isolate
def counted(*args):
    found = isolate(*args)
    shared.append(found is not None)
    return found
b.isolate = counted
found = b.blast(system)
t2 = time.process_time()
print(json.dumps({"gpus": len(system.gpus), "classes": len(found), "shared": sum(shared),
                  "compile_s": t1 - t0, "blast_s": t2 - t1,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", default="4,16,64", help="sizes (racks, or nodes for an H100 file)")
    ap.add_argument("--file", default="nvl72_superpod.topo", help="a library file")
    args = ap.parse_args()
    param = "nodes" if args.file.startswith("h100") or args.file.startswith("a100") else "racks"
    rows = []
    for racks in [int(r) for r in args.racks.split(",")]:
        out = subprocess.run([sys.executable, "-c", CHILD, str(LIBRARY / args.file), str(racks),
                              param], capture_output=True, text=True, check=True)
        row = {"racks": racks, **json.loads(out.stdout)}
        rows.append(row)
        print(f"{racks:>6} {param} {row['gpus']:>8} GPUs  {row['classes']:>3} classes "
              f"({row['shared']} shared)  compile {row['compile_s']:7.2f} s  "
              f"blast {row['blast_s']:7.2f} s  {row['rss_mb']:7.0f} MB", flush=True)
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        slope = math.log(b["blast_s"] / a["blast_s"]) / math.log(b["gpus"] / a["gpus"])
        print(f"slope of blast time in GPUs: {slope:.2f}")


if __name__ == "__main__":
    main()
