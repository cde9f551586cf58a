"""``topoc plan`` as a new user meets it (issue 23 audit): what it prints for differences that
are negative, and the diagnostics for inputs that cannot mean anything."""

from __future__ import annotations

import pytest

from topoc.backends.report import seconds
from topoc.cli import main
from topoc.compiler.analysis.comparison import check_sizes, parse_sizes

from ..conftest import LIBRARY

DGX = str(LIBRARY / "nvidia" / "dgx_h100.topo")
H100 = str(LIBRARY / "nvidia" / "h100_cluster.topo")


def test_a_negative_duration_keeps_its_unit():
    """--compare prints this strategy's term minus #1's; the best may have the larger bubble."""
    assert seconds(-0.2991192) == "-299.1 ms"
    assert seconds(-10.9) == "-10.90 s"
    assert seconds(-7.1e-5) == "-71.0 us" and seconds(-5e-6) == "-5.0 us"
    assert seconds(0.2991192) == "299.1 ms"


# ---- --compare: a request that cannot be found says why, before the search ------------------


@pytest.mark.parametrize("text, message", [
    ("tp=8,tp=4", "given twice"),
    ("tp=0", "at least 1"),
    ("tp=-8", "at least 1"),
    ("recompute=bogus", "none, selective, full"),
    ("sequence_parallel=maybe", "on or off"),
    ("zero=4", "one of 0, 1, 2, 3"),
])
def test_compare_refuses_values_that_mean_nothing(text, message):
    with pytest.raises(ValueError, match=message):
        parse_sizes(text)
    assert parse_sizes("sequence_parallel=off,zero=0,recompute=full") == \
        {"sequence_parallel": False, "zero": 0, "recompute": "full"}


def test_compare_says_why_a_request_is_outside_the_search():
    assert "8,192, but the search places 64 GPUs" in \
        check_sizes(parse_sizes("tp=8,pp=16,dp=64,cp=1"), 64, 8192)
    assert "does not divide" in check_sizes(parse_sizes("tp=3"), 64, 8192)
    assert "contradicts" in check_sizes({"tp": 8}, 64, 8192, {"tp": 4})
    assert "--cp 8" in check_sizes({"cp": 8}, 64, 8192)
    assert check_sizes({"cp": 8}, 64, 8192, {"cp": 8}) is None
    assert "--zero 2" in check_sizes({"zero": 2}, 64, 8192)
    assert check_sizes(parse_sizes("tp=8,pp=4"), 64, 8192) is None


@pytest.mark.parametrize("extra", [
    ["--compare", "tp=8,pp=16,dp=64"],          # the issue's own example, on 8 GPUs
    ["--compare", "recompute=bogus"],
    ["--tp", "4", "--compare", "tp=8"],
    ["--compare", "tp=8", "--format", "csv"],   # was the plan's CSV, the request ignored
    ["--compare", "tp=8", "--scaling", "4..8"],  # was the scaling table, the request ignored
    ["--gpus", "4", "--scaling", "4..8"],        # was the scaling from 4, --gpus ignored
])
def test_plan_refuses_a_compare_or_scaling_it_would_ignore_or_never_find(extra, capsys):
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--no-cache",
                 "--jobs", "1", *extra]) == 2
    out = capsys.readouterr()
    assert "error" in out.err and "Traceback" not in out.err and not out.out


def test_fp8_on_a_gpu_without_an_fp8_peak_is_a_usage_error(capsys):
    """A100 declares no tflops_fp8: --fp8 ran its GEMMs at bf16 and added FP8's weight copy."""
    a100 = str(LIBRARY / "nvidia" / "dgx_a100.topo")
    assert main(["plan", a100, "--model", "llama3-8b", "--batch", "64", "--fp8"]) == 2
    assert "declares no tflops_fp8" in capsys.readouterr().err


def test_fixed_sizes_that_admit_no_mapping_say_what_a_mapping_needs(capsys):
    """Was 'all 0 candidates were rejected (layers, heads, batch or experts do not divide)'."""
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--tp", "8",
                 "--pp", "2", "--no-cache", "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert "all 0 candidates" not in err
    assert "fixed sizes (--tp 8 --pp 2)" in err and "must be 8" in err


def test_an_interleaved_pipeline_needs_at_least_pp_micro_batches():
    """Megatron-Core refuses fewer (microbatch_group_size_per_vp_stage in [PP, M]); the search
    ranked #1 at 4,096 H100s for llama3-70b, batch 1024, tp1 cp2 dp1024 pp2 v20: one
    micro-batch, its bubble costed (P - 1) / (V M + P - 1) = 1/21 instead of half the step."""
    import topoc
    from topoc.compiler.lang.derive import find_model
    from topoc.compiler.training.model import MappingError, Shape, Training, check
    dgx = topoc.load(DGX)
    m = find_model(dgx, "llama3-8b")
    sh = Shape(1, 1, 1, 4, 2)
    with pytest.raises(MappingError, match="at least pp = 2 micro-batches, not 1"):
        check(Training(m, 4, interleave=2), sh)
    assert check(Training(m, 8, interleave=2), sh) == 2
    assert check(Training(m, 4), sh) == 1          # 1F1B runs one micro-batch


def test_nothing_fits_names_the_memory_terms_and_the_largest(capsys):
    """The error gave only the total and a key whose own memory was not that total (a pruned
    mapping is bounded by its lightest variant: here sequence parallelism on, the key said
    sp0)."""
    assert main(["plan", DGX, "--model", "llama3-405b", "--batch", "8", "--tp", "8",
                 "--no-cache", "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert "no mapping fits in GPU memory" in err
    assert "(tp8-cp1-ep1-dp1-pp1-mb1-full-v1-sp1-z1)" in err
    assert "optimizer the largest" in err and "weights " in err and "activations " in err


def test_scaling_reports_progress():
    """--scaling 8..4096 ran minutes without a sign of life (the progress bar was plan's
    only)."""
    import topoc
    from topoc.compiler.analysis.scaling import scaling
    from topoc.compiler.lang.derive import find_model
    from topoc.compiler.training.model import Training
    dgx = topoc.load(DGX)
    m = find_model(dgx, "llama3-8b")
    calls = []
    scaling(dgx, m, Training(m, 64), 4, 8, fixed={"tp": 1, "pp": 1, "microbatch": 1},
            use_cache=False, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]


def test_a_model_takes_its_published_dotted_name():
    """'Llama 3.1 405B' as a user types it was 'unknown model', its preset being llama31_405b."""
    import topoc
    from topoc.compiler.lang.derive import find_model
    dgx = topoc.load(DGX)
    assert find_model(dgx, "llama3.1-405b").name == "llama31_405b"
    assert find_model(dgx, "Llama3.1-405B").name == "llama31_405b"


def test_compare_in_python_names_an_unknown_key():
    """compare(result, {"TP": 8}) was an AttributeError from inside the candidate."""
    from topoc.compiler.analysis.comparison import compare
    from topoc.compiler.analysis.plan import PlanResult
    empty = PlanResult((), 0, 0, 0, 8, "cache", 0, None, 0.23, None)
    with pytest.raises(ValueError, match="unknown key 'TP'"):
        compare(empty, {"TP": 8})


def test_every_candidate_rejected_says_why_the_first_one_is(capsys):
    """--interleave 3 --pp 1 said only '(layers, heads, batch or experts do not divide)'."""
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--pp", "1",
                 "--interleave", "3", "--no-cache", "--jobs", "1"]) == 1
    assert "an interleaved schedule needs pp >= 2" in capsys.readouterr().err


def test_the_scaling_help_says_which_counts_it_runs(capsys):
    """It said 'powers of two'; 3..10 runs 3, 6 and 10."""
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "LO, 2 LO, 4 LO, ... and HI" in text and "powers of two" not in text


def test_too_many_gpus_is_named_before_a_compare_request_is_checked(capsys):
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--gpus", "100",
                 "--compare", "tp=3"]) == 2
    assert "--gpus 100: the system has 8 GPUs" in capsys.readouterr().err


@pytest.mark.parametrize("extra, words", [
    (["--pp", "1", "--first-stage-layers", "3"], "--pp 1 has none"),
    (["--import-root", "/nonexistent-topoc-root"], "--import-root /nonexistent-topoc-root: not a folder"),
])
def test_options_that_would_be_ignored_are_usage_errors(extra, words, capsys):
    """--first-stage-layers with --pp 1, and an --import-root that is no folder, were
    accepted and did nothing."""
    assert main(["plan", DGX, "--model", "llama3-8b", "--batch", "64", *extra]) == 2
    assert words in capsys.readouterr().err


def test_compare_splits_compute_into_its_terms_and_counts_micro_batches(capsys):
    """--compare names what makes one strategy win (issue 42): the compute term split into
    GEMMs, attention, element-wise work and the gradient-accumulation passes, which add up to
    it, and both strategies' micro-batches; --grad-accumulation puts a pass per micro-batch."""
    import json
    args = ["plan", DGX, "--model", "llama3-8b", "--batch", "64", "--no-cache", "--jobs", "1",
            "--compare", "tp=1,pp=1,dp=8,microbatch=1,recompute=full", "--format", "json"]
    runs = {}
    for mode in ("fused", "autograd"):
        assert main(args + ["--grad-accumulation", mode]) == 0
        runs[mode] = json.loads(capsys.readouterr().out)
    doc = runs["autograd"]
    terms = {t["term"]: t for t in doc["terms"]}
    parts = [n for n in terms if n.startswith("compute")]
    assert "compute" not in terms and "compute: GEMMs" in parts
    for who, key in (("this", "row"), ("best", "best")):
        assert sum(terms[n][who] for n in parts) == pytest.approx(doc[key]["compute_time"])
    assert doc["microbatches"]["this"] == 64 // 8
    assert terms["compute: grad accumulation"]["this"] > 0
    fused = {t["term"]: t for t in runs["fused"]["terms"]}
    assert fused.get("compute: grad accumulation", {"this": 0.0})["this"] == 0.0
    assert doc["row"]["step_time"] > runs["fused"]["row"]["step_time"]


def test_token_drop_takes_the_dispatchers_wait_off_an_moe_compare(capsys):
    """--token-drop (experts padded to capacity): the Megatron-Core MoE layers' cost per layer
    and micro-batch, the token dispatcher's wait on the host, is gone from --compare's terms."""
    import json
    args = ["plan", DGX, "--model", "qwen3-30b-a3b", "--batch", "64", "--no-cache", "--jobs",
            "1", "--distributed-optimizer", "--compare",
            "tp=1,pp=1,dp=8,ep=8,microbatch=1,recompute=full", "--format", "json"]
    runs = {}
    for extra in ((), ("--token-drop",)):
        assert main(args + list(extra)) == 0
        doc = json.loads(capsys.readouterr().out)
        runs[extra] = {t["term"]: t["this"] for t in doc["terms"]}, doc["row"]["step_time"]
    (plain, plain_step), (dropped, dropped_step) = runs[()], runs[("--token-drop",)]
    assert plain["compute: per layer and micro-batch"] > 0
    assert dropped.get("compute: per layer and micro-batch", 0.0) == 0.0
    assert dropped_step < plain_step
