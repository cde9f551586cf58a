"""compiler.training.ep_overlap: Megatron-Core's EP A2A overlap runs only where Megatron-Core
accepts it, hides only the paired passes' all-to-alls up to their compute segments, costs SMs,
and is reachable from the command line, a parallel block and Training."""

from __future__ import annotations

import json
import attrs
import pytest

import topoc
from topoc.cli import main
from topoc.compiler.analysis.strategy import ep_exposed
from topoc.compiler.lang.derive import bundled_models
from topoc.compiler.training import ep_overlap
from topoc.compiler.training.compute import Compute
from topoc.compiler.training.model import Shape, Training, check, stage_layout, traffic

from ...conftest import LIBRARY

MOE = bundled_models()["deepseek_moe_16b"]


@pytest.mark.parametrize("shape, options, expected", [
    (Shape(ep=8, dp=8), {}, True),                                  # no pipeline
    (Shape(ep=8, dp=8, pp=2), {"interleave": 2}, True),             # interleaved
    (Shape(ep=8, dp=8, pp=2), {}, False),                           # 1F1B: Megatron refuses
    (Shape(ep=8, dp=8, pp=2), {"dualpipe": True}, True),            # DualPipe pairs chunks
    (Shape(ep=8, dp=8), {"recompute": "full"}, False),              # full recompute
    (Shape(dp=8), {}, False),                                       # no expert parallelism
])
def test_the_overlap_runs_only_where_megatron_core_accepts_it(shape, options, expected):
    t = Training(MOE, 64, ep_overlap=True, **options)
    assert ep_overlap.applies(t, shape) is expected
    assert not ep_overlap.applies(attrs.evolve(t, ep_overlap=False), shape)


def test_warm_up_and_cool_down_passes_stay_exposed():
    # no pipeline: the first forward and the last backward run alone
    t = Training(MOE, 64, ep_overlap=True)
    assert ep_overlap.paired(t, Shape(ep=8, dp=8), 4) == pytest.approx(3 / 4)
    # interleaved, P = 8, V = 4, M = 16: rank 0 warms up 7 x 2 + 3 x 8 = 38 of 64 chunk passes
    t = Training(MOE, 64, ep_overlap=True, interleave=4)
    assert ep_overlap.warmup(Shape(ep=8, pp=8), 16, 4) == 38
    assert ep_overlap.paired(t, Shape(ep=8, pp=8), 16) == pytest.approx(26 / 64)
    # one micro-batch has nothing to pair with
    assert ep_overlap.paired(Training(MOE, 8, ep_overlap=True), Shape(ep=8, dp=8), 1) == 0


def test_the_paired_all_to_alls_are_split_from_the_rest():
    sh = Shape(ep=8, dp=8)
    off = Training(MOE, 64, microbatch=1)
    on = attrs.evolve(off, ep_overlap=True)
    micro = check(off, sh)

    def ep(t):
        return [f for f in traffic(MOE, t, sh, stage_layout(t, sh), micro) if f.dim == "ep"]
    assert sum(f.count for f in ep(on)) == sum(f.count for f in ep(off))
    hidden = [f for f in ep(on) if f.overlap == "ep_overlap"]
    assert hidden and hidden[0].count == 4 * round(27 * micro * (micro - 1) / micro)


def test_each_all_to_all_hides_only_up_to_its_segment_and_costs_sms():
    detail = Compute(1.0, 0.0, 0.0, 0.0, 0.5, ep_segments=(0.1, 0.3, 0.2, 0.6),
                     ep_sm_share=0.15)

    class Costed:                                  # a costed line: 40 calls of 0.25 s
        count, per_step = 40, 10.0
    exposed, cost = ep_exposed(Costed, 1.0, detail)
    # per paired pass: min(0.25, 0.1) + 0.25 + min(0.25, 0.2) + 0.25 = 0.8 of 1.0 hidden,
    # 10 passes
    assert exposed == pytest.approx(10.0 - 8.0)
    assert cost == pytest.approx(8.0 * 0.15)
    assert ep_exposed(Costed, None, detail) == (10.0, 0.0)


def _best(capsys, *extra):
    cluster = str(LIBRARY / "nvidia" / "h100_cluster.topo")
    assert main(["plan", cluster, "-D", "nodes=4", "--model", "deepseek-moe-16b",
                 "--batch", "64", "--tp", "1", "--pp", "2", "--ep", "16",
                 "--microbatch", "1", "--recompute", "selective", "--zero", "1",
                 "--no-sequence-parallel", "--format", "json", "--no-cache", "--jobs", "1",
                 *extra]) == 0
    return json.loads(capsys.readouterr().out)["rows"][0]


def test_the_command_line_turns_it_on_where_the_schedule_allows(capsys):
    off = _best(capsys, "--interleave", "2")
    on = _best(capsys, "--interleave", "2", "--ep-overlap", "on")
    assert on["step_time"] < off["step_time"]
    assert _best(capsys, "--interleave", "2", "--ep-overlap", "off") == off
    # 1F1B without interleaving: Megatron-Core refuses the flag, the step is unchanged
    assert _best(capsys, "--interleave", "1", "--ep-overlap", "on")["step_time"] == \
        _best(capsys, "--interleave", "1")["step_time"]
    with pytest.raises(SystemExit) as bad:
        main(["plan", str(LIBRARY / "nvidia" / "h100_cluster.topo"), "--model",
              "deepseek-moe-16b", "--batch", "64", "--ep-overlap", "yes"])
    assert bad.value.code == 2


def test_it_is_a_parallel_block_setting():
    source = """use "nvidia/h100_cluster.topo"
use "models/moe.topo"
system s : H100Cluster(nodes = 4)
parallel p on s {{ tp = 1  ep = 16  dp = 16  pp = 2  interleave = 2  model = deepseek_moe_16b
  batch = 64  recompute = selective  distributed_optimizer = true {extra} }}
"""
    plain = topoc.loads(source.format(extra="")).parallel("p")
    on = topoc.loads(source.format(extra="ep_overlap = true")).parallel("p")
    assert on.training.ep_overlap and not plain.training.ep_overlap
    assert len(on.derived.compute.ep_segments) == 4 and not plain.derived.compute.ep_segments
    assert {f.overlap for f in on.flows if f.dim == "ep"} == {"ep_overlap", "none"}
