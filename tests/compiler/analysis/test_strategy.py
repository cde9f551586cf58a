"""The strategy analysis: the seed's worked examples, the step formula, overlap and warnings."""

from __future__ import annotations

import pytest

import topoc
from tests.conftest import library_file
from topoc.compiler.analysis.strategy import (analyse, bubble, efficiency, message_time, speedup,
                                     step_time)


def test_seed_example_step_time_and_speedup():
    # 100 s on one GPU; on 4 GPUs 25 s compute + 10 s communication + 5 s waiting.
    total = step_time(25.0, 10.0, 5.0)
    assert total == 40.0
    assert speedup(100.0, total) == 2.5


def test_seed_example_efficiency():
    # 100 s -> 30 s on 4 GPUs: S = 3.33, E = 83.3 %.
    assert speedup(100.0, 30.0) == pytest.approx(3.333, abs=1e-3)
    assert efficiency(100.0, 30.0, 4) == pytest.approx(0.833, abs=1e-3)


@pytest.mark.parametrize("stages, micro, expected", [(1, 8, 0.0), (4, 12, 3 / 15),
                                                     (8, 32, 7 / 39), (4, 1, 3 / 4)])
def test_bubble_formula(stages, micro, expected):
    assert bubble(stages, micro) == pytest.approx(expected)


def test_latency_bound_and_bandwidth_bound_messages():
    alpha, bw = 10e-6, 100e9
    small, large = message_time(alpha, 1024, bw), message_time(alpha, 2**30, bw)
    assert small == pytest.approx(alpha, rel=0.01)            # start-up dominates
    assert large == pytest.approx(2**30 / bw, rel=0.01)       # bandwidth dominates
    # Merging 1,000 small messages into one saves 999 start-ups.
    assert 1000 * message_time(alpha, 1024, bw) > message_time(alpha, 1000 * 1024, bw) * 100


STRATEGY = '''
use "nvidia/dgx_h100.topo"
use "nvidia/links.topo"
group Pod {{
  node[4] : DGXH100
  ib : QM9700
  node[*].nic[*] <-> ib : ndr
}}
system pod : Pod
parallel train on pod {{
  tp = 8  pp = 2  dp = 2
  order = {order}
  microbatches = 8
  compute = {compute}
  baseline = 100 s
  traffic {{
    tp allreduce 16 MiB x 64
    dp allreduce 1 GB
    pp sendrecv 8 MiB x 16
  }}
}}
'''


def test_step_adds_up_and_dp_hides_behind_compute():
    system = topoc.loads(STRATEGY.format(order="tp, dp, pp", compute="4 s"))
    r = analyse(system, "train")
    tp, dp, pp = r.flows
    assert tp.classes == ("nvlink",) and not tp.hidden and dp.hidden
    assert "infiniband" in dp.classes and "infiniband" in pp.classes
    assert r.comm == pytest.approx(tp.per_step + pp.per_step)     # dp fits the backward pass
    assert r.comm_total == pytest.approx(tp.per_step + dp.per_step + pp.per_step)
    assert r.idle == pytest.approx(4.0 * (2 - 1) / 8)
    assert r.total == pytest.approx(4.0 + r.comm + r.idle)
    assert r.t1 == 100.0 and r.bubble == pytest.approx(1 / 9)
    assert not r.warnings


def test_short_compute_exposes_data_parallel_traffic():
    system = topoc.loads(STRATEGY.format(order="tp, dp, pp", compute="1 ms"))
    r = analyse(system, "train")
    tp, dp, pp = r.flows
    window = 2 / 3 * 1e-3
    assert r.comm == pytest.approx(tp.per_step + pp.per_step + dp.per_step - window)


def test_inverted_mapping_is_warned_about():
    system = topoc.loads(STRATEGY.format(order="dp, pp, tp", compute="4 s"))
    r = analyse(system, "train")
    text = "\n".join(r.warnings)
    assert "tp allreduce runs 64 times per step over infiniband" in text
    assert any("leave one NVLink domain" in w for w in r.warnings)      # lint's W501 too


def test_a_line_the_cost_model_refuses_is_warned_about_not_silently_free():
    # a GB200 tray's two Superchips share no link: the dp group cannot run, and the step's
    # "0 s" of communication must say that it leaves the line out
    system = topoc.loads('use "nvidia/gb200_tray.topo"\nsystem t : GB200Tray\n'
                         'parallel train on t {\n  dp = 4\n  traffic { dp allreduce 1 GiB }\n}\n')
    r = analyse(system, "train")
    (dp,) = r.flows
    assert dp.refused and dp.per_step == 0 and "not all linked" in dp.note
    assert any(w.startswith("dp allreduce is not costed (no path from") and
               "totals leave it out" in w for w in r.warnings)


def test_every_kind_of_group_is_costed_and_the_slowest_reported():
    """An H100 node and an A100 node: tp:0 and tp:1 are two kinds; the A100's is slower and
    is the one on the critical path."""
    from topoc.compiler.collectives.coster import cost
    system = topoc.loads('use "nvidia/dgx_h100.topo"\nuse "nvidia/dgx_a100.topo"\n'
                         "group Mixed {\n  h : DGXH100\n  a : DGXA100\n}\nsystem m : Mixed\n"
                         "parallel p on m { tp = 8  dp = 2  traffic { tp allreduce 256 MiB } }\n")
    flow = analyse(system, "p").flows[0]
    h100, a100 = topoc.groups(system, "tp")
    slow = cost(system, a100, "allreduce", 256 * 2**20)
    fast = cost(system, h100, "allreduce", 256 * 2**20)
    assert slow.time > fast.time
    assert flow.cost.time == slow.time and flow.cost.group == "tp:1"
    assert "2 kinds of tp group" in flow.note


@pytest.mark.parametrize("name, defines", [("nvl72_cluster.topo", {"racks": 3}),
                                           ("h100_cluster.topo", {"nodes": 6})])
def test_groups_from_one_period_of_islands_equal_every_group_ranked(name, defines):
    """The first group of each kind read from one residue per island period is the one that
    ranking every group finds (same groups, names and order), for every dimension of a range
    of strategies on the system's GPUs."""
    import itertools

    from topoc.compiler.analysis import strategy as S
    from topoc.compiler.ir.system import ParallelStrategy
    system = topoc.load(library_file(name), defines)
    world, checked = len(system.gpus), 0
    for tp, cp, pp, ep in itertools.product((1, 2, 4, 8, 9), (1, 2, 3), (1, 2, 3, 9), (1, 2)):
        if world % (tp * cp * pp) or (world // pp) % ep:
            continue
        dp = world // (tp * cp * pp)
        sizes = (("tp", tp), ("cp", cp), ("ep", ep), ("dp", dp), ("pp", pp))
        for order in (("tp", "cp", "ep", "dp", "pp"), ("tp", "pp", "dp", "cp", "ep")):
            p = ParallelStrategy("s", sizes, order, 1, ())
            for dim in ("tp", "cp", "dp", "pp", "ep", "edp", "dpcp"):
                fast = S._groups_by_period(system, p, dim)
                assert fast is not None
                raw = S.rank_groups(p, dim)
                kinds = {}
                for i, g in enumerate(raw):
                    kinds.setdefault(S._kind(system, tuple(g)), S.RankGroup(f"{dim}:{i}", tuple(g)))
                assert fast[:2] == (len(raw), len(raw[0]))
                assert list(fast[2].values()) == list(kinds.values()), (p.sizes, order, dim)
                checked += 1
    assert checked > 100


@pytest.mark.parametrize("name", ["pcie_server.topo", "h100_nvl_server.topo", "gb200_tray.topo",
                                  "dgx_h100.topo", "gb200_nvl72.topo", "nvl72_cluster.topo"])
def test_staging_anywhere_is_the_rank_by_rank_answer(name):
    """Whether any island holds two peer-to-peer sets (numpy, once per system) is what asking
    every pair of each island says; where none does, no group has a staged pair."""
    from topoc.compiler.analysis.strategy import _staging_anywhere, staged_pairs
    system = topoc.load(library_file(name))
    loc = system.locality
    pairs = sum(loc.staged(r, q) for isl in loc.island_ranks for r in isl for q in isl if r < q)
    assert _staging_anywhere(system) == (pairs > 0)
    world = staged_pairs(system, tuple(range(len(system.gpus))))
    assert (world[0] if world else 0) == pairs
