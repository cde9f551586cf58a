"""plan and infer through the CLI on a four-tier GB200 NVL72 cluster of growing size (issue 45):
CPU, wall and peak RSS of one whole `topoc` call per size (compile included, as a user runs
it), and the slope of a least-squares line through log(CPU seconds) against log(racks).

    .venv/bin/python benchmarks/verb_scale.py                       # 72, 256, 1,024, 8,192
    .venv/bin/python benchmarks/verb_scale.py --racks 72,256 --verbs infer

plan: Llama 3.1 405B, nothing fixed, a global batch of one sequence per GPU, in one process
(--jobs 1, so the CPU figure is the search's own) and without the row cache (--no-cache).
infer: Llama 3.1 405B, 1,000 tokens in and out, the default concurrency sweep on every GPU,
also with --no-cache: without it a second run of the same code read the compiled system from
the cache (26.5 s CPU at 8,192 racks against about 50 s compiling it), so figures depended on
what ran before.
The issue's targets: each under 60 s at 8,192 racks, slopes at most 1.1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NVL72 = ROOT / "library/nvidia/nvl72_fourtier.topo"


def argv(verb: str, racks: int) -> list[str]:
    """The CLI call timed for one verb and size."""
    common = [str(NVL72), "-D", f"racks={racks}", "--model", "llama3-405b"]
    if verb == "plan":
        return ["plan", *common, "--batch", str(72 * racks), "--jobs", "1", "--no-cache"]
    return ["infer", *common, "--isl", "1000", "--osl", "1000", "--no-cache"]


def run(args: list[str], limit: float) -> dict:
    """CPU and wall seconds, peak RSS (MB) and exit status of one CLI call in a child."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "topoc", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    timer = threading.Timer(limit, proc.kill)      # a call past the limit is stopped
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    return {"cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "wall_s": round(time.perf_counter() - t, 2), "rss_mb": usage.ru_maxrss // 1024,
            "exit": os.waitstatus_to_exitcode(status)}


def slope(rows: list[dict], key: str = "cpu_s") -> float | None:
    """Least-squares slope of log(key) against log(racks) over the rows that finished."""
    pts = [(math.log(r["racks"]), math.log(r[key])) for r in rows
           if r["exit"] == 0 and r[key] > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return round(sum((x - mx) * (y - my) for x, y in pts) / den, 3) if den else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", default="72,256,1024,8192")
    ap.add_argument("--verbs", default="infer,plan")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per call")
    args = ap.parse_args()
    sizes = [int(x) for x in args.racks.split(",") if x]
    for verb in args.verbs.split(","):
        rows = []
        for racks in sizes:
            row = {"verb": verb, "racks": racks, "gpus": 72 * racks,
                   **run(argv(verb, racks), args.timeout)}
            rows.append(row)
            print(json.dumps(row), flush=True)
        print(f"\n| {verb} racks | GPUs | CPU s | wall s | peak RSS MB | exit |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['racks']:,} | {r['gpus']:,} | {r['cpu_s']} | {r['wall_s']} | "
                  f"{r['rss_mb']:,} | {r['exit']} |")
        print(f"slope of log CPU s against log racks, {verb}: {slope(rows)}; of wall s: "
              f"{slope(rows, 'wall_s')}\n", flush=True)


if __name__ == "__main__":
    main()
