"""Scale benchmark: a four-tier GB200 NVL72 cluster from 16 to 8,192 racks (and DGX H100
clusters), stage by stage, beside the networkx floor.

Each size runs in a fresh interpreter so its peak RSS is its own. Stages: ``parse_s`` (the root
file and its imports, resolved), ``elaborate_s`` (templates, instances, parallel blocks),
``verify_s`` (port budgets), ``locality_s`` (islands, NVLink domains, sockets' tables),
``lint_s`` (the rule catalogue, on the locality just built), ``cost_s`` (a 1 GiB world
all-reduce, every algorithm weighed); ``total_s`` is their sum: compile, lint and cost, none of
which builds the networkx graph (``--graph`` times it afterwards as ``graph_s``). ``floor_s`` and ``floor_rss_mb`` are a bare
``nx.MultiGraph`` of the same number of nodes and edges (ids of the same length), built in a
process of its own with the garbage collector paused as our stages pause it: the floor any
graph-based compiler pays. ``--full`` adds the old extras (world ring order, one rank's routed
steps, every dp ring, the racks drawing).

    .venv/bin/python benchmarks/scale.py                          # 16 to 8,192 racks
    .venv/bin/python benchmarks/scale.py --racks 16,256 --nodes 1024,12500 --json
    .venv/bin/python benchmarks/scale.py --racks "" --cli 2048    # topoc lint/cost CPU vs floor
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NVL72 = ROOT / "library/nvidia/nvl72_fourtier.topo"
H100 = ROOT / "library/nvidia/h100_fourtier.topo"
STAGES = ("parse_s", "elaborate_s", "verify_s", "locality_s", "lint_s", "cost_s", "graph_s")
#: The stages of compile, lint and cost: nothing on that path builds the networkx graph, so
#: ``graph_s`` (timed after them, with ``--graph``) is not part of the total.
TOTAL = STAGES[:-1]


def _timed(fn):
    t = time.perf_counter()
    value = fn()
    return value, round(time.perf_counter() - t, 3)


def _stage(out: dict, key: str, fn):
    """Run one stage: its wall time under ``key``, its CPU time under ``key`` with ``_cpu``
    (the figure to trust on a shared machine)."""
    cpu = time.process_time()
    value, out[key] = _timed(fn)
    out[key[:-2] + "_cpu_s"] = round(time.process_time() - cpu, 3)
    return value


def _rss_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def run_one(path: Path, param: str, size: int, full: bool, graph: bool = False) -> dict:
    """Every stage for one size, in this process."""
    from topoc.compiler.collectives.coster import cost
    from topoc.compiler.ir.groups import RankGroup
    from topoc.compiler.lang.pipeline import front_end, lower, read
    from topoc.compiler.lang.verify import verify
    from topoc.compiler.lint.lint import LintConfig, rule_findings

    out: dict = {param: size}
    cpu = time.process_time()
    program = _stage(out, "parse_s", lambda: front_end(read(path), path))
    system = _stage(out, "elaborate_s", lambda: lower(program, {param: size}))
    out["gpus"], out["devices"], out["links"] = \
        len(system.gpus), len(system.devices), len(system.links)
    errors = _stage(out, "verify_s", lambda: verify(system))
    _stage(out, "locality_s", lambda: system.locality)
    found = _stage(out, "lint_s", lambda: rule_findings(system, LintConfig()))
    out["findings"] = len(errors) + len(found)
    world = RankGroup("world", tuple(range(len(system.gpus))))
    row = _stage(out, "cost_s", lambda: cost(system, world, "allreduce", 2**30))
    out["world_allreduce_1gib_ms"] = round(row.time * 1e3, 2)
    out["total_s"] = round(sum(out[k] for k in TOTAL), 3)
    out["total_cpu_s"] = round(time.process_time() - cpu, 3)
    out["peak_rss_mb"] = _rss_mb()
    _choice(system, world, out)
    if graph:
        _stage(out, "graph_s", lambda: system.graph)
        out["rss_with_graph_mb"] = _rss_mb()
    if full:
        _extras(system, world, out)
    return out


def _choice(system, world, out: dict) -> None:
    """Issue 45, after the timed stages: NCCL's choice for the world all-reduce against the
    best algorithm topoc prices at 1 GiB (every one forced by name), and whether NCCL's choice
    is monotonic from 256 MiB to 8 GiB."""
    from topoc.compiler.collectives import algos
    from topoc.compiler.collectives.coster import CostError, cost_collective

    rows = cost_collective(system, world, "allreduce", [2**k for k in range(28, 34)])
    out["world_allreduce_monotonic"] = all(a.time <= b.time for a, b in zip(rows, rows[1:]))
    chosen = rows[2]                                    # 1 GiB
    best = None
    for name in algos.costed("allreduce"):
        try:
            row = cost_collective(system, world, "allreduce", 2**30, chooser=name)
        except CostError:
            continue
        best = row if best is None or row.time < best.time else best
    out["world_allreduce_choice"] = f"{chosen.algorithm}/{chosen.protocol}"
    out["world_allreduce_best_1gib_ms"] = round(best.time * 1e3, 2)
    out["world_allreduce_best"] = best.algorithm
    out["world_allreduce_vs_best"] = round(chosen.time / best.time, 2)


def _extras(system, world, out: dict) -> None:
    """The stages the first version of this benchmark timed besides the above."""
    import shutil

    from topoc.backends import render
    from topoc.compiler.collectives.route import route
    from topoc.compiler.collectives.schedule import schedule
    from topoc.compiler.ir.groups import RankGroup, rank_groups

    ring, out["world_ring_s"] = _timed(lambda: schedule(system, world, "allreduce", "ring"))
    _, out["rank_steps_s"] = _timed(lambda: route(system, ring, position=len(world.ranks) // 2))

    def dp_rings():
        for i, members in enumerate(rank_groups(system.parallels[0], "dp")):
            schedule(system, RankGroup(f"dp:{i}", tuple(members)), "allreduce", "ring")
    _, out["dp_rings_s"] = _timed(dp_rings)
    opts = render.Options(view="racks")
    draw = (lambda: render.render(system, "svg", opts)) if shutil.which("dot") else \
        (lambda: render.dot_source(system, opts))
    _, out["render_s"] = _timed(draw)
    out["peak_rss_mb"] = _rss_mb()


def floor(devices: int, links: int) -> dict:
    """A bare MultiGraph of this many nodes and edges (ids like ours: about 30 characters)."""
    import networkx as nx

    from topoc.compiler.base.gcpause import gc_paused
    nodes = [f"cluster.rack{i // 200}.tray{i % 200 // 10}.dev{i % 10}" for i in range(devices)]
    # i // devices shifts each lap over the nodes, so no two edges join the same pair
    edges = [(nodes[i % devices], nodes[(i * 7919 + i // devices + 1) % devices], f"l{i}")
             for i in range(links)]
    before = _rss_mb()
    cpu = time.process_time()

    @gc_paused()
    def build():
        g = nx.MultiGraph()
        g.add_nodes_from(nodes)
        g.add_edges_from(edges)
        return g
    _, seconds = _timed(build)
    return {"floor_s": seconds, "floor_cpu_s": round(time.process_time() - cpu, 3),
            "floor_rss_mb": _rss_mb() - before}


def _sub(*argv: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout)


def cli_cpu(argv: list[str]) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, peak RSS MB) of one whole CLI call in a child process."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "topoc", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    return round(usage.ru_utime + usage.ru_stime, 2), round(wall, 2), usage.ru_maxrss // 1024


def growth(rows: list[dict], key: str) -> float | None:
    """Exponent b of time ~ links^b between the smallest and the largest size."""
    rows = [r for r in rows if r.get(key, 0) > 0]
    if len(rows) < 2:
        return None
    a, b = rows[0], rows[-1]
    if b["links"] == a["links"]:
        return None
    return round(math.log(b[key] / a[key]) / math.log(b["links"] / a["links"]), 3)


def table(rows: list[dict], param: str) -> None:
    keys = ["gpus", "links", *[k[:-2] + "_cpu_s" for k in STAGES], "total_s", "total_cpu_s", "floor_s", "floor_cpu_s", "peak_rss_mb", "floor_rss_mb",
            "world_allreduce_1gib_ms", "world_allreduce_choice", "world_allreduce_best",
            "world_allreduce_best_1gib_ms", "world_allreduce_vs_best",
            "world_allreduce_monotonic", "findings", "world_ring_s", "rank_steps_s",
            "dp_rings_s", "render_s"]
    keys = [k for k in keys if any(k in r for r in rows)]
    print("\n| " + param + " | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for r in rows:
        print(f"| {r[param]} | " + " | ".join(str(r.get(k, "")) for k in keys) + " |")
    for key in (*[k[:-2] + "_cpu_s" for k in STAGES], "total_cpu_s", "floor_cpu_s",
                "peak_rss_mb"):
        b = growth(rows, key)
        if b is not None:
            print(f"growth of {key} from {rows[0][param]} to {rows[-1][param]} {param}: "
                  f"links^{b}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", default="16,64,256,1024,2048,4096,8192")
    ap.add_argument("--nodes", default="", help="H100 cluster sizes, e.g. 1024,12500,16384")
    ap.add_argument("--full", action="store_true", help="also the ring, route and render stages")
    ap.add_argument("--graph", action="store_true",
                    help="also build the networkx graph after the total (graph_s)")
    ap.add_argument("--no-floor", action="store_true", help="skip the bare networkx graphs")
    ap.add_argument("--cli", default="", help="racks sizes at which to time `topoc lint` and "
                    "`topoc cost` (CPU) against the floor's CPU")
    ap.add_argument("--json", action="store_true", help="print only the JSON lines")
    ap.add_argument("--one", nargs=3, metavar=("FILE", "PARAM", "SIZE"), help=argparse.SUPPRESS)
    ap.add_argument("--count", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--floor", nargs=2, type=int, metavar=("DEVICES", "LINKS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(Path(args.one[0]), args.one[1], int(args.one[2]), args.full,
                                 args.graph)))
        return
    if args.count:
        from topoc.compiler.lang.pipeline import front_end, lower, read
        path = Path(args.count[0])
        system = lower(front_end(read(path), path), {args.count[1]: int(args.count[2])})
        print(json.dumps({"devices": len(system.devices), "links": len(system.links)}))
        return
    if args.floor:
        print(json.dumps(floor(*args.floor)))
        return
    for path, param, sizes in ((NVL72, "racks", args.racks), (H100, "nodes", args.nodes)):
        rows = []
        for size in [int(n) for n in sizes.split(",") if n]:
            row = _sub("--one", str(path), param, str(size), *(["--full"] if args.full else []),
                       *(["--graph"] if args.graph else []))
            row.setdefault(param, size)
            if "error" not in row and not args.no_floor:
                row.update(_sub("--floor", str(row["devices"]), str(row["links"])))
            rows.append(row)
            print(json.dumps(row), flush=True)
        rows = [r for r in rows if "error" not in r]
        if rows and not args.json:
            table(rows, param)
    for size in [int(n) for n in args.cli.split(",") if n]:
        f, d = str(NVL72), f"racks={size}"
        lint = cli_cpu(["lint", f, "-D", d])
        cost = cli_cpu(["cost", f, "-D", d, "--group", "world", "--sizes", "1G"])
        sizes = _sub("--count", f, "racks", str(size))
        bare = _sub("--floor", str(sizes["devices"]), str(sizes["links"]))
        print(json.dumps({"racks": size, "lint_cpu_s": lint[0], "lint_wall_s": lint[1],
                          "lint_rss_mb": lint[2], "cost_cpu_s": cost[0], "cost_wall_s": cost[1],
                          "cost_rss_mb": cost[2], "floor_cpu_s": bare.get("floor_cpu_s"),
                          "floor_s": bare.get("floor_s"), "floor_rss_mb": bare.get("floor_rss_mb")}))


if __name__ == "__main__":
    main()
