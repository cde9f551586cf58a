"""A collective never gets faster as its size grows: for every algorithm and protocol the
coster prices (forced by name and protocol), on bundled systems of one node, several nodes and
several multi-host NVLink racks; and the world all-reduce NCCL would run across 128 NVL72 racks
(issue 45: its ring ran 384 MiB faster than 256 MiB, and 1 to 8 GiB in the same time)."""

from __future__ import annotations

import functools

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import topoc
from topoc.compiler.collectives import algos
from topoc.compiler.collectives.coster import Coster, sweep
from topoc.compiler.collectives.cost import CostError
from topoc.compiler.ir.groups import RankGroup

from ...conftest import library_file

#: One node, four EFA nodes (a net plugin's message pipeline), three NVL72 racks.
SYSTEMS = (("dgx_h100.topo", ()), ("aws_p5.topo", (("nodes", 4),)),
           ("nvl72_cluster.topo", (("racks", 3),)))
COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce")
CASES = [(c, a, p) for c in COLLECTIVES for a in algos.costed(c)
         for p in algos.get(a).protocols]


@functools.lru_cache(maxsize=None)
def load(name: str, defines: tuple):
    return topoc.load(library_file(name), dict(defines))


@functools.lru_cache(maxsize=None)
def prepared(system_index: int, collective: str, algorithm: str, protocol: str):
    """The coster of one forced algorithm and protocol on a system's whole world (None where
    the model refuses it: NVLS across nodes, a protocol the transport lacks, ...)."""
    system = load(*SYSTEMS[system_index])
    group = RankGroup("world", tuple(range(len(system.gpus))))
    try:
        return Coster(system, group, collective, algorithm, protocol)
    except CostError:
        return None


@given(st.integers(0, len(SYSTEMS) - 1), st.sampled_from(CASES),
       st.integers(1, 2**34), st.integers(1, 2**34))
def test_time_never_falls_as_size_grows(system_index, case, a, b):
    at = prepared(system_index, *case)
    assume(at is not None)
    small, large = sorted((a, b))
    try:
        t_small, t_large = at(small).time, at(large).time
    except CostError:
        assume(False)
    assert t_large >= t_small * (1 - 1e-12), (SYSTEMS[system_index], case, small, large,
                                              t_small, t_large)


@pytest.mark.parametrize("case", [("allreduce", "ring", "LL"), ("allreduce", "tree", "Simple"),
                                  ("allreduce", "tree", "LL128"),
                                  ("allgather", "ring", "Simple")])
def test_just_under_a_power_of_two_is_not_slower(case):
    """The steps of the size-dependent refinements (channels, the tree correction) sit at
    powers of two and thresholds: the size one byte under each is weighed."""
    at = prepared(2, *case)
    assert at is not None
    for k in range(13, 35):
        assert at(2**k - 1).time <= at(2**k).time * (1 + 1e-12), (case, k)


def test_world_all_reduce_across_128_racks():
    """NCCL's choice across 128 NVL72 racks: a tree where the ring's per-rank latency
    dominates (9,216 ranks), every size no faster than the one before."""
    system = topoc.load(library_file("nvl72_fourtier.topo"), {"racks": 128})
    group = RankGroup("world", tuple(range(len(system.gpus))))
    sizes = [2**k for k in range(20, 34)] + [256 * 2**20, 384 * 2**20]
    sizes.sort()
    rows = sweep(system, group, "allreduce", sizes)
    times = [r.time for r in rows]
    assert times == sorted(times), [(r.size, r.algorithm, r.protocol, r.time) for r in rows]
    one_gib = rows[sizes.index(2**30)]
    assert one_gib.algorithm == "tree"
    ring = sweep(system, group, "allreduce", [2**30], "ring")[0]
    assert ring.time > 4 * one_gib.time     # the ring's 18,430 steps at 0.6-3.4 us each
