"""``topoc render``'s default picture of big clusters: the fabric view (issue 46's target: a
picture of 8,192 NVL72 racks and of 32,768 DGX H100 nodes in under 10 s and 200 MB).

Each size runs in a fresh process: compile (not counted in the target), then the render to
SVG (the fabric view's DOT text and Graphviz drawing it), timed on the wall clock (and
this process's CPU time: Graphviz runs in a child, so on a loaded machine the wall clock
is the figure that counts, the CPU time says how much of it was topoc's) and with
the process's peak RSS growth during it, then again under tracemalloc (untimed) for its
peak Python allocation; and the picture's geometry as tests/backends/test_geometry.py
measures it on the SVG (lines drawn along each other, lines through boxes, the smallest text
on a 1,920 x 1,080 slide), so the sizes the unit tests cannot compile in seconds (8,192
racks, 32,768 nodes) are checked too: a size whose picture breaks them is reported as failed.

    .venv/bin/python benchmarks/render_fabric.py               # the sizes below
    .venv/bin/python benchmarks/render_fabric.py nvl72_fourtier.topo racks 512
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = [("nvl72_fourtier.topo", "racks", 16), ("nvl72_fourtier.topo", "racks", 512),
         ("nvl72_fourtier.topo", "racks", 8192), ("h100_fourtier.topo", "nodes", 1024),
         ("h100_fourtier.topo", "nodes", 16384), ("h100_fourtier.topo", "nodes", 32768),
         ("h100_superpod.topo", "nodes", 8192)]

ONE = r"""
import json, resource, sys, time, tracemalloc
sys.path.insert(0, ROOT)
import topoc
from tests.backends import geometry
from topoc.backends import render as r
name, param, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = time.perf_counter()
system = topoc.load(name, defines={param: n})
compile_s = time.perf_counter() - t
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t, cpu = time.perf_counter(), time.process_time()
svg, view = r.render(system, "svg")
render_s, render_cpu = time.perf_counter() - t, time.process_time() - cpu
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
# again under tracemalloc (slow: not timed) for the render's peak Python allocation; the
# fabric view kept on the system is dropped first, the scale-out link arrays stay
system.memo.pop("fabric_view", None)
tracemalloc.start()
r.render(system, "svg")
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
boxes, lines, _, _ = geometry.read(svg)
along = len(geometry.overlapping_lines(lines))
through = len(geometry.crossing(boxes, lines, geometry.bar_texts(svg)))
label = geometry.slide_fit(svg)[2]
print(json.dumps({"file": name.rsplit("/", 1)[-1], param: n, "devices": len(system.devices),
                  "view": view, "compile_s": round(compile_s, 2), "render_s": round(render_s, 2),
                  "render_cpu_s": round(render_cpu, 2),
                  "render_peak_mb": round(peak / 2**20, 1),
                  "rss_growth_mb": round((rss1 - rss0) / 1024, 1),
                  "svg_kb": round(len(svg) / 1024, 1), "along": along, "through": through,
                  "label_px": round(label, 1)}))
"""


def run(name: str, param: str, n: int) -> dict | None:
    done = subprocess.run([sys.executable, "-c", ONE.replace("ROOT", repr(str(ROOT))),
                           str(ROOT / "library" / "nvidia" / name),
                           param, str(n)], capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        print(f"{name} {param}={n}: failed: {done.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    sizes = [(argv[0], argv[1], int(argv[2]))] if len(argv) == 3 else SIZES
    rows = []
    for name, param, n in sizes:
        row = run(name, param, n)
        if row:
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(f"\n{'file':20} {'size':>12} {'devices':>10} {'view':7} {'compile s':>9} "
          f"{'render s':>8} {'peak MB':>8} {'RSS+ MB':>8} {'along':>5} {'through':>7} "
          f"{'text px':>7}")
    for row in rows:
        size = next(f"{k}={v}" for k, v in row.items() if k in ("racks", "nodes"))
        print(f"{row['file']:20} {size:>12} {row['devices']:>10,} {row['view']:7} "
              f"{row['compile_s']:9.1f} {row['render_s']:8.2f} {row['render_peak_mb']:8.1f} "
              f"{row['rss_growth_mb']:8.1f} {row['along']:5} {row['through']:7} "
              f"{row['label_px']:7.1f}")
    broken = [r for r in rows if r["along"] or r["through"] or r["label_px"] < 10]
    if broken:
        print(f"geometry broken at: {[(r['file'], r.get('racks') or r.get('nodes')) for r in broken]}")
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
