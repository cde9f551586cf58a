"""Published end-to-end Megatron training runs: the configuration, the system it ran on and the
measured iteration time (and per-GPU memory where published). Shared by the tests of
``compiler.training`` and ``benchmarks/plan_calibration.py`` so both predict each row the same
way.

Sources:
- K22: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
  Table 3 (configurations), Table 5 (iteration time, full recompute and "present work" =
  selective recompute + sequence parallelism); A100
  80 GB Selene nodes, 8 HDR NICs; interleaving with 3 chunks for 175B and 530B; no flash
  attention (2022); mixed precision.
- FP: FlagPerf (FlagOpen/FlagPerf), training/nvidia/llama3_{8B,70B}-megatron/README.md, with
  the run script training/benchmarks/llama3_*/megatron/pretrain_llama3.sh: megatron-core 0.6,
  sequence 8192, global batch 512, micro-batch 1, sequence parallelism, the distributed
  optimizer, flash attention, no recompute flag, Megatron's defaults otherwise (tied
  embeddings, dropout 0.1). Iteration time = 512 x 8192 / (tokens/s/GPU x GPUs), as
  run_pretraining.py computes it; "mem" is GiB per GPU as nvidia-smi shows it. The A100 row ran
  on A800 (NVLink at 400 GB/s), drawn here as a DGX A100.
"""

from __future__ import annotations

import functools

import attrs

import topoc

#: Llama 3 shapes as FlagPerf's script builds them: no --untie-embeddings-and-output-weights
#: and no dropout flags, so Megatron ties the embeddings and keeps dropout 0.1.
MODELS = """
model llama3_8b_fp {
  layers = 32  hidden = 4096  ffn = 14336  heads = 32  kv_heads = 8
  seq = 8192  vocab = 128256  gated = true  tied = true  dropout = true
}
model llama3_70b_fp {
  layers = 80  hidden = 8192  ffn = 28672  heads = 64  kv_heads = 8
  seq = 8192  vocab = 128256  gated = true  tied = true  dropout = true
}
"""


@attrs.frozen
class Row:
    """One published run."""

    name: str
    source: str
    system: str            # library file (nvidia/...) and its group call
    model: str
    settings: str          # the parallel block's body
    time: float            # measured seconds per iteration
    memory_gib: float | None = None
    fit: bool = False      # used to fit the default efficiencies (the rest validate them)

    @property
    def gpu(self) -> str:
        """The GPU model the row's efficiency belongs to."""
        return "H100" if "h100" in self.system else "A100"


K22 = "flash_attention = false"
SEL = f"recompute = selective  sequence_parallel = true  {K22}"
FULL = f"recompute = full  {K22}"
FP = "sequence_parallel = true  distributed_optimizer = true"

ROWS = (
    Row("22B full recompute", "K22 T5", "dgx_a100:DGXA100", "megatron_22b",
        f"tp = 8  batch = 4  microbatch = 4  {FULL}", 1.42, fit=True),
    Row("22B selective+SP", "K22 T5", "dgx_a100:DGXA100", "megatron_22b",
        f"tp = 8  batch = 4  microbatch = 4  {SEL}", 1.10, fit=True),
    Row("175B full recompute", "K22 T5", "a100_cluster:A100Cluster(nodes = 8)", "gpt3_175b",
        f"tp = 8  pp = 8  batch = 64  interleave = 3  {FULL}", 18.13),
    Row("175B selective+SP", "K22 T5", "a100_cluster:A100Cluster(nodes = 8)", "gpt3_175b",
        f"tp = 8  pp = 8  batch = 64  interleave = 3  {SEL}", 13.75),
    Row("530B full recompute", "K22 T5", "a100_cluster:A100Cluster(nodes = 35)", "megatron_530b",
        f"tp = 8  pp = 35  batch = 280  interleave = 3  {FULL}", 49.05),
    Row("530B selective+SP", "K22 T5", "a100_cluster:A100Cluster(nodes = 35)", "megatron_530b",
        f"tp = 8  pp = 35  batch = 280  interleave = 3  {SEL}", 37.83),
    Row("1T full recompute", "K22 T5", "a100_cluster:A100Cluster(nodes = 64)", "megatron_1t",
        f"tp = 8  pp = 64  batch = 512  {FULL}", 94.42, fit=True),
    Row("1T selective+SP", "K22 T5", "a100_cluster:A100Cluster(nodes = 64)", "megatron_1t",
        f"tp = 8  pp = 64  batch = 512  {SEL}", 71.49, fit=True),
    Row("Llama3-8B A800 8 GPUs", "FP", "dgx_a100:DGXA100", "llama3_8b_fp",
        f"tp = 1  pp = 2  dp = 4  batch = 512  {FP}", 512 * 8192 / (3698.7 * 8), 76),
    Row("Llama3-8B H100 8 GPUs", "FP", "dgx_h100:DGXH100", "llama3_8b_fp",
        f"tp = 2  pp = 1  dp = 4  batch = 512  {FP}", 512 * 8192 / (8103 * 8), 71, fit=True),
    Row("Llama3-8B H100 16 GPUs", "FP", "h100_cluster:H100Cluster(nodes = 2)", "llama3_8b_fp",
        f"tp = 2  pp = 1  dp = 8  batch = 512  {FP}", 512 * 8192 / (7914 * 16), 62),
    Row("Llama3-70B H100 64 GPUs", "FP", "h100_cluster:H100Cluster(nodes = 8)", "llama3_70b_fp",
        f"tp = 8  pp = 4  dp = 2  batch = 512  {FP}", 512 * 8192 / (851 * 64), 55),
)


def source(row: Row, overrides: str = "") -> str:
    """The .topo text of a row: its system, the model presets and the parallel block."""
    file, group = row.system.split(":")
    return (f'use "nvidia/{file}.topo"\nuse "models/megatron.topo"\n{MODELS}\n'
            f"system run : {group}\n"
            f"parallel train on run {{\n  model = {row.model}\n  {row.settings}\n"
            f"  {overrides}\n}}\n")


@functools.lru_cache(maxsize=None)
def report(row: Row, overrides: str = ""):
    """The row's StepReport from the real pipeline."""
    from topoc.compiler.analysis.strategy import analyse
    system = topoc.loads(source(row, overrides))
    return analyse(system, "train")
