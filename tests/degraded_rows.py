"""Published measurements of degraded systems: the same machines measured healthy and with part of
them down or excluded, each row with its source (issue 48, Validation). Shared by
tests/test_degraded_rows.py and benchmarks/degraded_validation.py so both predict and score
each row the same way.

A row names a system (a library file or a fixture that matches the measured machine, its
figures cited in the file), the group, the collective, the size and the algorithm NCCL ran;
``healthy`` and ``degraded`` are the faults (``--fail`` selectors, ``--degrade`` pairs) that
turn the file into each measured configuration. Excluding NICs with NCCL_IB_HCA is failing the
others: NCCL never opens them. The score is the ratio degraded/healthy (what a failure costs,
the question ``--fail`` answers), its error against the measured ratio; the absolute busbw of
both sides is printed next to it.
"""

from __future__ import annotations

import functools
import statistics
from pathlib import Path

import topoc
from topoc.compiler.collectives.cost import Cost
from topoc.compiler.collectives.coster import cost
from topoc.compiler.ir.degrade import apply
from topoc.compiler.ir.groups import RankGroup, parse_rank_list
from topoc.library import size_bytes

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "degraded"

#: One line per published pair. busbw in GB/s as nccl-tests prints it (out-of-place).
ROWS: tuple[dict, ...] = (
    dict(id="a100x4nic-1nic",
         source="NVIDIA/nccl issue 1048 (same report as NVIDIA/nccl-tests issue 175): 2 x "
                "(8 A100, 4 HDR 200 Gb NICs); two-node all-reduce 86 GB/s busbw (largest "
                "size, -e 4G); with NCCL_IB_HCA=mlx5_0 24 GB/s",
         nccl="", system="hgx_a100_4nic.topo", ranks="", collective="allreduce",
         size="4GiB", algorithm="ring",
         healthy=(), degraded=("pair.node*.nic[123]",),
         measured_healthy=86.0, measured_degraded=24.0,
         note="ring: both figures sit under the ring's ceiling of 24 GB/s per HDR NIC (a "
              "two-node tree would exceed it, NVIDIA/nccl issues 812 and 1576); the NCCL "
              "release is not stated"),
    dict(id="a100x4gpu-2of4nic",
         source="NVIDIA/nccl-tests issue 277, comment of 2024-12-20: two A100 machines, four "
                "GPUs each, four 200 Gb/s NICs: busbw 78; limited to two NICs per machine "
                "(NCCL_IB_HCA, as the maintainer suggested): busbw 45",
         nccl="", system="hgx_a100_4nic.topo", ranks="0,2,4,6,8,10,12,14",
         collective="allreduce", size="1GiB", algorithm="ring",
         healthy=(), degraded=("pair.node*.nic[23]",),
         measured_healthy=78.0, measured_degraded=45.0,
         note="the four GPUs are one per PCIe switch (each next to one of the four NICs NCCL "
              "used); the size and the NCCL release are not stated: the busbw plateau, 1 GiB")
)


def rows() -> tuple[dict, ...]:
    return ROWS


@functools.lru_cache(maxsize=None)
def _system(name: str) -> topoc.System:
    path = FIXTURES / name if (FIXTURES / name).exists() else ROOT / "library" / "nvidia" / name
    return topoc.load(path)


@functools.lru_cache(maxsize=None)
def system(name: str, fail: tuple[str, ...] = (), degrade: tuple[str, ...] = ()) -> topoc.System:
    """The row's system with ``fail``/``degrade`` applied (the healthy one when both are
    empty)."""
    base = _system(name)
    return apply(base, list(fail), list(degrade)).system if (fail or degrade) else base


def _predict(row: dict, faults: tuple[str, ...]) -> Cost:
    fail = tuple(f for f in faults if "=" not in f)
    slow = tuple(f for f in faults if "=" in f)
    s = system(row["system"], fail, slow)
    ranks = parse_rank_list(row["ranks"], len(s.gpus)) if row["ranks"] else tuple(
        range(len(s.gpus)))
    return cost(s, RankGroup("ranks", ranks), row["collective"], size_bytes(row["size"]),
                row["algorithm"], nccl=row["nccl"] or None)


def predict(row: dict) -> tuple[Cost, Cost]:
    """The cost model's (healthy, degraded) prediction for the row."""
    return _predict(row, row["healthy"]), _predict(row, row["degraded"])


def scores(row: dict) -> dict[str, float]:
    """Predicted and measured busbw (GB/s) of both sides, both ratios degraded/healthy, and the
    signed errors of the ratio and of each absolute figure."""
    healthy, degraded = predict(row)
    out = {"healthy": healthy.busbw / 1e9, "degraded": degraded.busbw / 1e9}
    out["ratio"] = out["degraded"] / out["healthy"]
    out["measured_ratio"] = row["measured_degraded"] / row["measured_healthy"]
    out["ratio_error"] = out["ratio"] / out["measured_ratio"] - 1
    out["healthy_error"] = out["healthy"] / row["measured_healthy"] - 1
    out["degraded_error"] = out["degraded"] / row["measured_degraded"] - 1
    return out


def median_ratio_error() -> float:
    """The median |error| of the degraded/healthy ratio over every row."""
    return statistics.median(abs(scores(r)["ratio_error"]) for r in ROWS)
