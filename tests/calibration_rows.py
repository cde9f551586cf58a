"""Reading library/calibration.csv: one published nccl-tests row a line, with the system (a
library file), its -D parameters, the group, the collective, the NCCL release and the row's
role (``fit``: constants were fitted on it; ``validate``: held out; ``exclude``: not
trustworthy, with the reason in ``note``). Shared by the calibration tests and
benchmarks/calibration.py so both predict and score each row the same way."""

from __future__ import annotations

import functools
import statistics
from pathlib import Path

import topoc
from topoc.compiler.collectives import messages, transports
from topoc.compiler.collectives.cost import BUS_FACTOR, Cost
from topoc.compiler.collectives.coster import cost
from topoc.compiler.ir.groups import RankGroup, parse_rank_list
from topoc.library import calibration, size_bytes

ROOT = Path(__file__).resolve().parent.parent
LARGE = 64 * 2**20
#: The done-when figures of issue 27: median |error| per class on validation rows, and the
#: worst validation row.
TARGETS = {"single-node large": 0.06, "multi-node large": 0.10, "single-node small": 0.20,
           "multi-node small": 0.25, "all-to-all": 0.15}
WORST = 0.40


def rows(role: str | None = None) -> list[dict]:
    """Every published row (comments skipped), or those of one ``role``."""
    found = calibration()
    return [r for r in found if role is None or (r.get("role") or "fit") == role]


#: Issue trackers whose threads are each a source of their own (a thread is one reporter's runs);
#: rows from any other repository share its people, clusters and method, so the repository is
#: the source.
THREADED = ("NVIDIA/nccl", "NVIDIA/nccl-tests", "deepseek-ai/DeepEP", "aws/aws-k8s-tester")


def source_of(row: dict) -> str:
    """The document a row came from, for leave-one-source-out (benchmarks/loso.py): an issue
    or pull request thread of a tracker in ``THREADED`` ('NVIDIA/nccl issue 1455'), else the
    repository ('coreweave/nccl-tests'), else the source's text up to its first parenthesis."""
    text = row["source"].strip()
    if text.startswith("github "):
        text = text[len("github "):]
    words = text.split()
    repo = words[0] if words else ""
    if repo in THREADED and len(words) >= 3 and words[1] in ("issue", "pull"):
        kind = "pull request" if words[1] == "pull" else "issue"
        number = words[3] if kind == "pull request" else words[2]
        return f"{repo} {kind} {number.lstrip('#')}"
    if "/" in repo and not repo.startswith("http"):
        return repo
    return text.split(" (")[0]


def size_of(text: str) -> int:
    """'64MiB' -> bytes."""
    return size_bytes(text)


@functools.lru_cache(maxsize=None)
def system(name: str, defines: str = "") -> topoc.System:
    """The library system of a row, with its ``defines`` ('nodes=4')."""
    params = dict((k, int(v)) for k, v in (d.split("=") for d in defines.split()) if k)
    return topoc.load(ROOT / "library" / "nvidia" / f"{name}.topo", params)


def ranks_of(row: dict) -> tuple[int, ...]:
    s = system(row["system"], row.get("defines") or "")
    ranks = (parse_rank_list(row["ranks"], len(s.gpus)) if row.get("ranks")
             else tuple(range(int(row["gpus"]))))
    assert len(ranks) == int(row["gpus"]), row
    return ranks


def predict(row: dict) -> Cost:
    """The cost model's prediction for the row's system, group, collective, size, algorithm,
    NCCL release and net plugin release (the latest when the source does not say)."""
    s = system(row["system"], row.get("defines") or "")
    return cost(s, RankGroup("ranks", ranks_of(row)), row.get("collective") or "allreduce",
                size_of(row["size"]), row["algorithm"], nccl=row.get("nccl") or None,
                plugin=row.get("plugin") or None)


def inplace_ratio(row: dict) -> float:
    """The out-of-place call's time over the in-place call's (> 1: out-of-place was slower),
    for a row whose source prints both (``inplace``)."""
    inplace = float(row["inplace"])
    if row["time_us"]:
        return float(row["time_us"]) / inplace
    return inplace / float(row["busbw"])


def faster_share(row: dict) -> float:
    """The faster of nccl-tests' two calls, as a share of the out-of-place time (<= 1): the
    in-place figure (``inplace``) where the source prints both and it is faster, else 1. The two
    calls do the same communication; noise and first-use effects only add time (docs/cost.md,
    Measurement convention)."""
    return min(1.0, 1 / inplace_ratio(row)) if row.get("inplace") else 1.0


def out_of_place_time(row: dict) -> float:
    """The out-of-place call's time in seconds: published, or from its busbw as nccl-tests
    defines it."""
    if row["time_us"]:
        return float(row["time_us"]) * 1e-6
    n = int(row["gpus"])
    factor = BUS_FACTOR[row.get("collective") or "allreduce"](n)
    return size_of(row["size"]) * factor / (float(row["busbw"]) * 1e9)


def measured_time(row: dict) -> float:
    """The row's time in seconds: the faster of the out-of-place and in-place calls where the
    source gives both, else the out-of-place one."""
    return out_of_place_time(row) * faster_share(row)


def error(row: dict, got: Cost) -> float:
    """Signed error: of busbw from 64 MiB up (bandwidth-bound), else of time; against the
    faster of the two calls where the source gives both (``faster_share``)."""
    if size_of(row["size"]) >= LARGE and row["busbw"]:
        return got.busbw / (float(row["busbw"]) * 1e9 / faster_share(row)) - 1
    return got.time / measured_time(row) - 1


def row_class(row: dict) -> str:
    """single-node / multi-node (the group spans islands), large / small, or all-to-all."""
    if (row.get("collective") or "allreduce") == "alltoall":
        return "all-to-all"
    s = system(row["system"], row.get("defines") or "")
    multi = len({s.locality.island[r] for r in ranks_of(row)}) > 1
    big = size_of(row["size"]) >= LARGE
    return f"{'multi' if multi else 'single'}-node {'large' if big else 'small'}"


def median(values: list[float]) -> float:
    return statistics.median(values)


#: The p5 EKS run (2 nodes, NCCL 2.18.5, aws-ofi-nccl 1.7.3): its six all-reduce sizes, us,
#: nccl-tests' out-of-place and in-place calls (the source's log; calibration.csv
#: [aws_p5eks_2n_ar-*] for four of them, the README's lines for 128 and 512 MiB).
EKS_RUN = {64 << 20: (996.0, 1001.7), 128 << 20: (1950.5, 1725.6), 256 << 20: (3010.8, 3020.7),
           512 << 20: (3608.0, 3599.7), 1 << 30: (6426.3, 6426.1), 2 << 30: (9197.5, 9195.2)}
#: NVLS channels x heads NCCL 2.18.5 opens on a p5: the run's connections
EKS_CONNECTIONS = 16 * 8


def eks_chunks(size: int) -> tuple[int, int]:
    """NCCL 2.18.5's NVLS-tree chunk on the EKS run (NCCL_BUFFSIZE / 8 with aws-ofi-nccl 1.7.3,
    enqueue.cc) at ``size`` bytes, and how many of them one connection carries."""
    efa = transports.with_plugin(transports.TRANSPORTS["efa"], "1.7.3")
    chunk = messages._nvls_tree_chunk(size, EKS_CONNECTIONS, 2, efa, (2, 18, 5))
    return chunk, size // EKS_CONNECTIONS // chunk


def loose_flush_bound_us() -> float:
    """Half the p4de 2-node 8 B all-reduce's time over the p5 one's (faster calls): all a
    flushed Simple network step can add, with nothing of the model's split assumed."""
    def faster(tag: str) -> float:
        return measured_time(next(r for r in rows() if r["source"].endswith(f"[{tag}]")))
    return (faster("aws_p4de_2n_ar-8B") - faster("aws_p5_2n_ar-8B")) / 2 * 1e6
