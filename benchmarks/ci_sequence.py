"""The README's CI sequence through the CLI on a four-tier GB200 NVL72 cluster (issue 45):
`topoc compile`, `topoc lint` and `topoc cost --group world --sizes 1G` one after the other,
each a process of its own, with a fresh compiled-system cache (the first verb compiles and
stores the system, the others read it) and, with ``--no-cache``, without it; then
`topoc compile --format json` into a file (written as it is made). Per call: CPU, wall and
peak RSS; per sequence: the total wall time and the load average around it. topoc's sources
are byte-compiled first, as installing the package does.

    .venv/bin/python benchmarks/ci_sequence.py --racks 1024
    nice -n 10 .venv/bin/python benchmarks/ci_sequence.py --racks 8192 --json /tmp/x.json

The issue's targets at 8,192 racks on this 2-core machine: the sequence under 60 s wall and
4 GiB; the JSON written within 4 GiB (or refused cleanly).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NVL72 = ROOT / "library/nvidia/nvl72_fourtier.topo"


def run(args: list[str], env: dict, limit: float) -> dict:
    """CPU and wall seconds, peak RSS (MB) and exit status of one CLI call in a child."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "topoc", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    timer = threading.Timer(limit, proc.kill)
    timer.start()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    return {"cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "wall_s": round(time.perf_counter() - t, 2), "rss_mb": usage.ru_maxrss // 1024,
            "exit": os.waitstatus_to_exitcode(status),
            "stderr": err.decode(errors="replace")[-300:]}


def sequence(racks: int, cache: bool, limit: float) -> list[dict]:
    """compile, lint and cost in a row; the cache in a fresh folder (or --no-cache)."""
    f, d = str(NVL72), f"racks={racks}"
    calls = [("compile", ["compile", f, "-D", d]), ("lint", ["lint", f, "-D", d]),
             ("cost", ["cost", f, "-D", d, "--group", "world", "--sizes", "1G"])]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, TOPOC_CACHE=folder)
        for name, argv in calls:
            row = {"verb": name, "racks": racks, "cache": cache,
                   **run(argv + ([] if cache else ["--no-cache"]), env, limit),
                   "load": round(os.getloadavg()[0], 2)}
            rows.append(row)
            print(json.dumps(row), flush=True)
        entries = list(Path(folder, "systems").glob("*.system"))
        if entries:
            print(json.dumps({"cache_entry_mb": round(entries[0].stat().st_size / 1e6, 1)}))
    return rows


def byte_compile() -> None:
    """Byte-compile topoc's sources first, as installing the package does: with
    ``PYTHONDONTWRITEBYTECODE`` set (as on this machine) every call would otherwise compile
    every module it imports again, which no installed topoc does."""
    import compileall

    for folder in ("topoc", "compiler", "backends", "grammar"):
        compileall.compile_dir(str(ROOT / folder), quiet=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", default="1024")
    ap.add_argument("--no-cache", action="store_true", help="also run without the cache")
    ap.add_argument("--json", metavar="FILE", help="also time compile --format json -o FILE")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per call")
    args = ap.parse_args()
    byte_compile()
    for racks in [int(x) for x in args.racks.split(",") if x]:
        for cache in ([True, False] if args.no_cache else [True]):
            before = os.getloadavg()[0]
            rows = sequence(racks, cache, args.timeout)
            print(f"| {racks:,} racks, cache {'on' if cache else 'off'} | "
                  + " | ".join(f"{r['verb']} {r['cpu_s']} s CPU, {r['wall_s']} s wall, "
                               f"{r['rss_mb']:,} MB" for r in rows)
                  + f" | total {sum(r['wall_s'] for r in rows):.1f} s wall, "
                  f"{sum(r['cpu_s'] for r in rows):.1f} s CPU, peak "
                  f"{max(r['rss_mb'] for r in rows):,} MB | load {before:.1f} -> "
                  f"{os.getloadavg()[0]:.1f} |", flush=True)
        if args.json:
            with tempfile.TemporaryDirectory() as folder:
                env = dict(os.environ, TOPOC_CACHE=folder)
                row = run(["compile", str(NVL72), "-D", f"racks={racks}", "--format", "json",
                           "-o", args.json], env, args.timeout)
            size = Path(args.json).stat().st_size if Path(args.json).exists() else 0
            print(json.dumps({"json": racks, **row, "bytes": size}), flush=True)
            Path(args.json).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
