"""Parallel blocks: sizes, auto, order and traffic are checked against the GPU count."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.base.diagnostics import CompileError

from ...conftest import library_file

BASE = 'use "nvidia/devices.topo"\ngroup G { g[16] : H100 }\nsystem s : G\n'


def test_auto_fills_the_remaining_factor():
    system = topoc.loads(BASE + "parallel p on s { tp = 4 pp = 2 dp = auto order = tp, pp }")
    p = system.parallel("p")
    assert dict(p.sizes) == {"tp": 4, "cp": 1, "ep": 1, "dp": 2, "pp": 2}
    assert p.order == ("tp", "pp", "cp", "ep", "dp")


def test_megatron_order_string_and_traffic():
    system = topoc.loads(BASE + 'parallel p on s { tp = 2 cp = 2 dp = 4 order = "tp-cp-ep-dp-pp"\n'
                         "traffic { dp allreduce 1 GiB  tp allgather 8 MiB x 10 } }")
    p = system.parallel("p")
    assert [(f.dim, f.collective, f.bytes, f.count) for f in p.flows] == [
        ("dp", "allreduce", 2**30, 1), ("tp", "allgather", 8 * 2**20, 10)]


def test_product_must_match_world():
    with pytest.raises(CompileError) as info:
        topoc.loads(BASE + "parallel p on s { tp = 8 pp = 4 }")
    assert info.value.diagnostics[0].code == "E302"
    assert "16 GPUs" in info.value.diagnostics[0].message


def test_megatron_documented_example():
    # Megatron-LM's RankGenerator docs: order tp-pp-dp, sizes 2-2-2.
    from topoc.compiler.ir.groups import rank_groups
    text = ('use "nvidia/devices.topo"\ngroup G { g[8] : H100 }\nsystem s : G\n'
            'parallel p on s { tp = 2 pp = 2 dp = 2 order = tp, pp, dp }')
    p = topoc.loads(text).parallel("p")
    assert rank_groups(p, "dp") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert rank_groups(p, "tp") == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert rank_groups(p, "pp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert rank_groups(p, "cp") == [[r] for r in range(8)]


@pytest.mark.parametrize("nodes,dp", [(8, 2), (16, 4), (32, 8)])
def test_megatron_expert_parallelism_splits_the_dense_ranks(nodes, dp):
    """TP=8 PP=4 EP=8 DP=auto: world = tp x dp x pp (EP is no factor), expert groups of 8 inside
    each pipeline stage, and the dense gradient all-reduce over DP stays in the step."""
    from topoc.compiler.ir.groups import rank_groups
    from topoc.compiler.analysis.strategy import analyse
    text = ('use "nvidia/h100_cluster.topo"\nsystem cluster : H100Cluster(nodes = 8)\n' +
            "parallel moe on cluster {\n  tp = 8\n  pp = 4\n  ep = 8\n  dp = auto\n"
            "  order = tp, dp, pp\n  traffic {\n    tp allreduce 16 MiB x 8\n"
            "    ep alltoall 32 MiB x 8\n    edp allreduce 1 GB\n    dp allreduce 2 GB\n  }\n}\n")
    text = text.replace("nodes = 8", f"nodes = {nodes}")
    system = topoc.loads(text)
    p = system.parallel("moe")
    assert p.size("dp") == dp and p.size("ep") == 8 and p.size("edp") == dp
    stage = 8 * nodes // 4                  # ranks per pipeline stage: tp x dp = 8 dp
    for group in rank_groups(p, "ep"):
        assert len(group) == 8 and len({r // (8 * dp) for r in group}) == 1   # one stage
    assert sorted(r for g in rank_groups(p, "ep") for r in g) == list(range(len(system.gpus)))
    assert all(len(g) == dp for g in rank_groups(p, "edp"))
    assert stage == 8 * dp
    report = analyse(system, "moe")
    dense = next(f for f in report.flows if f.dim == "dp")
    assert dense.cost is not None and dense.group_size == dp   # not "groups of one GPU move nothing"


def test_ep_must_divide_the_dense_ranks():
    from topoc.compiler.base.diagnostics import CompileError
    text = ('use "nvidia/links.topo"\nuse "nvidia/devices.topo"\ngroup G { gpu[8] : H100 }\n'
            "system s : G\nparallel p on s { tp = 2  dp = 4  ep = 3 }\n")
    with pytest.raises(CompileError, match="E307"):
        topoc.loads(text)
