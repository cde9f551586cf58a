"""NCCL's tuning rules as compiler/collectives/tuning.py and versions.py read them from
tuning.cc: the ring LL share by release and the LL ceiling in one node."""

from __future__ import annotations

import attrs
import pytest

import topoc
from topoc.compiler.collectives import cost as cost_model
from topoc.compiler.collectives.algos import ring
from topoc.compiler.collectives.tuning import ll_cap
from topoc.compiler.collectives.versions import nccl
from topoc.compiler.ir.groups import RankGroup

from ...conftest import library_file

MiB = 2**20


def ring_profile(name: str, ranks: int, release: str, **defines):
    system = topoc.load(library_file(name), defines)
    group = RankGroup("g", tuple(range(ranks)))
    return cost_model.profile(system, group, "allreduce", "ring", nccl=nccl(release))


@pytest.mark.parametrize("release, share", [("2.18", None), ("2.19", None), ("2.20.5", None),
                                            ("2.21", 0.5), ("2.27.7", 0.5), ("2.30", 0.5)])
def test_ring_ll_share_follows_the_release(release, share):
    """tuning.cc: ``busBw * 1.0/4.0`` (1/3 for one-node gathers) up to v2.20.5-1, ``busBw * .5``
    from v2.21.5-1."""
    assert nccl(release).ring_ll_share == share


def test_ring_ll_doubles_from_2_21_where_no_ceiling_binds():
    """One HGX H100, 1 MiB: the same routed bandwidth, half of it for LL from 2.21 where up to
    2.20 a quarter (and the 2.18-2.20 per-channel ceiling is off, to compare the shares)."""
    old = ring_profile("dgx_h100.topo", 8, "2.20")
    old = attrs.evolve(old, nccl=attrs.evolve(old.nccl, ll_channel_cap=False,
                                              ll_max_hopper=(1e9, 1e9, 1e9)))
    new = ring_profile("dgx_h100.topo", 8, "2.21")
    new = attrs.evolve(new, nccl=attrs.evolve(new.nccl, ll_max_hopper=(1e9, 1e9, 1e9)))
    raw = 100.0
    assert ring.pipelined_bus(new, "allreduce", 8, MiB, 0, raw) == pytest.approx(
        2 * ring.pipelined_bus(old, "allreduce", 8, MiB, 0, raw))


def test_ll_ceiling_in_one_node_is_the_gpus():
    assert ll_cap(ring_profile("dgx_h100.topo", 8, "2.27")) == 141.0
    assert ll_cap(ring_profile("dgx_h100.topo", 8, "2.18")) == 87.7
    assert ll_cap(ring_profile("dgx_a100.topo", 8, "2.27")) == 87.7
