"""Cluster exports at the bundled files' documented maxima (issue 44: host assignment was
quadratic in hosts, so ``export slurm`` of nvl72_superpod.topo at 1,024 racks took over 305 s
of CPU and h100_superpod.topo at 8,192 nodes 54 s; the target is every verb under 10 s).

Per case, in a fresh interpreter (its peak RSS its own): ``compile_s`` (the file at its
maximum), ``fabric_s`` (hosts, HCAs, switches, cables: ``compiler.analysis.fabric``), then each
export's render time, and ``cli_s``, the wall time of ``topoc export slurm --topology block``
end to end (compile included) in another fresh interpreter. Prints one JSON line per case.

    .venv/bin/python benchmarks/export_speed.py
    .venv/bin/python benchmarks/export_speed.py --case h100_superpod.topo:nodes=8192
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

CASES = ["nvl72_superpod.topo:racks=1024", "h100_superpod.topo:nodes=8192"]
LIB = "library/nvidia/"


def one(case: str) -> dict:
    """Stage times of one case, in this process."""
    import topoc
    from topoc.backends import ibsim, k8s, slurm
    from topoc.compiler.analysis.fabric import fabric
    name, define = case.split(":")
    key, value = define.split("=")
    out: dict = {"file": name, key: int(value)}
    t = time.perf_counter()
    system = topoc.load(LIB + name, defines={key: int(value)})
    out["compile_s"] = round(time.perf_counter() - t, 2)
    out["hosts"] = len(system.hosts)
    t = time.perf_counter()
    fab = fabric(system)
    out["fabric_s"] = round(time.perf_counter() - t, 2)
    renders = {"slurm_block": lambda: slurm.render(fab, "block"),
               "slurm_tree": lambda: slurm.render(fab, "tree"),
               "slurm_yaml": lambda: slurm.render(fab, "tree", "yaml"),
               "k8s": lambda: k8s.render(fab), "ibsim": lambda: ibsim.render_ibsim(fab),
               "ibdiagnet": lambda: ibsim.render_ibdiagnet(fab)}
    for label, render in renders.items():
        t = time.perf_counter()
        try:
            render()
            out[f"{label}_s"] = round(time.perf_counter() - t, 2)
        except ValueError as exc:          # a format the fabric cannot give (said, not timed)
            out[f"{label}_s"] = f"refused: {exc}"
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return out


def cli(case: str) -> float:
    """Wall seconds of ``topoc export slurm --topology block`` in a fresh interpreter."""
    name, define = case.split(":")
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "topoc", "export", "slurm", LIB + name, "-D",
                        define, "--topology", "block", "-o", os.path.join(tmp, "t.conf")],
                       check=True)
        return round(time.perf_counter() - t, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", help="FILE:NAME=VALUE (default: both maxima)")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        print(json.dumps(one(args.inner)))
        return
    for case in args.case or CASES:
        run = subprocess.run([sys.executable, __file__, "--inner", case], check=True,
                             capture_output=True, text=True)
        row = json.loads(run.stdout)
        row["cli_s"] = cli(case)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
