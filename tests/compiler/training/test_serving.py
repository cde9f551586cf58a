"""Serving arithmetic (compiler.training.serving): weights, KV cache, work per step."""

import pytest

from topoc.compiler.ir.system import Transformer
from topoc.compiler.training.serving import (BYTES, Layout, LayoutError, check, decode,
                                             kv_bytes_per_token, kv_bytes_per_token_per_gpu,
                                             prefill, totals, weight_bytes_per_gpu)

LLAMA70 = Transformer("llama3_70b", 80, 8192, 64, 8192, 128256, 28672, 8, gated=True,
                      tied=False)
DSV3 = Transformer("deepseek_v3", 61, 7168, 128, 4096, 129280, 18432, 128, head_dim=128,
                   experts=256, top_k=8, expert_ffn=2048, shared_experts=1, dense_layers=3,
                   kv_lora_rank=512, q_lora_rank=1536, rope_head_dim=64, gated=True, tied=False)


def test_parameter_counts_match_the_published_sizes():
    assert totals(LLAMA70)["total"] == pytest.approx(70.6e9, rel=0.01)
    p = totals(DSV3)
    assert p["total"] == pytest.approx(671e9, rel=0.01)     # 671B without the MTP module
    assert p["active"] == pytest.approx(37e9, rel=0.03)


def test_kv_per_token_gqa_and_mla():
    # Llama 3 70B: 80 layers x 2 x 8 heads x 128 x 2 bytes = 327,680 bytes (BF16)
    assert kv_bytes_per_token(LLAMA70, "bf16") == 327_680
    assert kv_bytes_per_token(LLAMA70, "fp8") == 163_840
    # DeepSeek-V3's latent: 61 x (512 + 64) elements
    assert kv_bytes_per_token(DSV3, "bf16") == 61 * 576 * 2
    # grouped heads split over tp (8 kv heads: up to tp 8); MLA's latent does not split
    assert kv_bytes_per_token_per_gpu(LLAMA70, Layout(tp=4), "fp8") == 163_840 / 4
    assert kv_bytes_per_token_per_gpu(DSV3, Layout(tp=8), "fp8") == 61 * 576


def test_weights_per_gpu_by_precision_and_sharding():
    bf16 = weight_bytes_per_gpu(LLAMA70, Layout(), "bf16")
    fp8 = weight_bytes_per_gpu(LLAMA70, Layout(), "fp8")
    fp4 = weight_bytes_per_gpu(LLAMA70, Layout(), "fp4")
    assert bf16 > fp8 > fp4
    assert BYTES["fp4"] == 0.5625            # NVFP4: an FP8 scale per 16 values
    tp8 = weight_bytes_per_gpu(LLAMA70, Layout(tp=8), "fp8")
    assert tp8 == pytest.approx(fp8 / 8, rel=0.02)
    pp2 = weight_bytes_per_gpu(LLAMA70, Layout(pp=2), "fp8")
    assert pp2 < 0.55 * fp8
    # attention DP keeps the whole attention on every GPU: more bytes than plain tp
    assert weight_bytes_per_gpu(DSV3, Layout(8, 1, 8, True), "fp8") > \
        weight_bytes_per_gpu(DSV3, Layout(8, 1, 8, False), "fp8")


def test_decode_reads_only_the_experts_a_batch_touches():
    lay = Layout(8, 1, 8, True)
    one = decode(DSV3, lay, 1, 1000, "fp8", "fp8")
    many = decode(DSV3, lay, 1024, 1000, "fp8", "fp8")
    assert one.expert_bytes < 0.1 * many.expert_bytes
    assert many.kv_bytes == pytest.approx(1024 / 8 * 1000 * 61 * 576)


def test_prefill_attention_is_quadratic():
    a = prefill(LLAMA70, Layout(), 1000, "fp8", "fp8").attn_flops
    b = prefill(LLAMA70, Layout(), 2000, "fp8", "fp8").attn_flops
    assert b == pytest.approx(4 * a)


@pytest.mark.parametrize("lay, words", [
    (Layout(tp=3), ["64 attention heads", "tp = 3"]),
    (Layout(pp=81), ["80 layers", "pp = 81"]),
    (Layout(tp=2, ep=2), ["no experts"]),
])
def test_layouts_that_cannot_run_name_the_numbers(lay, words):
    with pytest.raises(LayoutError) as exc:
        check(LLAMA70, lay)
    for w in words:
        assert w in str(exc.value)


def test_experts_get_more_rows_as_the_batch_grows():
    """The M of a routed expert's GEMM: tokens x top_k over the experts they touch (one token
    touches 8 experts with one row each; 1,024 tokens give each expert ~32)."""
    lay = Layout(8, 1, 8, True)
    assert decode(DSV3, lay, 1, 1000, "fp8", "fp8").expert_rows == pytest.approx(1.0)
    many = decode(DSV3, lay, 1024, 1000, "fp8", "fp8").expert_rows
    assert many == pytest.approx(1024 * 8 / 256, rel=0.01)
    assert prefill(DSV3, lay, 8192, "fp8", "fp8").expert_rows == pytest.approx(256, rel=0.01)


def test_serving_reads_the_ir_model():
    """One description of a model: serving takes the IR's Transformer (no copy of it)."""
    import topoc.compiler.training.serving as sv
    assert not hasattr(sv, "Arch") and not hasattr(sv, "arch_of")
    assert sv.moe_layers(DSV3) == 58 and sv.moe_layers(LLAMA70) == 0


def test_a_tied_embedding_is_one_matrix_split_over_tp():
    """A tied model's embedding is also its output head: one vocab x hidden matrix, split over
    tp (vocab-parallel), where an untied model holds two. The weights per GPU differ by exactly
    the second matrix's tp share (before the fix a tied model lost a whole matrix)."""
    import attrs as _attrs
    from topoc.compiler.lang.derive import bundled_models
    from topoc.compiler.training import serving as sv
    base = dict(bundled_models())["megatron_22b"]
    tied = _attrs.evolve(base, layers=2, hidden=256, heads=4, vocab=1000, tied=True)
    untied = _attrs.evolve(tied, tied=False)
    for tp in (1, 2, 4):
        lay = sv.Layout(tp=tp, pp=1)
        gap = sv.weight_bytes_per_gpu(untied, lay, "bf16") - \
            sv.weight_bytes_per_gpu(tied, lay, "bf16")
        assert gap == 1000 * 256 / tp * 2
