"""FP8 training recipes: how a recipe scales its GEMM inputs, and what that costs beside the
fp8 GEMMs themselves (``Training.fp8_recipe``).

A recipe is a record, not a name compared across modules: ``compute`` reads its fields. Every
figure is counted from the frameworks' code or read from a kernel benchmark; none is fitted
on the training runs ``benchmarks/plan_validation.py`` scores.

- ``tensorwise`` (the default: Transformer Engine's per-tensor scaling, torchao's
  ``tensorwise``): one scale per tensor, cuBLAS's fp8 GEMM; the cast of every GEMM input is
  ``compute.FP8_CAST_BYTES`` per element, as before recipes existed.
- ``rowwise`` (torchao's ``Float8LinearRecipeName.ROWWISE``): one scale per row. The casts
  move more bytes: torchao's roofline (``torchao/testing/training/roofline_utils.py``,
  ``get_tensor_memory_traffic_ovhd_s``) counts, per element, 8 bytes for an input or an
  output gradient against tensorwise's 6 (the rowwise cast writes a bf16 transposed copy
  and casts it again, "we can't fuse 1 and 2 because that would require loading the entire
  tensor to shared memory") and 10 for a weight against 8: 2 bytes more per element of each.
  The forward GEMM is PyTorch's CUTLASS row-scaled kernel with fast accumulation, "most
  shapes within 90-100 % of tensor-wise efficiency" on an H100 (pytorch/pytorch issue
  147971), taken at ``fp8.rowwise_forward_gemm`` (the constants registry); the two backward
  GEMMs run without fast accumulation (``Float8LinearConfig``: only
  ``gemm_config_output`` sets ``use_fast_accum``), where "the rowwise CUTLASS-based kernel is
  so slow without fast-accum that we'd rather use the tensorwise cuBLAS-based kernel and do
  the scaling manually afterwards" (``torchao/float8/float8_ops.py``,
  ``addmm_float8_unwrapped``, pytorch/ao pull request 1325): tensorwise speed, then an
  element-wise pass that reads and writes each bf16 output element (4 bytes) of the
  data-gradient and weight-gradient GEMMs.
- ``mxfp8`` (OCP microscaling: one e8m0 scale per 32 elements, Blackwell's block-scaled
  tensor cores; torchao's ``mxfp8_cublas``, Megatron-Core's and Transformer Engine's
  ``MXFP8BlockScaling``): the roofline counts two casts of each tensor, along each
  dimension, 3 bytes per element each (6, as tensorwise's input and output-gradient casts;
  a weight's 6 against tensorwise's 8: 2 bytes fewer), the amax taken inside the cast; the
  GEMM also reads one scale byte per 32 operand elements, which only a memory-bound GEMM
  would feel. Hopper has no block-scaled tensor cores, so the recipe needs Blackwell.
"""

from __future__ import annotations

import attrs

from .constants import value


@attrs.frozen
class Recipe:
    """One fp8 scaling recipe: the fp8 GEMMs' rate relative to tensorwise scaling, forward and
    backward, and the HBM bytes it moves beyond tensorwise per element of each GEMM's input,
    output gradient and weight and per element of its backward GEMMs' outputs."""

    name: str
    forward_gemm: float = 1.0       # forward GEMM rate over tensorwise's at the same shape
    backward_gemm: float = 1.0      # data- and weight-gradient GEMMs' rate over tensorwise's
    input_bytes: float = 0.0        # per element of a GEMM input (activation), beyond tensorwise
    grad_bytes: float = 0.0         # per element of a GEMM's output gradient, beyond tensorwise
    weight_bytes: float = 0.0       # per weight element, beyond tensorwise
    rescale_bytes: float = 0.0      # per element of the backward GEMMs' outputs (a scaling pass)
    blackwell: bool = False         # needs block-scaled tensor cores
    meaning: str = ""


RECIPES: dict[str, Recipe] = {r.name: r for r in (
    Recipe("tensorwise", meaning="one scale per tensor (Transformer Engine's per-tensor "
                                 "scaling, torchao's tensorwise): the reference"),
    Recipe("rowwise", forward_gemm=value("fp8.rowwise_forward_gemm"), input_bytes=2.0,
           grad_bytes=2.0, weight_bytes=2.0, rescale_bytes=4.0,
           meaning="one scale per row (torchao's rowwise): a CUTLASS row-scaled forward GEMM, "
                   "tensorwise backward GEMMs rescaled by an element-wise pass, and casts "
                   "that write a transposed bf16 copy"),
    Recipe("mxfp8", weight_bytes=-2.0, blackwell=True,
           meaning="one e8m0 scale per 32 elements on Blackwell's block-scaled tensor cores "
                   "(torchao's mxfp8_cublas, Transformer Engine's MXFP8BlockScaling)"),
)}
#: The recipe names (the language server and ``topoc plan --fp8-recipe`` offer them).
FP8_RECIPES = tuple(RECIPES)


def extra_bytes(rec: Recipe, shapes) -> float:
    """HBM bytes ``rec`` moves beyond tensorwise scaling for one micro-batch's forward and
    backward through the fp8 GEMMs ``shapes`` ((M, N, K, count), forward shapes: M tokens, K
    the input width, N the output width)."""
    out = 0.0
    for m, n, k, count in shapes:
        out += count * (rec.input_bytes * m * k + rec.grad_bytes * m * n +
                        rec.weight_bytes * k * n +
                        rec.rescale_bytes * (m * k + k * n))
    return out


def slowdown(rec: Recipe, passes: float) -> float:
    """Extra GEMM seconds per second of one forward pass of fp8 GEMMs at tensorwise speed, over
    ``passes`` passes (the last two are the backward's data and weight gradients; a partial
    recompute makes the count fractional)."""
    return (passes - 2) * (1 / rec.forward_gemm - 1) + 2 * (1 / rec.backward_gemm - 1)
