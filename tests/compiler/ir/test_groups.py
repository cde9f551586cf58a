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
