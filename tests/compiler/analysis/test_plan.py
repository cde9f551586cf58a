"""compiler.plan and ``topoc plan``: enumeration, ranking, the fixed strategy equal to ``topoc
report``, the disk cache, the process pool and a Ray cluster started here."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import topoc
from topoc.cli import main
from topoc.compiler.lang.derive import find_model
from topoc.compiler.analysis.plan import (PlanUsageError, enumerate_candidates, interleaves,
                                          plan)
from topoc.compiler.analysis.strategy import analyse
from topoc.compiler.training.model import Training

from ...conftest import LIBRARY

DGX = str(LIBRARY / "nvidia" / "dgx_h100.topo")
NVL72 = str(LIBRARY / "nvidia" / "gb200_nvl72.topo")


@pytest.fixture(scope="module")
def dgx():
    return topoc.load(DGX)


def test_model_names_take_dashes_and_suggest(dgx):
    assert find_model(dgx, "llama3-70b").name == "llama3_70b"
    with pytest.raises(KeyError, match="did you mean 'llama3_70b'"):
        find_model(dgx, "llama3-7b")


def test_candidates_cover_the_mappings_and_respect_fixed_dimensions(dgx):
    m = find_model(dgx, "llama3-8b")
    every = enumerate_candidates(m, 8, 64, {})
    assert {(c.tp * c.cp * c.dp * c.pp) for c in every} == {8}
    assert {c.recompute for c in every} == {"none", "selective", "full"}
    fixed = enumerate_candidates(m, 8, 64, {"tp": 2, "pp": 2, "recompute": "full"})
    assert fixed and all(c.tp == 2 and c.pp == 2 and c.recompute == "full" for c in fixed)
    assert all(not c.sequence_parallel for c in every if c.tp == 1)
    assert all(m.seq // c.cp >= 4096 for c in every)          # the context-parallel floor
    assert {c.zero for c in every} == {1, 3}


def test_every_divisor_interleave_is_searched(dgx):
    m = find_model(dgx, "llama3-70b")
    assert interleaves(m, 4) == [1, 2, 4, 5, 10, 20]          # 20 layers per stage
    assert 12 in interleaves(find_model(dgx, "gpt3-175b"), 8)  # 12 per stage
    assert interleaves(find_model(dgx, "llama3-405b"), 16) == [1, 2, 4, 8]   # 128 slots


def test_rows_are_ranked_fitting_first_then_by_step_time_tight_or_not(dgx):
    m = find_model(dgx, "llama3-8b")
    # batch 48 does not split into micro-batches of 4 or 8 over dp = 8: some are rejected
    result = plan(dgx, m, Training(m, 48, distributed_optimizer=True), use_cache=False)
    rows = result.rows
    assert rows and result.invalid > 0
    assert len(rows) + result.invalid + result.over_memory == result.considered
    # every row fits or is tight (over HBM by less than the memory model's uncertainty)
    assert all(r.fits or r.tight for r in rows) and not all(r.fits for r in rows)
    keys = [(not r.fits, r.step_time) for r in rows]
    assert keys == sorted(keys)
    assert result.over_memory > 0                 # some mappings of 8B on 8 GPUs do not fit
    assert result.smallest[0] > result.hbm / (1 - result.margin)
    for r in rows[:5]:
        assert r.step_time == pytest.approx(r.compute_time + r.comm_time + r.bubble_time)
        assert sum(dict(r.comm_by_dim).values()) == pytest.approx(r.comm_time)
        assert 0 < r.mfu < 1


def test_a_fixed_strategy_gives_the_numbers_of_topoc_report(tmp_path):
    text = (f'use "nvidia/gb200_nvl72.topo"\nuse "models/llama3.topo"\nsystem rack : NVL72\n'
            "parallel train on rack {\n  tp = 8  pp = 9  dp = 1\n  model = llama3_70b  "
            "batch = 512  microbatch = 1  recompute = selective\n  sequence_parallel = true  "
            "distributed_optimizer = true  overlap = true\n}\n")
    path = tmp_path / "train.topo"
    path.write_text(text)
    system = topoc.load(path)
    rep = analyse(system, "train")
    m = find_model(system, "llama3_70b")
    base = Training(m, 512, distributed_optimizer=True, overlap=True)
    fixed = {"tp": 8, "cp": 1, "ep": 1, "dp": 1, "pp": 9, "microbatch": 1,
             "recompute": "selective", "interleave": 1, "sequence_parallel": True, "zero": 1}
    result = plan(system, m, base, fixed=fixed, use_cache=False)
    assert len(result.rows) == 1
    row = result.rows[0]
    assert row.step_time == pytest.approx(rep.total, rel=1e-12)
    assert row.memory_per_gpu == pytest.approx(rep.memory.total, rel=1e-12)
    assert row.mfu == pytest.approx(rep.mfu, rel=1e-12)


def test_the_disk_cache_makes_a_rerun_identical_and_computes_nothing(dgx):
    m = find_model(dgx, "llama3-8b")
    base = Training(m, 32)
    first = plan(dgx, m, base, fixed={"tp": 2})
    again = plan(dgx, m, base, fixed={"tp": 2})
    assert first.cached == 0 and again.cached == again.considered and again.runner == "cache"
    assert again.rows == first.rows
    other = plan(dgx, m, Training(m, 32, overlap=True), fixed={"tp": 2})
    assert other.cached == 0                       # a different option is a different key


def test_a_damaged_cache_is_rebuilt(dgx, tmp_path):
    m = find_model(dgx, "llama3-8b")
    base = Training(m, 32)
    first = plan(dgx, m, base, fixed={"tp": 4})
    for f in (Path(os.environ["TOPOC_CACHE"]) / "plan").glob("*.json"):
        f.write_text("{not json")
    again = plan(dgx, m, base, fixed={"tp": 4})
    assert again.cached == 0 and again.rows == first.rows


def test_the_process_pool_gives_the_in_process_rows(dgx):
    m = find_model(dgx, "llama3-8b")
    base = Training(m, 64)
    one = plan(dgx, m, base, fixed={"recompute": "selective"}, jobs=1, use_cache=False)
    two = plan(dgx, m, base, fixed={"recompute": "selective"}, jobs=2, use_cache=False)
    assert one.runner == "process" and two.runner == "pool"
    assert one.rows == two.rows


def test_gpus_beyond_the_system_are_a_usage_error(dgx):
    m = find_model(dgx, "llama3-8b")
    with pytest.raises(PlanUsageError, match="has 8 GPUs"):
        plan(dgx, m, Training(m, 8), gpus=16)


# ---- the command line -----------------------------------------------------------------------

def test_plan_json_follows_the_contract(capsys):
    assert main(["plan", NVL72, "--model", "llama3-70b", "--batch", "512", "--format", "json",
                 "--top", "5", "--distributed-optimizer", "--recompute", "selective"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == doc["schema"] == "topoc.plan/1"
    assert len(doc["rows"]) == 5
    keys = {"tp", "cp", "ep", "dp", "pp", "microbatch", "recompute", "interleave", "step_time",
            "compute_time", "comm_time", "bubble_time", "memory_per_gpu", "fits", "mfu",
            "tokens_per_s"}
    for row in doc["rows"]:
        assert keys <= set(row) and row["fits"]
        assert row["tp"] * row["cp"] * row["dp"] * row["pp"] == 72
    times = [r["step_time"] for r in doc["rows"]]
    assert times == sorted(times)


def test_plan_fsdp_prefetch_post_waits_for_the_backward_gathers(capsys):
    """--fsdp-prefetch post (FSDP1's BACKWARD_POST) puts the backward all-gathers on the
    critical path: the same FSDP mapping costs more exposed data-parallel time, nothing
    else; an unknown choice is a usage error (exit 2)."""
    rows = {}
    for mode in ("pre", "post"):
        assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--fsdp", "--dp",
                     "8", "--microbatch", "1", "--recompute", "none", "--format", "json",
                     "--fsdp-prefetch", mode]) == 0
        (rows[mode],) = json.loads(capsys.readouterr().out)["rows"]
    pre, post = rows["pre"], rows["post"]
    assert post["comm_by_dim"]["dp"] > pre["comm_by_dim"]["dp"]
    assert post["step_time"] > pre["step_time"]
    assert post["compute_time"] == pre["compute_time"]
    assert post["memory_per_gpu"] == pre["memory_per_gpu"]
    with pytest.raises(SystemExit) as exc:
        main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--fsdp-prefetch", "late"])
    assert exc.value.code == 2


def test_plan_text_and_csv_and_byte_identical_reruns(tmp_path, capsys):
    args = ["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--tp", "2"]
    outs = []
    for i in range(2):          # the second run reads the cache
        out = tmp_path / f"plan{i}.csv"
        assert main([*args, "--format", "csv", "-o", str(out)]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert "from the cache" in capsys.readouterr().err
    lines = outs[0].decode().splitlines()
    assert lines[0].startswith("rank,tp,cp,ep,dp,pp,microbatch,recompute")
    assert main([*args, "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert "plan for llama3_8b on dgx: 8 GPUs" in text and "... and" in text


def test_plan_csv_tells_apart_the_rows_the_text_tells_apart(capsys):
    # the text's 'zero' column was missing from the CSV: rows differing only in the ZeRO
    # stage came out identical but for their times
    import csv
    import io
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["zero"] for r in rows} == {"1", "3"}
    keys = [tuple(v for k, v in r.items() if k in ("tp", "cp", "ep", "dp", "pp", "microbatch",
            "recompute", "interleave", "sequence_parallel", "zero")) for r in rows]
    assert len(set(keys)) == len(keys)


def test_plan_exit_codes(capsys):
    assert main(["plan", DGX, "--model", "llama3-9b", "--batch", "64"]) == 2
    assert "did you mean" in capsys.readouterr().err
    # no mapping of 80 layers and batch 7 on 8 GPUs... batch 7 over dp in {1} with tp 8 works
    assert main(["plan", DGX, "--model", "llama3-70b", "--batch", "7", "--pp", "3"]) == 1
    assert "no mapping of llama3_70b runs on 8 GPUs" in capsys.readouterr().err
    # 405B on one node never fits: exit 1 and say by how much
    assert main(["plan", DGX, "--model", "llama3-405b", "--batch", "8", "--tp", "8",
                 "--top", "1"]) == 1
    err = capsys.readouterr().err
    assert "no mapping fits in GPU memory" in err and "GB over" in err
    with pytest.raises(SystemExit) as info:           # argparse checks the range (exit 2)
        main(["plan", DGX, "--model", "llama3-8b", "--batch", "0"])
    assert info.value.code == 2
    # uneven stages that ask for more layers than the model has: a usage error naming them,
    # not "every candidate was rejected"
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--pp", "2",
                 "--last-stage-layers", "999"]) == 2
    assert "more layers than llama3_8b has (32)" in capsys.readouterr().err


# ---- Ray ------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster():
    """A one-node Ray cluster on this machine, stopped afterwards."""
    ray_bin = Path(sys.executable).with_name("ray")
    assert ray_bin.exists(), "Ray is part of the test set-up: pip install -e '.[dev,ray]'"
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run([str(ray_bin), "start", "--head", f"--port={port}", "--num-cpus=2",
                    "--node-ip-address=127.0.0.1", "--include-dashboard=false",
                    "--disable-usage-stats"], check=True, env=env, capture_output=True,
                   timeout=180)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], env=env, capture_output=True,
                       timeout=120)


def test_plan_runs_on_a_local_ray_cluster(ray_cluster, dgx, capsys):
    m = find_model(dgx, "llama3-8b")
    base = Training(m, 64)
    source = {"path": DGX, "defines": {}, "import_roots": []}
    fixed = {"recompute": "selective"}
    on_ray = plan(dgx, m, base, fixed=fixed, ray=ray_cluster, source=source, use_cache=False)
    local = plan(dgx, m, base, fixed=fixed, use_cache=False)
    assert on_ray.runner == "ray" and on_ray.rows == local.rows
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--recompute", "full",
                 "--ray", ray_cluster, "--no-cache", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"]
    shutil.rmtree(Path(os.environ["TOPOC_CACHE"]), ignore_errors=True)


def _row(step: float, memory: float, hbm: float, tp: int, margin: float = 0.2):
    """A PlanRow of ``step`` seconds at ``memory`` bytes a GPU, as ``plan`` answers it."""
    from topoc.compiler.analysis.plan import Candidate, PlanRow, answered
    from topoc.compiler.training.model import Shape
    c = Candidate(Shape(tp, 1, 1, 8 // tp, 1), 1, "none", 1, False, 1)
    row = PlanRow(c, step, step, 0.0, 0.0, memory, memory <= hbm, 0.5, 1e5, (), ())
    return answered(row, hbm, margin)


def test_a_faster_tight_row_that_fits_ranks_first_and_rows_over_hbm_rank_last():
    """Tight is a mark, not a rank (``PlanRow.rank_key``): a row predicted to fit inside the
    memory model's uncertainty of HBM ranks by its step time among the rest, so the fastest
    that fits is #1 even at 95 % of HBM; a row predicted over HBM but inside the uncertainty
    is answered and ranks after every row that fits, however fast; one over by more is
    refused (``plan.answered``)."""
    hbm = 80e9
    roomy = _row(10.0, 40e9, hbm, 1)          # 50 % of HBM
    tight = _row(9.0, 76e9, hbm, 2)           # 95 %: tight, fits, faster
    over = _row(5.0, 90e9, hbm, 4)            # over HBM, under HBM / 0.8 = 100 GB: tight
    slow_tight = _row(12.0, 70e9, hbm, 8)     # 87.5 %: tight, fits, slowest
    assert (tight.tight, tight.fits) == (True, True) and not roomy.tight
    assert (over.tight, over.fits) == (True, False)
    ranked = sorted((over, slow_tight, roomy, tight), key=lambda r: r.rank_key)
    assert ranked == [tight, roomy, slow_tight, over]
    # over HBM by more than the uncertainty: refused, not ranked
    assert _row(1.0, 101e9, hbm, 1) is None
    # with no margin nothing is tight, and the order of the rows that fit is the same
    assert [r.candidate for r in sorted((_row(9.0, 76e9, hbm, 2, 0.0),
                                         _row(10.0, 40e9, hbm, 1, 0.0)),
                                        key=lambda r: r.rank_key)] == \
        [tight.candidate, roomy.candidate]


# ---- --compare and --scaling ----------------------------------------------------------------

def test_compare_gives_the_rank_and_the_terms_against_the_best(dgx):
    from topoc.compiler.analysis.comparison import compare, parse_sizes
    m = find_model(dgx, "llama3-8b")
    result = plan(dgx, m, Training(m, 64), use_cache=False)
    found = compare(result, parse_sizes("tp=2,pp=1"))
    assert found.rank > 1 and found.row.candidate.tp == 2
    assert found.slower == pytest.approx(found.row.step_time / result.rows[0].step_time - 1)
    assert dict((n, a - b) for n, a, b in found.terms)["exposed tp"] > 0
    assert compare(result, {"tp": 3}).row is None
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_sizes("tp8")


def test_scaling_finds_the_best_strategy_per_gpu_count_and_draws_it():
    from topoc.backends import scaling_plot
    from topoc.compiler.analysis.scaling import counts, scaling
    assert counts(8, 64) == [8, 16, 32, 64] and counts(8, 24) == [8, 16, 24]
    cluster = topoc.load(LIBRARY / "nvidia" / "h100_cluster.topo", {"nodes": 2})
    m = find_model(cluster, "llama3-8b")
    curve = scaling(cluster, m, Training(m, 32, overlap=True), 8, 16, use_cache=False)
    assert [p.gpus for p in curve.points] == [8, 16]
    assert curve.points[1].weak_batch == 64
    strong = curve.points[1].strong
    assert strong.candidate.shape.world == 16
    assert 0 < curve.efficiency("strong", curve.points[1]) <= 1.05
    assert "<polyline" in scaling_plot.svg(curve)


def test_scaling_says_why_each_dash_is_a_dash(capsys):
    """'-' cells of --scaling came with no reason (issue 40): each names one, as a footnote
    in text and HTML and a ``why`` field in JSON and CSV."""
    import attrs
    from topoc.backends import plan_table, scaling_plot
    from topoc.compiler.analysis.scaling import scaling
    dgx = topoc.load(DGX)
    m = find_model(dgx, "llama3-8b")
    curve = scaling(dgx, m, Training(m, 3), 1, 2, {"tp": 2}, use_cache=False)
    assert curve.points[0].strong is None and curve.points[1].strong is not None
    assert curve.points[0].why("strong").startswith("no mapping of 1 GPU: ")
    assert curve.points[1].why("strong") is None
    text = plan_table.render_scaling(curve)
    assert text.count(" - [1] ") == 2 and "\n[1] no mapping of 1 GPU: tp x cp x dp x pp" in text
    doc = json.loads(plan_table.render_scaling(curve, "json"))
    assert [p["why"] is None for p in doc["points"]] == [False, False, True, True]
    assert "why" in plan_table.render_scaling(curve, "csv").splitlines()[0]
    assert "[1] no mapping of 1 GPU" in scaling_plot.section(curve)
    # a row with no MFU (a GPU with no declared peak) says so at its MFU cell
    p = curve.points[1]
    bare = attrs.evolve(curve, points=(curve.points[0], attrs.evolve(
        p, strong=attrs.evolve(p.strong, mfu=0.0))))
    text = plan_table.render_scaling(bare)
    assert "[2] no MFU: the GPU model declares no dense peak (tflops_bf16)" in text
    # over memory: the smallest candidate's need
    big = find_model(dgx, "llama3-70b")
    curve = scaling(dgx, big, Training(big, 8), 1, 1, use_cache=False)
    assert curve.points[0].why("weak").startswith("over GPU memory: the smallest of ")
    assert " GB over (tp1-" in curve.points[0].why("weak")


def test_plan_compare_and_scaling_from_the_command_line(capsys):
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--compare",
                 "tp=2,pp=1", "--no-cache", "--jobs", "1"]) == 0
    assert "rank" in capsys.readouterr().out
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--compare",
                 "tp=two"]) == 2
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--scaling", "4..8",
                 "--format", "json", "--no-cache", "--jobs", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "topoc.scaling/1" and [p["gpus"] for p in doc["points"]] == \
        [4, 4, 8, 8]
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--scaling",
                 "8..64"]) == 2


def test_pure_bf16_and_the_attention_kernel_reach_the_search_from_the_command_line(capsys):
    def best(*extra):
        assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--fsdp",
                     "--tp", "1", "--pp", "1", "--microbatch", "1", "--recompute", "full",
                     "--format", "json", "--no-cache", "--jobs", "1", *extra]) == 0
        return json.loads(capsys.readouterr().out)["rows"][0]
    plain = best()
    assert best("--pure-bf16")["memory_per_gpu"] < plain["memory_per_gpu"]
    assert best("--attention-kernel", "fa2")["step_time"] > plain["step_time"]


def test_recompute_modules_reach_the_search_from_the_command_line(capsys):
    """``--recompute-modules layernorm,mlp`` makes the same selective mapping keep less than
    Megatron's default (the attention core); an unknown module is a usage error."""
    def best(*extra):
        assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64",
                     "--distributed-optimizer", "--tp", "1", "--pp", "1", "--microbatch", "1",
                     "--recompute", "selective", "--format", "json", "--no-cache", "--jobs",
                     "1", *extra]) == 0
        return json.loads(capsys.readouterr().out)["rows"][0]
    plain, mods = best(), best("--recompute-modules", "layernorm,mlp")
    assert mods["memory_per_gpu"] < plain["memory_per_gpu"]
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64",
                 "--recompute-modules", "attention"]) == 2


def test_bf16_gradients_reach_the_search_from_the_command_line(capsys):
    """``--bf16-grads`` (Megatron-Core's grad_reduce_in_fp32 off) shrinks the same mapping's
    memory by 2 bytes a parameter of gradients."""
    def best(*extra):
        assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64",
                     "--distributed-optimizer", "--tp", "1", "--pp", "1", "--microbatch", "1",
                     "--recompute", "full", "--format", "json", "--no-cache", "--jobs", "1",
                     *extra]) == 0
        return json.loads(capsys.readouterr().out)["rows"][0]
    plain, bf16 = best(), best("--bf16-grads")
    assert plain["memory_per_gpu"] - bf16["memory_per_gpu"] == pytest.approx(2 * 8.03e9,
                                                                             rel=0.02)


def test_deepseek_options_reach_the_search_from_the_command_line(capsys):
    """DeepSeek-V3's memory savings and DeepEP's dispatch are flags of ``plan``: the savings
    lower the memory of the same mapping, DeepEP never makes the expert exchange slower."""
    cluster = str(LIBRARY / "nvidia" / "h100_cluster.topo")

    def best(*extra):
        assert main(["plan", cluster, "-D", "nodes=4", "--model", "deepseek-moe-16b",
                     "--batch", "64", "--tp", "1", "--pp", "2", "--ep", "16",
                     "--microbatch", "1", "--recompute", "selective", "--zero", "1",
                     "--interleave", "1", "--no-sequence-parallel", "--format", "json",
                     "--no-cache", "--jobs", "1", *extra]) == 0
        return json.loads(capsys.readouterr().out)["rows"][0]
    plain = best()
    saved = best("--recompute-norms", "--fp8-activations", "--bf16-moments")
    assert saved["memory_per_gpu"] < plain["memory_per_gpu"]
    assert best("--dualpipe")["memory_per_gpu"] > plain["memory_per_gpu"]
    assert best("--deepep", "--route-nodes", "2")["step_time"] <= plain["step_time"]
    assert main(["plan", cluster, "-D", "nodes=4", "--model", "deepseek-moe-16b", "--batch",
                 "64", "--route-nodes", "-1"]) == 2


def test_deepep_sends_a_token_once_per_destination_node_or_gpu():
    """Across nodes DeepEP sends a token once to each node holding one of its experts; inside
    one node once to each GPU (its intranode dispatch), whatever the node limit."""
    from topoc.compiler.analysis.strategy import dedup_share
    system = topoc.load(LIBRARY / "nvidia" / "h100_cluster.topo", {"nodes": 8})
    eight_nodes = tuple(range(64))
    assert dedup_share(system, eight_nodes, 8, 4) == pytest.approx(0.5)
    assert dedup_share(system, eight_nodes, 8, 0) == pytest.approx(1 - (7 / 8) ** 8)
    one_node = tuple(range(8))
    assert dedup_share(system, one_node, 8, 4) == pytest.approx(1 - (7 / 8) ** 8)
    assert dedup_share(system, one_node[:2], 8, 0) == pytest.approx(2 * (1 - 0.5 ** 8) / 8)
    assert dedup_share(system, one_node, 1, 0) == 1.0


def test_hbm_replaces_the_gpus_memory_in_the_search_and_its_verdicts(dgx, capsys):
    """--hbm / plan(hbm=): the same GPU in another memory size. Every row fits the memory asked
    for or is tight over it (within the memory model's uncertainty, ``memory.band``), rows the
    file's 80 GB admits but 40 GB does not even so are gone, and nothing fits 1 GB."""
    model = find_model(dgx, "llama3-8b")
    base = Training(model, batch=64)
    fixed = {"tp": 1, "cp": 1, "pp": 1}
    full = plan(dgx, model, base, fixed=fixed)
    small = plan(dgx, model, base, fixed=fixed, hbm=40e9)
    assert full.rows and small.rows
    assert max(r.memory_per_gpu for r in full.rows) > 40e9      # the file's 80 GB admits more
    limit = 40e9 / (1 - small.margin)
    assert all(r.fits == (r.memory_per_gpu <= 40e9) and r.memory_per_gpu <= limit and
               (r.fits or r.tight) for r in small.rows)
    assert {r.candidate for r in small.rows} == \
        {r.candidate for r in full.rows if r.memory_per_gpu <= limit}
    # more memory than the file declares: rows over 80 GB are costed and called fitting
    big = plan(dgx, model, base, fixed=fixed, hbm=200e9)
    assert any(r.memory_per_gpu > 85e9 and r.fits for r in big.rows)
    assert all(r.fits == (r.memory_per_gpu <= 200e9) for r in big.rows)
    with pytest.raises(PlanUsageError):
        plan(dgx, model, base, fixed=fixed, hbm=0)
    from topoc.compiler.analysis.scaling import scaling
    curve = scaling(dgx, model, base, 8, 8, fixed, hbm=40e9)
    assert all(r.memory_per_gpu <= limit for p in curve.points for r in (p.strong, p.weak) if r)
    assert curve.points[0].strong.candidate in {r.candidate for r in small.rows}
    # the command line: the header and the exit code follow --hbm
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--tp", "1", "--pp",
                 "1", "--hbm", "40GB", "--format", "json", "--top", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hbm_per_gpu"] == 40e9
    assert all(r["memory_per_gpu"] <= 40e9 or r["tight"] and r["memory_per_gpu"] <= limit
               for r in out["rows"])
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--hbm", "1GB"]) == 1
    assert "no mapping fits in GPU memory" in capsys.readouterr().err
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--hbm", "lots"]) == 2
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--tp", "1", "--pp", "1",
                 "--hbm", "1GB", "--scaling", "8..8"]) == 1     # nothing fits 1 GB at any count


def test_scaling_where_nothing_fits_says_so_and_writes_nothing(tmp_path, capsys):
    """--scaling with no strategy at any count exited 1 silently, printing an empty table that
    said scaling 'pays all the way', over the -o file."""
    out = tmp_path / "scaling.txt"
    out.write_text("kept\n")
    assert main(["plan", DGX, "--model", "llama3-405b", "--batch", "64", "--scaling", "1..2",
                 "--no-cache", "--jobs", "1", "-o", str(out)]) == 1
    assert out.read_text() == "kept\n"
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "error: no mapping of llama3_405b" in captured.err and "--scaling 1..2" in captured.err


def test_compare_terms_that_tie_come_in_name_order(dgx):
    """Terms with the same difference came in a set's order, which changes from one process to
    the next (hash randomisation): the same command printed different bytes."""
    from topoc.compiler.analysis.comparison import compare
    m = find_model(dgx, "llama3-8b")
    result = plan(dgx, m, Training(m, 64), use_cache=False)
    best = result.rows[0].candidate
    found = compare(result, {"tp": best.tp, "dp": best.dp, "pp": best.pp, "cp": best.cp,
                             "microbatch": best.microbatch, "zero": best.zero})
    assert found.rank == 1
    names = [n for n, _, _ in found.terms]
    assert len(names) >= 3 and names == sorted(names)


def test_an_empty_hbm_is_refused_not_ignored(capsys):
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--hbm", ""]) == 2
    assert "--hbm: '' is not a size in bytes" in capsys.readouterr().err


def test_a_gemm_efficiency_too_small_for_a_number_is_refused(capsys):
    """--gemm-efficiency 1e-320 passed (more than 0) and printed 'inf s' step times, exit 0;
    the floor is a .topo file's smallest number, 1e-30."""
    argv = ["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--no-cache", "--jobs", "1",
            "--gemm-efficiency"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "1e-320"])
    assert exc.value.code == 2 and "--gemm-efficiency" in capsys.readouterr().err
    assert main([*argv, "1e-30", "--top", "1"]) == 0
    assert "inf" not in capsys.readouterr().out


def test_the_pool_never_forks_more_workers_than_cores_or_chunks():
    """--jobs 1024 on two cores forked 1,024 planners: 4 GB and a minute for a one-second
    search."""
    import os
    from topoc.compiler.analysis.plan import pool_size
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert pool_size(1024, 10**6) == cpus
    assert pool_size(1024, 1) == 1 and pool_size(1, 100) == 1


@pytest.mark.parametrize("extra, words", [
    (["--fsdp", "--zero", "0"], "--fsdp and --zero 0"),
    (["--fsdp", "--zero", "1"], "--fsdp and --zero 1"),
    (["--distributed-optimizer", "--zero", "0"], "--distributed-optimizer and --zero 0"),
    (["--scaling", "8..8", "--gpus", "4"], "--gpus and --scaling"),
])
def test_contradicting_flags_are_usage_errors(extra, words, capsys):
    """Each was settled silently: --fsdp ran ZeRO-3 whatever --zero said, the distributed
    optimizer ZeRO-1 over --zero 0, and --scaling ignored --gpus."""
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--no-cache",
                 "--jobs", "1", *extra]) == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("name, gpus", [("nvl72_cluster.topo", None), ("nvl72_cluster.topo", 256),
                                        ("dgx1_v100.topo", None), ("h100_cluster.topo", 64),
                                        ("pcie_server.topo", None), ("gb200_nvl72.topo", 36)])
def test_tp_within_domains_tests_every_group_as_spans_domains_does(name, gpus):
    """The search's tp filter, every group of a size at once over the places' numbers
    (``rules.domain_codes``), says what ``spans_domains`` says group by group, on the GPUs
    the search places its ranks on (``placement``)."""
    from topoc.compiler.analysis.plan import tp_within_domains
    from topoc.compiler.analysis.strategy import placement
    from topoc.compiler.lint.rules import spans_domains
    system = topoc.load(str(LIBRARY / "nvidia" / name))
    n = gpus or len(system.gpus)
    where = placement(system, n)
    gpu = (lambda r: where[r]) if where is not None else (lambda r: r)
    ok = tp_within_domains(system, n)
    answers = set()
    for tp in range(1, min(n, 80) + 1):
        want = tp <= 1 or all(spans_domains(system, [gpu(r) for r in range(s, s + tp)]) == 1
                              for s in range(0, n - n % tp, tp))
        assert ok(tp) == want, tp
        answers.add(want)
    assert True in answers
    if len(system.locality.island_ranks) > 1:       # some size leaves a domain
        assert False in answers


def test_a_mapping_whose_groups_are_not_linked_is_rejected_not_ranked_free():
    # a GB200 compute tray alone: its two Superchips share no link, so no group can span
    # them; such a mapping used to rank first, its traffic left out of the step as if free
    tray = topoc.load(str(LIBRARY / "nvidia" / "gb200_tray.topo"))
    m = find_model(tray, "llama3-8b")
    every = plan(tray, m, Training(m, 256), use_cache=False)
    assert not every.rows and every.invalid == every.considered - every.over_memory > 0
    one = plan(tray, m, Training(m, 256), gpus=2, use_cache=False)   # one Superchip
    assert one.rows and all(any(links for _, links in r.links_by_dim) for r in one.rows)
