"""compiler.training: parameter counts against the published sizes, FLOPs and activation memory
against the formulas of Korthikanti et al. 2022, traffic per step against Megatron's pattern,
and the whole step against published iteration times and memory (tests/training_rows.py)."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import topoc
from tests.training_rows import FIT, LIBRARY, predict, rows, training
from topoc.compiler.ir.gpus import gpu_figures
from topoc.compiler.lang.derive import bundled_models
from topoc.compiler.training.model import (MappingError, Shape, Training, check, derive, layout,
                                           memory, model_flops, parameters, stage_layout,
                                           traffic)
from topoc.compiler.training.memory import activation_per_layer as _activation_per_layer
from topoc.compiler.training.memory import bytes_per_param as _bytes_per_param
from topoc.compiler.training.memory import activation_per_layer, op_policy

MODELS = bundled_models()


@pytest.mark.parametrize("name, total, active", [
    ("gpt3_175b", 175e9, None), ("megatron_530b", 530e9, None), ("megatron_1t", 1.0e12, None),
    ("llama3_8b", 8.03e9, None), ("llama3_70b", 70.6e9, None), ("llama3_405b", 405.9e9, None),
    # Mistral: 46.7 B total, 12.9 B active; DeepSeekMoE 16B: 16.4 B total, 2.8 B active
    ("mixtral_8x7b", 46.7e9, 12.9e9), ("deepseek_moe_16b", 16.4e9, 2.8e9),
    # DeepSeek-V3: 671 B total, 37 B active; Qwen3: 32.8 B; 235 B / 22 B; 30.5 B / 3.3 B
    ("deepseek_v3", 671e9, 37e9), ("qwen3_32b", 32.8e9, None),
    ("qwen3_235b_a22b", 235e9, 22e9), ("qwen3_30b_a3b", 30.5e9, 3.3e9),
    # GPT-OSS 120B: 116.8 B total (the model card's 5.1 B active leaves out the embeddings)
    ("gpt_oss_120b", 116.8e9, None), ("llama31_405b", 405.9e9, None)])
def test_parameter_counts_match_the_published_sizes(name, total, active):
    p = parameters(MODELS[name])
    assert p["total"] == pytest.approx(total, rel=0.02)
    if active:
        assert p["active"] == pytest.approx(active, rel=0.04)


@pytest.mark.parametrize("name", ["megatron_22b", "gpt3_175b", "megatron_530b", "megatron_1t"])
def test_model_flops_are_korthikanti_equation_7(name):
    m = MODELS[name]
    b, s, h, L, v = 4, m.seq, m.hidden, m.layers, m.vocab
    eq7 = 72 * b * L * s * h * h * (1 + s / (6 * h) + v / (12 * h * L))
    assert model_flops(m, b * s) == pytest.approx(eq7, rel=1e-12)


def _gpt(tp=1, sp=False, recompute="none", flash=False):
    m = MODELS["gpt3_175b"]
    t = Training(m, 64, recompute=recompute, sequence_parallel=sp, flash_attention=flash)
    return m, t, Shape(tp=tp)


@pytest.mark.parametrize("tp, sp, recompute, expected", [
    # Table 2, bytes per token of one layer: s b h (...) / (s b)
    (1, False, "none", lambda h, a, s, t: h * (34 + 5 * a * s / h)),
    (8, False, "none", lambda h, a, s, t: h * (10 + 24 / t + 5 * a * s / (h * t))),
    (8, True, "none", lambda h, a, s, t: h * (34 / t + 5 * a * s / (h * t))),
    (8, False, "selective", lambda h, a, s, t: h * (10 + 24 / t)),
    (8, True, "selective", lambda h, a, s, t: h * 34 / t),
    (8, False, "full", lambda h, a, s, t: 2 * h)])
def test_activation_memory_is_korthikanti_table_2(tp, sp, recompute, expected):
    m, t, sh = _gpt(tp, sp, recompute)
    got = _activation_per_layer(m, t, sh)
    assert got == pytest.approx(expected(m.hidden, m.heads, m.seq, tp))


def test_flash_attention_drops_the_score_activations_only():
    m, t, sh = _gpt(8, True, "none")
    flash = attrs.evolve(t, flash_attention=True)
    assert _activation_per_layer(m, flash, sh) == pytest.approx(34 * m.hidden / 8)


@pytest.mark.parametrize("distributed, d, expected", [(False, 8, 18), (True, 1, 18),
                                                      (True, 4, 6 + 12 / 4), (True, 64, 6 + 12 / 64)])
def test_bytes_per_parameter_follow_megatrons_table(distributed, d, expected):
    m = MODELS["llama3_8b"]
    t = Training(m, 64, distributed_optimizer=distributed)
    assert sum(_bytes_per_param(m, t, d)) == pytest.approx(expected)


def test_tensor_parallel_traffic_is_four_collectives_per_layer_and_microbatch():
    m = MODELS["gpt3_175b"]
    sh = Shape(tp=8, pp=8)
    t = Training(m, 64)
    micro = check(t, sh)
    lay = layout(m, sh)
    tp = [f for f in traffic(m, t, sh, lay, micro) if f.dim == "tp"]
    assert {f.collective for f in tp} == {"allreduce"}
    assert sum(f.count for f in tp) == 4 * (96 // 8) * 64
    assert tp[0].bytes == m.seq * m.hidden * 2
    sp = [f for f in traffic(m, attrs.evolve(t, sequence_parallel=True), sh, lay, micro)
          if f.dim == "tp"]
    assert sorted({f.collective for f in sp}) == ["allgather", "reducescatter"]
    assert sum(f.count for f in sp) == 2 * 4 * (96 // 8) * 64
    full = [f for f in traffic(m, attrs.evolve(t, recompute="full"), sh, lay, micro)
            if f.dim == "tp"]
    assert sum(f.count for f in full) == 6 * (96 // 8) * 64     # the recompute forward repeats 2


def test_pipeline_and_data_parallel_traffic():
    m = MODELS["llama3_8b"]
    sh = Shape(tp=2, dp=4, pp=2)
    t = Training(m, 64, interleave=2, distributed_optimizer=True, sequence_parallel=True)
    micro = check(t, sh)
    flows = traffic(m, t, sh, stage_layout(t, sh), micro)
    pp = [f for f in flows if f.dim == "pp"]
    assert pp[0].count == 2 * micro * 2 and pp[0].bytes == m.seq * m.hidden * 2 // 2
    dp = {f.collective: f for f in flows if f.dim == "dp"}
    grads = sum(f.bytes * f.count for f in flows if f.collective == "reducescatter"
                and f.dim == "dp")
    embedding = m.vocab * m.hidden          # untied: one on the first stage, one on the last
    per_gpu = (parameters(m)["total"] - 2 * embedding) / (2 * 2) + embedding / 2
    assert grads == pytest.approx(4 * per_gpu, rel=0.01)        # fp32 gradients of one stage
    assert dp["allgather"].bytes == dp["reducescatter"].bytes // 2   # bf16 weights back


@pytest.mark.parametrize("shape, training, message", [
    (Shape(dp=3), Training(MODELS["llama3_8b"], 64), "does not divide into micro-batches"),
    (Shape(pp=16), Training(MODELS["llama3_8b"], 64, interleave=4), "do not split into pp = 16"),
    (Shape(tp=3), Training(MODELS["llama3_8b"], 64), "heads"),
    (Shape(ep=2), Training(MODELS["llama3_8b"], 64), "no experts"),
    (Shape(ep=3, dp=3), Training(MODELS["mixtral_8x7b"], 63), "expert count it divides"),
    (Shape(pp=1), Training(MODELS["llama3_8b"], 4, interleave=2), "needs pp >= 2")])
def test_mappings_the_model_cannot_run_are_refused(shape, training, message):
    with pytest.raises(MappingError, match=message):
        check(training, shape)


@given(st.sampled_from(["llama3_8b", "gpt3_175b", "mixtral_8x7b", "deepseek_moe_16b"]),
       st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]), st.booleans())
def test_recompute_never_adds_memory_and_sharding_never_adds_weights(name, tp, pp, sp):
    m = MODELS[name]
    sh = Shape(tp=tp, pp=pp, dp=2)
    base = Training(m, 64, sequence_parallel=sp)
    lay = layout(m, sh)
    mems = [memory(m, attrs.evolve(base, recompute=r), sh, lay, 32).activations
            for r in ("none", "selective", "full")]
    assert mems[0] >= mems[1] >= mems[2] > 0
    plain = memory(m, base, sh, lay, 32)
    sharded = memory(m, attrs.evolve(base, distributed_optimizer=True), sh, lay, 32)
    assert sharded.optimizer < plain.optimizer and sharded.weights == plain.weights
    zero3 = memory(m, attrs.evolve(base, zero=3), sh, lay, 32)
    assert zero3.weights < plain.weights and zero3.gradients < plain.gradients


# ---- Megatron's data flow ----------------------------------------------------------------------

def test_context_parallel_gradients_reduce_over_dp_x_cp_and_ring_attention_hides_in_attention():
    m = MODELS["llama3_70b"]
    t = Training(m, 512, distributed_optimizer=True, overlap=True)
    sh = Shape(tp=1, cp=32, dp=1, pp=9)
    flows = traffic(m, t, sh, stage_layout(t, sh), check(t, sh))
    kinds = {f.dim for f in flows}
    assert "dpcp" in kinds and "dp" not in kinds      # 32 replicas of the dense weights
    assert {f.overlap for f in flows if f.dim == "cp"} == {"attention"}
    assert {f.overlap for f in flows if f.dim == "dpcp"} == {"grad_sync", "param_sync"}


def test_uneven_pipelines_count_embedding_and_loss_as_slots():
    m = MODELS["llama3_405b"]
    lay = layout(m, Shape(pp=16))                      # 126 + 2 = 128 slots, 8 per stage
    assert (lay.first, lay.middle, lay.last, lay.slots) == (7, 8, 7, True)
    t = Training(m, 1536, interleave=4)
    assert stage_layout(t, Shape(pp=16)).heaviest == 8
    assert layout(m, Shape(pp=4), first=30, last=30) == type(lay)(30, 33, 30)


def test_fsdp_shards_weights_and_fp8_saves_activations():
    m = MODELS["llama3_8b"]
    sh = Shape(dp=8)
    lay = layout(m, sh)
    plain = memory(m, Training(m, 64), sh, lay, 8)
    fsdp = memory(m, Training(m, 64, fsdp=True), sh, lay, 8)
    assert fsdp.weights < plain.weights / 2 and fsdp.optimizer < plain.optimizer / 4
    fp8 = memory(m, Training(m, 64, fp8=True), sh, lay, 8)
    assert fp8.activations < plain.activations
    name, _ = plain.largest
    assert name in plain.verdict(1e9)


def test_fsdp_backward_post_puts_the_backward_gathers_on_the_critical_path():
    """FSDP1's BACKWARD_POST (Composer's default) issues a layer's backward all-gather after
    the next layer's gradient computation, so it waits for it; its reduce-scatter still hides
    behind the next gradient computation (PyTorch's BackwardPrefetch docstring). The bytes do
    not change, only where they sit; the forward gathers hide either way."""
    m = MODELS["llama3_8b"]
    sh = Shape(dp=8)
    t = Training(m, 64, fsdp=True)
    micro = check(t, sh)
    lay = stage_layout(t, sh)

    def by_overlap(t):
        out: dict[tuple[str, str], int] = {}
        for f in traffic(m, t, sh, lay, micro):
            key = (f.collective, f.overlap)
            out[key] = out.get(key, 0) + f.count * f.bytes
        return out

    pre, post = by_overlap(t), by_overlap(attrs.evolve(t, fsdp_prefetch="post"))
    gathers = (m.layers - 1) * micro
    assert pre[("allgather", "backward")] == post[("allgather", "none")] - \
        pre[("allgather", "none")]
    assert pre[("allgather", "backward")] == gathers * (pre[("allgather", "forward")] // gathers)
    assert ("allgather", "backward") not in post
    assert post[("reducescatter", "backward")] == pre[("reducescatter", "backward")]
    assert post[("allgather", "forward")] == pre[("allgather", "forward")]
    assert sum(pre.values()) == sum(post.values())
    with pytest.raises(MappingError, match="fsdp prefetch 'late'"):
        derive(attrs.evolve(t, fsdp_prefetch="late"), sh, gpu_figures(
            topoc.load(LIBRARY / "nvidia" / "dgx_h100.topo")))


def test_torchtitan_selective_keeps_every_other_matmul_and_recomputes_the_rest():
    m = MODELS["llama3_8b"]
    sh = Shape(dp=8)
    kept, redo = op_policy(m, sh, False)
    # block input, attention output, then wq, wv, w1, w2 of wq wk wv wo w1 w3 w2
    h, kv, f = 4096, 1024, 14336
    assert kept == 2 * (h + h + h + kv + f + h)
    assert redo == (h * kv + h * h + h * f) / (2 * h * h + 2 * h * kv + 3 * h * f)
    megatron = activation_per_layer(m, Training(m, 64, recompute="selective"), sh)
    titan = activation_per_layer(m, Training(m, 64, recompute="selective", fsdp=True), sh)
    assert titan == kept < megatron


def test_deepspeed_zero3_bounds_the_gathered_weights_and_pure_bf16_halves_the_state():
    m = MODELS["gpt3_175b"]
    sh = Shape(dp=64)
    lay = layout(m, sh)
    z3 = memory(m, Training(m, 64, zero=3, recompute="full"), sh, lay, 1)
    fsdp = memory(m, Training(m, 64, fsdp=True, recompute="full"), sh, lay, 1)
    layer = 12 * 12288 ** 2
    assert z3.weights == pytest.approx(2 * (175e9 / 64 + 1e9), rel=0.02)
    assert fsdp.weights > 4 * layer           # two whole blocks in bf16
    bf16 = memory(m, Training(m, 64, fsdp=True, pure_bf16=True, recompute="full"), sh, lay, 1)
    assert bf16.optimizer == pytest.approx(fsdp.optimizer / 2)


def test_flashattention2_is_slower_than_the_fused_kernels_on_hopper_only():
    from topoc.compiler.training.compute import compute
    from topoc.compiler.ir.gpus import GPUFigures
    m = attrs.evolve(MODELS["llama3_8b"], seq=32768)
    sh = Shape(dp=8)
    lay = layout(m, sh)

    def att(gpu, kernel):
        t = Training(m, 8, attention_kernel=kernel)
        return compute(m, t, sh, lay, gpu, 1).attention_time
    h100 = GPUFigures("H100-SXM", 989e12, 1979e12, 3.35e12)
    a100 = GPUFigures("A100-80GB", 312e12, 0.0, 2.0e12)
    assert att(h100, "fa2") == pytest.approx(att(h100, "fused") * 0.90 / 0.35)
    assert att(a100, "fa2") == att(a100, "fused")
    with pytest.raises(MappingError, match="attention kernel"):
        from topoc.compiler.training.model import derive
        derive(Training(m, 8, attention_kernel="fa9"), sh, h100)


# ---- published runs ----------------------------------------------------------------------------

#: What docs/plan.md reports (benchmarks/plan_calibration.py): the medians the rows reach.
FIT_MEDIAN, VALIDATION_MEDIAN = 0.08, 0.10
#: Runs that happened but that topoc calls out of memory (docs/plan.md): none since
#: DeepSeek-V3's DualPipe, fp8 activation caching and recompute of norms are modelled.
KNOWN_OOM: set[str] = set()


def test_at_most_a_third_of_the_runs_fit_the_constants():
    scored = [r for r in rows() if predict(r).predicted is not None]
    assert len(scored) >= 40
    assert sum(r.fit for r in scored) <= len(scored) / 3
    assert {r.id for r in rows()} >= FIT


def test_published_iteration_times():
    from statistics import median
    from tests.training_rows import NOT_A_STEP
    errs = {"fit": [], "validation": []}
    for r in rows():
        p = predict(r)
        if p.error is not None and r.id not in NOT_A_STEP:
            errs["fit" if r.fit else "validation"].append(abs(p.error))
    assert median(errs["fit"]) <= FIT_MEDIAN
    assert median(errs["validation"]) <= VALIDATION_MEDIAN


def test_runs_that_happened_are_not_called_out_of_memory_beyond_the_known_ones():
    oom = {r.id for r in rows() if predict(r).fits is False}
    assert oom <= KNOWN_OOM


def test_deepseek_v3_memory_savings_each_shrink_what_they_name():
    """DeepSeek-V3's report (sec. 3.2.3, 3.3): recomputing the norms and MLA up-projections and
    caching activations in fp8 shrink a layer's activations; bf16 moments take 4 of the 12
    optimizer bytes; DualPipe doubles the parameters a rank holds."""
    m = MODELS["deepseek_v3"]
    sh = Shape(1, 1, 64, 128, 16)
    base = Training(m, 15360, recompute="selective", fp8=True, distributed_optimizer=True)
    norms = attrs.evolve(base, recompute_norms=True)
    both = attrs.evolve(norms, fp8_activations=True)
    a = [activation_per_layer(m, t, sh, True) for t in (base, norms, both)]
    assert a[0] > a[1] > a[2] > 0
    assert _bytes_per_param(m, attrs.evolve(base, bf16_moments=True), 1)[2] == 8.0
    lay = layout(m, sh)
    one = memory(m, base, sh, lay, 120)
    dual = memory(m, attrs.evolve(base, dualpipe=True), sh, lay, 120)
    assert dual.weights > 1.9 * one.weights


def test_the_rank_check_searches_each_run_at_its_own_gpus_memory_and_software(tmp_path,
                                                                             monkeypatch):
    """benchmarks/plan_calibration.py --ranks: llm-foundry's MPT-70B on A100 40 GB is searched
    at 40 GB (not the 80 GB the library's A100 declares, where dropping the recompute fit at
    60.7 GB and ranked the run 31 % slow) and with what llm-foundry could run (FSDP only,
    block checkpointing on or off; with pipelines allowed, tp 4 x pp 8 at 38.7 GB ranked it
    17 % slow). There, nothing lighter than its full recompute fits, so it is within 15 %.
    Every explained miss names a real row."""
    from tests.training_rows import RANK_MISSES, ranking
    monkeypatch.setenv("TOPOC_CACHE", str(tmp_path))
    row = next(r for r in rows() if r.id == "llmfoundry-a100-40gb-mpt-70b-s2048-128gpu-bf16")
    rk = ranking(row)
    best = rk.best.candidate
    assert (best.tp, best.pp, best.cp, best.recompute) == (1, 1, 1, "full")
    assert rk.best.fits and rk.best.memory_per_gpu <= 40e9
    assert rk.gap <= 0.15 and rk.gap == pytest.approx(
        rk.published.step_time / min(rk.best.step_time, rk.published.step_time) - 1)
    assert "recompute" not in rk.differs()
    assert {r.id for r in rows()} >= set(RANK_MISSES)


def test_automodel_moe_rows_are_searched_without_what_its_moe_parallelizer_refused(
        tmp_path, monkeypatch):
    """NeMo AutoModel's MoE parallelizer asserted tp and cp of 1 when its MoE figures were
    published (tests/training_rows.software), and its activation checkpointing wraps whole
    blocks: the search for GPT-OSS 120B on 64 H100s (whose best was tp 2 with sequence
    parallelism) proposes none of tp, cp, sequence parallelism or selective recompute, and
    the dense Llama 3 70B row keeps tp, cp and sp open but not selective recompute."""
    import topoc.compiler.analysis.plan as plan_mod
    from tests.training_rows import ranking, software
    monkeypatch.setenv("TOPOC_CACHE", str(tmp_path))
    by_id = {r.id: r for r in rows()}
    seen = []
    real = plan_mod.plan

    def spy(*a, **k):
        result = real(*a, **k)
        seen.extend(result.rows)
        return result

    monkeypatch.setattr(plan_mod, "plan", spy)
    rk = ranking(by_id["automodel-h100-gpt-oss-120b-64gpu-bf16"])
    assert seen and rk.rows == len(seen)
    assert {(c.tp, c.cp, c.sequence_parallel) for c in (r.candidate for r in seen)} == \
        {(1, 1, False)}
    assert {r.candidate.recompute for r in seen} <= {"none", "full"}
    assert {r.candidate.pp for r in seen} > {1}      # pipelines stay open
    fixed, modes = software(by_id["automodel-h100-llama3-70b-64gpu-bf16"])
    assert fixed == {} and modes == ("none", "full")
    for rid in ("automodel-h100-deepseek-v3-256gpu-bf16",
                "automodel-h100-qwen3-30b-a3b-8gpu-bf16"):
        assert software(by_id[rid]) == ({"tp": 1, "cp": 1, "sequence_parallel": False},
                                        ("none", "full"))


def test_torchtitan_pipelines_split_the_local_batch_into_pp_microbatches():
    # torchtitan's default: as many micro-batches as pipeline stages, so its 1F1B run idles
    # (pp - 1) / pp of a step's compute and the interleaved one half that; the published
    # 1F1B row is 28 % slower than the interleaved one, which one-sequence micro-batches
    # (the CSV's empty column read as 1) cannot reproduce
    by_id = {r.id: r for r in rows()}
    looped = by_id["tt24-t5-405b-512gpu-3d-interleaved-fp8"]
    plain = by_id["tt24-t5-405b-512gpu-3d-1f1b-fp8"]
    assert (plain.microbatch, plain.interleave, looped.interleave) == (4, 1, 2)
    a, b = predict(looped), predict(plain)
    assert 1.2 < b.predicted / a.predicted < 1.35
    assert abs(a.error) < 0.1 and abs(b.error) < 0.1


def test_fine_grained_experts_wait_on_the_host_large_ones_do_not(monkeypatch):
    # the dispatcher's host sync leaves the forward's expert segment issued at the host's
    # pace: 16 local experts of a 2K-token micro-batch (Qwen3-30B-A3B on 8 GPUs) take longer
    # to launch than to run; DeepSeek-V3's 4 local experts of 7,168 x 2,048 do not. The
    # backward has no sync, so only the whole layer's launches against its GPU time count.
    # Beyond the launches, each MoE layer and micro-batch pays the host's fixed cost once the
    # sync has drained the queue (compute.fixed_per_layer, compute.layer_microbatch).
    from topoc.compiler.training.compute import HOST_LAUNCH, host_bound
    q30 = MODELS["qwen3_30b_a3b"]
    sh = Shape(ep=8, dp=8)
    fwd = HOST_LAUNCH * (10 + 2 * 16 * 2)               # fp8: a cast beside each GEMM
    bwd = HOST_LAUNCH * (20 + 20 + 4 * 16 * 2)
    assert host_bound(q30, sh, True, 0.0, 0.0) == pytest.approx(fwd + bwd)
    assert host_bound(q30, sh, True, 0.0, 1.0) == pytest.approx(fwd)   # backward hidden
    assert host_bound(q30, sh, True, 0.0, 0.0, forwards=2) == pytest.approx(2 * fwd + bwd)
    assert host_bound(q30, sh, True, 0.0, 0.0) > host_bound(q30, sh, False, 0.0, 0.0) > 0
    assert host_bound(q30, Shape(ep=64, dp=64), False, 0.0, 0.0) < \
        host_bound(q30, sh, False, 0.0, 0.0)
    assert host_bound(MODELS["deepseek_v3"], Shape(ep=64, dp=64), False, 5e-3, 1e-2) == 0.0
    by_id = {r.id: r for r in rows()}
    b200 = by_id["mbridge-2511-b200-q30-8-fp8-mx"]
    # one sequence a micro-batch: within 10 % with both host terms (+5 %), -66.6 % without
    assert abs(predict(b200).error) < 0.1
    from topoc.compiler.training import compute as compute_mod
    monkeypatch.setattr(compute_mod, "LAYER_MICROBATCH", 0.0)
    assert -0.4 < predict(b200).error < -0.2            # the launches alone: about -32 %


def test_gpt_oss_rows_pay_the_eager_epilogue_their_framework_runs():
    """Megatron-Core's TEGroupedMLP (NeMo 25.11/26.02) clamps and adds fc2's expert bias in
    eager PyTorch: the Megatron-Bridge GPT-OSS validation rows, -17 % with those fused (-30 to
    -36 % before their MoE layers paid the cost per layer and micro-batch of the dispatcher's
    host sync), come within 10 % (-5 % and -4 %); NeMo AutoModel's row
    (clamp compiled, both biases eager) stays within 20 % (+15 %: it pays FSDP2's cost per
    layer and micro-batch, which its MoE rows ask for less of than the dense rows; +4 %
    without it)."""
    by_id = {r.id: r for r in rows()}
    for rid in ("mbridge-2511-gb200-gptoss-64-bf16", "mbridge-2602-h100-gptoss-64-bf16"):
        fused = predict(by_id[rid], expert_epilogue="fused").error
        mcore = predict(by_id[rid]).error
        assert fused < -0.1 and -0.1 < mcore < 0 and mcore > fused + 0.1
    auto = by_id["automodel-h100-gpt-oss-120b-64gpu-bf16"]
    assert abs(predict(auto).error) < 0.2
    assert predict(auto, expert_epilogue="megatron").error > predict(auto).error


def test_caveats_name_rows_and_their_what_ifs_change_a_row_setting():
    from tests.training_rows import CAVEATS
    by_id = {r.id: r for r in rows()}
    for rid, (why, change) in CAVEATS.items():
        assert rid in by_id and not by_id[rid].fit and why
        for key in change:
            assert key in attrs.fields_dict(type(by_id[rid]))
    # the diagnosis the Llama 3 caveat states: an interleaved schedule closes the gap (+16 %
    # at v 1, -12 % at v 8 with the Hopper plateau at 0.58; +27 % and -4 % at 0.52)
    llama = by_id["llama3-t4-405b-8192gpu"]
    assert predict(llama).error > 0.15
    interleaved = predict(attrs.evolve(llama, **CAVEATS[llama.id][1])).error
    assert abs(interleaved) < 0.15 and interleaved < predict(llama).error - 0.2


def test_bf16_gradients_halve_the_gradient_buffer_and_the_gradient_traffic():
    """``bf16_grads`` (Megatron-Core's grad_reduce_in_fp32 off, as Megatron-Bridge's performance
    recipes set it): 2 gradient bytes a parameter, not 4, and the data-parallel reduction moves
    half the bytes; the distributed optimizer's all-gather of the updated weights moves their
    2 bytes either way (Megatron-Core's param buffer is bf16; grad_reduce_in_fp32 sets only the
    gradients' dtype); FSDP keeps its own fp32 gradients."""
    from topoc.compiler.training.traffic import traffic
    m = MODELS["llama3_8b"]
    sh = Shape(1, 1, 1, 8, 1)
    base = Training(m, 64, distributed_optimizer=True, overlap=True)
    bf16 = attrs.evolve(base, bf16_grads=True)
    assert _bytes_per_param(m, base, 8)[1] == 4.0
    assert _bytes_per_param(m, bf16, 8)[1] == 2.0
    assert _bytes_per_param(m, attrs.evolve(bf16, fsdp=True), 8)[1] == 4.0 / 8
    lay = layout(m, sh)
    a, b = memory(m, base, sh, lay, 8), memory(m, bf16, sh, lay, 8)
    assert b.gradients == pytest.approx(a.gradients / 2)

    def dp_bytes(t, collective):
        return sum(f.bytes * f.count for f in traffic(m, t, sh, lay, 8)
                   if f.dim == "dp" and f.collective == collective)
    assert dp_bytes(bf16, "reducescatter") == \
        pytest.approx(dp_bytes(base, "reducescatter") / 2, rel=1e-3)
    params = dp_bytes(base, "reducescatter") / 4
    assert dp_bytes(bf16, "allgather") == dp_bytes(base, "allgather") == \
        pytest.approx(2 * params, rel=1e-3)


def test_pure_bf16_reduces_its_bf16_gradients_in_bf16():
    """``pure_bf16`` (bf16 weights and gradients, NeMo AutoModel's FSDP2 recipes) stores 2
    gradient bytes a parameter, so its reduce-scatter moves 2 bytes an element as well, where
    FSDP's mixed precision reduces fp32 ones; memory and traffic read one rule."""
    from topoc.compiler.training.memory import reduce_bytes
    from topoc.compiler.training.traffic import traffic
    m = MODELS["llama3_8b"]
    sh = Shape(1, 1, 1, 8, 1)
    fsdp = Training(m, 64, fsdp=True)
    pure = attrs.evolve(fsdp, pure_bf16=True)
    assert (reduce_bytes(m, fsdp), reduce_bytes(m, pure)) == (4, 2)
    assert _bytes_per_param(m, pure, 8)[1] == 2.0 / 8
    lay = layout(m, sh)

    def reduced(t):
        return sum(f.bytes * f.count for f in traffic(m, t, sh, lay, 8)
                   if f.dim == "dp" and f.collective == "reducescatter")
    assert reduced(fsdp) > 0
    assert reduced(pure) == pytest.approx(reduced(fsdp) / 2, rel=1e-3)


def test_nemotron4_340b_runs_without_recompute_with_nemo_s_bf16_optimizer_state():
    """NeMo 24.07's Nemotron-4 340B config keeps gradients and Adam state in bf16 (the
    launcher's nemotron_340b.yaml): with them the published mapping fits an H100 without
    recompute and its step is within 10 % of the published one (it was called over HBM
    without recompute and predicted 35 % slow with full recompute)."""
    row = next(r for r in rows() if r.id == "nemo2407-h100-nemotron4-340b-128gpu-fp8")
    p = predict(row)
    assert p.note.startswith("recompute none") and p.fits
    assert abs(p.error) < 0.10


def test_module_recompute_keeps_less_and_redoes_what_it_names():
    """Megatron-Core's recompute_modules: a selective recompute that names none redoes the
    attention core (unchanged); ``moe_act`` drops the experts' activation output, ``layernorm``
    the norms' outputs and ``mla_up_proj`` MLA's Q, K and V, each costing its re-forward; a
    module that is not Megatron-Core's is refused."""
    from topoc.compiler.training.model import derive
    from topoc.compiler.ir.gpus import GPUFigures
    gpu = GPUFigures("H100-SXM", 989e12, 1979e12, 3.35e12)
    dsv3 = MODELS["deepseek_v3"]
    sh = Shape(1, 1, 64, 64, 4)
    base = Training(dsv3, 512, recompute="selective", distributed_optimizer=True)
    default = attrs.evolve(base, recompute_modules=("core_attn",))
    a, b = derive(base, sh, gpu), derive(default, sh, gpu)
    assert a.memory.activations == b.memory.activations and a.compute.time == b.compute.time
    up = derive(attrs.evolve(base, recompute_modules=("mla_up_proj",)), sh, gpu)
    act = derive(attrs.evolve(base, recompute_modules=("moe_act",)), sh, gpu)
    both = derive(attrs.evolve(base, recompute_modules=("layernorm", "moe_act", "mla_up_proj")),
                  sh, gpu)
    none = derive(attrs.evolve(base, recompute="none"), sh, gpu)
    assert both.memory.activations < up.memory.activations < none.memory.activations
    assert act.memory.activations < none.memory.activations
    # without core_attn the attention core is not redone, but the named modules are
    assert up.compute.attention_time < a.compute.attention_time
    assert up.compute.gemm_time > none.compute.gemm_time
    assert act.compute.memory_time > none.compute.memory_time
    with pytest.raises(MappingError):
        derive(attrs.evolve(base, recompute_modules=("attention",)), sh, gpu)


def test_recipe_module_recompute_rows_run_it_and_fit():
    """The rows whose Megatron-Bridge recipe names its recompute modules run them (selective
    with those modules), and topoc fits them in their GPUs' memory."""
    from tests.training_rows import RECIPE_RECOMPUTE, training
    by_id = {r.id: r for r in rows()}
    for rid, mods in RECIPE_RECOMPUTE.items():
        row = by_id[rid]
        assert row.recompute == "selective"
        assert training(row).recompute_modules == mods
        assert predict(row).fits


def _megatron_2021(name: str, layers: int, hidden: int, heads: int, batch: int) -> Training:
    """A GPT model as Narayanan et al. 2021 trained it (sec. 5.1): fp16, seq 2048, vocab
    51200, ffn 4h, full recompute, no flash attention, no overlapped gradient reduction."""
    from topoc.compiler.ir.system import Transformer
    m = Transformer(name, layers, hidden, heads, 2048, 51200, 4 * hidden, heads, gated=False,
                    tied=True, dropout=True, dtype="fp16")
    return Training(m, batch, recompute="full", flash_attention=False)


def _steps(t: Training, shapes) -> list[float]:
    """Step times of ``t`` on 64 A100s (eight DGX A100 nodes) at each shape, in order."""
    from topoc.compiler.analysis.plan import Candidate, row_of, strategy_for
    where = topoc.load(LIBRARY / "nvidia" / "a100_cluster.topo", {"nodes": 8})
    gpu = gpu_figures(where)
    out = []
    for sh in shapes:
        c = Candidate(sh, 1, "full", 1, False, 0)
        out.append(row_of(where, c, strategy_for(t, c, gpu), {}).step_time)
    return out


@pytest.mark.parametrize("batch", [32, 128])
def test_tensor_parallelism_up_to_the_node_then_pipelines_as_narayanan_measured(batch):
    """Narayanan et al. 2021, sec. 5.4.1 and Figure 13: a 161B GPT model (32 layers, hidden
    20480, 128 heads) on 64 A100s at batch 32 and 128 runs fastest with the tensor-parallel
    size equal to the GPUs of a node, (t, p) = (8, 8), against (2, 32), (4, 16), (16, 4) and
    (32, 2): tensor parallelism's all-reduces leave the node beyond 8, pipelines idle in
    their bubble as p grows."""
    steps = _steps(_megatron_2021("gpt161b", 32, 20480, 128, batch),
                   [Shape(tp=t, pp=64 // t) for t in (2, 4, 8, 16, 32)])
    assert min(steps) == steps[2]


@pytest.mark.parametrize("batch", [32, 128, 512])
def test_pipelines_and_tensor_parallelism_lose_to_data_parallelism_as_narayanan_measured(batch):
    """Narayanan et al. 2021, sec. 5.4.2-5.4.3 and Figures 14-15: a 5.9B GPT model (32 layers,
    hidden 3840, 32 heads) on 64 A100s at micro-batch 1 and batch 32, 128 and 512 gets
    slower as the pipeline-parallel size grows from 2 to 32 (data parallelism taking the
    rest), and slower as the tensor-parallel size grows from 2 to 32."""
    t = _megatron_2021("gpt5_9b", 32, 3840, 32, batch)
    pipelines = _steps(t, [Shape(pp=p, dp=64 // p) for p in (2, 4, 8, 16, 32)])
    tensors = _steps(t, [Shape(tp=k, dp=64 // k) for k in (2, 4, 8, 16, 32)])
    assert pipelines == sorted(pipelines) and tensors == sorted(tensors)


def test_composers_backward_post_fsdp_costs_the_small_microbatches_llm_foundry_measured(
        tmp_path, monkeypatch):
    """llm-foundry's table runs MPT-13B without checkpointing at micro-batch 2 on 8 to 64
    H100s (39.6-40.0 % MFU): with Composer's FSDP default, BACKWARD_POST, each backward
    all-gather waits for the gradient computation before it, and topoc predicts those runs
    within 10 %; with the gathers hidden they are 6-7 % fast (16-17 % before the cost per
    layer and micro-batch of PyTorch's FSDP, ``compute.fixed_per_layer``, took part of it). With that cost the no-checkpoint,
    one-sequence micro-batches the search prefers for MPT-70B on 64 GPUs stop being 31 %
    faster than the published checkpointed micro-batch of 8, on H100 and on A100 (without the
    memory margin the published one is the best on H100, the one-sequence one on A100; with
    it the best is the same, and the A100's one-sequence best, at 99 % of HBM, is marked
    tight: a mark, not a rank, ``PlanRow.rank_key``)."""
    from tests.training_rows import ranking
    monkeypatch.setenv("TOPOC_CACHE", str(tmp_path))
    by_id = {r.id: r for r in rows()}
    for n in (8, 16, 32, 64):
        rid = f"llmfoundry-h100-sxm-mpt-13b-s2048-{n}gpu-bf16" + ("" if n == 64 else
                                                                   "-mb2-nockpt")
        row = by_id[rid]
        assert abs(predict(row).error) < 0.10
        assert predict(row, fsdp_prefetch="pre").error < predict(row).error - 0.05
    for gpu in ("h100-sxm", "a100-80gb"):
        row = by_id[f"llmfoundry-{gpu}-mpt-70b-s2048-64gpu-bf16"]
        rk = ranking(row, margin=0.0)
        assert rk.gap <= 0.15
        # on H100 the published checkpointed micro-batch of 8 is the best outright now that
        # the one-sequence micro-batches pay PyTorch FSDP's cost per layer and micro-batch
        # (it was the no-checkpoint micro-batch of 1 before, within 15 %); on A100, whose
        # kernels are slower against the same host cost, that one still leads
        best = {"h100-sxm": (8, "full"), "a100-80gb": (1, "none")}[gpu]
        assert (rk.best.candidate.microbatch, rk.best.candidate.recompute) == best
        tight = ranking(row)
        assert tight.best.candidate == rk.best.candidate
        assert tight.gap == pytest.approx(rk.gap)
        assert tight.best.tight == (gpu == "a100-80gb")


def test_llm_foundrys_large_scale_runs_prefetch_their_backward_gathers():
    """The large-scale H100 table's runs (sweep.py, the commit that added the table) set
    BACKWARD_PRE: their backward gathers hide behind the gradient computation before them and
    the step is shorter than with Composer's BACKWARD_POST, which the 8-64 GPU rows keep."""
    by_id = {r.id: r for r in rows()}
    large = [r for r in rows() if r.id.startswith("llmfoundry-h100") and "-128gpu-" in r.id]
    assert len(large) == 4
    for row in large:
        assert training(row).fsdp_prefetch == "pre"
        assert predict(row).predicted < predict(row, fsdp_prefetch="post").predicted
    small = by_id["llmfoundry-h100-sxm-mpt-13b-s2048-8gpu-bf16-mb2-nockpt"]
    assert training(small).fsdp_prefetch == "post"


@pytest.mark.xfail(strict=True, reason="llm-foundry's checkpointed runs of one model lose "
                   "throughput at small micro-batches more than topoc predicts (MPT-70B on "
                   "H100, micro-batch 2 -> 8: 1.18x measured, 1.10x predicted with PyTorch "
                   "FSDP's cost per layer and micro-batch, compute.layer_microbatch, 2.75 ms "
                   "fitted across sources; 1.06x without it); llm-foundry's rows alone ask "
                   "for about 5 ms (docs/plan.md, 'llm-foundry: the micro-batch, not the "
                   "recompute'; benchmarks/foundry_microbatch.py)")
def test_llm_foundry_throughput_follows_the_micro_batch_within_checkpointed_runs():
    """Both rows checkpoint every block, so the recompute is the same share of each step:
    the measured gain from micro-batch 2 to 8 is a per-micro-batch cost, and topoc's
    predicted gain should be within 5 % of it."""
    by_id = {r.id: r for r in rows()}
    small = by_id["llmfoundry-h100-sxm-mpt-70b-s2048-32gpu-bf16-mb2-ckpt"]
    large = by_id["llmfoundry-h100-sxm-mpt-70b-s2048-64gpu-bf16"]

    def per_gpu(row, seconds):
        return row.batch / (seconds * row.gpus)

    ps, pl = predict(small), predict(large)
    measured = per_gpu(large, pl.measured) / per_gpu(small, ps.measured)
    predicted = per_gpu(large, pl.predicted) / per_gpu(small, ps.predicted)
    assert measured == pytest.approx(1.178, abs=0.005)
    assert predicted == pytest.approx(measured, rel=0.05)


def test_ptd_parallelism_beats_zero3_at_768_gpus_as_narayanan_measured():
    """Narayanan et al. 2021, Table 2: GPT 174.6B at batch 1536 on 768 A100s, PTD-P (t 8,
    p 12) 149 TFLOP/s against ZeRO-3 without model parallelism 88. The DeepSpeed of the time
    (``zero3_impl="deepspeed-0.3"``) hands every gather and reduce-scatter to PyTorch as 768
    per-rank views, each copied by a host-issued copy on the critical path
    (compiler/training/zero3.py); with it topoc ranks PTD-P first, as measured, and without it
    (``flat``, today's flat-buffer collectives) ZeRO-3 would win."""
    by_id = {r.id: r for r in rows()}
    ptdp = predict(by_id["narayanan21-t2-ptdp-174.6b-768gpu"])
    row = by_id["narayanan21-t2-zero3-174.6b-768gpu"]
    zero3 = predict(row)
    assert abs(ptdp.error) < 0.05
    assert ptdp.predicted < zero3.predicted
    assert predict(row, zero3_impl="flat").predicted < ptdp.predicted


def test_only_the_2021_deepspeed_zero3_rows_pay_per_rank_copies():
    """The per-rank copies (``zero3_impl="deepspeed-0.3"``) are the DeepSpeed of 2021's alone:
    PyTorch FSDP, Megatron-FSDP and ZeRO-1/2 rows (Megatron-Bridge, torchtitan, llm-foundry,
    AutoModel, BLOOM) run flat buffers and pay none."""
    from tests.training_rows import training
    charged = set()
    for r in rows():
        t = training(r, r.recompute or "none")
        if t.zero3_impl != "flat":
            charged.add(r.id)
            assert r.family == "narayanan" and r.zero == 3 and not r.fsdp
    assert charged == {r.id for r in rows() if r.id.startswith("narayanan21-t2-zero3-")}
    assert len(charged) == 4


def test_the_measurements_alone_put_three_published_strategies_past_15_percent():
    """benchmarks/rank_floor.py, with no model: three published strategies were measured more
    than 15 % slower than another strategy of the same work in the same source, so an exact
    model ranks them past the ranking target's 15 %; docs/plan.md names each pair."""
    import importlib.util
    from pathlib import Path
    root = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("rank_floor", root / "benchmarks/rank_floor.py")
    rank_floor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rank_floor)
    found = rank_floor.floor_rows()
    same = {(slow.id, fast.id): round(ratio, 2) for slow, fast, ratio, one, _ in found if one}
    assert same == {
        ("narayanan21-t2-zero3-174.6b-1536gpu", "narayanan21-t2-ptdp-174.6b-1536gpu"): 3.20,
        ("narayanan21-t2-zero3-174.6b-768gpu", "narayanan21-t2-ptdp-174.6b-768gpu"): 1.69,
        ("tt24-t5-405b-512gpu-3d-1f1b-fp8", "tt24-t5-405b-512gpu-3d-interleaved-fp8"): 1.28}
    assert all(need > 0 for *_, need in found)
    doc = (root / "docs/plan.md").read_text(encoding="utf-8")
    for slow, fast in same:
        assert f"| {slow}" in doc and f"| {fast}" in doc


def test_recomputed_norms_and_up_projections_cost_their_forward_again():
    """DeepSeek-V3's ``recompute_norms`` (the report's sec. 3.2.3: every RMSNorm and MLA
    up-projection recomputed in back-propagation) frees their outputs and pays their forward
    again: one set of modules (``memory.modules``) that memory and compute both read."""
    from topoc.compiler.training.memory import modules
    row = next(r for r in rows() if r.id == "deepseekv3-report-h800-2048gpu-fp8")
    t = training(row, row.recompute or "none")
    assert t.recompute_norms and {"layernorm", "mla_up_proj"} <= set(modules(t))
    assert modules(attrs.evolve(t, recompute="none")) == ("layernorm", "mla_up_proj")
    assert modules(attrs.evolve(t, recompute="full")) == ()
    with_, without = predict(row), predict(row, recompute_norms=False)
    assert with_.predicted > without.predicted
    assert with_.memory < without.memory

    # without any other recompute the norms' element-wise work is paid again too
    from topoc.compiler.ir.gpus import GPUFigures
    from topoc.compiler.training.compute import compute
    m = MODELS["llama3_8b"]
    sh = Shape(dp=8)
    lay = layout(m, sh)
    h100 = GPUFigures("H100-SXM", 989e12, 1979e12, 3.35e12)
    plain = Training(m, 8, recompute="none")
    ew = [compute(m, x, sh, lay, h100, 1).memory_time
          for x in (plain, attrs.evolve(plain, recompute_norms=True))]
    assert ew[1] > ew[0]


def test_gradient_buckets_count_parameters_as_megatron_core_does():
    """Megatron-Core's bucket is a number of parameters, max(40 M, 1 M x dp) by default,
    whatever the gradient dtype; without overlap every gradient goes in one bucket."""
    from topoc.compiler.training.traffic import traffic
    m = MODELS["llama3_8b"]

    def buckets(t, dp=8):
        sh = Shape(1, 1, 1, dp, 1)
        return {f.count for f in traffic(m, t, sh, layout(m, sh), 8) if f.dim == "dp"}
    base = Training(m, 64, distributed_optimizer=True, overlap=True)
    # one parameter a bucket counts the parameters one rank reduces
    (params,) = buckets(attrs.evolve(base, bucket=1))
    assert params == pytest.approx(parameters(m)["total"], rel=0.1)
    assert buckets(base) == {-(-params // 40_000_000)}
    # bf16 gradients: the same buckets in parameters, each half the bytes
    assert buckets(attrs.evolve(base, bf16_grads=True)) == buckets(base)
    # 128 data-parallel ranks: 128 M parameters a bucket
    assert buckets(attrs.evolve(base, batch=1024), 128) == {-(-params // 128_000_000)}
    assert buckets(attrs.evolve(base, bucket=10_000_000)) == {-(-params // 10_000_000)}
    assert buckets(attrs.evolve(base, overlap=False)) == {1}


def test_scatter_gather_sends_a_tensor_parallel_slice_of_each_pipeline_boundary():
    """``scatter_gather`` (Megatron-LM's scatter/gather optimisation, Narayanan et al. 2021 sec.
    4.1; DeepSpeed's PipelineEngine partitions what it sends over the model-parallel group):
    each rank sends 1/tp of a boundary's activation or gradient across the stage boundary,
    and the receiving stage all-gathers the slices over its tensor-parallel group, once per
    transfer; with sequence parallelism the boundary is split already and nothing is added."""
    from topoc.compiler.training.traffic import traffic
    m = MODELS["llama3_8b"]
    sh = Shape(8, 1, 1, 2, 4)
    lay = layout(m, sh)
    plain = Training(m, 64, microbatch=2, recompute="full")
    split = attrs.evolve(plain, scatter_gather=True)
    act = m.seq * 2 * m.hidden * 2

    def flows(t):
        return [(f.dim, f.collective, f.bytes, f.count, f.overlap)
                for f in traffic(m, t, sh, lay, 16) if f.dim in ("pp", "tp")]
    pp_plain = [f for f in flows(plain) if f[0] == "pp"]
    pp_split = [f for f in flows(split) if f[0] == "pp"]
    assert pp_plain == [("pp", "sendrecv", act, 32, "none")]
    assert pp_split == [("pp", "sendrecv", act // 8, 32, "none")]
    extra = set(flows(split)) - set(flows(plain))
    assert extra == {("pp", "sendrecv", act // 8, 32, "none"),
                     ("tp", "allgather", act, 32, "none")}
    sp = attrs.evolve(plain, sequence_parallel=True)
    assert flows(attrs.evolve(sp, scatter_gather=True)) == flows(sp)


def test_async_tp_hides_tensor_parallel_collectives_in_the_passes_that_run_them():
    """``async_tp`` (torchtitan's enable_async_tensor_parallel, Megatron's tp_comm_overlap):
    the same tensor-parallel bytes, the forward's collectives in the forward pass's window and
    the recompute's and backward's in the backward's, so less is exposed than with the forward
    ones on the critical path; under CUDA_LAUNCH_BLOCKING nothing hides."""
    from topoc.compiler.training.traffic import traffic
    m = MODELS["llama3_8b"]
    sh = Shape(8, 1, 1, 8, 1)
    lay = layout(m, sh)
    plain = Training(m, 96, microbatch=12, recompute="full", sequence_parallel=True)
    fast = attrs.evolve(plain, async_tp=True)

    def tp(t):
        return [f for f in traffic(m, t, sh, lay, 1) if f.dim == "tp"]
    assert sum(f.bytes * f.count for f in tp(fast)) == sum(f.bytes * f.count for f in tp(plain))
    assert {f.overlap for f in tp(plain)} == {"none", "wgrad"}
    assert {(f.collective, f.overlap, f.count) for f in tp(fast)} == {
        (c, w, n) for c in ("allgather", "reducescatter")
        for w, n in (("forward", 2 * 32), ("backward", 4 * 32))}
    assert {f.overlap for f in tp(attrs.evolve(fast, launch_blocking=True))} == {"none"}
