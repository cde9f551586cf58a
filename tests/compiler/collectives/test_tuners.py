"""Provider tuner tables (tuners.py), NCCL's own choice with the plugin's declared latency, and
the p4d/p4de transport: each checked against what it must change in ``auto``."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.collectives import tuners
from topoc.compiler.collectives.cost import CostError
from topoc.compiler.collectives.coster import cost
from topoc.compiler.ir.groups import RankGroup

from ...conftest import library_file

MiB, GiB = 2**20, 2**30
ALL = {(a, p) for a in ("ring", "tree", "nvlstree") for p in ("LL", "LL128", "Simple")}


def world(system) -> RankGroup:
    return RankGroup("world", tuple(range(len(system.gpus))))


def test_regions_are_read_in_log_space_edges_included():
    square = [(1, 1), (1024, 1), (1024, 1024), (1, 1024)]
    assert tuners.inside((32, 32), square)
    assert tuners.inside((1024, 32), square)            # on an edge counts, as in the plugin
    assert not tuners.inside((4096, 32), square)
    assert not tuners.inside((32, 4096), square)


@pytest.mark.parametrize("size, ranks, expected", [
    (32 * MiB, 64, ("tree", "LL128")),       # 8 p5 nodes: a tree up to 112 MiB
    (256 * MiB, 64, ("ring", "LL128")),      # then a ring in LL128 ...
    (8 * GiB, 64, ("ring", "Simple")),       # ... and in Simple from about 2.5 GB
    (256 * MiB, 256, ("tree", "LL128")),     # 32 nodes: a tree up to 288 MiB
    (8 * GiB, 256, ("nvlstree", "Simple")),
])
def test_the_p5_table_picks_as_aws_ofi_nccl_does(size, ranks, expected):
    assert tuners.choice("aws_p5", "allreduce", size, ranks, ranks // 8, ALL) == expected


def test_the_tuner_leaves_two_nodes_other_layouts_and_collectives_to_nccl():
    assert tuners.choice("aws_p5", "allreduce", 32 * MiB, 16, 2, ALL) is None
    assert tuners.choice("aws_p5", "allreduce", 32 * MiB, 32, 8, ALL) is None     # 4 per node
    assert tuners.choice("aws_p5", "allgather", 32 * MiB, 64, 8, ALL) is None
    # a region whose combination NCCL cannot run here is skipped, as NCCL's table marks it
    assert tuners.choice("aws_p5", "allreduce", 32 * MiB, 64, 8, ALL - {("tree", "LL128")}) \
        is None


def test_auto_on_p5_follows_the_tuner_and_a_named_protocol_turns_it_off():
    p5 = topoc.load(library_file("aws_p5.topo"), {"nodes": 8})
    got = cost(p5, world(p5), "allreduce", 256 * MiB)
    assert (got.algorithm, got.protocol) == ("ring", "LL128")
    named = cost(p5, world(p5), "allreduce", 256 * MiB, protocol="Simple")
    assert named.protocol == "Simple"


def test_a_tuner_name_is_checked_by_the_language(tmp_path):
    from topoc.compiler.base.diagnostics import CompileError
    text = ('use "links.topo"\nuse "devices.topo"\n'
            'device N : nic { rate = 100 Gb/s  tuner = "aws_p55" }\n'
            'group G { gpu : H100  nic : N  gpu <-> nic : pcie5 }\nsystem s : G\n')
    with pytest.raises(CompileError) as caught:
        topoc.compile(text, library_file("links.topo").parent / "t.topo")
    assert "E200" in str(caught.value.diagnostics[0]) and "aws_p5" in str(
        caught.value.diagnostics[0])


def test_nccl_chooses_without_seeing_the_fitted_transport_costs():
    """32 p5 nodes, all-gather of 32 MiB: no tuner table, so NCCL's model chooses; with the
    plugin's declared 75 us per network step it takes LL128, not LL (which the fitted EFA
    costs alone would make look fastest)."""
    p5 = topoc.load(library_file("aws_p5.topo"), {"nodes": 32})
    got = cost(p5, world(p5), "allgather", 32 * MiB)
    assert (got.algorithm, got.protocol) == ("ring", "LL128")
    ll = cost(p5, world(p5), "allgather", 32 * MiB, "ring", "LL")
    assert ll.time < got.time                # what auto would have named before


def test_p4de_runs_simple_only_across_nodes():
    """aws-ofi-nccl sets NCCL_PROTO=simple on p4d/p4de (platform-aws.c)."""
    p4de = topoc.load(library_file("aws_p4de.topo"), {"nodes": 2})
    small = cost(p4de, world(p4de), "allreduce", 8)
    assert small.protocol == "Simple"
    with pytest.raises(CostError, match="efa_sendrecv transport runs only Simple"):
        cost(p4de, world(p4de), "allreduce", 8, "tree", "LL")
    one = topoc.load(library_file("aws_p4de.topo"), {"nodes": 1})
    assert cost(one, world(one), "allreduce", 8).protocol == "LL"    # inside a node: NVLink
