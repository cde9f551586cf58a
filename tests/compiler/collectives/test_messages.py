"""The network's message pipeline (messages.py): EFA's per-message costs, counted per algorithm
as NCCL's proxy hands messages to aws-ofi-nccl, and the chunk rules read from NCCL."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.collectives import algos, messages, transports
from topoc.compiler.collectives.cost import profile
from topoc.compiler.collectives.coster import cost
from topoc.compiler.collectives.tuning import PROTOCOLS
from topoc.compiler.ir.groups import RankGroup

from ...conftest import library_file

MiB, GiB = 2**20, 2**30


def p5(nodes: int):
    return topoc.load(library_file("aws_p5.topo"), {"nodes": nodes})


def world(system) -> RankGroup:
    return RankGroup("world", tuple(range(len(system.gpus))))


def test_nccl_tree_ll128_chunk_rule():
    """enqueue.cc: halve the 614,400-byte LL128 step while a channel gets fewer than
    nstepsLL128 x 64 / ppn chunks (to 128 KiB), then x 16 / ppn (to 32 KiB)."""
    # integer division, as NCCL's: 268435456 // (16 x 307200) = 54 < 54.4, so halved once more
    assert messages._tree_ll128_chunk(256 * MiB, 16, 32, 8) == 153600 * 120 / 128
    assert messages._tree_ll128_chunk(32 * MiB, 16, 8, 8) == 76800 * 120 / 128
    assert messages._tree_ll128_chunk(8 * GiB, 16, 32, 8) == 614400 * 120 / 128


def test_nccl_nvls_tree_chunk_rule_with_the_plugins_settings():
    efa, ib = transports.TRANSPORTS["efa"], transports.TRANSPORTS["ib"]
    # aws-ofi-nccl sets NCCL_NVLS_CHUNKSIZE and NCCL_NVLSTREE_MAX_CHUNKSIZE to 512 KiB
    assert messages._nvls_tree_chunk(8 * GiB, 128, 32, efa) == 512 * 1024
    assert messages._nvls_tree_chunk(256 * MiB, 128, 2, efa) == 128 * 1024
    # NCCL's own defaults: 128 KiB, at most 64 KiB from four nodes
    assert messages._nvls_tree_chunk(8 * GiB, 128, 4, ib) == 65536
    assert messages._nvls_tree_chunk(8 * GiB, 128, 2, ib) == 128 * 1024


def test_infiniband_pays_nothing_per_message():
    h100 = topoc.load(library_file("h100_cluster.topo"), {"nodes": 4})
    p = profile(h100, world(h100), "allgather", "ring")
    assert algos.pipeline_seconds(p, "allgather", 32, 32 * MiB, 1) == 0.0


def test_small_ring_messages_are_gap_bound_on_efa():
    """32 p5 nodes, 32 MiB all-gather in LL128: 8 KiB a channel a step, 255 steps, each no
    sooner than the gap after the last; at 2 GiB the messages are 512 KiB and the gap hides
    behind their wire time and per-message work."""
    system = p5(32)
    p = profile(system, world(system), "allgather", "ring")
    efa = transports.TRANSPORTS["efa"]
    small = algos.pipeline_seconds(p, "allgather", 256, 32 * MiB, PROTOCOLS.index("LL128"))
    assert small == pytest.approx(255 * efa.gap_us * 1e-6)
    got = cost(system, world(system), "allgather", 32 * MiB)
    assert (got.algorithm, got.protocol) == ("ring", "LL128")
    assert got.time == pytest.approx(got.latency + small)
    big = algos.pipeline_seconds(p, "allgather", 256, 2 * GiB, PROTOCOLS.index("LL128"))
    wire = 512 * 1024 / (p.nic_bytes_per_s / 2)
    assert big == pytest.approx(255 * (efa.msg_us * 1e-6 + wire))


def test_one_set_of_efa_costs_fits_all_reduce_and_all_gather_rings():
    """The old per-step cost wanted 50 us a step for the all-reduce rings and 120 us for the
    all-gather rings; the per-message costs give both (crazyguitar/aws-gpu-communication-
    benchmark, NCCL 2.27.7: 8 nodes 256 MiB all-reduce 232.09 GB/s, 32 nodes 32 MiB and
    256 MiB all-gather 12.38 and 86.30 GB/s)."""
    ring = cost(p5(8), world(p5(8)), "allreduce", 256 * MiB, nccl="2.27")
    assert ring.busbw / 232.09e9 == pytest.approx(1, abs=0.05)
    for size, published in ((32 * MiB, 12.38e9), (256 * MiB, 86.30e9)):
        gather = cost(p5(32), world(p5(32)), "allgather", size, nccl="2.27")
        assert gather.busbw / published == pytest.approx(1, abs=0.15), size


def test_tree_messages_bound_the_32_node_all_reduce():
    """aws-ofi-nccl's tuner runs tree LL128 at 256 MiB on 256 ranks: 117 chunks of 153,600
    bytes of lines a channel (NCCL's chunk rule; 144,000 of data), three messages each at an
    island inside the tree (published 137.99 GB/s; the links alone gave +71 %)."""
    got = cost(p5(32), world(p5(32)), "allreduce", 256 * MiB, nccl="2.27")
    assert (got.algorithm, got.protocol) == ("tree", "LL128")
    assert got.busbw / 137.99e9 == pytest.approx(1, abs=0.10)


def test_all_to_all_peers_cost_the_proxy_their_message_work():
    """32 p5 nodes, 32 MiB all-to-all: 248 peers on other nodes, 128 KiB each; the GPU's proxy
    serves them one after another (published 19.72 GB/s; the links alone gave -50 %)."""
    system = p5(32)
    efa = transports.TRANSPORTS["efa"]
    p = profile(system, world(system), "alltoall", "direct")
    bound = algos.pipeline_seconds(p, "alltoall", 256, 32 * MiB, 2)
    per_peer = 32 * MiB / 256
    assert bound == pytest.approx(248 * (efa.msg_us * 1e-6 + per_peer / (
        p.nic_bytes_per_s * efa.p2p_efficiency)))
    got = cost(system, world(system), "alltoall", 32 * MiB, nccl="2.27")
    assert got.time == pytest.approx(got.latency + bound)
    assert got.busbw / 19.72e9 == pytest.approx(1, abs=0.20)


@pytest.mark.parametrize("algorithm,protocol", [("tree", "LL128"), ("tree", "LL"),
                                                ("ring", "LL128"), ("ring", "Simple")])
def test_a_larger_message_never_finishes_sooner(algorithm, protocol):
    """h100_cluster, 256 ranks: fewer channels and the tree correction factor made a 4 MiB
    tree LL128 all-reduce (165 us) finish before a 2 MiB one (185 us)."""
    h100 = topoc.load(library_file("h100_cluster.topo"), {"nodes": 32})
    times = [cost(h100, world(h100), "allreduce", 2**k, algorithm, protocol).time
             for k in range(10, 28)]
    assert all(b >= a for a, b in zip(times, times[1:])), times


def test_nvls_fill_follows_nccls_chunk_rule_on_one_host():
    """NVLS on 8 H100s: 16 channels x 8 heads; NCCL's chunk is 32 KiB at 16 MiB, 64 KiB at
    256 MiB and 128 KiB from 1 GiB (enqueue.cc), and the pipeline's first reduce and last
    broadcast run alone: two loops of channels x heads x chunk (published 16 MiB: 124.0 us;
    without the fill 90.3, -27 %)."""
    from topoc.compiler.collectives.algos import bus_gbs, fill_seconds as nvls_fill_seconds
    from topoc.compiler.collectives.tuning import nvls_chunk
    assert [nvls_chunk(s, 128) for s in (16 * MiB, 256 * MiB, GiB)] == [32768, 65536, 131072]
    dgx = topoc.load(library_file("dgx_h100.topo"))
    p = profile(dgx, world(dgx), "allreduce", "nvls")
    bus = bus_gbs(p, "allreduce", 8, 16 * MiB, 2) * 1e9
    fill = nvls_fill_seconds(p, "allreduce", 8, 16 * MiB)
    assert fill == pytest.approx(2 * 128 * 32768 * 1.75 / bus)
    got = cost(dgx, world(dgx), "allreduce", 16 * MiB)
    assert got.algorithm == "nvls"
    assert got.time == pytest.approx(got.latency + 16 * MiB * 1.75 / bus + fill)
    assert got.time / 124.0e-6 == pytest.approx(1, abs=0.10)
    rack = topoc.load(library_file("gb200_nvl72.topo"))
    q = profile(rack, world(rack), "allreduce", "nvls")
    assert q.hosts > 1 and nvls_fill_seconds(q, "allreduce", 72, GiB) == 0.0
