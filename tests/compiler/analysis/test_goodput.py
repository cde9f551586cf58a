"""compiler.analysis.goodput and ``topoc plan --goodput``: strategies ranked by tokens/s times
the expected goodput of a job on their GPUs (docs/reliability.md)."""

from __future__ import annotations

import json

import pytest

import topoc
from topoc.cli import main
from topoc.compiler.analysis.goodput import gpus_of, rank_by_goodput
from topoc.compiler.analysis.plan import plan
from topoc.compiler.analysis.reliability import estimate
from topoc.compiler.lang.derive import find_model
from topoc.compiler.training.model import Training

from ...conftest import LIBRARY

CLUSTER = str(LIBRARY / "nvidia" / "h100_cluster.topo")
ARGS = ["plan", CLUSTER, "-D", "nodes=2", "--model", "llama3-8b", "--batch", "16", "--tp", "8",
        "--no-cache", "--jobs", "1"]


@pytest.fixture(scope="module")
def cluster():
    return topoc.load(CLUSTER, defines={"nodes": 2})


def _result(system, gpus):
    model = find_model(system, "llama3-8b")
    return plan(system, model, Training(model, batch=16), gpus, {"tp": 8}, use_cache=False)


def test_rows_carry_the_estimate_of_their_gpu_count_and_rank_by_goodput_tokens(cluster):
    result = _result(cluster, 16)
    ranking = rank_by_goodput(cluster, result, 300, 600)
    est = estimate(cluster, 16, 300, 600)
    assert ranking.estimates == ((16, est),)
    assert 0.5 < est.goodput < 1
    assert len(ranking.rows) == len(result.rows) > 1
    for g in ranking.rows:
        assert gpus_of(g.row) == 16 and g.fraction == est.goodput
        assert g.tokens_per_s == pytest.approx(g.row.tokens_per_s * est.goodput)
    bands = [not g.row.fits for g in ranking.rows]
    assert bands == sorted(bands)
    for a, b in zip(ranking.rows, ranking.rows[1:]):
        if a.row.fits == b.row.fits:
            assert a.tokens_per_s >= b.tokens_per_s


def test_a_job_across_the_network_keeps_less_of_its_time(cluster):
    one = rank_by_goodput(cluster, _result(cluster, 8), 300, 600).rows[0]
    two = rank_by_goodput(cluster, _result(cluster, 16), 300, 600).rows[0]
    # 8 GPUs stay in one DGX (no NIC, cable or switch can stop them); 16 cross the fabric
    assert one.fraction > two.fraction
    # a costlier checkpoint costs goodput
    dear = rank_by_goodput(cluster, _result(cluster, 16), 3000, 600).rows[0]
    assert dear.fraction < two.fraction


def test_plan_goodput_json_and_text(capsys):
    assert main([*ARGS, "--goodput", "--checkpoint-cost", "300", "--restart", "600",
                 "--format", "json", "--top", "0"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranked_by"] == "goodput_tokens_per_s"
    (est,) = doc["goodput"]["estimates"]
    assert est["gpus"] == 16 and est["checkpoint_seconds"] == 300
    rows = doc["rows"]
    assert rows and all(r["goodput"] == pytest.approx(est["goodput"], abs=1e-6) for r in rows)
    assert all(r["goodput_tokens_per_s"] == pytest.approx(r["tokens_per_s"] * r["goodput"])
               for r in rows)
    assert main([*ARGS, "--goodput", "--checkpoint-cost", "300", "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert "goodput on 16 GPUs (llama3 rates)" in text
    (head,) = [line for line in text.splitlines() if line.startswith("#  tp")]
    assert head.endswith("goodput  goodput tokens/s")


@pytest.mark.parametrize("extra, message", [
    (["--goodput"], "--goodput needs --checkpoint-cost"),
    (["--checkpoint-cost", "300"], "--checkpoint-cost is for --goodput"),
    (["--goodput", "--checkpoint-cost", "300", "--rates", "nope"], "no failure rates for 'nope'"),
    (["--goodput", "--checkpoint-cost", "300", "--compare", "tp=8,dp=2"], "--goodput and --compare"),
])
def test_plan_goodput_refuses_what_it_cannot_answer(extra, message, capsys):
    assert main([*ARGS, *extra]) == 2
    out = capsys.readouterr()
    assert message in out.err and "Traceback" not in out.err and not out.out


def test_a_scaling_curve_in_goodput_keeps_less_at_more_gpus_and_finds_its_own_knee(cluster):
    from topoc.compiler.analysis.goodput import scaling_goodput
    from topoc.compiler.analysis.scaling import scaling

    model = find_model(cluster, "llama3-8b")
    curve = scaling(cluster, model, Training(model, batch=16), 8, 16, {"tp": 8},
                    use_cache=False)
    eight, sixteen = curve.points
    good = scaling_goodput(cluster, curve, 300, 600)
    assert good.fraction(8) == estimate(cluster, 8, 300, 600).goodput > good.fraction(16)
    assert good.tokens_per_s("strong", sixteen) == pytest.approx(
        sixteen.strong.tokens_per_s * good.fraction(16))
    assert good.efficiency("strong", sixteen) == pytest.approx(
        curve.efficiency("strong", sixteen) * good.fraction(16) / good.fraction(8))
    assert curve.knee("strong") is None and good.knee("strong") is None
    # restarts so slow (an MTBF's worth) that doubling the job more than halves its goodput:
    # the step-time curve still pays, the goodput curve stops at 16
    slow = scaling_goodput(cluster, curve, 1e5, 2e7)
    assert slow.efficiency("strong", sixteen) < 0.5
    assert curve.knee("strong") is None and slow.knee("strong") == 16


def test_plan_scaling_goodput_json(capsys):
    assert main([*ARGS, "--scaling", "8..16", "--goodput", "--checkpoint-cost", "300",
                 "--restart", "600", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["goodput_stops_paying"] == {"strong": None, "weak": None}
    by = {(p["gpus"], p["mode"]): p for p in doc["points"]}
    assert by[8, "strong"]["goodput"] > by[16, "strong"]["goodput"] > 0.9
    p = by[16, "weak"]
    assert p["goodput_tokens_per_s"] == pytest.approx(p["tokens_per_s"] * p["goodput"])
