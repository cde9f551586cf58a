"""Parallel blocks: sizes, auto, order and traffic are checked against the GPU count."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.diagnostics import CompileError

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
    from topoc.compiler.ranks import rank_groups
    text = ('use "nvidia/devices.topo"\ngroup G { g[8] : H100 }\nsystem s : G\n'
            'parallel p on s { tp = 2 pp = 2 dp = 2 order = tp, pp, dp }')
    p = topoc.loads(text).parallel("p")
    assert rank_groups(p, "dp") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert rank_groups(p, "tp") == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert rank_groups(p, "pp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert rank_groups(p, "cp") == [[r] for r in range(8)]
