"""GPU figures of a system: the peak, HBM bandwidth and size of its slowest GPU, read from the
device models (``tflops_bf16``, ``tflops_fp8``, ``hbm``, ``hbm_bandwidth``, ``gemm_efficiency``)."""

from __future__ import annotations

import attrs

from .system import System


def hbm_of(system: System, gpus: int | None = None) -> float | None:
    """Bytes of the smallest GPU memory among the first ``gpus`` GPUs (all by default); None
    when one of them declares no ``hbm``."""
    models = system.gpu_models.values() if gpus is None or gpus >= len(system.gpus) else \
        {g.model.name: g.model for g in system.gpus[:gpus]}.values()
    sizes = [m.attr("hbm") for m in models]
    return min(sizes) if sizes and all(sizes) else None


@attrs.frozen
class GPUFigures:
    """The figures a training step's compute time needs, of one GPU model: its name (the
    generation's key), dense bf16 and fp8 peaks in FLOP/s (fp8 0 when not declared), HBM
    bytes/s, and a declared ``gemm_efficiency`` (None: the generation's curve)."""

    name: str
    bf16: float
    fp8: float
    hbm_bandwidth: float
    gemm_efficiency: float | None = None


def no_fp8(gpu: GPUFigures) -> str | None:
    """Why FP8 training cannot run on ``gpu`` (it declares no FP8 peak: its GEMMs would run
    at bf16 with FP8's memory), or None: one rule for ``plan --fp8`` and a block's
    ``fp8 = true``."""
    if gpu.fp8:
        return None
    return (f"the {gpu.name} declares no tflops_fp8 (no FP8 tensor cores): its GEMMs would run "
            "at bf16 with FP8's memory")


def gpu_figures(system: System) -> GPUFigures | None:
    """The slowest GPU's figures (the step waits for it); None when a GPU model declares no
    bf16 peak or HBM bandwidth."""
    worst = None
    for model in system.gpu_models.values():
        peak, bw = model.attr("tflops_bf16"), model.attr("hbm_bandwidth")
        if peak is None or bw is None:
            return None
        fig = GPUFigures(model.name, peak * 1e12, (model.attr("tflops_fp8") or 0) * 1e12, bw,
                         model.attr("gemm_efficiency"))
        if worst is None or fig.bf16 < worst.bf16:
            worst = fig
    return worst
