"""The algorithm registry (compiler/collectives/algos): every record is well formed and costs a
small and a large message finitely, the time growing with the size, on a bundled system where
it runs; NCCL releases get only the algorithms they had."""

from __future__ import annotations

import functools
import math

import attrs

import pytest

import topoc
from topoc.compiler.collectives import algos
from topoc.compiler.collectives.cost import auto_algorithms
from topoc.compiler.collectives.coster import cost_collective
from topoc.compiler.collectives.tuning import PROTOCOLS
from topoc.compiler.collectives.versions import nccl
from topoc.compiler.ir.groups import RankGroup
from topoc.compiler.ir.system import COLLECTIVES

from ...conftest import LIBRARY, library_file

KiB, MiB, GiB = 2**10, 2**20, 2**30

#: Where each algorithm runs: a bundled file, its parameters and the group's ranks (None: the
#: whole system). A new algorithm needs a line here, or the walk below fails.
WHERE = {
    "ring": ("dgx_h100.topo", {}, None),
    "tree": ("aws_p5.topo", {"nodes": 2}, None),
    "nvls": ("dgx_h100.topo", {}, None),
    "hierarchical": ("aws_p5.topo", {"nodes": 2}, None),
    "direct": ("dgx_h100.topo", {}, None),
    "pairwise": ("dgx_h100.topo", {}, None),
    "nvlstree": ("aws_p5.topo", {"nodes": 2}, None),
    "pat": ("aws_p5.topo", {"nodes": 4}, (0, 8, 16, 24)),     # one GPU per node
    "collnetchain": ("h100_sharp_cluster.topo", {"nodes": 2}, None),
    "oneshot": ("dgx_h100.topo", {}, None),
    "twoshot": ("dgx_h100.topo", {}, None),
    "multimem": ("dgx_h100.topo", {}, None),
}


@functools.lru_cache(maxsize=None)
def system(name: str, defines: tuple):
    return topoc.load(library_file(name), dict(defines))


def test_every_record_is_well_formed():
    assert set(WHERE) == set(algos.REGISTRY), "every algorithm needs a system it runs on"
    for name, a in algos.REGISTRY.items():
        assert a.name == name
        assert a.collectives and set(a.collectives) <= set(COLLECTIVES), name
        assert a.protocols and set(a.protocols) <= set(PROTOCOLS), name
        assert set(a.planned) <= set(a.collectives), name
        assert bool(a.planned) == (a.plan is not None), name
        assert set(a.nccl) <= set(a.collectives), name
        for spans in a.nccl.values():
            for first, until in spans:
                assert first >= (2, 0) and (until is None or until > first), name
        assert a.owner in ("NCCL", "topoc", "engine"), name
        assert (a.owner == "NCCL") or not a.nccl, f"{name}: NCCL never picks another's"


@pytest.mark.parametrize("name", sorted(WHERE))
def test_every_record_costs_small_and_large_messages(name):
    file, defines, ranks = WHERE[name]
    s = system(file, tuple(sorted(defines.items())))
    group = RankGroup("g", ranks or tuple(range(len(s.gpus))))
    for collective in algos.get(name).collectives:
        rows = cost_collective(s, group, collective, [8 * KiB, MiB, GiB], chooser=name)
        times = [r.time for r in rows]
        assert all(r.algorithm == name for r in rows)
        assert all(math.isfinite(t) and t > 0 for t in times), (collective, times)
        assert times == sorted(times) and times[0] < times[-1], (collective, times)
        assert {r.protocol for r in rows} <= set(algos.get(name).protocols)


def test_a_release_gets_only_the_algorithms_it_had():
    """PAT came with NCCL 2.23 (nccl_common.h at v2.23.4-1): a 2.17 or 2.22 measurement never
    gets it; NVLS served reduce-scatter and all-gather in 2.17 and from 2.19, not in 2.18
    (tuning.cc at v2.18.3-1 has rings only there); NVLS-tree came with 2.18, NVLS with 2.17."""
    p5 = system("aws_p5.topo", (("nodes", 4),))
    one_per_node = RankGroup("g", (0, 8, 16, 24))
    for release, pat in (("2.17", False), ("2.22", False), ("2.23", True), ("2.30", True)):
        weighed = auto_algorithms(p5, one_per_node, "allgather", nccl=nccl(release))
        assert ("pat" in weighed) == pat, release
        got = cost_collective(p5, one_per_node, "allgather", GiB, nccl=release)
        assert pat or got.algorithm != "pat"
    dgx = system("dgx_h100.topo", ())
    world = RankGroup("world", tuple(range(8)))
    for release, nvls in (("2.17", True), ("2.18", False), ("2.19", True), ("2.30", True)):
        weighed = auto_algorithms(dgx, world, "reducescatter", nccl=nccl(release))
        assert ("nvls" in weighed) == nvls, release
    assert "nvls" not in auto_algorithms(dgx, world, "allreduce", nccl=nccl("2.16"))
    p5_2 = system("aws_p5.topo", (("nodes", 2),))
    both = RankGroup("world", tuple(range(16)))
    assert "nvlstree" not in auto_algorithms(p5_2, both, "allreduce", nccl=nccl("2.17"))
    assert "nvlstree" in auto_algorithms(p5_2, both, "allreduce", nccl=nccl("2.18"))
    sharp = system("h100_sharp_cluster.topo", (("nodes", 2),))
    world = RankGroup("world", tuple(range(16)))
    assert "collnetchain" not in auto_algorithms(sharp, world, "allreduce", nccl=nccl("2.13"))
    assert "collnetchain" in auto_algorithms(sharp, world, "allreduce", nccl=nccl("2.14"))


def test_an_unknown_release_gets_a_note():
    assert nccl("2.17").note and "2.18" in nccl("2.17").note
    assert nccl("2.10").release == (2, 10)
    assert not nccl("2.18").note and not nccl("2.30").note and not nccl("2.30.7").note
    assert "newer than" in nccl("2.31.2").note and "2.30" in nccl("2.31").note
    with pytest.raises(ValueError):
        nccl("2.9")


def test_the_cost_cli_notes_an_older_release(capsys):
    from topoc.cli import main
    f = str(library_file("dgx_h100.topo"))
    assert main(["cost", f, "--group", "world", "--sizes", "1M", "--nccl", "2.17"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1].startswith("# NCCL 2.17 is older than")
    assert main(["cost", f, "--group", "world", "--sizes", "1M", "--nccl", "2.27"]) == 0
    assert "older than" not in capsys.readouterr().out


def test_a_tiny_ring_all_reduce_does_not_wait_for_its_empty_ll_steps():
    """8 B on 8 GPUs: one chunk of the ring carries data (16-byte chunks from NCCL 2.22, 768 B
    before: 8 bytes for each of 96 threads), so back-to-back calls span n = 8 of the 14 hops; from 128 B every chunk has data
    and every hop counts. NCCL's own choice still charges all 14 (it does not know), and the
    time never falls as the size grows."""
    from topoc.compiler.collectives.algos import ring
    from topoc.compiler.collectives.cost import options, profile

    s = system("dgx_h100.topo", ())
    world = RankGroup("world", tuple(range(8)))
    p = profile(s, world, "allreduce", "ring")
    assert [ring.data_chunks(p, 8, b) for b in (8, 16, 32, 64, 128, 1 * KiB)] == \
        [1, 1, 2, 4, 8, 8]
    old = attrs.evolve(p, nccl=nccl("2.21"))
    assert [ring.data_chunks(old, 8, b) for b in (8, 1 * KiB, 4 * KiB, 8 * KiB)] == [1, 2, 6, 8]
    hop = (ring.chain_latency(p, "allreduce", 8, 0) - ring.tree_hops(p, "ring", 0)[0]) / 14
    assert ring.idle(p, "allreduce", 8, 8, 0) == pytest.approx(6 * hop)
    assert ring.idle(p, "allreduce", 8, 1 * KiB, 0) == 0.0
    assert ring.idle(p, "allreduce", 8, 8, 2) == 0.0           # Simple steps synchronise
    assert ring.idle(p, "reducescatter", 8, 8, 0) == 0.0
    two = profile(s, RankGroup("pair", (0, 1)), "allreduce", "ring")
    assert ring.idle(two, "allreduce", 2, 8, 0) == 0.0          # 2(n-1) = n: nothing to skip
    ll = {b: next((t, c) for t, c in options(p, world, "allreduce", b) if c.protocol == "LL")
          for b in (8, 1 * KiB)}
    assert ll[1 * KiB][1].time - ll[8][1].time > 5 * hop * 1e-6
    assert ll[1 * KiB][0] - ll[8][0] < 1e-6                     # NCCL's charge: the same hops
    times = [next(c for _, c in options(p, world, "allreduce", b) if c.protocol == "LL").time
             for b in range(8, 1100, 4)]
    assert times == sorted(times)


@pytest.mark.parametrize("path", sorted(p for p in LIBRARY.rglob("*.topo")
                                        if "\nsystem " in p.read_text())[::2],
                         ids=lambda p: p.name)
def test_hosts_from_the_labels_are_the_host_searches(path):
    """``base.hosts`` counts the GPUs' host parts from the locality's labels; a search over
    the host links from each GPU counts the same, for the world and for its first half."""
    from topoc.compiler.collectives.algos import base
    system = topoc.load(path)
    for ranks in (range(len(system.gpus)), range(len(system.gpus) // 2)):
        assert base.hosts(system, list(ranks)) == base.hosts_by_search(system, ranks)
