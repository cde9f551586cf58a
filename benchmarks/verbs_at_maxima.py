"""Every verb on every bundled file at its documented maximum (issue 44's target: each under
10 s).

A file's documented maximum is its own ``require PARAM <= N`` (the header comment says the same
figure and why: "three tiers reach 1,024 racks"); a file without one runs at its default size
and is marked ``default``. Each call is ``topoc VERB`` in a fresh interpreter, so its times
include start-up, parsing and compile, as a user's would: the wall time, the CPU time
(user + system of that process alone, from ``wait4``) and its peak RSS, its exit code, and
``OVER`` when the wall time passes 10 s. Verbs: ``compile`` (the summary), ``lint``, ``cost``
(a world all-reduce, 1 GiB), ``schedule`` (a world ring all-reduce, 1 MiB), ``render`` (the
default view, the summary one at these sizes, as laid-out DOT), ``export`` slurm (tree and
block), k8s, ibsim and ibdiagnet, ``diff`` of the file against itself and ``report``. A verb
a file cannot give (an export of one node, a report without a parallel block) exits 2 at once
with its reason and is timed all the same.

    .venv/bin/python benchmarks/verbs_at_maxima.py                       # everything
    .venv/bin/python benchmarks/verbs_at_maxima.py --file nvl72_superpod.topo --verb export-slurm
    .venv/bin/python benchmarks/verbs_at_maxima.py --scale 0.1           # quick: a tenth of each maximum
    .venv/bin/python benchmarks/verbs_at_maxima.py --json                # one JSON line per call

On this shared 2-core machine the wall time follows the load; the CPU time is the code's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 10.0
REQUIRE = re.compile(r"^\s*require\s+(\w+)\s*<=\s*(\d+)", re.M)


def verbs(f: str, tmp: str, same: str) -> dict[str, list[str]]:
    """argv (after ``topoc``) of every verb on file ``f``, outputs under ``tmp``; ``same``
    is the file diff compares it with (``same_size``)."""
    out = os.path.join(tmp, "out")
    return {
        "compile": ["compile", f],
        "lint": ["lint", f],
        "cost": ["cost", f, "--group", "world", "--sizes", "1G"],
        "schedule": ["schedule", f, "--group", "world", "--collective", "allreduce",
                     "--algorithm", "ring", "--size", "1M", "-o", out + ".json"],
        "render": ["render", f, "-o", out + ".dot"],
        "export-slurm": ["export", "slurm", f, "--topology", "tree", "-o", out + ".conf"],
        "export-slurm-block": ["export", "slurm", f, "--topology", "block", "-o", out + ".b"],
        "export-k8s": ["export", "k8s", f, "-o", out + ".yaml"],
        "export-ibsim": ["export", "ibsim", f, "-o", out + ".net"],
        "export-ibdiagnet": ["export", "ibdiagnet", f, "-o", out + ".topo"],
        "diff": ["diff", f, same],
        "report": ["report", f],
    }


def same_size(path: Path, define: list[str], tmp: str) -> str:
    """A .topo naming the same system at the same size as ``path`` with ``define``: diff's
    ``-D`` sizes only its A, so B is a file that uses the library file and instantiates its
    system's group at that size."""
    if not define:
        return str(path)
    name, group = re.search(r"^system\s+(\w+)\s*:\s*(\w+)", path.read_text(), re.M).groups()
    key, value = define[1].split("=")
    other = Path(tmp) / f"same_{path.name}"
    other.write_text(f'use "{path}"\nsystem {name} : {group}({key} = {value})\n')
    return str(other)


def maximum(path: Path) -> tuple[str, int] | None:
    """(parameter, value) of the file's ``require PARAM <= N``, if it has one."""
    m = REQUIRE.search(path.read_text())
    return (m.group(1), int(m.group(2))) if m else None


def files() -> list[Path]:
    return sorted(p for p in (ROOT / "library").rglob("*.topo") if "\nsystem " in p.read_text())


def run(argv: list[str], timeout: float) -> dict:
    """Wall and CPU seconds, peak RSS and exit code of ``topoc *argv`` in a fresh process."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "topoc", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=ROOT)
    deadline = t + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "rss_mb": usage.ru_maxrss // 1024, "exit": proc.returncode,
            "timeout": wall >= timeout, "traceback": "Traceback" in err,
            "message": err.strip().splitlines()[-1][:160] if err.strip() else ""}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", action="append", help="a library file's name (default: all)")
    ap.add_argument("--verb", action="append", help="a verb (default: all)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="run at this fraction of each maximum (quick checks)")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    over, rows = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for path in files():
            if args.file and path.name not in args.file:
                continue
            found = maximum(path)
            size, define = "default", []
            if found:
                value = max(1, round(found[1] * args.scale))
                size, define = f"{found[0]}={value}", ["-D", f"{found[0]}={value}"]
            rel = str(path.relative_to(ROOT))
            for verb, argv in verbs(rel, tmp, same_size(path, define, tmp)).items():
                if args.verb and verb not in args.verb:
                    continue
                row = {"file": path.name, "size": size, "verb": verb,
                       **run([*argv, *define], args.timeout)}
                row["over"] = row["wall_s"] > TARGET_S
                over += row["over"]
                rows.append(row)
                if args.json:
                    print(json.dumps(row), flush=True)
                else:
                    print(f"{row['file']:<24} {size:<12} {verb:<20} {row['wall_s']:>7.2f} s "
                          f"{row['cpu_s']:>7.2f} s cpu {row['rss_mb']:>6} MB exit "
                          f"{row['exit']}{'  OVER' if row['over'] else ''}"
                          f"{'  TRACEBACK' if row['traceback'] else ''}"
                          f"{'  TIMEOUT' if row['timeout'] else ''}"
                          f"{'  (' + row['message'] + ')' if row['exit'] else ''}", flush=True)
    worst = max(rows, key=lambda r: r["wall_s"], default=None)
    print(f"{len(rows)} calls, {over} over {TARGET_S:g} s wall, "
          f"{sum(r['cpu_s'] > TARGET_S for r in rows)} over {TARGET_S:g} s CPU, "
          f"{sum(r['traceback'] for r in rows)} tracebacks"
          + (f"; slowest {worst['file']} {worst['verb']} {worst['wall_s']} s" if worst else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
