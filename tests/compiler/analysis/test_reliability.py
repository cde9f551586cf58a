"""Reliability arithmetic: the formulas against hand-computed values, the job's devices counted
from the file, the rates checked against fleets they were not taken from, and the CLI."""

from __future__ import annotations

import json
import math

import pytest

import topoc
from topoc.cli import main
from topoc.compiler.analysis.reliability import (DAY, KINDS, Estimate, Exposure,
                                                 ReliabilityError, best_interval, daly_interval,
                                                 estimate, goodput, job_exposure, rate_set,
                                                 rate_sets, young_interval)
from topoc.compiler.analysis.reliability_check import checks, independent, poisson_interval

from ...conftest import ROOT

LIB = ROOT / "library" / "nvidia"
#: Meta's Llama 3 405B run (Table 5): 16,384 H100s in 2,048 servers, one NIC per GPU.
LLAMA3 = Exposure(16384, 16384, 2048)


# --- formulas -------------------------------------------------------------------------------

def test_young_and_daly_against_hand_computed_values():
    # C = 300 s, M = 3 h: sqrt(2 x 300 x 10800) = 2545.584; Daly's x = C/2M = 1/72:
    # 2545.584 x (1 + sqrt(1/72)/3 + 1/648) - 300 = 2349.513
    assert young_interval(300, 10800) == pytest.approx(2545.584412, rel=1e-9)
    assert daly_interval(300, 10800) == pytest.approx(2349.512783, rel=1e-9)
    assert daly_interval(5000, 2000) == 2000          # C >= 2M: checkpoint every M


def test_goodput_against_hand_computed_values():
    # tau = 1000, C = 100, R = 200, M = 10000: 1000 / (10000 e^0.02 (e^0.11 - 1)) = 0.842978
    assert goodput(1000, 100, 200, 10000) == pytest.approx(0.842978103642906, rel=1e-12)
    assert goodput(3600, 400, 0, math.inf) == pytest.approx(0.9)     # no failures: tau/(tau+C)
    assert goodput(0, 0, 600, 6000) == pytest.approx(math.exp(-0.1))  # free checkpoints: e^-R/M
    # a restart only costs: the same interval with a longer restart has less goodput
    assert goodput(1000, 100, 600, 10000) < goodput(1000, 100, 0, 10000)


@pytest.mark.parametrize("checkpoint,mtbf", [(30, 3 * 3600), (300, 3 * 3600), (60, 86400)])
def test_daly_is_the_optimum_of_its_goodput(checkpoint, mtbf):
    """Daly's closed form lands on the numerical maximum of the goodput it was derived for
    (within 0.5 %), and its goodput is never below Young's."""
    best = best_interval(checkpoint, 600, mtbf)
    assert daly_interval(checkpoint, mtbf) == pytest.approx(best, rel=0.005)
    assert goodput(daly_interval(checkpoint, mtbf), checkpoint, 600, mtbf) >= \
        goodput(young_interval(checkpoint, mtbf), checkpoint, 600, mtbf) - 1e-12


def test_young_drifts_from_the_optimum_when_checkpoints_are_costly():
    """At C = M/4 Young's first-order interval is off by more than 10 %; Daly's is not."""
    best = best_interval(900, 0, 3600)
    assert abs(young_interval(900, 3600) / best - 1) > 0.10
    assert daly_interval(900, 3600) == pytest.approx(best, rel=0.03)


# --- rates ----------------------------------------------------------------------------------

def test_every_row_has_a_source_and_a_known_kind():
    for study, rates in rate_sets().items():
        for cause in rates.causes:
            assert cause.kind in KINDS and cause.url.startswith("https://") and cause.where
            assert cause.rate > 0 and cause.days > 0, (study, cause.component)


def test_llama3_table5_sums_to_its_published_totals():
    """Table 5: 419 unexpected interruptions, about 78 % hardware (GPU, NIC, network, host)."""
    llama3 = rate_set("llama3")
    assert llama3.count() == 419
    hardware = llama3.count(("gpu", "nic", "network", "host"))
    assert hardware == 324 and hardware / 419 == pytest.approx(0.78, abs=0.01)
    assert llama3.count(("gpu",)) == 268      # 148 + 72 + 19 + 17 + 6 + 6


def test_rates_applied_to_their_own_fleet_give_back_its_count():
    """The arithmetic, not a validation: Llama 3's rates on Llama 3's fleet are 419 in 54 days."""
    est = Estimate(rate_set("llama3"), LLAMA3)
    assert est.per_day * 54 == pytest.approx(419, rel=1e-12)
    assert est.mtbf / 3600 == pytest.approx(54 * 24 / 419, rel=1e-12)   # 3.09 h


def test_unknown_study_names_the_ones_there_are():
    with pytest.raises(ReliabilityError, match="llama3"):
        rate_set("nope")


# --- validation: other fleets predict Llama 3, Llama 3 predicts them ------------------------

def _check(label_start):
    return next(c for c in checks() if c.label.startswith(label_start))


def test_independent_sources_predict_llama3():
    """Measured errors against Llama 3's 419 interruptions from rates it did not provide.

    No independent whole-job rate reaches the issue's 25 % (docs/reliability.md): RSC-1's
    node rate (A100, a multi-tenant research cluster) predicts 719, +72 %; the bound this data
    defends for a whole job is a factor of 2. Where the causes match one for one (GPUs), a
    B200 fleet's GPU rate predicts Llama 3's 268 GPU interruptions within 25 % (+19 %)."""
    rsc1 = _check("RSC-1 node rate -> Llama 3, all")
    assert rsc1.predicted == pytest.approx(6.5e-3 * 2048 * 54, rel=1e-9)      # 718.8
    assert rsc1.error == pytest.approx(0.716, abs=0.001)
    assert -0.5 < rsc1.error < 1.0                                           # within 2x
    gpu = _check("B200 GPU rate -> Llama 3")
    assert gpu.observed == 268
    assert abs(gpu.error) < 0.25                                             # +19.1 %
    assert all(c.predictor != "llama3" for c in independent("llama3"))


def test_llama3_predicts_the_other_fleets():
    """The reverse: fitted on Llama 3, predicting the others (A100 clusters fail more often)."""
    b200 = _check("Llama 3 GPU rate -> B200")
    assert b200.predicted == pytest.approx(268 / (16384 * 54) * 504 * 55, rel=1e-9)
    assert abs(b200.error) < 0.25                                            # -16 %
    rsc1 = _check("Llama 3 hardware rates -> RSC-1")
    assert rsc1.predicted == pytest.approx(324 / (2048 * 54) * 1000, rel=1e-9)
    assert -0.6 < rsc1.error < -0.5                                          # -55 %


def test_poisson_interval_against_garwood_table_values():
    """Exact 95 % bounds (chi-square quantiles / 2): 10 events 4.7954 to 18.3904; 419 events
    about 380 to 461, so even a perfect prediction of Llama 3 can miss by 10 %."""
    lo, hi = poisson_interval(10)
    assert lo == pytest.approx(4.7954, rel=0.003) and hi == pytest.approx(18.3904, rel=0.003)
    lo, hi = poisson_interval(419)
    assert 379 < lo < 381 and 460 < hi < 462
    assert _check("Llama 3 hardware rates -> RSC-1").interval is None   # a published rate


# --- the job's devices ----------------------------------------------------------------------

def test_job_exposure_counts_hosts_nics_and_leaves_of_the_first_gpus():
    system = topoc.load(LIB / "h100_cluster.topo")               # 32 DGX H100, 8 rails
    assert job_exposure(system) == Exposure(256, 256, 32, 8)
    assert job_exposure(system, 12) == Exposure(12, 12, 2, 8)   # each GPU's own rail NIC
    assert job_exposure(system, 8) == Exposure(8, 0, 1, 0)      # one node: no network
    big = job_exposure(system, 16384)
    assert big == Exposure(16384, 16384, 2048, 0, True)
    p5 = topoc.load(LIB / "aws_p5.topo")                          # 4 EFA devices per GPU
    assert job_exposure(p5).nics == 4 * job_exposure(p5).gpus


def test_a_nic_cabled_into_no_fabric_is_no_compute_nic_of_the_job():
    """A lone GB200 tray: its two Superchips are two islands, but its four NICs are cabled to
    nothing, so no cable or switch behind them can stop the job (they were counted: 4 NICs
    and their 'switch or cable' rate, where the whole NVL72 rack counted none)."""
    tray = topoc.load(LIB / "gb200_tray.topo")
    assert job_exposure(tray) == Exposure(4, 0, 2, 0)
    assert job_exposure(topoc.load(LIB / "gb200_nvl72.topo")).nics == 0


def test_a_job_inside_one_nvlink_domain_uses_no_nic():
    """A GB200 NVL72 rack is 18 hosts but one machine: NCCL stays on NVLink, so no NIC,
    cable or switch can stop it; two racks need the fabric."""
    rack = estimate(topoc.load(LIB / "gb200_nvl72.topo"))
    assert (rack.exposure.gpus, rack.exposure.nics, rack.exposure.hosts) == (72, 0, 18)
    assert {t.kind for t in rack.terms if t.devices == 0} == {"nic", "network"}
    cluster = topoc.load(LIB / "nvl72_cluster.topo")
    assert job_exposure(cluster, 72).nics == 0 and job_exposure(cluster, 144).nics == 144


def test_estimate_of_a_16k_job_reproduces_the_rates_it_was_given():
    system = topoc.load(LIB / "h100_cluster.topo")
    est = topoc.reliability(system, gpus=16384, checkpoint=300, restart=600)
    assert est.per_day == pytest.approx(419 / 54, rel=1e-12)
    assert est.daly == pytest.approx(daly_interval(300, DAY * 54 / 419), rel=1e-12)
    assert est.goodput == pytest.approx(goodput(est.daly, 300, 600, est.mtbf), rel=1e-12)
    assert 0.7 < est.goodput < 0.8


def test_negative_times_are_refused():
    system = topoc.load(LIB / "dgx_h100.topo")
    with pytest.raises(ReliabilityError):
        estimate(system, checkpoint=-1)


# --- CLI ------------------------------------------------------------------------------------

def test_cli_text_names_the_source_and_the_figures(capsys):
    code = main(["reliability", str(LIB / "h100_cluster.topo"), "--gpus", "16384",
                 "--checkpoint-cost", "300", "--restart", "600"])
    out = capsys.readouterr().out
    assert code == 0
    assert "The Llama 3 Herd of Models" in out and "Table 5" in out and "arxiv.org" in out
    assert "expected interruptions: 7.76 a day" in out and "MTBF: 3.09 h" in out
    assert "Daly 2006" in out and "Young 1974" in out and "goodput: 74.4 %" in out


def test_cli_json_is_deterministic_and_matches_the_api(capsys):
    args = ["reliability", str(LIB / "gb200_nvl72.topo"), "--rates", "rsc1",
            "--checkpoint-cost", "60", "--format", "json"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    assert capsys.readouterr().out == first
    data = json.loads(first)
    assert data["interruptions_per_day"] == pytest.approx(18 * 6.5e-3)
    assert data["rates"]["study"] == "rsc1" and data["job"]["hosts"] == 18
    assert data["job"]["nics"] == 0                   # one NVLink domain
    assert data["daly_interval_seconds"] == pytest.approx(
        daly_interval(60, DAY / (18 * 6.5e-3)), rel=1e-6)


def test_cli_without_checkpoint_cost_says_how_to_get_the_interval(capsys):
    assert main(["reliability", str(LIB / "dgx_h100.topo")]) == 0
    assert "give --checkpoint-cost" in capsys.readouterr().out


def test_cli_bad_input(capsys, tmp_path):
    f = str(LIB / "dgx_h100.topo")
    assert main(["reliability", f, "--rates", "nope"]) == 2
    assert "there are: llama3" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["reliability", f, "--checkpoint-cost", "0"])
    assert exc.value.code == 2
    no_gpu = tmp_path / "switch.topo"
    no_gpu.write_text('use "nvidia/devices.topo"\ngroup G { sw : QM9700 }\nsystem s : G\n')
    assert main(["reliability", str(no_gpu)]) == 1
    assert "no GPU" in capsys.readouterr().err


def test_the_docs_example_is_the_cli_output(capsys, monkeypatch):
    """docs/reliability.md shows what the command prints, byte for byte."""
    import re
    monkeypatch.chdir(ROOT)
    doc = (ROOT / "docs" / "reliability.md").read_text()
    command, shown = re.search(r"```sh\n(topoc reliability [^\n]+)\n```\n\n```text\n(.*?)```",
                               doc, re.S).groups()
    assert main(command.split()[1:]) == 0
    assert capsys.readouterr().out == shown
