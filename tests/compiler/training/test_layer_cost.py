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


def test_moe_layers_that_drop_and_pad_to_capacity_do_not_wait_on_the_host():
    # with tokens dropped and padded to capacity every split is known on the host, and the
    # dispatcher skips the copy and the wait (token_dispatcher.py _maybe_dtoh_and_synchronize:
    # ``if not self.drop_and_pad``); PyTorch's FSDP still pays per layer, as before
    m = bundled_models()["deepseek_v3"]
    sh = Shape(tp=1, cp=1, ep=8, dp=8, pp=1)
    dropless = derive(Training(m, 64, microbatch=1, distributed_optimizer=True), sh, H100)
    dropped = derive(Training(m, 64, microbatch=1, distributed_optimizer=True, token_drop=True),
                     sh, H100)
    assert dropless.compute.layer_time > 0 and dropped.compute.layer_time == 0.0
    assert dropped.compute.time < dropless.compute.time
    fsdp = derive(Training(m, 64, microbatch=1, fsdp=True, token_drop=True), sh, H100)
    assert fsdp.compute.layer_time == pytest.approx(m.layers * fsdp.microbatches *
                                                    compute.LAYER_MICROBATCH)


def test_without_the_wait_the_forward_launches_race_the_whole_layer():
    # fine-grained experts at one sequence a micro-batch: the dropless forward waits for the
    # host after the token counts' copy (host_bound against the experts' GEMMs); without the
    # copy the host issues the expert segment while the GPU still runs the attention
    m = bundled_models()["qwen3_30b_a3b"]
    sh = Shape(tp=1, cp=1, ep=8, dp=8, pp=1)
    fast = compute.host_bound(m, sh, True, 1e-3, 1.0)
    slow = compute.host_bound(m, sh, True, 0.0, 1.0)
    assert slow > fast >= 0.0
    base = Training(m, 64, microbatch=1, distributed_optimizer=True, fp8=True)
    a = derive(base, sh, H100).compute
    b = derive(attrs.evolve(base, token_drop=True), sh, H100).compute
    assert b.gemm_time < a.gemm_time


def test_moe_passes_paired_by_the_ep_overlap_do_not_drain_the_queue():
    # Megatron-Core's combined 1F1B schedule issues the other micro-batch's expert backward
    # between the token counts' copy and the wait (model_chunk_schedule_plan.py,
    # TransformerLayerSchedulePlan.run): only the passes that run alone pay; DeepEP's wait
    # comes after its dispatch and is not hidden
    from topoc.compiler.training import ep_overlap
    m = bundled_models()["qwen3_30b_a3b"]
    sh = Shape(tp=1, cp=1, ep=8, dp=8, pp=1)
    base = Training(m, 64, microbatch=1, distributed_optimizer=True)
    plain = derive(base, sh, H100)
    over = derive(attrs.evolve(base, ep_overlap=True), sh, H100)
    share = ep_overlap.paired(attrs.evolve(base, ep_overlap=True), sh, over.microbatches)
    assert 0 < share < 1
    assert over.compute.layer_time == pytest.approx(plain.compute.layer_time * (1 - share))
    deep = derive(attrs.evolve(base, ep_overlap=True, deepep=True), sh, H100)
    assert deep.compute.layer_time == pytest.approx(plain.compute.layer_time)
    # a full recompute turns the overlap off (Megatron-Core refuses it): every pass pays
    full = attrs.evolve(base, recompute="full")
    assert derive(attrs.evolve(full, ep_overlap=True), sh, H100).compute.layer_time == \
        pytest.approx(derive(full, sh, H100).compute.layer_time)
