"""The router: its one- and two-hop shortcut agrees with the full least-cost search."""

import itertools

import pytest

import topoc
from topoc.compiler.route import Router

LIB = "library/nvidia"


@pytest.mark.parametrize("name", ["dgx_h100", "gb200_nvl72", "pcie_server", "dgx_a100"])
def test_shortcut_matches_dijkstra(name):
    system = topoc.load(f"{LIB}/{name}.topo")
    fast, slow = Router(system), Router(system)
    slow._short = lambda *args: None          # force the full search
    ids = [g.id for g in system.gpus][:12] + [d.id for d in system.devices
                                              if d.kind in ("nic", "switch")][:4]
    checked = 0
    for (a, b), bucket in itertools.product(itertools.permutations(ids, 2), (0, 5)):
        assert fast.path(a, b, bucket) == slow.path(a, b, bucket)
        checked += 1
    assert checked > 100
