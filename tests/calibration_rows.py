"""Reading library/calibration.csv: one published nccl-tests all-reduce row a line, with the
system (a library file), its -D parameters and the group. Shared by the calibration tests and
benchmarks/calibration.py so both predict each row the same way."""

from __future__ import annotations

import functools
from pathlib import Path

import topoc
from topoc.compiler.collectives.cost import Cost, cost
from topoc.compiler.ir.groups import RankGroup, parse_rank_list
from topoc.library import calibration, size_bytes

ROOT = Path(__file__).resolve().parent.parent


def rows() -> list[dict]:
    """Every published row, comments skipped."""
    return calibration()


def size_of(text: str) -> int:
    """'64MiB' -> bytes."""
    return size_bytes(text)


@functools.lru_cache(maxsize=None)
def system(name: str, defines: str = "") -> topoc.System:
    """The library system of a row, with its ``defines`` ('nodes=4')."""
    params = dict((k, int(v)) for k, v in (d.split("=") for d in defines.split()) if k)
    return topoc.load(ROOT / "library" / "nvidia" / f"{name}.topo", params)


def predict(row: dict) -> Cost:
    """The cost model's all-reduce for the row's system, group, size and algorithm."""
    s = system(row["system"], row.get("defines") or "")
    ranks = (parse_rank_list(row["ranks"], len(s.gpus)) if row.get("ranks")
             else tuple(range(int(row["gpus"]))))
    assert len(ranks) == int(row["gpus"]), row
    return cost(s, RankGroup("ranks", ranks), "allreduce", size_of(row["size"]),
                row["algorithm"])


def system_class(row: dict) -> str:
    """The row's class for the error summary: GPU generation and single or multi node."""
    gen = {"dgx_h100": "H100", "h100_cluster": "H100", "dgx_a100": "A100",
           "a100_cluster": "A100", "hgx_b200": "B200", "gb200_nvl72": "GB200",
           "nvl72_cluster": "GB200"}[row["system"]]
    return f"{gen} {'multi-node' if row.get('defines') else 'one node'}"
