"""benchmarks/peers/serving_side_by_side.py without the peer installed: how it reads a
``--loso`` output and how ``--why`` splits the peer's TTFT into its prefill step and its
queueing factor (the factor a row needs is the measurement over that step)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from .conftest import ROOT

PEERS = ROOT / "benchmarks" / "peers"


@pytest.fixture(scope="module")
def sbs():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("serving_side_by_side",
                                                  PEERS / "serving_side_by_side.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_loso_line_gives_the_analytic_the_client_and_the_thousand_request_errors(sbs, tmp_path):
    out = tmp_path / "loso.txt"
    out.write_text("every held-out check: row source metric measured analytic closed-loop "
                   "simulated simulated-as-its-client\n"
                   "r218  NIM  ttft  0.3342  -57.9%  -54.9%  +343.5%  +703.1%\n"
                   "r179  NIM  tpot  0.01004  +7.7%  +7.7%  +4.9%\n", encoding="utf-8")
    got = sbs.topoc_loso(str(out))
    assert got[("r218", "ttft")] == pytest.approx((-0.579, 7.031, 3.435))
    # a line without the client's figure: the 1,000-request loop's stands in for it
    assert got[("r179", "tpot")] == pytest.approx((0.077, 0.049, 0.049))


def test_why_splits_the_peers_ttft_into_its_step_and_factor(sbs, capsys):
    from tests import serving_rows as S
    by = {(c.row, c.metric): c for c in S.checks()}
    loaded, idle = by[("r218", "ttft")], by[("r214", "ttft")]
    assert S.kind(loaded) == "ttft loaded" and S.kind(idle) != "ttft loaded"
    # the peer answered 0.4 s with a factor of 4: a 100 ms step; the row measured 0.3342 s,
    # so it needs 3.34 of them. The one-request check is not a loaded one: not listed
    table = [(loaded, -0.5, 7.0, 3.4, 0.4 / loaded.measured - 1, ""),
             (idle, 0.1, 0.1, 0.1, 0.9, "")]
    sbs.why(table, {"r218": {"ttft_s": 0.4}, "r214": {"ttft_s": 0.16}},
            {"r218": 4.0, "r214": 1.9})
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("why: r218"))
    assert "100.0 ms  4.00  3.34" in line and "+20%" in line
    assert "why: r214" not in text
    summary = next(x for x in text.splitlines() if x.startswith("why by table"))
    assert "checks  1" in summary and "factor used 4.00" in summary and "needed 3.34" in summary
