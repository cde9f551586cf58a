"""The gradient-accumulation pass (``compute.GRAD_ACCUMULATION``): what each framework's way of
adding a micro-batch's weight gradients into its buffer costs, per micro-batch, in HBM bytes
over the stage's weights."""

from __future__ import annotations

import attrs
import pytest

from topoc.compiler.ir.gpus import GPUFigures
from topoc.compiler.lang.derive import bundled_models
from topoc.compiler.training.compute import GRAD_ACCUMULATION
from topoc.compiler.training.model import MappingError, Shape, Training, derive
from topoc.compiler.training.params import stage_parameters

A100 = GPUFigures("A100-80GB", 312e12, 0.0, 2.039e12)


def _step(t: Training, sh: Shape) -> float:
    return derive(t, sh, A100).compute.time


@pytest.mark.parametrize("mode", ["autograd", "fp32_copy"])
def test_each_micro_batch_pays_a_pass_over_the_stage_weights(mode):
    m = bundled_models()["llama3_8b"]
    sh = Shape(tp=2, cp=1, ep=1, dp=4, pp=2)
    fused = Training(m, 64, microbatch=1, recompute="full")
    other = attrs.evolve(fused, grad_accumulation=mode)
    d = derive(other, sh, A100)
    micro = d.microbatches                      # 64 / 4 = 16 a pipeline
    per_weight, skipped = GRAD_ACCUMULATION[mode]
    stage = {"first": d.layout.first, "last": d.layout.last}[d.compute.stage]
    weights = sum(stage_parameters(m, sh, stage)) + m.vocab * m.hidden / sh.tp
    extra = per_weight * weights * (micro - skipped) / (A100.hbm_bandwidth * fused.hbm_efficiency)
    assert d.compute.time - _step(fused, sh) == pytest.approx(extra, rel=1e-6)
    # larger micro-batches, fewer passes: the gap to the fused step shrinks with the count
    big = attrs.evolve(other, microbatch=4)
    assert _step(big, sh) - _step(attrs.evolve(fused, microbatch=4), sh) == \
        pytest.approx(per_weight * weights * (micro // 4 - skipped) /
                      (A100.hbm_bandwidth * fused.hbm_efficiency), rel=1e-6)


def test_fused_accumulation_is_free_and_an_unknown_mode_is_refused():
    m = bundled_models()["llama3_8b"]
    sh = Shape(tp=1, cp=1, ep=1, dp=8, pp=1)
    t = Training(m, 64)
    assert GRAD_ACCUMULATION["fused"][0] == 0
    with pytest.raises(MappingError, match="grad accumulation 'sum': one of fused"):
        derive(attrs.evolve(t, grad_accumulation="sum"), sh, A100)


def test_synchronous_launches_cost_the_host_issue_time_per_kernel_layer_and_micro_batch():
    """CUDA_LAUNCH_BLOCKING=1 (BLOOM's runs): each of a layer's kernels waits for the host, so
    the step grows by kernels x HOST_LAUNCH per layer and micro-batch, twice the forward's
    with a full recompute; the micro-batch's size does not enter it."""
    from topoc.compiler.training.compute import HOST_LAUNCH, LAYER_LAUNCHES
    m = bundled_models()["llama3_8b"]
    sh = Shape(tp=8, cp=1, ep=1, dp=1, pp=1)
    for recompute, forwards in (("full", 2), ("none", 1)):
        for mb in (1, 4):
            t = Training(m, 16, microbatch=mb, recompute=recompute)
            d = derive(attrs.evolve(t, launch_blocking=True), sh, A100)
            per = m.layers * HOST_LAUNCH * (LAYER_LAUNCHES[0] * forwards + LAYER_LAUNCHES[1])
            assert d.compute.launch_time == pytest.approx(per * (16 // mb))
            assert d.compute.time - _step(t, sh) == pytest.approx(per * (16 // mb))


def test_cpu_offloading_keeps_the_offloaded_layers_activations_off_the_gpu():
    """Megatron-Core's cpu_offloading_num_layers (Megatron-Bridge's GB200 FP8 Llama 3 70B
    recipe offloads 40): the offloaded layers' activations leave the GPU, one layer's stay in
    flight; Megatron-Core refuses it with a pipeline or a recompute; the transfer shows in the
    step only where it outlasts the compute it overlaps (a PCIe host link, not a Grace C2C)."""
    from topoc.compiler.training.compute import host_link
    from topoc.compiler.training.memory import activation_per_layer
    m = bundled_models()["llama3_70b"]
    sh = Shape(tp=1, cp=1, ep=1, dp=64, pp=1)
    t = Training(m, 128, microbatch=2, fsdp=True, zero=0, fp8=True)
    gb200 = GPUFigures("B200_GB200", 2.5e15, 5e15, 8e12)
    base, off = derive(t, sh, gb200), derive(attrs.evolve(t, offload_layers=40), sh, gb200)
    per_layer = activation_per_layer(m, t, sh) * m.seq * 2
    assert base.memory.activations - off.memory.activations == pytest.approx(39 * per_layer)
    assert host_link("B200_GB200") == 450e9 and host_link("H100-SXM") == 63e9
    assert off.compute.offload_time == 0      # 450 GB/s: hidden behind the layers' compute
    # over an H100's PCIe Gen5 slot the same transfers outlast the fp8 layers they overlap
    h100 = GPUFigures("H100-SXM", 989e12, 1979e12, 3.35e12)
    assert derive(attrs.evolve(t, offload_layers=40), sh, h100).compute.offload_time > 0
    for bad, message in ((dict(offload_layers=80), "less than 80"),
                         (dict(offload_layers=4, recompute="full"), "recompute must be none")):
        with pytest.raises(MappingError, match=message):
            derive(attrs.evolve(t, **bad), sh, gb200)
    with pytest.raises(MappingError, match="pp must be 1"):
        derive(attrs.evolve(t, offload_layers=4), Shape(tp=1, cp=1, ep=1, dp=32, pp=2), gb200)


def test_synchronous_launches_leave_no_collective_behind_a_kernel():
    """CUDA_LAUNCH_BLOCKING=1: a launch returns once its kernel is done, so the backward
    tensor-parallel all-reduces the weight-gradient GEMMs would hide (and any other flow's
    window) run on the critical path; without it they keep their windows."""
    from topoc.compiler.training.traffic import traffic
    m = bundled_models()["llama3_8b"]
    sh = Shape(tp=8, cp=1, ep=1, dp=2, pp=2)
    t = Training(m, 64, microbatch=1, recompute="full", overlap=True)
    d = derive(t, sh, A100)
    lay = d.layout
    free = traffic(m, t, sh, lay, d.microbatches)
    blocked = traffic(m, attrs.evolve(t, launch_blocking=True), sh, lay, d.microbatches)
    assert {f.overlap for f in free} >= {"none", "wgrad"}
    assert {f.overlap for f in blocked} == {"none"}
    assert [(f.dim, f.bytes, f.count) for f in free] == \
        [(f.dim, f.bytes, f.count) for f in blocked]
