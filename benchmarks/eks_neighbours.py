"""The p5 EKS run (2 x p5.48xlarge, NCCL 2.18.5, aws-ofi-nccl 1.7.3) against the other published
runs of NVLS-tree over EFA: does its cost a chunk belong to the stack or to the run?

Prints, deterministically (docs/cost.md, Seventh pass):

1. The run's whole sweep as first published (awsome-distributed-training 0900f63c; 577a5778
   named the stack and cut the sizes under 64 MiB from the README): NCCL 2.18.5 runs NVLS-tree
   Simple at every size (benchmarks/nccl218_selection.py), so each size is a count of NVLS-tree
   chunks a channel (enqueue.cc's rule, ``messages._nvls_tree_chunk``). Beside the model, a
   least-squares line through the measured times against that count, a description of the run
   only: nothing in the model is fitted on it.
2. The time a GPU's NIC takes per NVLS-tree message it receives, on every published run of
   NVLS-tree over EFA with a known chunk: the EKS run, the awsome-distributed-training Slurm
   run (2 nodes, its README's container NCCL 2.20.3 and aws-ofi-nccl 1.8.1 with
   NCCL_BUFFSIZE 8 MiB, inferred, not printed beside the output), crazyguitar's 2-node run
   (NCCL 2.27.7) and NVIDIA/nccl#1112's 8-node runs (NCCL 2.19.1 and 2.19.3, a plugin of the
   1.7 era), each against the model. A GPU of an 8-GPU node carries 1/8 of the buffer across
   the network a direction; beyond two nodes a chunk puts NVLS_TREE_FAN messages on it. The
   model column is each row as benchmarks/calibration.py predicts it (its stated NCCL and
   plugin; the Slurm rows state none, so the latest).

    .venv/bin/python benchmarks/eks_neighbours.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.calibration_rows import measured_time, predict, rows, size_of, system  # noqa: E402
from topoc.compiler.collectives import messages, transports  # noqa: E402
from topoc.compiler.collectives.coster import cost  # noqa: E402
from topoc.compiler.collectives.versions import release  # noqa: E402
from topoc.compiler.ir.groups import RankGroup  # noqa: E402

MiB = 1 << 20
#: awsome-distributed-training 0900f63c, 4.validation_scripts/0.nccl-tests/README.md: the EKS
#: run's out-of-place and in-place times (us) from 8 B; 4 B is left out (a single float, whose
#: first call, 202.2 us, is the sweep's first)
SWEEP = {8: (175.5, 178.2), 16: (177.6, 176.1), 32: (175.8, 173.1), 64: (175.7, 172.9),
         128: (171.8, 174.8), 256: (176.7, 172.4), 512: (174.4, 176.8), 1024: (172.0, 175.1),
         2048: (175.9, 174.6), 4096: (174.1, 174.7), 8192: (175.7, 176.5),
         16384: (224.9, 183.8), 32768: (193.8, 191.2), 65536: (194.9, 194.8),
         131072: (203.8, 204.2), 262144: (218.7, 217.7), 524288: (225.7, 225.9),
         MiB: (239.3, 245.5), 2 * MiB: (269.9, 306.0), 4 * MiB: (305.7, 302.2),
         8 * MiB: (336.1, 335.2), 16 * MiB: (530.9, 564.3), 32 * MiB: (859.2, 856.8),
         64 * MiB: (996.0, 1001.7), 128 * MiB: (1950.5, 1725.6), 256 * MiB: (3010.8, 3020.7),
         512 * MiB: (3608.0, 3599.7), 1024 * MiB: (6426.3, 6426.1),
         2048 * MiB: (9197.5, 9195.2)}
#: NVLS channels and heads NCCL opens on a p5 (16 x 8), and a node's GPUs
CHANNELS, HEADS = 16, 8
#: the least-squares line is drawn where the chunk count, not the wire, sets the time
LINE = (MiB, 1024 * MiB)


def efa(plugin: str | None, buffsize: int | None = None) -> transports.Transport:
    t = transports.with_plugin(transports.TRANSPORTS["efa"], plugin)
    return attrs.evolve(t, buffsize=buffsize) if buffsize else t


def chunk_of(size: int, nodes: int, t: transports.Transport, nccl: str) -> int:
    return messages._nvls_tree_chunk(size, CHANNELS * HEADS, nodes, t, release(nccl))


def sweep() -> list[dict]:
    s = system("aws_p5", "nodes=2")
    group = RankGroup("ranks", tuple(range(16)))
    t = efa("1.7.3")
    out = []
    for size, calls in SWEEP.items():
        chunk = chunk_of(size, 2, t, "2.18.5")
        got = cost(s, group, "allreduce", size, nccl="2.18.5", plugin="1.7.3")
        out.append(dict(size=size, chunk=chunk, chunks=max(1, size // CHANNELS // chunk),
                        took=min(calls), model=got.time * 1e6,
                        algo=f"{got.algorithm} {got.protocol}"))
    return out


def line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    b = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return my - b * mx, b


#: (row id in calibration.csv, what the run is, NCCL, plugin, NCCL_BUFFSIZE the run sets)
RUNS = (
    ("aws_p5eks_2n_ar-64M", "EKS run (2.18.5, 1.7.3)", "2.18.5", "1.7.3", None),
    ("aws_p5eks_2n_ar-256M", "EKS run (2.18.5, 1.7.3)", "2.18.5", "1.7.3", None),
    ("aws_p5eks_2n_ar-1G", "EKS run (2.18.5, 1.7.3)", "2.18.5", "1.7.3", None),
    ("aws_p5eks_2n_ar-2G", "EKS run (2.18.5, 1.7.3)", "2.18.5", "1.7.3", None),
    ("aws_p5_2n_ar-256M", "Slurm run (2.20.3, 1.8.1 inferred)", "2.20.3", "1.8.1", 8 * MiB),
    ("aws_p5_2n_ar-1G", "Slurm run (2.20.3, 1.8.1 inferred)", "2.20.3", "1.8.1", 8 * MiB),
    ("aws_p5_2n_ar-4G", "Slurm run (2.20.3, 1.8.1 inferred)", "2.20.3", "1.8.1", 8 * MiB),
    ("cg_p5_2n_allreduce-256M", "crazyguitar (2.27.7)", "2.27.7", None, None),
    ("nccl1112_p5_8n_ar_nvlstree_2193-4G", "nccl#1112 (2.19.3, 1.7 era)", "2.19.3", "1.7",
     None),
    ("nccl1112_p5_8n_ar_nvlstree_2191-4G", "nccl#1112 (2.19.1, 1.7 era)", "2.19.1", "1.7",
     None),
)


def rails(plugin: str | None, chunk: int) -> str:
    """Writes aws-ofi-nccl's scheduler splits one message into (nccl_ofi_scheduler.c: a message
    above ROUND_ROBIN_THRESHOLD is striped over the GPU's four rails, else sent on one): 8 KiB
    up to v1.7.3-aws, 256 KiB from v1.7.4-aws to the 1.12s; later releases (a minimum stripe
    size) and a release not stated are not read here."""
    if plugin == "1.7.3":
        return "4" if chunk > 8192 else "1"
    if plugin == "1.8.1":
        return "4" if chunk > 256 << 10 else "1"
    if plugin == "1.7":
        return "4 (1.7.3) or " + ("4" if chunk > 256 << 10 else "1") + " (1.7.4)"
    return "not read"


def neighbours() -> list[dict]:
    by_id = {r["source"].rsplit("[", 1)[-1].rstrip("]"): r for r in rows()}
    out = []
    for tag, name, nccl, plugin, buffsize in RUNS:
        row = by_id[tag]
        nodes = int(row["defines"].split("=")[1])
        size = size_of(row["size"])
        chunk = chunk_of(size, nodes, efa(plugin, buffsize), nccl)
        fan = 1 if nodes == 2 else messages.NVLS_TREE_FAN
        per_gpu = size / HEADS / chunk * fan
        took = measured_time(row) * 1e6
        model = predict(row).time * 1e6
        out.append(dict(name=name, nodes=nodes, size=row["size"], chunk=chunk, msgs=per_gpu,
                        took=took, model=model, rails=rails(plugin, chunk)))
    return out


def main() -> None:
    points = sweep()
    fit = [(p["chunks"], p["took"]) for p in points if LINE[0] <= p["size"] <= LINE[1]]
    a, b = line(fit)
    print("### The EKS run's whole sweep (0900f63c) against NVLS-tree chunks a channel\n")
    print(f"Least squares over {LINE[0] >> 20} MiB - {LINE[1] >> 20} MiB (a description of the "
          f"run, not a model figure): {a:.0f} us + {b:.1f} us a chunk a channel\n")
    print("| size | NCCL 2.18.5 runs | chunk | chunks a channel | measured us | model us "
          "| measured / model | line us | measured / line |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in points:
        size = p["size"]
        label = f"{size >> 20} MiB" if size >= MiB else (f"{size >> 10} KiB" if size >= 1024
                                                         else f"{size} B")
        fitted = a + b * p["chunks"]
        print(f"| {label} | {p['algo']} | {p['chunk'] >> 10} KiB | {p['chunks']} | "
              f"{p['took']:.1f} | {p['model']:.1f} | {p['took'] / p['model']:.2f} | "
              f"{fitted:.0f} | {p['took'] / fitted:.2f} |")
    print("\n### A GPU's NIC per NVLS-tree message it receives, every run with a known chunk\n")
    print("| run | nodes | size | chunk | writes a message | messages a GPU | measured us "
          "| us a message | model us | model us a message |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in neighbours():
        print(f"| {r['name']} | {r['nodes']} | {r['size']} | {r['chunk'] >> 10} KiB | "
              f"{r['rails']} | {r['msgs']:.0f} | {r['took']:.0f} | {r['took'] / r['msgs']:.1f} | "
              f"{r['model']:.0f} | {r['model'] / r['msgs']:.1f} |")


if __name__ == "__main__":
    main()
