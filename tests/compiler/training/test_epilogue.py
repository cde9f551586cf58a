"""compiler.training.epilogue: a GPT-OSS-style expert's clamp and biases cost the element-wise
passes and launches each framework runs them with, nothing for models without them or with
them fused, and the setting is reachable from Training, a parallel block and the command
line."""

from __future__ import annotations

import json

import attrs
import pytest

import topoc
from topoc.cli import main
from topoc.compiler.ir.gpus import GPUFigures
from topoc.compiler.lang.derive import bundled_models
from topoc.compiler.training import epilogue
from topoc.compiler.training.compute import compute
from topoc.compiler.training.memory import activation_per_layer
from topoc.compiler.training.model import MappingError, Shape, Training, derive, layout

from ...conftest import LIBRARY

OSS = bundled_models()["gpt_oss_120b"]
H100 = GPUFigures("H100-SXM", 989e12, 1979e12, 3.35e12)
SH = Shape(ep=8, dp=8)


def test_the_preset_declares_the_clamp_and_the_biases():
    assert OSS.act_clamp == 7.0 and OSS.expert_bias
    assert not epilogue.applies(bundled_models()["deepseek_v3"])
    assert not epilogue.applies(attrs.evolve(OSS, experts=0, top_k=0))


def test_megatron_core_bytes_follow_its_code():
    """Per routed copy: the clamp 16W forward, 20W backward; fc2's bias 12H each way; a
    recompute of the activation redoes the clamp only, a full recompute the bias too."""
    w, h, k = OSS.expert_ffn, OSS.hidden, OSS.top_k
    fwd, bwd, again = epilogue.bytes_per_token(OSS, Training(OSS, 8), SH)
    assert (fwd, bwd, again) == (k * (16 * w + 12 * h), k * (20 * w + 12 * h), 0.0)
    act = Training(OSS, 8, recompute="selective", recompute_modules=("moe_act",))
    assert epilogue.bytes_per_token(OSS, act, SH)[2] == k * 16 * w
    full = Training(OSS, 8, recompute="full")
    assert epilogue.bytes_per_token(OSS, full, SH)[2] == k * (16 * w + 12 * h)
    # the default selective recompute (the attention core) does not redo the activation
    assert epilogue.bytes_per_token(OSS, Training(OSS, 8, recompute="selective"), SH)[2] == 0


def test_automodel_compiles_the_clamp_and_adds_both_biases_eagerly():
    w, h, k = OSS.expert_ffn, OSS.hidden, OSS.top_k
    t = Training(OSS, 8, expert_epilogue="eager_bias")
    assert epilogue.bytes_per_token(OSS, t, SH) == (k * (16 * w + 12 * h), k * (4 * w + 12 * h),
                                                    0.0)
    assert epilogue.bytes_per_token(OSS, Training(OSS, 8, expert_epilogue="fused"), SH) == \
        (0.0, 0.0, 0.0)
    # no clamp, only biases: Megatron-Core's fc1 bias is in the GEMM, fc2's eager
    biased = attrs.evolve(OSS, act_clamp=0.0)
    assert epilogue.bytes_per_token(biased, Training(biased, 8), SH) == \
        (k * 12 * h, k * 12 * h, 0.0)


def test_per_expert_biases_launch_per_local_expert():
    assert epilogue.launches(OSS, Training(OSS, 8), 16) == (3 + 33, 3 + 64)
    assert epilogue.launches(OSS, Training(OSS, 8, expert_epilogue="eager_bias"), 2) == (10, 16)
    assert epilogue.launches(OSS, Training(OSS, 8, expert_epilogue="fused"), 16) == (0, 0)


def test_the_epilogue_costs_element_wise_time_and_the_clamp_keeps_its_input():
    lay = layout(OSS, SH)

    def run(kind):
        # a GEMM plateau pinned where the layer's GPU time outlasts its launches (at a faster
        # plateau the per-expert launches, which the two epilogues differ in, become the
        # critical path: host_bound, tested on its own)
        t = Training(OSS, 64, expert_epilogue=kind, gemm_efficiency=0.52)
        return compute(OSS, t, SH, lay, H100, 1), activation_per_layer(OSS, t, SH, True)
    (fused, kept_f), (mcore, kept_m) = run("fused"), run("megatron")
    assert mcore.memory_time > fused.memory_time
    assert mcore.gemm_time == pytest.approx(fused.gemm_time)      # not host-bound here
    extra = sum(epilogue.bytes_per_token(OSS, Training(OSS, 64), SH)[:2])
    tokens = OSS.seq * (OSS.layers - OSS.dense_layers)
    assert mcore.memory_time - fused.memory_time == pytest.approx(
        tokens * extra / (H100.hbm_bandwidth * Training(OSS, 64).hbm_efficiency))
    assert kept_m - kept_f == pytest.approx(OSS.top_k * 4 * OSS.expert_ffn)
    with pytest.raises(MappingError, match="expert epilogue"):
        derive(Training(OSS, 64, expert_epilogue="triton"), SH, H100)


SOURCE = """use "nvidia/dgx_h100.topo"
use "models/frontier.topo"
system s : DGXH100
parallel p on s {{ tp = 1  ep = 8  dp = 8  model = gpt_oss_120b  batch = 64  {extra} }}
"""


def test_the_epilogue_is_a_block_setting():
    plain = topoc.loads(SOURCE.format(extra="")).parallel("p")
    fused = topoc.loads(SOURCE.format(extra="expert_epilogue = fused")).parallel("p")
    assert plain.training.expert_epilogue == "megatron"
    assert fused.training.expert_epilogue == "fused"
    assert fused.derived.compute.memory_time < plain.derived.compute.memory_time


def test_the_epilogue_reaches_the_search_from_the_command_line(capsys):
    dgx = str(LIBRARY / "nvidia" / "h100_cluster.topo")

    def best(*extra):
        assert main(["plan", dgx, "-D", "nodes=8", "--model", "gpt-oss-120b", "--batch", "512",
                     "--tp", "1", "--pp", "1", "--ep", "8", "--microbatch", "1",
                     "--recompute", "full", "--format", "json", "--no-cache", "--jobs", "1",
                     *extra]) == 0
        return json.loads(capsys.readouterr().out)["rows"][0]
    assert best("--expert-epilogue", "fused")["compute_time"] < best()["compute_time"]
    with pytest.raises(SystemExit) as bad:          # argparse refuses an unknown choice
        main(["plan", dgx, "--model", "gpt-oss-120b", "--expert-epilogue", "x"])
    assert bad.value.code == 2
