"""The transports and the net plugin's releases (transports.py): what aws-ofi-nccl set on p5 in
each release (its NCCL settings, its tuner), as the cost model reads them."""

from __future__ import annotations

import pytest

import topoc
from topoc.cli import main
from topoc.compiler.collectives import messages, transports
from topoc.compiler.collectives.cost import CostError
from topoc.compiler.collectives.coster import cost
from topoc.compiler.collectives.transports import UnknownPlugin, plugin_release, with_plugin
from topoc.compiler.collectives.versions import nccl
from topoc.compiler.ir.groups import RankGroup

from ...conftest import library_file

MiB, GiB = 2**20, 2**30
EFA = transports.TRANSPORTS["efa"]


def p5(nodes: int):
    return topoc.load(library_file("aws_p5.topo"), {"nodes": nodes})


def world(system) -> RankGroup:
    return RankGroup("world", tuple(range(len(system.gpus))))


@pytest.mark.parametrize("text, expected", [("1.7.3", (1, 7, 3)), ("v1.7.3-aws", (1, 7, 3)),
                                            ("1.16", (1, 16)), ("v1.19.2", (1, 19, 2))])
def test_plugin_releases_are_read_as_their_tags_spell_them(text, expected):
    assert plugin_release(text) == expected


@pytest.mark.parametrize("text", ["1", "0.9", "one.two", "1.6.0"])
def test_unknown_plugin_releases_are_refused(text):
    with pytest.raises(UnknownPlugin):
        plugin_release(text)


def test_the_latest_release_is_the_transport_as_it_stands():
    assert with_plugin(EFA, None) is EFA and with_plugin(EFA, "latest") is EFA
    assert attrs_equal(with_plugin(EFA, "1.16.3"), EFA)


def attrs_equal(a, b) -> bool:
    """Equal but for the recorded release."""
    import attrs
    return attrs.evolve(a, plugin="") == attrs.evolve(b, plugin="")


def test_aws_ofi_nccl_1_7_ran_nccls_defaults_and_no_tuner():
    """v1.7.3-aws's platform-aws.c sets none of NCCL_BUFFSIZE, the chunk sizes or
    NCCL_NVLSTREE_MAX_CHUNKSIZE, and the tuner arrived in v1.8.0-aws."""
    old = with_plugin(EFA, "1.7.3")
    assert (old.buffsize, old.p2p_chunk, old.nvls_chunk, old.nvls_tree_max_chunk) == \
        (4 * MiB, 128 * 1024, 128 * 1024, 0)
    assert not old.tuner and old.plugin == "1.7.3"
    # the per-message figures are the transport's, not the release's
    assert (old.msg_us, old.gap_us, old.op_us) == (EFA.msg_us, EFA.gap_us, EFA.op_us)


def test_aws_ofi_nccl_1_8_adds_the_tuner_and_the_nvls_tree_cap_then_1_16_the_buffers():
    mid = with_plugin(EFA, "1.8.1")
    assert mid.tuner and mid.nvls_tree_max_chunk == 512 * 1024 and mid.buffsize == 4 * MiB
    assert with_plugin(EFA, "1.16.0").buffsize == 8 * MiB


def test_other_transports_do_not_change_with_the_plugin():
    for name in ("ib", "efa_sendrecv", "tcpxo"):
        t = transports.TRANSPORTS[name]
        assert with_plugin(t, "1.7.3") is t


def test_nvls_tree_chunk_by_nccl_release():
    """2.18 starts from the Simple step (NCCL_BUFFSIZE / 8) with no cap; 2.19.3 caps it at 64
    KiB from four nodes (2.19.1 does not; a bare 2.19 is taken as its last patch); from 2.20.3
    NCCL_NVLSTREE_MAX_CHUNKSIZE (which the plugin sets from 1.8) replaces that cap; from 2.21
    it starts from NCCL_NVLS_CHUNKSIZE (enqueue.cc at each tag).
    Releases compare as tuples: 2.20 sits inside the 2.19 profile and still gets its rule."""
    old, v18 = with_plugin(EFA, "1.7.3"), with_plugin(EFA, "1.8")
    # 16 channels x 8 heads: 1 GiB < 32 x 128 x 512 KiB = 2 GiB, so 256 KiB; 2 GiB keeps 512
    assert messages._nvls_tree_chunk(GiB, 128, 2, old, (2, 18)) == 256 * 1024
    assert messages._nvls_tree_chunk(2 * GiB, 128, 2, old, (2, 18, 5)) == 512 * 1024
    assert messages._nvls_tree_chunk(8 * GiB, 128, 4, old, (2, 18)) == 512 * 1024
    assert messages._nvls_tree_chunk(8 * GiB, 128, 4, old, (2, 19)) == 64 * 1024
    # the cap arrived in v2.19.3-1: v2.19.1-1's enqueue.cc has none (NVIDIA/nccl#1112)
    assert messages._nvls_tree_chunk(8 * GiB, 128, 4, old, (2, 19, 1)) == 512 * 1024
    assert messages._nvls_tree_chunk(8 * GiB, 128, 4, old, (2, 19, 3)) == 64 * 1024
    assert messages._nvls_tree_chunk(8 * GiB, 128, 4, v18, (2, 19, 4)) == 64 * 1024
    assert messages._nvls_tree_chunk(8 * GiB, 128, 4, v18, (2, 20, 3)) == 512 * 1024
    assert messages._nvls_tree_chunk(8 * GiB, 128, 4, old, (2, 21)) == 64 * 1024
    assert messages._nvls_tree_chunk(8 * GiB, 128, 4, EFA, (2, 27)) == 512 * 1024
    assert nccl("2.20.5").release == (2, 20, 5) and nccl("2.20.5").version == "2.19"


def test_the_tuner_runs_only_where_the_plugin_ships_it_and_nccl_loads_it():
    """On 4 p5 nodes at 256 MiB aws-ofi-nccl's table names ring LL128 (tuners.py); NCCL's own
    model a tree. Plugin 1.7.3 had no tuner; NCCL loads tuners from 2.19."""
    s = p5(4)
    assert cost(s, world(s), "allreduce", 256 * MiB, nccl="2.27").algorithm == "ring"
    assert cost(s, world(s), "allreduce", 256 * MiB, nccl="2.27",
                plugin="1.7.3").algorithm == "tree"
    assert cost(s, world(s), "allreduce", 256 * MiB, nccl="2.18").algorithm == "tree"
    assert cost(s, world(s), "allreduce", 256 * MiB, nccl="2.27",
                plugin="1.8.1").algorithm == "ring"


def test_nccls_default_buffers_cost_a_simple_ring_more_messages():
    """With NCCL_BUFFSIZE 4 MiB (before v1.16.0) a Simple ring step is 512 KiB, not 1 MiB: twice
    the messages, each paying its per-message work."""
    s = p5(4)
    new = cost(s, world(s), "allreduce", 2 * GiB, "ring", "Simple", nccl="2.27")
    old = cost(s, world(s), "allreduce", 2 * GiB, "ring", "Simple", nccl="2.27", plugin="1.7.3")
    assert old.time > new.time * 1.05


def test_an_unknown_plugin_is_a_cost_error_and_a_usage_error(capsys):
    s = p5(2)
    with pytest.raises(CostError, match="1.7"):
        cost(s, world(s), "allreduce", MiB, plugin="0.9")
    assert main(["cost", str(library_file("aws_p5.topo")), "-D", "nodes=2", "--group", "world",
                 "--sizes", "1MiB", "--net-plugin", "banana"]) == 2
    err = capsys.readouterr().err
    assert "--net-plugin" in err and "Traceback" not in err


def test_the_cli_names_the_plugin_release(capsys):
    assert main(["cost", str(library_file("aws_p5.topo")), "-D", "nodes=4", "--group", "world",
                 "--sizes", "256MiB", "--nccl", "2.27", "--net-plugin", "1.7.3"]) == 0
    out = capsys.readouterr().out
    assert "aws-ofi-nccl 1.7.3" in out and "tree" in out
