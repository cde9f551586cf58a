"""How fast `topoc plan` searches: candidates enumerated and costed, wall time cold (no cache,
in process and with a pool of --jobs workers) and warm (every row from the cache).

    .venv/bin/python benchmarks/plan_speed.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import topoc  # noqa: E402
from topoc.compiler.lang.derive import find_model  # noqa: E402
from topoc.compiler.analysis.plan import plan  # noqa: E402
from topoc.compiler.training.model import Training  # noqa: E402

#: The issue's targets: one 72-GPU rack under 5 s, 8,192 GPUs with nothing fixed under 60 s, on
#: 2 cores (the second column of each line is the one the target is about: jobs = cores).
CASES = [("gb200_nvl72.topo", {}, "llama3-70b", 512),
         ("gb200_nvl72.topo", {}, "mixtral-8x7b", 512),
         ("h100_cluster.topo", {"nodes": 16}, "llama3-70b", 1024),
         ("h100_superpod.topo", {"nodes": 1024}, "llama3-405b", 2048)]


def main() -> None:
    """One line per case."""
    jobs = os.cpu_count() or 1
    print(f"| system | model | GPUs | candidates | costed | 1 process s | {jobs} processes s | "
          "cached s |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for file, defines, name, batch in CASES:
        system = topoc.load(ROOT / "library" / "nvidia" / file, defines)
        model = find_model(system, name)
        base = Training(model, batch, overlap=True)
        with tempfile.TemporaryDirectory() as cache:
            os.environ["TOPOC_CACHE"] = cache
            t0 = time.perf_counter()
            one = plan(system, model, base, jobs=1, use_cache=False) \
                if len(system.gpus) <= 512 else None
            t1 = time.perf_counter()
            single = f"{t1 - t0:.2f}" if one is not None else "-"
            many = plan(system, model, base, jobs=jobs, use_cache=True)
            t2 = time.perf_counter()
            one = one or many
            warm = plan(system, model, base, jobs=jobs, use_cache=True)
            t3 = time.perf_counter()
        assert warm.runner == "cache"
        label = file + "".join(f" -D {k}={v}" for k, v in defines.items())
        print(f"| {label} | {model.name} | {len(system.gpus)} | {one.considered:,} | "
              f"{len(one.rows):,} | {single} | {t2 - t1:.2f} | {t3 - t2:.2f} |", flush=True)


if __name__ == "__main__":
    main()
