"""How long `topoc infer`'s search takes: one GB200 NVL72 rack (72 GPUs) and an H100 node, each
model, the concurrency sweep (the issue's target: one NVL72 rack in under 10 s); then the same
sweep with the simulated closed-loop client (`--client closed`, 1,000 requests per row: issue
43's target, one rack's search in seconds).

    .venv/bin/python benchmarks/infer_speed.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import topoc  # noqa: E402

CASES = [("gb200_nvl72.topo", m) for m in ("llama3-8b", "llama3-70b", "llama3-405b",
                                           "mixtral-8x7b", "mixtral-8x22b", "deepseek-moe-16b")]
CASES += [("dgx_h100.topo", "llama3-70b"), ("nvl72_cluster.topo", "llama3-70b")]


def main() -> None:
    for name, model in CASES:
        system = topoc.load(ROOT / "library" / "nvidia" / name)
        for disaggregate in (False, True):
            t = time.perf_counter()
            res = topoc.infer(system, model, 1000, 1000, disaggregate=disaggregate,
                              gpus=min(72, len(system.gpus)))
            dt = time.perf_counter() - t
            best = res.rows[0]
            print(f"{name:20s} {model:16s} {'disagg' if disaggregate else 'agg':6s} "
                  f"{res.gpus:3d} GPUs  {len(res.rows):6,d} rows  {dt:6.2f} s  best tp"
                  f"{best.config.tp} pp{best.config.pp} ep{best.config.ep} "
                  f"{best.throughput_per_gpu:,.0f} tok/s/GPU")
        t = time.perf_counter()
        res = topoc.infer(system, model, 1000, 1000, gpus=min(72, len(system.gpus)),
                          client="closed")
        dt = time.perf_counter() - t
        print(f"{name:20s} {model:16s} {'closed':6s} {res.gpus:3d} GPUs  {len(res.rows):6,d} "
              f"rows  {dt:6.2f} s  (simulated client, 1,000 requests per row)")


def linear() -> None:
    """The simulated client's work grows with the requests, not their tokens: one replica of
    Llama 3 8B on an H100 at 10,000 and 100,000 requests (closed loop at 64 clients, and
    Poisson at 20 requests/s), each engine."""
    from topoc.compiler.analysis import serve_sim as M
    from topoc.compiler.analysis.infer import Comm, Engine, Settings, gpu_of
    from topoc.compiler.lang.derive import find_model
    from topoc.compiler.training.serving import Layout
    node = topoc.load(ROOT / "library" / "nvidia" / "dgx_h100.topo")
    for name, sched in M.ENGINES.items():
        eng = Engine(node, find_model(node, "llama3-8b"), Layout(1, 1, 1, False), "fp8", "fp8",
                     gpu_of(node, 1), M.settings_for(Settings(), sched), Comm(node))
        for kind in ("closed", "poisson"):
            times = []
            for n in (10_000, 100_000):
                client = M.Client(kind, 64, 20.0, n)
                t = time.perf_counter()
                M.simulate(eng, 1000, 1000, client, sched)
                times.append(time.perf_counter() - t)
            print(f"simulate {name:7s} {kind:8s} 10,000 requests {times[0]:6.2f} s, 100,000 "
                  f"{times[1]:6.2f} s ({times[1] / times[0]:.1f}x)")


if __name__ == "__main__":
    main()
    linear()
