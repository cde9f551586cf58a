"""What NCCL 2.18.5's own tuning model predicts, per algorithm and protocol, for the all-reduce
of the p5 EKS run (2 x p5.48xlarge, NCCL 2.18.5, aws-ofi-nccl 1.7.3; calibration.csv
[aws_p5eks_2n_ar-*]), and so which one NCCL runs (enqueue.cc getAlgoInfo: the least time).

The formulas are NCCL's, read at tag v2.18.5-1 (src/graph/tuning.cc ncclTopoTuneModel and
ncclTopoGetAlgoTime); the graphs are reconstructed, not logged (the run prints none):

- aws-ofi-nccl 1.7.3 presents each GPU's four 100 Gb/s EFA devices as one NCCL device of
  400 Gb/s (nccl_ofi_rdma.c get_properties: speed x num_rails), 50 GB/s, and declares 75 us
  of latency on p5 (platform-aws.c platform_data_map), graph->latencyInter;
- search.cc (sm90SpeedArrayInter 48, 45, 42, 40, ...; NVLink 18 x 20.6 GB/s a GPU): rings and
  trees find 8 channels of 45 GB/s (8 x 48 passes NVLink's 370.8), no duplication (bwIntra < 50
  with more than 4 channels on sm90); the NVLS graph 8 heads of 40 GB/s (a head carries twice);
- the host CPUs are AMD (p5: EPYC), so llMaxBw is AMD's 2-node 22.5 and the net overhead 2 us;
- NCCL_NVLS_ENABLE=1 in the run's MPIJob (nccl-test-eks.yaml), so NVLS-tree exists.

The conclusion does not hang on the graphs: NVLS-tree's 2.18 latency (23 + 2 x 19 us) carries
none of the plugin's 75 us, every tree and ring latency does, so NVLS-tree is the least time at
every size for any graph whose NVLS bandwidth is within a factor of about 2 of the others'.

Then the run's six published sizes against the NVLS-tree chunk NCCL 2.18.5 cuts them into:
its time follows the chunk count a connection carries (188-287 us a chunk at every size, where
busbw ranges 126-438 GB/s), which no message cost the model has for the current plugin gives
(its 2-node 256 MiB row, 16 chunks of 128 KiB a connection too, takes 1380 us in all).

    .venv/bin/python benchmarks/nccl218_selection.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from topoc.compiler.collectives import tuning  # noqa: E402
from topoc.compiler.collectives.versions import VERSIONS  # noqa: E402

N_RANKS, N_NODES, LAT_INTER, NET_OVERHEAD = 16, 2, 75.0, 2.0   # AMD: 2 us (getNetOverhead)
PROTOS = ("LL", "LL128", "Simple")
V218 = VERSIONS["2.18"]
#: tuning.cc v2.18.5: baseLat, with Simple tree at 0 as 2.18 has it and NVLS-tree's baseLat 23
BASE = {"tree": (6.8, 14.0, 0.0), "ring": tuning.BASE_LAT["ring"],
        "nvlstree": (0.0, 0.0, V218.nvls_lat)}
HW_NVL = {algo: tuning.HW_LAT[("nvlink", algo)] for algo in ("tree", "ring")}
HW_NET = {**{algo: tuning.HW_LAT[("net", algo)] for algo in ("tree", "ring")},
          "nvlstree": (0, 0, V218.nvls_tree_net)}
LL_MAX_BW = V218.ll_max_hopper[1]      # llMaxBws[Hopper, AMD hosts][2 nodes]
TREE_CH, TREE_LL128_CH = tuning.TREE_CH[2][1], tuning.TREE_LL128_CH[2][1]   # Hopper, 2 nodes
RING_LL128_CH = tuning.LL128_RING_CH[2]
TREE_CORRECTION = tuple(row[:23] for row in tuning.TREE_CORRECTION)   # up to 4 GiB


def model(graphs: dict[str, tuple[int, float]]) -> dict[tuple[str, int], tuple[float, float]]:
    """(latency us, algbw GB/s) per (algorithm, protocol), as ncclTopoTuneModel sets them."""
    out = {}
    ppn = N_RANKS // N_NODES
    for algo, (channels, bw) in graphs.items():
        for p in range(3):
            if algo == "nvlstree" and p != 2:
                continue
            bus = channels * bw               # nNodes <= 2: bwIntra
            if algo == "ring" and p == 0:
                bus = min(LL_MAX_BW, bus / 4)
            if algo == "ring" and p == 1:
                bus = min(bus * 0.92, channels * RING_LL128_CH)
            if algo == "tree":
                bus = min(bus * 0.92, channels * TREE_CH)
                if p == 0:
                    bus = min(bus / 3.8, LL_MAX_BW)
                if p == 1:
                    bus = min(bus * 120 / 128, channels * TREE_LL128_CH)
            ratio = {"ring": N_RANKS / (2 * (N_RANKS - 1)), "tree": 0.5,
                     "nvlstree": 0.7 * N_NODES / (2 * (N_NODES - 1))}[algo]
            lat = BASE[algo][p]
            if algo == "nvlstree":
                lat += 2 * (N_NODES - 1) * HW_NET[algo][p]
            else:
                inter = HW_NET[algo][p] + LAT_INTER + (LAT_INTER if p == 2 else 0)
                intra = HW_NVL[algo][p]
                if algo == "ring":
                    intra = max(intra, NET_OVERHEAD * (3 if p == 2 else 1))
                    steps, inter_steps = 2 * (N_RANKS - 1), 2 * N_NODES
                    lat += (steps - inter_steps) * intra + inter_steps * inter
                else:
                    lat += 2 * ((ppn - 1) * intra + math.log2(N_NODES) * inter)
            out[algo, p] = (lat, bus * ratio)
    return out


def time_us(table, algo: str, p: int, size: int, channels: int) -> float:
    """ncclTopoGetAlgoTime: lat + bytes / bw, the tree correction, the ring's plateau."""
    lat, bw = table[algo, p]
    log_size = int(math.log2(max(1, size >> 6)))
    if algo == "tree" and log_size < 23:
        bw *= TREE_CORRECTION[p][log_size]
    if algo == "ring" and p == 2 and size / (channels * N_RANKS) >= 64:
        lat *= 1.4
    return lat + size / (1000 * bw)




def chunks_table() -> None:
    """The run's times against NCCL 2.18.5's NVLS-tree chunk (enqueue.cc, 16 NVLS channels x 8
    heads, starting from NCCL_BUFFSIZE / 8 = 512 KiB with aws-ofi-nccl 1.7.3): per connection
    (one channel's head), how many chunks and how long each takes."""
    from tests.calibration_rows import EKS_RUN, eks_chunks
    print("\n### The EKS run against NCCL 2.18.5's NVLS-tree chunks\n")
    print("| size | chunk | chunks a connection | faster call us | us a chunk | busbw GB/s |")
    print("|---|---|---|---|---|---|")
    for size, calls in EKS_RUN.items():
        chunk, count = eks_chunks(size)
        best = min(calls)
        print(f"| {size >> 20} MiB | {chunk >> 10} KiB | {count} | {best} | {best / count:.0f} | "
              f"{size * 2 * 15 / 16 / best / 1e3:.0f} |")


def main() -> None:
    for label, graphs in (("reconstructed graphs (ring, tree 8 x 45; NVLS 8 x 40 GB/s)",
                           {"ring": (8, 45.0), "tree": (8, 45.0), "nvlstree": (8, 40.0)}),
                          ("16 x 24 GB/s rings and trees, NVLS 8 x 24 (a poorer NVLS graph)",
                           {"ring": (16, 24.0), "tree": (16, 24.0), "nvlstree": (8, 24.0)})):
        table = model(graphs)
        print(f"\n### NCCL 2.18.5's model, 2 x p5, {label}\n")
        keys = sorted(table)
        print("| size | " + " | ".join(f"{a} {PROTOS[p]}" for a, p in keys) + " | NCCL runs |")
        print("|---" * (len(keys) + 2) + "|")
        for size in (8, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20, 2 << 30):
            times = {k: time_us(table, *k, size, graphs["ring"][0]) for k in keys}
            best = min(times, key=times.get)
            print(f"| {size} | " + " | ".join(f"{times[k]:.1f}" for k in keys) +
                  f" | {best[0]} {PROTOS[best[1]]} |")
    chunks_table()


if __name__ == "__main__":
    main()
