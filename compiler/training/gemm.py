"""How fast a GPU runs one matrix multiplication of a given shape: a roofline with fitted shape
terms, per GPU generation and precision.

A GEMM of M x K by K x N does 2 M N K FLOPs and moves at least 2 (M K + K N + M N) bytes. Its
time is the larger of

    2 M N K / (peak x e_max x M / (M + c) x N / (N + c) x K / (K + c))   and   bytes / HBM,

where ``e_max`` is the plateau a large square GEMM reaches and ``c`` the dimension at which a
GEMM runs at half that along one axis (tile quantisation, wave tails and launch overhead shrink
small shapes). Attention kernels (flash attention) reach ``attention`` of the bf16 peak on long
sequences and lose speed on short chunks the same way (``c`` over the chunk length); a
training that runs FlashAttention-2 (``attention_kernel = "fa2"``: PyTorch SDPA, the flash-attn
2 package) reaches ``attention_fa2`` instead where the generation has a faster fused kernel
(Hopper: FlashAttention-3 and cuDNN against FlashAttention-2's published 35 %).

The figures are fitted on the published runs of tests/training_rows.py with
benchmarks/plan_calibration.py (docs/plan.md reports every row); a GPU model's declared
``gemm_efficiency`` and a training's ``gemm_efficiency`` replace ``e_max``.
"""

from __future__ import annotations

import attrs

from .constants import REGISTRY, value


@attrs.frozen
class Curve:
    """One generation's efficiency figures."""

    e_max: float          # bf16 GEMM plateau, fraction of the bf16 dense peak
    fp8: float            # fp8 GEMM plateau, fraction of the fp8 dense peak
    c: float              # half-efficiency dimension of a GEMM
    attention: float      # flash-attention plateau, fraction of the bf16 peak
    #: Seconds per MoE layer and micro-batch (forward and backward) the GPU waits on the host:
    #: the token-count synchronisation of the all-to-all dispatcher, the router's and the
    #: permutation's many small kernels. Fitted; it is why fine-grained MoE models reach a
    #: low MFU at small micro-batches.
    moe_layer: float = 0.002
    #: FlashAttention-2's plateau (PyTorch SDPA's flash backend, the flash-attn 2 package), for
    #: ``attention_kernel = "fa2"``; None: the fused kernel's ``attention``.
    attention_fa2: float | None = None


def _curve(gen: str, like: str | None = None) -> Curve:
    """A generation's curve from the registry (``constants``: values, fit rows, sources)."""
    g = like or gen
    moe = value(f"gemm.{g}.moe_layer")
    fa2 = f"gemm.{g}.attention_fa2"
    return Curve(e_max=value(f"gemm.{g}.e_max"),
                 fp8=value(f"gemm.{g}.fp8") if f"gemm.{g}.fp8" in REGISTRY else 0.0,
                 c=value(f"gemm.{g}.c"), attention=value(f"gemm.{g}.attention"), moe_layer=moe,
                 attention_fa2=value(fa2) if fa2 in REGISTRY else None)


#: By GPU generation (values in ``constants.REGISTRY``, with their rows and sources), fitted by
#: benchmarks/plan_calibration.py --fit on the rows marked fit in tests/training_rows.py
#: (docs/plan.md reports every row): every generation's figures are a fixed point of --fit,
#: run with the cost per layer and micro-batch (``compute.fixed_per_layer``) fitted across
#: sources beside them. The fit drives ``c`` to its lower bound on every generation: on these
#: runs GEMM shapes explain little of the spread. Blackwell's fit rows took their recipes'
#: settings (DeepSeek-V3's module recompute, Megatron-Bridge's bf16 gradients); its figures
#: were 0.95, 0.95 and 0.22, the first two at the fit's limits, while the bf16 DeepSeek-V3
#: row was costed with a full recompute it did not run. Ada has no published run and takes
#: Hopper's figures.
CURVES = {"ampere": _curve("ampere"), "hopper": _curve("hopper"),
          "blackwell": _curve("blackwell"), "ada": _curve("ada", like="hopper")}
#: GPU model name prefixes and their generation (the library's device names).
GENERATIONS = (("A100", "ampere"), ("A800", "ampere"), ("A10", "ampere"), ("H100", "hopper"),
               ("H200", "hopper"), ("H800", "hopper"), ("H20", "hopper"), ("GH200", "hopper"),
               ("B200", "blackwell"), ("GB200", "blackwell"), ("B300", "blackwell"),
               ("L40", "ada"), ("L4", "ada"))
DEFAULT_GENERATION = "hopper"


def generation(model_name: str) -> str:
    """The generation of a GPU model by its name (Hopper when unknown)."""
    for prefix, gen in GENERATIONS:
        if model_name.upper().startswith(prefix):
            return gen
    return DEFAULT_GENERATION


def shape_factor(c: float, *dims: float) -> float:
    """The product of d / (d + c) over ``dims``: 1 for large shapes, 1/2 per axis at d = c."""
    out = 1.0
    for d in dims:
        out *= d / (d + c) if d > 0 else 0.0
    return out


def gemm_time(m: float, n: float, k: float, peak: float, hbm: float, e_max: float,
              c: float, elem_bytes: float = 2.0) -> float:
    """Seconds of one M x N x K GEMM: the roofline of its FLOPs at the shape's efficiency and
    its operand bytes over HBM bandwidth."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0
    flops = 2.0 * m * n * k
    compute = flops / (peak * e_max * shape_factor(c, m, n, k))
    memory = elem_bytes * (m * k + k * n + m * n) / hbm
    return max(compute, memory)
