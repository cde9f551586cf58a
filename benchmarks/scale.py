"""Scale benchmark: one NVL72 rack to 1,024 racks (and H100 clusters), stage by stage.

Each size runs in a fresh interpreter so its peak RSS is its own. Stages: parse (the root file
and its imports, resolved), elaborate, graph (networkx), lint, world ring orders, one rank's
routed steps of that ring, the ring orders of every data-parallel group, world all-reduce cost
(1 GiB, every algorithm weighed), racks-view render (DOT and Graphviz layout to SVG). ``networkx_floor_s`` is the bare
construction of the same MultiGraph from a plain edge list, with the cyclic garbage collector
paused as in our stages: the floor for the graph stage; ``compile_s`` (parse + elaborate +
graph) is reported against it.

    .venv/bin/python benchmarks/scale.py                 # the full sweep and a table
    .venv/bin/python benchmarks/scale.py --racks 16,128 --json
    .venv/bin/python benchmarks/scale.py --nodes 32,256  # H100 clusters
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NVL72 = ROOT / "library/nvidia/nvl72_superpod.topo"
H100 = ROOT / "library/nvidia/h100_superpod.topo"


def _timed(fn):
    t = time.perf_counter()
    value = fn()
    return value, round(time.perf_counter() - t, 3)


def run_one(path: Path, param: str, size: int) -> dict:
    """Every stage for one size, in this process."""
    import networkx as nx

    from topoc.backends import render
    from topoc.compiler.collectives.cost import cost
    from topoc.compiler.lang.elaborate import elaborate
    from topoc.compiler.base.gcpause import gc_paused
    from topoc.compiler.lang.parse import parse
    from topoc.compiler.ir.groups import RankGroup, rank_groups
    from topoc.compiler.lang.ranks import ranks
    from topoc.compiler.lang.resolve import resolve
    from topoc.compiler.collectives.route import route
    from topoc.compiler.collectives.schedule import schedule
    from topoc.compiler.lint.lint import lint_system

    out: dict = {param: size}
    text = path.read_text()
    program, out["parse_s"] = _timed(lambda: resolve(parse(text, str(path)), path))
    system, out["elaborate_s"] = _timed(lambda: ranks(program, elaborate(program, {param: size})))
    _, out["graph_s"] = _timed(lambda: system.graph)      # cached: later stages reuse it
    out["gpus"], out["links"] = len(system.gpus), len(system.links)
    out["compile_s"] = round(out["parse_s"] + out["elaborate_s"] + out["graph_s"], 3)
    _, out["lint_s"] = _timed(lambda: lint_system(system))
    world = RankGroup("world", tuple(range(len(system.gpus))))
    ring, out["world_ring_s"] = _timed(lambda: schedule(system, world, "allreduce", "ring"))
    # One rank's routed steps of that ring, as `topoc schedule --rank R` lists them.
    _, out["rank_steps_s"] = _timed(lambda: route(system, ring, position=len(world.ranks) // 2))
    strategy = system.parallels[0]

    def dp_rings():
        for i, members in enumerate(rank_groups(strategy, "dp")):
            schedule(system, RankGroup(f"dp:{i}", tuple(members)), "allreduce", "ring")
    _, out["dp_rings_s"] = _timed(dp_rings)
    # Every candidate algorithm and protocol of a 1 GiB world all-reduce, as `topoc cost` does.
    row, out["world_cost_s"] = _timed(lambda: cost(system, world, "allreduce", 2**30))
    out["world_allreduce_1gib_ms"] = round(row.time * 1e3, 2)
    opts = render.Options(view="racks")
    if shutil.which("dot"):
        _, out["render_s"] = _timed(lambda: render.render(system, "svg", opts))
    else:
        _, out["render_s"] = _timed(lambda: render.dot_source(system, opts))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    # The floor last, after the peak is read: its second graph is the benchmark's, not ours.
    edges = [(link.src, link.dst, link.id) for link in system.links]
    nodes = [d.id for d in system.devices]
    system = None               # free the IR and its graph before building the floor

    @gc_paused()                # as our stages run: the floor must not pay for the collector
    def floor():
        h = nx.MultiGraph()
        h.add_nodes_from(nodes)
        h.add_edges_from(edges)
        return h
    _, out["networkx_floor_s"] = _timed(floor)
    out["compile_over_floor"] = round(out["compile_s"] / max(out["networkx_floor_s"], 1e-9), 2)
    return out


def cli_seconds(*argv: str) -> float:
    """Wall time of one whole CLI call, interpreter start included."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "topoc", *argv], check=True, capture_output=True)
    return round(time.perf_counter() - t, 3)


def growth(rows: list[dict], key: str, lo: int, hi: int, param: str) -> float | None:
    """Exponent b of time ~ links^b between the sizes lo and hi."""
    a = next((r for r in rows if r[param] == lo), None)
    b = next((r for r in rows if r[param] == hi), None)
    if not a or not b or a[key] <= 0:
        return None
    return round(math.log(b[key] / a[key]) / math.log(b["links"] / a["links"]), 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", default="1,4,16,64,256,1024")
    ap.add_argument("--nodes", default="", help="H100 cluster sizes, e.g. 32,64,128,256")
    ap.add_argument("--json", action="store_true", help="print only the JSON lines")
    ap.add_argument("--one", nargs=3, metavar=("FILE", "PARAM", "SIZE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(Path(args.one[0]), args.one[1], int(args.one[2]))))
        return
    jobs = [(NVL72, "racks", int(n)) for n in args.racks.split(",") if n] + \
           [(H100, "nodes", int(n)) for n in args.nodes.split(",") if n]
    rows = []
    for path, param, size in jobs:
        done = subprocess.run([sys.executable, __file__, "--one", str(path), param, str(size)],
                              capture_output=True, text=True)
        if done.returncode:
            print(json.dumps({param: size, "error": done.stderr.strip().splitlines()[-1:]}))
            continue
        row = json.loads(done.stdout)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        return
    keys = ["gpus", "links", "parse_s", "elaborate_s", "graph_s", "networkx_floor_s",
            "compile_s", "compile_over_floor", "lint_s", "world_ring_s", "rank_steps_s",
            "dp_rings_s", "world_cost_s", "world_allreduce_1gib_ms", "render_s", "peak_rss_mb"]
    keys = [k for k in keys if any(k in r for r in rows)]
    print()
    print("| size | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for r in rows:
        size = f"racks={r['racks']}" if "racks" in r else f"nodes={r['nodes']}"
        print(f"| {size} | " + " | ".join(str(r.get(k, "")) for k in keys) + " |")
    racks = [r for r in rows if "racks" in r]
    for r in rows:
        r["stages_s"] = round(sum(v for k, v in r.items() if k.endswith("_s") and k not in
                                  ("compile_s", "networkx_floor_s")), 3)
    for r in racks:
        r["target_s"] = round(sum(r.get(k, 0) for k in ("compile_s", "lint_s", "world_ring_s",
                                                         "world_cost_s")), 3)
    if racks:
        big = max(racks, key=lambda r: r["racks"])
        print(f"{big['racks']} racks: compile + lint + world ring order + cost = "
              f"{big['target_s']} s, peak RSS {big['peak_rss_mb']} MB")
    for key in ("stages_s", "compile_s", "networkx_floor_s", "lint_s", "world_ring_s",
                "world_cost_s"):
        b = growth(racks, key, 64, 1024, "racks")
        if b is not None:
            print(f"growth of {key} from 64 to 1,024 racks: links^{b}")
    one_rack = str(ROOT / "library/nvidia/gb200_nvl72.topo")
    with tempfile.TemporaryDirectory() as tmp:
        png = str(Path(tmp) / "rack.png")
        print(f"one NVL72 rack, whole CLI (interpreter start included): compile "
              f"{cli_seconds('compile', one_rack)} s, render to PNG "
              f"{cli_seconds('render', one_rack, '-o', png)} s")


if __name__ == "__main__":
    main()
