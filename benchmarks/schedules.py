"""Benchmark: compact schedules at scale. Prints figures; asserts nothing.

Builds rows of GB200 NVL72 racks from the bundled rack (`--racks 64,1024`), then times the
world ring order (2 channels) and the ring orders of every cross-rack group (GPU i of every
rack: the data-parallel groups of a tp x pp = 72 layout). Run:

    .venv/bin/python benchmarks/schedules.py --racks 16,256,1024
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import topoc
from topoc.compiler.ir.groups import RankGroup, select_group
from topoc.compiler.collectives.schedule import schedule


def measure(racks: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "row.topo"
        path.write_text('use "nvidia/gb200_nvl72.topo"\n'
                        "group Row(racks: int = 1) { rack[racks] : NVL72 }\nsystem row : Row\n")
        t0 = time.perf_counter()
        system = topoc.load(path, {"racks": racks})
        t1 = time.perf_counter()
        schedule(system, select_group(system), "allreduce", "ring", channels=2)
        t2 = time.perf_counter()
        for i in range(72):
            group = RankGroup(f"dp:{i}", tuple(r * 72 + i for r in range(racks)))
            schedule(system, group, "allreduce", "ring", channels=2)
        t3 = time.perf_counter()
    return {"racks": racks, "gpus": len(system.gpus), "links": len(system.links),
            "compile_s": round(t1 - t0, 2), "world_ring_s": round(t2 - t1, 2),
            "dp_rings_s": round(t3 - t2, 2),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", default="1,16,256,1024")
    args = ap.parse_args()
    for n in (int(x) for x in args.racks.split(",")):
        print(json.dumps(measure(n)), flush=True)


if __name__ == "__main__":
    main()
