"""ZeRO-3 implementations (``compiler.training.zero3``): DeepSpeed v0.3.12-v0.5.4 hands every
collective to PyTorch as per-rank views, one host copy per data-parallel rank and call; flat
buffers (FSDP, later DeepSpeed) cost nothing per rank."""

from __future__ import annotations

import json

import attrs
import pytest

from topoc.compiler.ir.gpus import GPUFigures
from topoc.compiler.lang.derive import bundled_models
from topoc.compiler.training.model import MappingError, Shape, Training, derive
from topoc.compiler.training.zero3 import HOST_LAUNCH, ZERO3_IMPLS, calls, host_time

A100 = GPUFigures("A100-80GB", 312e12, 0.0, 2.039e12)


def test_calls_per_layer_follow_the_recompute():
    """Four weight matrices (fused QKV, output projection, two MLP matrices): gathered forward
    and backward (8), plus the recompute's forward less the last matrix it leaves gathered
    (11); reduce-scatters of the four weights and the two norm weights (6)."""
    gpt = attrs.evolve(bundled_models()["llama3_8b"], gated=False)
    assert calls(gpt, "none") == (8, 6)
    assert calls(gpt, "full") == (11, 6)
    gated = bundled_models()["llama3_8b"]          # SwiGLU: three MLP matrices
    assert calls(gated, "full") == (14, 7)


def test_per_rank_views_cost_a_host_copy_per_rank_call_layer_and_micro_batch():
    m = bundled_models()["llama3_8b"]
    t = Training(m, 64, microbatch=1, recompute="full", zero=3, zero3_impl="deepspeed-0.3")
    flat = attrs.evolve(t, zero3_impl="flat")
    for dp in (8, 16):
        sh = Shape(tp=1, cp=1, ep=1, dp=dp, pp=1)
        d = derive(t, sh, A100)
        gathers, reduces = calls(m, "full")
        want = m.layers * d.microbatches * (gathers + reduces) * dp * HOST_LAUNCH
        assert d.compute.zero3_host_time == pytest.approx(want, rel=1e-9)
        assert d.compute.time - derive(flat, sh, A100).compute.time == \
            pytest.approx(want, rel=1e-9)
    # more ranks: more copies a call, and fewer micro-batches do not undo it
    small = derive(t, Shape(tp=1, cp=1, ep=1, dp=8, pp=1), A100).compute.zero3_host_time
    big = derive(t, Shape(tp=1, cp=1, ep=1, dp=16, pp=1), A100).compute.zero3_host_time
    assert big == pytest.approx(small, rel=1e-9)   # 2x ranks, half the micro-batches


def test_flat_buffers_fsdp_and_lower_stages_pay_nothing():
    m = bundled_models()["llama3_8b"]
    sh = Shape(tp=1, cp=1, ep=1, dp=8, pp=1)
    assert not ZERO3_IMPLS["flat"].per_rank_views and ZERO3_IMPLS["deepspeed-0.3"].per_rank_views
    old = Training(m, 64, zero3_impl="deepspeed-0.3")
    for t in (attrs.evolve(old, zero=3, zero3_impl="flat"), attrs.evolve(old, zero=1),
              attrs.evolve(old, fsdp=True)):
        assert host_time(m, t, sh, m.layers, 8) == 0.0
        assert derive(t, sh, A100).compute.zero3_host_time == 0.0
    with pytest.raises(MappingError, match="zero3 impl 'deepspeed-0.2': one of flat"):
        derive(attrs.evolve(old, zero=3, zero3_impl="deepspeed-0.2"), sh, A100)


def test_plan_cli_zero3_impl(capsys):
    """``topoc plan --zero3-impl deepspeed-0.3`` prices the same ZeRO-3 mapping slower than
    the flat default by the per-rank copies; an unknown choice is a usage error."""
    from pathlib import Path
    from topoc.cli import main
    dgx = str(Path(__file__).resolve().parents[3] / "library" / "nvidia" / "dgx_a100.topo")
    rows = {}
    for impl in ("flat", "deepspeed-0.3"):
        assert main(["plan", dgx, "--model", "llama3-8b", "--batch", "64", "--zero", "3",
                     "--dp", "8", "--microbatch", "1", "--recompute", "full", "--format",
                     "json", "--zero3-impl", impl]) == 0
        (rows[impl],) = json.loads(capsys.readouterr().out)["rows"]
    assert rows["deepspeed-0.3"]["compute_time"] > rows["flat"]["compute_time"]
    assert rows["deepspeed-0.3"]["memory_per_gpu"] == rows["flat"]["memory_per_gpu"]
    with pytest.raises(SystemExit) as exc:
        main(["plan", dgx, "--model", "llama3-8b", "--batch", "64", "--zero3-impl", "v1"])
    assert exc.value.code == 2
