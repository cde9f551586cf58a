"""Serving engines' all-reduce rules (compiler/collectives/engines.py) and their kernels'
records (algos/oneshot.py): the rules pick what the engines' source picks, and infer's Comm
with an engine's rule gives the time ``cost_collective`` gives for the algorithm it picked on
the same ranks at the same size (one coster)."""

from __future__ import annotations

from pathlib import Path

import pytest

import topoc
from topoc.compiler.analysis.infer import Comm
from topoc.compiler.collectives import algos, engines
from topoc.compiler.collectives.cost import CostError
from topoc.compiler.collectives.coster import cost_collective
from topoc.compiler.ir.groups import RankGroup

ROOT = Path(__file__).resolve().parents[3]
KIB, MIB = 1024, 1024 * 1024


@pytest.fixture(scope="module")
def dgx():
    return topoc.load(ROOT / "library/nvidia/dgx_h100.topo")


@pytest.mark.parametrize("engine, n, size, want", [
    # TensorRT-LLM's table at 8,192 hidden on Hopper: one-shot to 512 tokens on 2 GPUs, to 128
    # on 4 (256: two-shot), to 32 on 8, NCCL past them; NCCL past the workspace
    ("trtllm", 2, 8 * MIB, "oneshot"), ("trtllm", 2, 16 * MIB, "fastest"),
    ("trtllm", 2, 16_000_001, "fastest"), ("trtllm", 4, 128 * 16 * KIB, "oneshot"),
    ("trtllm", 4, 256 * 16 * KIB, "twoshot"), ("trtllm", 4, 512 * 16 * KIB, "fastest"),
    ("trtllm", 8, 32 * 16 * KIB, "oneshot"), ("trtllm", 8, 64 * 16 * KIB, "fastest"),
    ("trtllm", 16, 16 * KIB, "fastest"),
    # vLLM on Hopper with symmetric memory: the custom all-reduce under 8 MiB on 2 and 4 GPUs,
    # under 256 KiB on 8; multimem past it on 4-8, torch's two-shot on 2; NCCL past 64 MiB
    ("vllm", 2, 4 * MIB, "oneshot"), ("vllm", 4, 512 * KIB - 1, "oneshot"),
    ("vllm", 4, 512 * KIB, "twoshot"), ("vllm", 8, 256 * KIB - 1, "oneshot"),
    ("vllm", 8, 256 * KIB, "multimem"), ("vllm", 8, 8 * MIB, "multimem"),
    ("vllm", 8, 64 * MIB + 4, "fastest"), ("vllm", 2, 9 * MIB, "twoshot"),
    ("vllm", 3, 64 * KIB, "fastest"),
    ("sglang", 8, 128 * KIB, "oneshot"), ("sglang", 8, 256 * KIB, "twoshot"),
    ("sglang", 8, 8 * MIB, "fastest"),
])
def test_rules_as_the_engines_source(engine, n, size, want):
    assert engines.algorithm(engine, "allreduce", n, size, True) == want


@pytest.mark.parametrize("engine, n, size, arch, hidden, want", [
    # Blackwell's table and limits; the hidden size indexes TensorRT-LLM's table
    ("trtllm", 8, 256 * 16 * KIB, engines.BLACKWELL, 8192, "twoshot"),
    ("trtllm", 8, 128 * 16 * KIB, engines.BLACKWELL, 8192, "oneshot"),
    ("trtllm", 8, 64 * 16 * KIB, engines.HOPPER, 8192, "fastest"),
    ("trtllm", 8, 64 * 8 * KIB, engines.HOPPER, 4096, "oneshot"),
    ("trtllm", 8, 16 * 32 * KIB, engines.HOPPER, 16384, "fastest"),   # past the table
    ("vllm", 8, 512 * KIB, engines.BLACKWELL, None, "twoshot"),
    ("vllm", 8, 2 * MIB, engines.BLACKWELL, None, "multimem"),
    ("vllm", 4, 4 * MIB, engines.BLACKWELL, None, "twoshot"),
    ("vllm", 8, 8 * MIB, 1, None, "fastest"),          # Ampere: no symmetric memory
])
def test_rules_by_gpu_generation_and_hidden_size(engine, n, size, arch, hidden, want):
    assert engines.algorithm(engine, "allreduce", n, size, True, arch, hidden) == want


def test_trtllm_fuses_the_norm_into_its_all_reduce():
    assert engines.ENGINES["trtllm"].fused_norm
    assert not engines.ENGINES["vllm"].fused_norm


def test_outside_one_domain_and_other_collectives_go_to_nccl():
    assert engines.algorithm("trtllm", "allreduce", 8, 64 * KIB, False) == "fastest"
    assert engines.algorithm("vllm", "allgather", 8, 64 * KIB, True) == "fastest"


def test_records_are_the_engines_not_nccls():
    for name in ("oneshot", "twoshot", "multimem"):
        assert algos.get(name).owner == "engine"
        assert name in algos.not_nccl()
        assert name in algos.costed("allreduce")


@pytest.mark.parametrize("engine", sorted(engines.ENGINES))
@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("size", [16 * KIB, 768 * KIB, 6 * MIB, 64 * MIB])
def test_infer_and_cost_agree(dgx, engine, n, size):
    ranks = tuple(range(n))
    comm = Comm(dgx, engine)
    picked = comm.algorithm("allreduce", ranks, size)
    assert picked == engines.algorithm(engine, "allreduce", n, size, True)
    one = cost_collective(dgx, RankGroup("allreduce", ranks), "allreduce", size,
                          chooser=picked)
    assert comm.time("allreduce", ranks, size) == one.time
    if picked in ("oneshot", "twoshot", "multimem"):
        assert one.algorithm == picked


def test_oneshot_beats_nccl_on_small_decode_messages(dgx):
    # 8 ranks, 16 tokens x 8,192 hidden x 2 bytes: the engine's kernel has no ring of 14 steps
    ranks, size = tuple(range(8)), 16 * 8192 * 2
    assert Comm(dgx, "trtllm").time("allreduce", ranks, size) < \
        Comm(dgx, "fastest").time("allreduce", ranks, size)


def test_twoshot_moves_a_ring_s_bytes_and_oneshot_n_minus_1_times_them(dgx):
    group = RankGroup("allreduce", tuple(range(8)))
    big = 256 * MIB
    one = cost_collective(dgx, group, "allreduce", big, chooser="oneshot")
    two = cost_collective(dgx, group, "allreduce", big, chooser="twoshot")
    # bandwidth terms: (n - 1) against 2 (n - 1) / n per port, a ratio of n / 2 = 4
    ratio = (one.time - one.latency) / (two.time - two.latency)
    assert ratio == pytest.approx(4.0, rel=1e-6)


def test_across_islands_refused():
    cluster = topoc.load(ROOT / "library/nvidia/h100_cluster.topo")
    ranks = (0, 8)                      # two DGX nodes: two NVLink domains
    with pytest.raises(CostError, match="one NVLink domain"):
        cost_collective(cluster, RankGroup("allreduce", ranks), "allreduce", 4096,
                        chooser="oneshot")
    # infer's Comm with an engine's rule falls back to NCCL there, as the engines do
    comm = Comm(cluster, "trtllm")
    assert comm.algorithm("allreduce", ranks, 4096) == "fastest"
    assert comm.time("allreduce", ranks, 4096) == \
        cost_collective(cluster, RankGroup("allreduce", ranks), "allreduce", 4096,
                        chooser="fastest").time


def test_every_validation_row_runs_a_rule_of_its_release():
    """tests/serving_rows.allreduce_rule: NIM's TensorRT engines and TensorRT-LLM to 1.0 take
    the plugin's rule, its 1.x releases the current table, vLLM's rows the custom all-reduce
    alone; every rule named is a record."""
    import sys
    sys.path.insert(0, str(ROOT))
    from tests import serving_rows as S
    engines_of = {c.engine for c in S.checks()}
    rules = {e: S.allreduce_rule(e) for e in engines_of}
    assert set(rules.values()) <= set(engines.ENGINES)
    assert rules["NIM 1.8.0 (TensorRT-LLM engine)"] == "trtllm-1.0"
    assert rules["TensorRT-LLM (PyTorch backend, ~v0.19/0.20)"] == "trtllm-1.0"
    assert rules["TensorRT-LLM (PyTorch backend, 1.x)"] == "trtllm"
    assert rules["vLLM v0.11.0"] == "vllm-0.11"
