"""The cost per layer and micro-batch (``compute.fixed_per_layer``, the registry's
``compute.layer_microbatch``): charged to PyTorch's FSDP, per layer of the slowest stage and per
micro-batch of the step, to Megatron-Core's MoE layers (the token dispatcher's host
synchronisation), and to nothing else (docs/plan.md, 'A cost per layer and micro-batch')."""

from __future__ import annotations

import attrs
import pytest

from topoc.compiler.ir.gpus import GPUFigures
from topoc.compiler.lang.derive import bundled_models
from topoc.compiler.training import compute
from topoc.compiler.training.constants import REGISTRY
from topoc.compiler.training.model import Shape, Training, derive

H100 = GPUFigures("H100-SXM", 989e12, 1979e12, 3.35e12)


def test_pytorch_fsdp_pays_a_fixed_time_per_layer_and_micro_batch():
    m = bundled_models()["llama3_8b"]
    sh = Shape(tp=1, cp=1, ep=1, dp=8, pp=1)
    per = REGISTRY["compute.layer_microbatch"].value
    assert per > 0 and compute.LAYER_MICROBATCH == per
    for mb in (1, 2, 4):
        t = Training(m, 64, microbatch=mb, fsdp=True)
        d = derive(t, sh, H100)
        micro = 64 // 8 // mb
        assert d.microbatches == micro
        assert d.compute.layer_time == pytest.approx(m.layers * micro * per)
    # the same step twice as many micro-batches pays twice the cost: the term, not the kernels
    one, two = (derive(Training(m, 64, microbatch=mb, fsdp=True), sh, H100).compute
                for mb in (2, 1))
    assert two.layer_time == pytest.approx(2 * one.layer_time)


def test_megatron_fsdp_and_frameworks_that_keep_their_weights_pay_nothing():
    m = bundled_models()["llama3_8b"]
    sh = Shape(tp=1, cp=1, ep=1, dp=8, pp=1)
    base = Training(m, 64, microbatch=1)
    for t in (base, attrs.evolve(base, zero=1, distributed_optimizer=True),
              attrs.evolve(base, fsdp=True, distributed_optimizer=True)):   # Megatron-FSDP
        assert derive(t, sh, H100).compute.layer_time == 0.0


def test_a_pipeline_stage_pays_for_its_own_layers_only():
    m = bundled_models()["llama3_8b"]
    sh = Shape(tp=1, cp=1, ep=1, dp=4, pp=2)
    t = Training(m, 64, microbatch=1, fsdp=True)
    d = derive(t, sh, H100)
    stage = {"first": d.layout.first, "last": d.layout.last}[d.compute.stage]
    assert stage < m.layers
    assert d.compute.layer_time == pytest.approx(
        stage * d.microbatches * compute.LAYER_MICROBATCH)


def test_megatron_core_moe_layers_pay_it_and_their_dense_layers_do_not():
    # the dropless dispatcher waits for the token counts on the host in every MoE layer
    # (megatron/core/transformer/moe/token_dispatcher.py, d2h_event.synchronize()); DeepSeek-V3's
    # first dense layers have no dispatcher
    m = bundled_models()["deepseek_v3"]
    assert 0 < m.dense_layers < m.layers
    sh = Shape(tp=1, cp=1, ep=8, dp=8, pp=1)
    for mb in (1, 2):
        t = Training(m, 64, microbatch=mb, distributed_optimizer=True)
        d = derive(t, sh, H100)
        assert d.compute.layer_time == pytest.approx(
            (m.layers - m.dense_layers) * d.microbatches * compute.LAYER_MICROBATCH)
    # under PyTorch's FSDP every layer pays once, its MoE layers not twice
    d = derive(Training(m, 64, microbatch=1, fsdp=True), sh, H100)
    assert d.compute.layer_time == pytest.approx(m.layers * d.microbatches *
                                                 compute.LAYER_MICROBATCH)
