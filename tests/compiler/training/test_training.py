"""compiler.training: parameter counts against the published sizes, FLOPs and activation memory
against the formulas of Korthikanti et al. 2022, traffic per step against Megatron's pattern,
and the whole step against published iteration times and memory (tests/training_rows.py)."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.training_rows import ROWS, report
from topoc.compiler.lang.derive import bundled_models
from topoc.compiler.training.model import (PlanError, Shape, Training, _activation_per_layer,
                                     _bytes_per_param, check, memory, model_flops, parameters,
                                     traffic)

MODELS = bundled_models()


@pytest.mark.parametrize("name, total, active", [
    ("gpt3_175b", 175e9, None), ("megatron_530b", 530e9, None), ("megatron_1t", 1.0e12, None),
    ("llama3_8b", 8.03e9, None), ("llama3_70b", 70.6e9, None), ("llama3_405b", 405.9e9, None),
    # Mistral: 46.7 B total, 12.9 B active; DeepSeekMoE 16B: 16.4 B total, 2.8 B active
    ("mixtral_8x7b", 46.7e9, 12.9e9), ("deepseek_moe_16b", 16.4e9, 2.8e9)])
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
    tp = [f for f in traffic(m, t, sh, micro) if f.dim == "tp"]
    assert {f.collective for f in tp} == {"allreduce"}
    assert sum(f.count for f in tp) == 4 * (96 // 8) * 64
    assert tp[0].bytes == m.seq * m.hidden * 2
    sp = [f for f in traffic(m, attrs.evolve(t, sequence_parallel=True), sh, micro)
          if f.dim == "tp"]
    assert sorted({f.collective for f in sp}) == ["allgather", "reducescatter"]
    assert sum(f.count for f in sp) == 2 * 4 * (96 // 8) * 64
    full = [f for f in traffic(m, attrs.evolve(t, recompute="full"), sh, micro) if f.dim == "tp"]
    assert sum(f.count for f in full) == 6 * (96 // 8) * 64     # the recompute forward repeats 2


def test_pipeline_and_data_parallel_traffic():
    m = MODELS["llama3_8b"]
    sh = Shape(tp=2, dp=4, pp=2)
    t = Training(m, 64, interleave=2, distributed_optimizer=True, sequence_parallel=True)
    micro = check(t, sh)
    flows = traffic(m, t, sh, micro)
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
    (Shape(pp=3), Training(MODELS["llama3_8b"], 64, interleave=2), "do not split into pp = 3"),
    (Shape(tp=3), Training(MODELS["llama3_8b"], 64), "heads"),
    (Shape(ep=2), Training(MODELS["llama3_8b"], 64), "no experts"),
    (Shape(ep=3, dp=3), Training(MODELS["mixtral_8x7b"], 63), "expert count it divides"),
    (Shape(pp=2), Training(MODELS["llama3_8b"], 3, interleave=2), "divisible by pp")])
def test_mappings_the_model_cannot_run_are_refused(shape, training, message):
    with pytest.raises(PlanError, match=message):
        check(training, shape)


@given(st.sampled_from(["llama3_8b", "gpt3_175b", "mixtral_8x7b", "deepseek_moe_16b"]),
       st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]), st.booleans())
def test_recompute_never_adds_memory_and_sharding_never_adds_weights(name, tp, pp, sp):
    m = MODELS[name]
    sh = Shape(tp=tp, pp=pp, dp=2)
    base = Training(m, 64, sequence_parallel=sp)
    mems = [memory(m, attrs.evolve(base, recompute=r), sh, 32).activations
            for r in ("none", "selective", "full")]
    assert mems[0] >= mems[1] >= mems[2] > 0
    plain = memory(m, base, sh, 32)
    sharded = memory(m, attrs.evolve(base, distributed_optimizer=True), sh, 32)
    assert sharded.optimizer < plain.optimizer and sharded.weights == plain.weights


# ---- published runs ----------------------------------------------------------------------------

@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_published_iteration_times_within_15_percent(row):
    r = report(row)
    assert r.total == pytest.approx(row.time, rel=0.15), \
        f"{row.name}: predicted {r.total:.2f} s, measured {row.time:.2f} s"


#: Memory rows and the error topoc reaches on them (docs/plan.md): within 10 % where the
#: pipeline has stages; the two single-stage H100 runs are read about 20 % low (nvidia-smi
#: counts the caching allocator's reserve, which topoc does not model beyond a constant).
MEMORY_BOUNDS = {"Llama3-8B A800 8 GPUs": 0.10, "Llama3-70B H100 64 GPUs": 0.10,
                 "Llama3-8B H100 8 GPUs": 0.25, "Llama3-8B H100 16 GPUs": 0.25}


@pytest.mark.parametrize("row", [r for r in ROWS if r.memory_gib], ids=lambda r: r.name)
def test_published_memory(row):
    got = report(row).memory.total / 2**30
    assert got == pytest.approx(row.memory_gib, rel=MEMORY_BOUNDS[row.name])
