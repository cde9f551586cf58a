"""The memory margin (``plan(margin=)``, ``--memory-margin``): candidates predicted within it of
HBM are "tight": they fit, are neither pruned nor called out of memory, and rank after every
candidate that is not, so ``rows[0]`` is the fastest one the memory model's measured
uncertainty leaves room for."""

from __future__ import annotations

import json

import pytest

import topoc
from topoc.cli import main
from topoc.compiler.analysis.comparison import compare
from topoc.compiler.analysis.plan import PlanUsageError, is_tight, plan
from topoc.compiler.lang.derive import find_model
from topoc.compiler.training.memory import MEMORY_MARGIN
from topoc.compiler.training.model import Training

from ...conftest import LIBRARY

DGX = str(LIBRARY / "nvidia" / "dgx_h100.topo")


@pytest.fixture(scope="module")
def search():
    dgx = topoc.load(DGX)
    m = find_model(dgx, "llama3-8b")
    base = Training(m, 64)
    fixed = {"tp": 1, "pp": 1}
    return dgx, m, base, fixed, plan(dgx, m, base, fixed=fixed, margin=0.0)


def test_tight_is_within_the_margin_and_never_over_hbm():
    assert is_tight(80e9, 85e9, 0.1) and not is_tight(70e9, 85e9, 0.1)
    assert not is_tight(90e9, 85e9, 0.1)            # over HBM is not tight: it does not fit
    assert not is_tight(84e9, 85e9, 0.0) and not is_tight(84e9, None, 0.2)


def test_the_margin_ranks_tight_rows_after_the_rest_and_keeps_them(search):
    dgx, m, base, fixed, off = search
    on = plan(dgx, m, base, fixed=fixed, margin=0.3)
    assert off.tight == 0 and not any(r.tight for r in off.rows)
    hbm = off.hbm
    assert on.tight == sum(1 for r in off.rows if r.memory_per_gpu > 0.7 * hbm) > 0
    # the same candidates, none pruned or called out of memory by the margin
    assert {r.candidate for r in on.rows} == {r.candidate for r in off.rows}
    assert on.over_memory == off.over_memory and all(r.fits for r in on.rows)
    # rows[0] is the fastest that is not tight; the tight ones follow, each part by step
    assert not on.rows[0].tight
    assert on.rows[0].step_time == min(r.step_time for r in off.rows
                                       if r.memory_per_gpu <= 0.7 * hbm)
    flags = [r.tight for r in on.rows]
    assert flags == sorted(flags)
    # the margin changed the recommendation here: the fastest of all is tight
    assert off.rows[0].memory_per_gpu > 0.7 * hbm and on.rows[0] != off.rows[0]
    with pytest.raises(PlanUsageError, match="memory-margin"):
        plan(dgx, m, base, fixed=fixed, margin=1.0)


def test_compare_marks_a_tight_strategy(search):
    dgx, m, base, fixed, off = search
    on = plan(dgx, m, base, fixed=fixed, margin=0.3)
    fastest = off.rows[0].candidate
    found = compare(on, {k: getattr(fastest, k) for k in ("tp", "cp", "dp", "pp", "microbatch",
                                                           "recompute", "zero")})
    assert found.row.tight and found.rank > 1 and not found.best.tight


def test_the_default_margin_comes_from_the_memory_validation():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from tests.memory_rows import predict, rows
    from topoc.compiler.training.memory import margin_from
    ratios = [predict(r).ratio for r in rows() if r.scored == "yes" and not r.fit]
    assert len(ratios) >= 30
    assert MEMORY_MARGIN == pytest.approx(margin_from(ratios), abs=0.01)
    assert MEMORY_MARGIN >= margin_from(ratios)      # rounded up, never down


def test_memory_margin_on_the_command_line(capsys):
    base = ["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--tp", "1", "--pp", "1",
            "--jobs", "1"]
    args = base + ["--format", "json", "--top", "0"]
    assert main(args + ["--memory-margin", "0.2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["memory_margin"] == 0.2 and doc["tight"] > 0
    flags = [r["tight"] for r in doc["rows"]]
    assert flags == sorted(flags) and flags[0] is False
    assert all(r["memory_per_gpu"] > 0.8 * doc["hbm_per_gpu"] for r in doc["rows"]
               if r["tight"])
    assert main(args + ["--memory-margin", "0"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tight"] == 0 and not any(r["tight"] for r in doc["rows"])
    assert main(base + ["--memory-margin", "0.2", "--top", "50"]) == 0
    text = capsys.readouterr().out
    assert "tight: they fit, within the 20% memory margin" in text and " tight" in text
    with pytest.raises(SystemExit) as exc:
        main(base + ["--memory-margin", "1.5"])
    assert exc.value.code == 2
    assert "--memory-margin" in capsys.readouterr().err
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--tp", "1", "--pp",
                 "1", "--scaling", "8..8", "--format", "json", "--memory-margin", "0.2",
                 "--jobs", "1"]) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    assert all(p["tight"] is False for p in points)
