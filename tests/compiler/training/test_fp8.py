"""compiler.training.fp8: the fp8 recipes' costs beyond tensorwise scaling, as the frameworks'
code counts them, and where a recipe can run."""

from __future__ import annotations

import attrs
import pytest

import topoc
from topoc.compiler.ir.gpus import gpu_figures
from topoc.compiler.lang.derive import bundled_models
from topoc.compiler.training.constants import value
from topoc.compiler.training.fp8 import FP8_RECIPES, RECIPES, extra_bytes, slowdown
from topoc.compiler.training.model import MappingError, Shape, Training, derive

MODELS = bundled_models()


def _gpu(path: str):
    return gpu_figures(topoc.load(str(topoc_library() / path)))


def topoc_library():
    from tests.conftest import LIBRARY
    return LIBRARY


def test_rowwise_moves_the_bytes_torchaos_roofline_counts_beyond_tensorwise():
    """One GEMM of M tokens, K in, N out: rowwise casts its input (M x K), output gradient
    (M x N) and weight (K x N) with 2 bytes more per element each and rescales the outputs of
    the data-gradient (M x K) and weight-gradient (K x N) GEMMs, 4 bytes per element."""
    m, n, k = 8192.0, 4096.0, 1024.0
    got = extra_bytes(RECIPES["rowwise"], [(m, n, k, 2)])
    assert got == 2 * (2 * m * k + 2 * m * n + 2 * k * n + 4 * (m * k + k * n))
    assert extra_bytes(RECIPES["tensorwise"], [(m, n, k, 1)]) == 0.0
    # MX casts a weight in 6 bytes where tensorwise takes 8 (amax, then two casts)
    assert extra_bytes(RECIPES["mxfp8"], [(m, n, k, 1)]) == -2 * k * n


def test_only_rowwises_forward_gemm_is_slower():
    """Forward at the chosen share of tensorwise's rate, backward at tensorwise's (cuBLAS);
    a full recompute runs the forward twice."""
    f = value("fp8.rowwise_forward_gemm")
    assert 0.9 <= f <= 1.0
    assert slowdown(RECIPES["rowwise"], 3) == pytest.approx(1 / f - 1)
    assert slowdown(RECIPES["rowwise"], 4) == pytest.approx(2 * (1 / f - 1))
    assert slowdown(RECIPES["tensorwise"], 4) == 0.0 == slowdown(RECIPES["mxfp8"], 3)


def test_rowwise_trains_slower_than_tensorwise_and_a_bf16_run_ignores_the_recipe():
    m = MODELS["llama3_8b"]
    gpu = _gpu("nvidia/dgx_h100.topo")
    sh = Shape(1, 1, 1, 8, 1)
    t = Training(m, 8, fsdp=True, fp8=True, recompute="selective")
    tensorwise = derive(t, sh, gpu).compute
    rowwise = derive(attrs.evolve(t, fp8_recipe="rowwise"), sh, gpu).compute
    assert rowwise.time > tensorwise.time
    assert rowwise.gemm_time > tensorwise.gemm_time
    assert rowwise.memory_time > tensorwise.memory_time
    bf16 = attrs.evolve(t, fp8=False)
    assert derive(attrs.evolve(bf16, fp8_recipe="rowwise"), sh, gpu).compute == \
        derive(bf16, sh, gpu).compute


def test_mxfp8_needs_blackwell():
    m = MODELS["llama3_8b"]
    sh = Shape(1, 1, 1, 8, 1)
    t = Training(m, 8, fsdp=True, fp8=True, fp8_recipe="mxfp8")
    with pytest.raises(MappingError, match="needs Blackwell"):
        derive(t, sh, _gpu("nvidia/dgx_h100.topo"))
    b200 = derive(t, sh, _gpu("nvidia/hgx_b200.topo")).compute
    assert b200.time > 0
    with pytest.raises(MappingError, match="one of tensorwise, rowwise, mxfp8"):
        derive(attrs.evolve(t, fp8_recipe="delayed"), sh, _gpu("nvidia/hgx_b200.topo"))


SOURCE = """use "nvidia/dgx_h100.topo"
use "models/llama3.topo"
system s : DGXH100
parallel p on s {{ tp = 1  dp = 8  model = llama3_8b  batch = 64  fsdp = true  fp8 = true
  {extra} }}
"""


def test_fp8_recipe_is_a_block_setting():
    plain = topoc.loads(SOURCE.format(extra="")).parallel("p")
    row = topoc.loads(SOURCE.format(extra="fp8_recipe = rowwise")).parallel("p")
    assert plain.training.fp8_recipe == "tensorwise" and row.training.fp8_recipe == "rowwise"
    assert row.derived.compute.time > plain.derived.compute.time


def test_an_unknown_recipe_in_a_block_names_the_choices():
    with pytest.raises(Exception) as err:
        topoc.loads(SOURCE.format(extra="fp8_recipe = rowwize"))
    text = str(err.value)
    assert "E303" in text and "'fp8_recipe' is one of " + ", ".join(FP8_RECIPES) in text
    assert "rowwise" in text


def test_plan_takes_the_recipe_and_refuses_one_it_cannot_run(capsys):
    from topoc.cli import main
    dgx = str(topoc_library() / "nvidia" / "dgx_h100.topo")
    args = ["plan", dgx, "--model", "llama3-8b", "--batch", "64", "--no-cache", "--jobs", "1",
            "--tp", "1", "--pp", "1", "--fsdp", "--fp8", "--top", "1"]
    assert main(args) == 0
    tensorwise = capsys.readouterr().out
    assert main(args + ["--fp8-recipe", "rowwise"]) == 0
    rowwise = capsys.readouterr().out
    assert rowwise != tensorwise
    assert main(args + ["--fp8-recipe", "mxfp8"]) == 2
    assert "needs Blackwell" in capsys.readouterr().err
    assert main([a for a in args if a != "--fp8"] + ["--fp8-recipe", "rowwise"]) == 2
    assert "give --fp8 too" in capsys.readouterr().err
