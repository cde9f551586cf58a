"""benchmarks/peers/side_by_side.py: the one-constant fit, the rows as the peers read them and
the adapters that put them in each peer's vocabulary (importable without the peers); the peers
themselves where benchmarks/peers/setup.sh installed them."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest

from .conftest import ROOT

PEERS = ROOT / "benchmarks" / "peers"


def _load(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, PEERS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sbs():
    return _load("side_by_side")


def test_the_one_constant_fit_finds_the_efficiency_the_rows_ran_at(sbs):
    # a roofline's time is its FLOP time over the efficiency: rows that ran at 0.43 (one 5 %
    # slow, one 5 % fast) fit 0.43; a row the peer refused is left out
    work = {"a": 10.0, "b": 3.0, "c": 7.0}
    seconds = {r: {"seconds": {str(e): w / e for e in sbs.GRID}} for r, w in work.items()}
    seconds["d"] = {"error": "refused"}
    truth = {"a": 10.0 / 0.43 * 1.05, "b": 3.0 / 0.43 / 1.05, "c": 7.0 / 0.43, "d": 1.0}
    assert sbs.fit_efficiency(seconds, truth, ["a", "b", "c", "d"]) == 0.43
    assert sbs.fit_efficiency(seconds, truth, ["d"]) is None


def test_a_row_reaches_the_peers_with_its_model_strategy_and_topocs_recompute(sbs):
    from tests.training_rows import rows
    by_id = {r.id: r for r in rows()}
    s = sbs.spec(by_id["narayanan21-t2-ptdp-174.6b-384gpu"])
    assert (s["tp"], s["pp"], s["dp"], s["cp"]) == (8, 12, 4, 1)
    assert s["layers"] == 96 and s["hidden"] == 12288 and s["recompute"] == "full"
    assert not s["overlap"] and not s["gated"] and s["experts"] == 0
    # a source that publishes no recompute: the mode topoc ran, never left empty
    silent = next(r for r in rows() if not r.recompute)
    assert sbs.spec(silent)["recompute"] in ("none", "selective", "full")


def test_calculon_gets_a_gated_mlp_at_equal_flops_and_tp_on_nvlink():
    cal = _load("calculon_runner")
    row = {"hidden": 4096, "ffn": 14336, "gated": True, "kv_heads": 8, "heads": 32,
           "head_dim": 128, "seq": 8192, "layers": 32, "tp": 2, "pp": 4, "dp": 8,
           "fsdp": False, "zero": 1, "fp8": False, "batch": 128, "microbatch": 1,
           "recompute": "selective", "interleave": 2, "sp": True, "overlap": True}
    app, notes = cal.application(row)
    # two matrices of 1.5 F cost what SwiGLU's three of F do
    assert 2 * app["feedforward"] == 3 * row["ffn"] and len(notes) == 2
    exe, _ = cal.execution(row)
    assert (exe["tensor_par_net"], exe["data_par_net"], exe["pipeline_par_net"]) == (0, 1, 1)
    assert exe["activation_recompute"] == "attn_only" and exe["optimizer_sharding"]
    assert exe["tensor_par_comm_type"] == "rs_ag" and exe["num_procs"] == 64


def test_llm_analysis_counts_a_moe_layer_as_the_experts_a_token_runs():
    lla = _load("llm_analysis_runner")
    dense = {"experts": 0, "ffn": 14336}
    assert lla.active_ffn(dense) == 14336
    moe = {"experts": 256, "top_k": 8, "shared_experts": 1, "expert_ffn": 2048,
           "dense_layers": 3, "ffn": 18432, "layers": 61}
    assert lla.active_ffn(moe) == pytest.approx((58 * 9 * 2048 + 3 * 18432) / 61)


@pytest.mark.skipif(not (PEERS / "llm-analysis" / ".venv").exists() or
                    not (PEERS / "calculon" / ".venv").exists(),
                    reason="the peers are not installed (benchmarks/peers/setup.sh)")
def test_the_installed_peers_answer_a_row_and_refuse_what_they_cannot_model(sbs):
    from tests.training_rows import rows
    by_id = {r.id: r for r in rows()}
    specs = [sbs.spec(by_id[i]) for i in ("narayanan21-t1-18.4b-256gpu",
                                          "mbridge-2511-gb200-dsv3-256-bf16")]
    lla = sbs.run_peer("llm-analysis", {"rows": specs, "efficiencies": [0.4, 0.5]})
    dense = lla["narayanan21-t1-18.4b-256gpu"]["seconds"]
    # the roofline: time is FLOPs over peak times the one constant
    assert math.isclose(dense["0.4"] * 0.4, dense["0.5"] * 0.5, rel_tol=1e-9)
    cal = sbs.run_peer("calculon", {"rows": specs,
                                    "systems": str(PEERS / "calculon" / "src" / "systems")})
    assert cal["narayanan21-t1-18.4b-256gpu"]["seconds"] > 0
    assert "mixture of experts" in cal["mbridge-2511-gb200-dsv3-256-bf16"]["error"]
