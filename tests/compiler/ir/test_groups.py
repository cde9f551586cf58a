"""Rank groups by name: ``world`` is one group of every GPU through both entry points."""
from __future__ import annotations

import pytest

import topoc
from topoc.compiler.ir.groups import GroupError, select_group


@pytest.fixture(scope="module")
def node():
    return topoc.load("library/nvidia/dgx_h100.topo")


def test_world_is_one_group_of_every_gpu(node):
    (world,) = topoc.groups(node, "world")
    assert world.name == "world" and world.ranks == tuple(range(len(node.gpus)))
    assert select_group(node, "world:0").ranks == world.ranks


def test_world_has_no_second_group_and_typos_suggest_it(node):
    with pytest.raises(GroupError, match="world has one group"):
        select_group(node, "world:1")
    with pytest.raises(GroupError, match="did you mean 'world'"):
        select_group(node, "wrld")


def test_every_family_of_groups_is_translates_of_its_first():
    """group_translates gives rank_groups' groups, in order, for every dimension of strategies
    with sizes 1..3 in a few orders (dense, expert and the joint dp x cp groups)."""
    import itertools

    from topoc.compiler.ir.groups import group_translates, rank_groups
    from topoc.compiler.ir.system import ParallelStrategy
    checked = 0
    for tp, cp, dp, pp, ep in itertools.product((1, 2, 3), (1, 2), (1, 2, 3), (1, 2), (1, 2)):
        if (tp * cp * dp) % ep:
            continue
        for order in (("tp", "cp", "ep", "dp", "pp"), ("tp", "pp", "dp", "cp", "ep"),
                      ("pp", "dp", "cp", "ep", "tp")):
            sizes = (("tp", tp), ("cp", cp), ("ep", ep), ("dp", dp), ("pp", pp))
            p = ParallelStrategy("s", sizes, order, 1, ())
            for dim in ("tp", "cp", "dp", "pp", "ep", "edp", "dpcp"):
                first, offsets = group_translates(p, dim)
                want = rank_groups(p, dim)
                assert [[int(f) + o for o in offsets] for f in first] == want, (p, dim)
                checked += 1
    assert checked > 500
