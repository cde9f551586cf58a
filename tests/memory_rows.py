"""Published peak GPU memory per GPU (tests/fixtures/training/memory_runs.csv, each row with its
source) as topoc memory predictions, shared by the tests and benchmarks/memory_validation.py.

How a row is read:
- Every row's figure is PyTorch's caching allocator's peak reserved bytes
  (``torch.cuda.memory_stats()["reserved_bytes.all.peak"]``), which torchtitan logs as
  "memory: X GiB" (torchtitan/metrics.py: ``max_reserved_gib``) and the torchao tables parse
  from that log (benchmarks/float8/training/parse_torchtitan_logs.py), in GiB whatever the
  column says (``unit``). Reserved memory holds every tensor plus the allocator's cached,
  fragmented blocks; it leaves out the CUDA context and NCCL's own buffers, which the device
  also holds. The prediction it is set against is ``Memory.total``, topoc's whole footprint
  with its runtime reserve, the figure ``plan`` checks against HBM: so a ratio measured /
  predicted under 1 leaves room for what reserved memory does not show (a few hundred MB of
  context, NCCL's buffers), and one over 1 is a footprint topoc understates.
- The training: torchtitan's FSDP2 (``fsdp``: fp32 master weights, gradients and moments, all
  sharded over dp x cp; a block gathered at a time; under a pipeline the stage kept gathered),
  torchtitan's per-op selective checkpointing for "selective" (``memory.op_policy``), full
  checkpointing of every block for "full"; Float8 (torchao, tensorwise, rowwise or MXFP8) as
  ``fp8``; torchtitan's TP shards the sequence between blocks (sequence parallel). The loss
  kernel (``cross_entropy``) is the one the row's torchtitan ran: PyTorch's eager cross
  entropy until torchtitan compiled it with ``--compile`` (bbb1b616e, 2025-04-02; the
  December 2024 code at 9dec370 says "compiling loss function causes CUDA errors, turning off
  for now"), torch.compile's after. torch.compile of the blocks is not an option of the
  model: compiled and eager blocks of one configuration are predicted alike, and what compile
  saves shows in the ratios.
- dp = GPUs / (tp x cp x pp); the global batch is the local batch times dp.
- ``role``: ``FIT`` names the rows a constant was fitted on (none: the memory model has no
  fitted constant); every scored row validates.
"""

from __future__ import annotations

import csv
import functools
from pathlib import Path

import attrs

from topoc.compiler.lang.derive import bundled_models
from topoc.compiler.training.model import (MappingError, Shape, Training, check, memory,
                                           stage_layout)

CSV = Path(__file__).parent / "fixtures" / "training" / "memory_runs.csv"
GIB = 2 ** 30
#: Rows a memory constant was fitted on (at most a third of the scored rows).
FIT: frozenset[str] = frozenset()


@attrs.frozen
class MemoryRow:
    """One published peak-memory measurement."""

    id: str
    source: str
    gpu: str
    hbm: float               # the GPU's memory, bytes (what the device reports)
    gpus: int
    model: str
    seq: int
    local_batch: int
    microbatch: int
    shape: Shape
    interleave: int
    recompute: str
    fp8: bool
    compiled: bool
    cross_entropy: str       # the loss kernel its torchtitan ran (``Training.cross_entropy``)
    measured: float          # bytes
    kind: str
    scored: str              # "yes", or why the row is listed and not scored
    notes: str

    @property
    def fit(self) -> bool:
        """Whether a constant was fitted on this row."""
        return self.id in FIT

    def training(self) -> Training:
        """The row's training options (torchtitan's FSDP2, see the module's docstring)."""
        m = attrs.evolve(bundled_models()[self.model], seq=self.seq)
        return Training(m, batch=self.local_batch * self.shape.dp, microbatch=self.microbatch,
                        recompute=self.recompute if self.recompute in ("none", "selective",
                                                                       "full") else "none",
                        sequence_parallel=self.shape.tp > 1, interleave=self.interleave,
                        overlap=True, fsdp=True, fp8=self.fp8, attention_kernel="fa2",
                        cross_entropy=self.cross_entropy)


def _bytes(value: str, unit: str) -> float:
    return float(value) * {"GiB": GIB, "GB": 1e9, "MiB": 2 ** 20}[unit]


def parse(r: dict) -> MemoryRow:
    """A CSV row as a MemoryRow."""
    tp, cp, pp, gpus = int(r["tp"]), int(r["cp"]), int(r["pp"]), int(r["gpus"])
    dp = gpus // (tp * cp * pp)
    return MemoryRow(r["id"], r["source"], r["gpu"], float(r["hbm_gib"]) * GIB, gpus,
                     r["model"], int(r["seq"]), int(r["local_batch"]), int(r["microbatch"]),
                     Shape(tp, cp, 1, dp, pp), int(r["vp"]), r["recompute"],
                     r["precision"] == "fp8", r["compile"] == "yes", r["cross_entropy"],
                     _bytes(r["measured"], r["unit"]), r["kind"], r["scored"], r["notes"])


@functools.lru_cache(maxsize=1)
def rows() -> tuple[MemoryRow, ...]:
    """Every row of the data file, scored or not."""
    with CSV.open(encoding="utf-8") as f:
        return tuple(parse(r) for r in csv.DictReader(f))


@attrs.frozen
class MemoryPrediction:
    """topoc's footprint for one row against the measured peak."""

    row: MemoryRow
    predicted: float | None          # bytes (Memory.total), None when the model refuses it
    terms: dict

    @property
    def ratio(self) -> float | None:
        """Measured over predicted."""
        return self.row.measured / self.predicted if self.predicted else None

    @property
    def error(self) -> float | None:
        """Predicted over measured, minus one."""
        return self.predicted / self.row.measured - 1 if self.predicted else None


def predict(row: MemoryRow, **overrides) -> MemoryPrediction:
    """The row's memory per GPU on its most loaded stage (``memory.memory``)."""
    t = attrs.evolve(row.training(), **overrides)
    try:
        micro = check(t, row.shape)
    except MappingError:
        return MemoryPrediction(row, None, {})
    mem = memory(t.model, t, row.shape, stage_layout(t, row.shape), micro)
    return MemoryPrediction(row, mem.total, {
        "weights": mem.weights, "gradients": mem.gradients, "optimizer": mem.optimizer,
        "activations": mem.activations, "reserve": mem.reserve, "stage": mem.stage})
