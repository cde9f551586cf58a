"""``topoc infer --client``: a benchmark client against an engine's scheduler, simulated event
by event (compiler/analysis/serve_sim.py)."""

import json

import attrs
import pytest

import topoc
from topoc.cli import main
from topoc.compiler.analysis import serve_sim as M
from topoc.compiler.analysis.infer import Comm, Engine, InferError, Settings, gpu_of
from topoc.compiler.lang.derive import find_model
from topoc.compiler.training.serving import Layout

NODE = "library/nvidia/dgx_h100.topo"
ONE = dict(gpus=1, tp=1, pp=1, ep=1)


@pytest.fixture(scope="module")
def node():
    return topoc.load(NODE)


def engine(node, model="llama3-8b", gpus=1, tp=1, sched=M.ENGINES["trtllm"], **kw):
    s = attrs.evolve(M.settings_for(Settings(), sched), **kw)
    return Engine(node, find_model(node, model), Layout(tp, 1, 1, False), "fp8", "fp8",
                  gpu_of(node, gpus), s, Comm(node))


def test_statistics_are_the_clients():
    """Mean, median and p90 with linear interpolation between order statistics (numpy's
    default, which vllm bench serve and genai-perf use)."""
    st = M.stats([4.0, 1.0, 3.0, 2.0])
    assert (st.mean, st.median, st.p90) == (2.5, 2.5, pytest.approx(3.7))


def test_one_client_sees_the_idle_engine(node):
    """One client: each request meets an empty engine, so TTFT is the request overhead and the
    prefill, TPOT the decode step of one sequence, throughput osl over a request's time."""
    eng = engine(node)
    run = M.simulate(eng, 1000, 200, M.Client("closed", 1, requests=20), M.ENGINES["trtllm"])
    assert run.ttft.mean == pytest.approx(eng.s.request_overhead + eng.prefill(1000), rel=1e-9)
    assert run.ttft.p90 == pytest.approx(run.ttft.mean, rel=1e-9)
    assert run.tpot.mean == pytest.approx(eng.decode_step(1, 1100)[0], rel=1e-9)
    # the decoding batch, time-weighted: one sequence, but none during its prefill steps
    assert 0.9 < run.running < 1.0 and run.queued == 1 and run.preempted == 0


def test_the_first_wave_is_in_the_mean_unless_warmed_up(node):
    """C clients start together: the first wave's prompts queue behind each other, so the
    mean TTFT over the first C requests is well above the idle one; a warm-up of C requests
    leaves that wave out and the mean falls."""
    eng = engine(node)
    sched = M.ENGINES["vllm"]
    cold = M.simulate(eng, 2000, 500, M.Client("closed", 64, requests=640), sched)
    warm = M.simulate(eng, 2000, 500, M.Client("closed", 64, requests=640, warmup=64), sched)
    idle = eng.s.request_overhead + eng.prefill(2000)
    assert cold.ttft.mean > 3 * idle
    assert warm.ttft.mean < cold.ttft.mean and warm.measured == 576


def test_cohorts_are_the_prompts_that_share_a_first_token_step(node):
    """``Run.cohort``: one client's requests get their first token alone (1); 32 clients of
    short prompts that start together are admitted a step's budget at a time, so their first
    tokens come in groups, and the closed loop keeps the groups it formed (requests that start
    decoding in one step end in one step and are sent again together)."""
    eng = engine(node)
    sched = M.ENGINES["trtllm"]
    alone = M.simulate(eng, 200, 100, M.Client("closed", 1, requests=10), sched)
    many = M.simulate(eng, 200, 100, M.Client("closed", 32, requests=320), sched)
    assert alone.cohort == 1.0
    assert 1.0 < many.cohort <= 32


def test_past_the_kv_cache_the_batch_is_what_fits_and_the_rest_wait(node):
    """TensorRT-LLM's GUARANTEED_NO_EVICT admits a request only with room for its whole
    sequence: with a KV cache of 20 sequences and 60 clients the running batch stays at 20,
    40 wait, none is preempted; TTFT holds the wait (a whole request's time, about)."""
    eng = engine(node)
    eng.kv_capacity = 20 * 1500
    run = M.simulate(eng, 1000, 500, M.Client("closed", 60, requests=600), M.ENGINES["trtllm"])
    assert run.running <= 20 + 1e-9 and run.running > 15
    assert run.queued == 40 and run.preempted == 0
    assert run.ttft.median > 400 * run.tpot.median


def test_vllm_admits_by_the_prompt_and_preempts(node):
    """vLLM reserves only the prompt: the same small cache runs a larger batch than
    TensorRT-LLM's rule, and when the decodes fill it the newest request is preempted."""
    eng = engine(node)
    eng.kv_capacity = 20 * 1500
    client = M.Client("closed", 60, requests=600)
    trt = M.simulate(eng, 1000, 500, client, M.ENGINES["trtllm"])
    vllm = M.simulate(eng, 1000, 500, client, M.ENGINES["vllm"])
    assert vllm.preempted > 0 and vllm.running > trt.running


def test_sglang_prefills_first_and_pauses_the_decodes(node):
    """SGLang runs a prefill batch whenever a prompt can be admitted, the running sequences
    waiting: under a Poisson load its TPOT p90 is above TensorRT-LLM's, which mixes
    prefills into the decode steps, and its TTFT below."""
    eng = engine(node)
    client = M.Client("poisson", rate=8.0, requests=400)
    trt = M.simulate(eng, 2000, 300, client, M.ENGINES["trtllm"])
    sgl = M.simulate(eng, 2000, 300, client, M.ENGINES["sglang"])
    assert sgl.tpot.p90 > trt.tpot.p90 and sgl.ttft.mean < trt.ttft.mean


def test_poisson_runs_are_deterministic_and_follow_the_rate(node):
    """Seeded arrivals: the same run twice gives the same figures; throughput is the offered
    load below capacity."""
    eng = engine(node)
    client = M.Client("poisson", rate=2.0, requests=300)
    a = M.simulate(eng, 500, 200, client, M.ENGINES["trtllm"])
    b = M.simulate(eng, 500, 200, client, M.ENGINES["trtllm"])
    assert a == b
    assert a.throughput == pytest.approx(2.0 * 200, rel=0.15)


def test_the_api_and_the_cli_give_the_same_simulated_rows(node, capsys):
    """``topoc.infer(..., client=...)`` and ``topoc infer --client`` agree; the row carries
    the statistics and its TTFT is the simulated mean, not the analytic steady state."""
    api = topoc.infer(node, "llama3-8b", 1000, 1000, concurrency=50, client="closed",
                      engine="vllm", **ONE).rows[0]
    plain = topoc.infer(node, "llama3-8b", 1000, 1000, concurrency=50, **ONE).rows[0]
    assert main(["infer", NODE, "--model", "llama3-8b", "--isl", "1000", "--osl", "1000",
                 "--gpus", "1", "--tp", "1", "--pp", "1", "--ep", "1", "--concurrency", "50",
                 "--client", "closed", "--engine", "vllm", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    row = doc["rows"][0]
    assert doc["client"] == "closed" and doc["engine"] == "vllm" and doc["requests"] == 1000
    assert row["ttft"] == api.ttft and row["tpot"] == api.tpot
    assert row["ttft_median"] <= row["ttft_p90"] and row["sim_requests"] == 1000
    assert api.ttft != plain.ttft


def test_a_named_client_runs_its_own_request_count(node, capsys):
    """``--client genai-perf`` is the closed loop with genai-perf's count, max(10, 2 x
    concurrency) requests: the CLI and the API agree, and the short run's TTFT differs from
    a 1,000-request run's (its first wave is half the sample)."""
    api = topoc.infer(node, "llama3-8b", 2000, 200, concurrency=24, client="genai-perf",
                      **ONE).rows[0]
    long = topoc.infer(node, "llama3-8b", 2000, 200, concurrency=24, client="closed",
                       **ONE).rows[0]
    assert dict(api.parts)["sim_requests"] == 48 and api.ttft != long.ttft
    assert main(["infer", NODE, "--model", "llama3-8b", "--isl", "2000", "--osl", "200",
                 "--gpus", "1", "--tp", "1", "--pp", "1", "--ep", "1", "--concurrency", "24",
                 "--client", "genai-perf", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["client"] == "genai-perf" and doc["requests_per_client"] == 2
    assert doc["rows"][0]["ttft"] == api.ttft and doc["rows"][0]["sim_requests"] == 48
    assert main(["infer", NODE, "--model", "llama3-8b", "--isl", "2000", "--osl", "200",
                 "--gpus", "1", "--tp", "1", "--pp", "1", "--ep", "1", "--concurrency", "24",
                 "--client", "genai-perf"]) == 0
    assert "genai-perf's default closed loop" in capsys.readouterr().out


@pytest.mark.parametrize("argv,why", [
    (["--warmup", "5"], "--warmup needs --client"),
    (["--client", "genai-perf", "--request-rate", "2"], "--client genai-perf takes "
                                                        "--concurrency"),
    (["--client", "poisson"], "--client poisson needs --request-rate"),
    (["--client", "closed", "--request-rate", "2"], "--client closed takes --concurrency"),
    (["--client", "closed", "--requests", "10", "--warmup", "10"], "--warmup 10: 0 to 9"),
    (["--client", "closed", "--disaggregate"], "not with --disaggregate"),
    (["--length-spread", "0.1"], "--length-spread needs --client"),
    (["--client", "closed", "--length-spread", "1"], "--length-spread 1: from 0 up to"),
])
def test_client_usage_errors(argv, why, capsys):
    code = main(["infer", NODE, "--model", "llama3-8b", "--isl", "100", "--osl", "100",
                 "--gpus", "2", *argv])
    assert code == 2 and why in capsys.readouterr().err


def test_the_api_checks_its_client(node):
    with pytest.raises(InferError, match="engine 'tgi'"):
        topoc.infer(node, "llama3-8b", 100, 100, engine="tgi", **ONE)
    with pytest.raises(InferError, match="client 'poisson' needs request_rate"):
        topoc.infer(node, "llama3-8b", 100, 100, client="poisson", **ONE)


@pytest.mark.parametrize("client,kw,why", [
    (M.Client("open"), {}, "client 'open': one of closed, poisson"),
    (M.Client("closed", requests=5, warmup=5), {}, "5 requests with 5 warm-up"),
    (M.Client("closed"), {"disaggregate": True}, "runs aggregated replicas"),
])
def test_infer_refuses_a_client_it_cannot_run(node, client, kw, why):
    from topoc.compiler.analysis.infer import infer
    with pytest.raises(InferError, match=why):
        infer(node, find_model(node, "llama3-8b"), 100, 100, 2, {}, "fp8", client=client, **kw)


def test_an_overlapping_engine_admits_a_step_later(node):
    """An engine that plans step n + 1 when it launches step n (TensorRT-LLM's overlap
    scheduler, SGLang's) takes a request that arrives during step n into step n + 2: under a
    light Poisson load its TTFT is about one decode step above the same engine's without
    overlap (whose steps are longer by the host work, which is small here)."""
    on = M.ENGINES["trtllm"]
    off = attrs.evolve(on, overlap=False)
    client = M.Client("poisson", rate=1.0, requests=300)
    a = M.simulate(engine(node, sched=on), 1000, 500, client, on)
    b = M.simulate(engine(node, sched=off), 1000, 500, client, off)
    step = engine(node, sched=on).decode_step(8, 1250)[0]
    assert 0.5 * step < a.ttft.mean - b.ttft.mean < 1.5 * step


def test_itl_is_per_token_and_holds_sglangs_pauses(node):
    """Inter-token latency counts every decoded token's gap: with SGLang's prefill steps,
    which decode nothing, most gaps are one decode step (the median) and the pauses are in
    the tail and the mean, so TPOT (a request's mean gap) is above the median ITL."""
    sched = M.ENGINES["sglang"]
    eng = engine(node, sched=sched)
    run = M.simulate(eng, 2000, 300, M.Client("poisson", rate=8.0, requests=400), sched)
    assert run.itl.median < run.itl.p90 and run.itl.median < run.tpot.mean
    assert run.itl.mean == pytest.approx(run.tpot.mean, rel=0.1)


def test_client_protocols_measure_what_their_source_says():
    """genai-perf measures max(10, 2 x concurrency) requests with no warm-up (its
    perf_analyzer --request-count), vllm bench serve 1,000 prompts unless the run states
    another count; both count the synchronised first wave."""
    g = M.PROTOCOLS["genai-perf"]
    assert g.client(3).resolved() == M.Client("closed", 3, requests=10, warmup=0)
    assert g.client(25).resolved() == M.Client("closed", 25, requests=50, warmup=0)
    assert g.client(25, 300).resolved().requests == 300
    assert M.PROTOCOLS["aiperf"].client(40).resolved().requests == 80
    v = M.PROTOCOLS["vllm-bench-serve"]
    assert v.client(4).resolved().requests == M.DEFAULT_REQUESTS
    assert v.client(4, 100) == M.Client("closed", 4, requests=100, warmup=0)
    # --client genai-perf: the count follows each row's concurrency; --requests fixes it
    assert M.client_for("genai-perf").per_client == 2
    assert M.client_for("genai-perf", requests=64) == M.Client("closed", 1, requests=64)
    assert M.client_for("closed", warmup=5) == M.Client("closed", 1, requests=1000, warmup=5)
    # a named client's warm-up is sent before its measured count, as its own option does
    run = attrs.evolve(M.client_for("aiperf", warmup=15), concurrency=20).resolved()
    assert (run.requests, run.warmup) == (55, 15)
    assert M.client_for("vllm-bench-serve", requests=100, warmup=10).requests == 110
    assert M.problem(M.client_for("genai-perf", warmup=15)) is None


def test_a_short_genai_perf_run_holds_more_of_the_first_wave(node):
    """At concurrency C a closed loop's first C requests arrive together: a run of 2C
    requests (genai-perf's default) averages half of them, a run of 1,000 a few per cent, so
    the short run's mean TTFT is the higher on a prefill-bound load."""
    sched = M.ENGINES["trtllm"]
    eng = engine(node, sched=sched)
    short = M.simulate(eng, 4000, 200, M.PROTOCOLS["genai-perf"].client(32), sched)
    long = M.simulate(eng, 4000, 200, M.Client("closed", 32, requests=1000), sched)
    assert short.measured == 64 and short.ttft.mean > long.ttft.mean


def test_the_trace_accounts_for_every_step_and_request(node):
    """``simulate(trace=...)``: the records come in time order and tile the run (each starts
    where the last ended), every request is admitted and gets its first token once, the running
    batch and the KV tokens held never pass what TensorRT-LLM's rule admits (a small cache: 20
    sequences, 60 clients), and tracing changes no figure."""
    eng = engine(node)
    eng.kv_capacity = 20 * 1500
    sched = M.ENGINES["trtllm"]
    client = M.Client("closed", 60, requests=300)
    steps: list[M.Step] = []
    traced = M.simulate(eng, 1000, 500, client, sched, trace=steps.append)
    assert traced == M.simulate(eng, 1000, 500, client, sched)
    assert sum(x.admitted for x in steps) == sum(x.finished for x in steps) == 300
    for a, b in zip(steps, steps[1:]):
        assert b.t >= a.t + a.steps * a.dt - 1e-9
    assert max(x.running for x in steps) <= 20
    assert max(x.held for x in steps) <= eng.kv_capacity
    assert max(x.waiting for x in steps) >= 40 - 20    # the rest wait in the engine's queue


def test_a_first_wave_counted_run_cannot_measure_less_than_its_bound():
    """benchmarks/infer_validation.py ``first_wave_bound``: AIPerf's default run (2 x C
    requests, the first C sent together, no warm-up) measures a mean TTFT no lower than
    C / N x p (C + 1) / 2, p a prompt's FLOPs at the dense peak. The simulated run of the same
    configuration (prefill at a fraction of the peak) lies above it; NIM's Llama 3.3 70B TP2
    row at concurrency 100 (r218) lies below it, so it was not measured as that run; its 8B
    TP1 row at the same lengths and concurrency (r179) is above it."""
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(root / "benchmarks"))
    sys.path.insert(0, str(root))
    import infer_validation as V
    from tests import serving_rows as S
    checks = {c.row: c for c in S.checks() if c.metric == "ttft"}
    r218, r179 = checks["r218"], checks["r179"]
    settings = Settings(collectives=S.ROW_ENGINE)
    bound = V.first_wave_bound(r218, settings)
    sim = V.simulated_protocol(r218, settings)
    assert sim > bound > r218.measured
    assert r179.measured > V.first_wave_bound(r179, settings)


def test_the_protocol_consistent_ttft_checks_are_those_their_client_can_give():
    """benchmarks/infer_validation.py ``consistent``, issue 43's alternative TTFT target
    (docs/infer.md, "TTFT: the protocol-consistent target"): a check is left out only when it
    is a loaded TTFT whose measured mean lies below ``first_wave_bound``, the least its stated
    client's default run can measure. No fitted setting enters that bound, so the same checks
    are left out whatever the settings (every fold of the leave-one-source-out, from any start);
    idle TTFT, TPOT and throughput checks are never left out; NIM's Llama 3.3 70B TP2
    1000/1000 rows from concurrency 50 are out and its 8B TP1 rows at the same lengths in. On
    the checks kept, the simulated loop run as each row's client runs it stays within issue
    43's 25 % median in sample (a guard: the held-out figure is `--loso`'s)."""
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(root / "benchmarks"))
    sys.path.insert(0, str(root))
    import infer_validation as V
    from tests import serving_rows as S
    every = S.checks()
    ttft = {c.row: c for c in every if c.metric == "ttft"}
    base = Settings(collectives=S.ROW_ENGINE)
    slow = attrs.evolve(base, **V.NEUTRAL)
    for c in ttft.values():
        if c.concurrency != 1:
            assert V.first_wave_bound(c, base) == V.first_wave_bound(c, slow)
    out = {c.row for c in every if not V.consistent(c)}
    assert all(ttft[r].measured < V.first_wave_bound(ttft[r], base) for r in out)
    assert all(S.kind(c) == "ttft loaded" for c in every if c.row in out and c.metric == "ttft")
    assert not {c.row for c in every if c.metric != "ttft" and not V.consistent(c)}
    assert {"r217", "r218", "r219", "r220"} <= out and not {"r178", "r179", "r180"} & out
    # the looser reading (genai-perf's 10 s time windows count more requests, so a lower
    # least mean): it leaves out fewer, a subset; r218 stays out, the short 200/200 rows not
    either = {c.row for c in every if not V.consistent(c, windows=True)}
    assert either < out and "r218" in either and "r210" not in either
    assert V.window_bound(ttft["r218"], base) < V.first_wave_bound(ttft["r218"], base)
    kept = [V.simulated_protocol(c, base) / c.measured - 1 for c in ttft.values()
            if V.consistent(c)]
    assert len(kept) >= 40 and S.median_abs(kept) <= 0.25


def test_equal_lengths_keep_the_cohorts_a_spread_breaks_them(node):
    """A closed loop whose requests all have the same lengths keeps the cohorts its first wave
    forms (those admitted in one step end in one step and come back together), in the steady
    state too; drawing each request's lengths within 5 % of them (vllm bench serve's
    --random-range-ratio) breaks the cohorts up, and the steady-state TTFT falls toward one
    request's prefill."""
    eng = engine(node)
    sched = M.ENGINES["trtllm"]
    steady = M.Client("closed", 64, requests=13 * 64, warmup=3 * 64)
    same = M.simulate(eng, 1000, 500, steady, sched)
    mixed = M.simulate(eng, 1000, 500, attrs.evolve(steady, spread=0.05), sched)
    assert same.cohort > 3 and mixed.cohort < 2
    assert mixed.ttft.mean < same.ttft.mean / 2
    # the mean lengths, and so the throughput and TPOT, stay near the unspread run's
    assert mixed.throughput == pytest.approx(same.throughput, rel=0.1)
    assert mixed.tpot.mean == pytest.approx(same.tpot.mean, rel=0.1)


def test_lengths_are_the_random_datasets():
    """Integer-uniform in [floor(L (1 - r)), ceil(L (1 + r))], outputs at least 2 tokens, from
    a fixed seed; without a spread every request has the given lengths."""
    ins, outs = M.lengths(1000, 10, 4000, 0.5)
    assert min(ins) == 500 and max(ins) == 1500 and min(outs) == 5 and max(outs) == 15
    assert abs(sum(ins) / len(ins) - 1000) < 15
    assert (ins, outs) == M.lengths(1000, 10, 4000, 0.5)
    assert M.lengths(1000, 10, 3, 0.0) == ([1000] * 3, [10] * 3)
    assert min(M.lengths(100, 2, 100, 0.9)[1]) == 2
    assert M.problem(M.Client("closed", 4, spread=1.0)) is not None
    assert M.problem(M.Client("closed", 4, spread=0.3)) is None


def test_the_api_and_the_cli_spread_the_lengths_alike(node, capsys):
    """``topoc infer --client closed --length-spread 0.1`` and ``topoc.infer(...,
    length_spread=0.1)`` give the same row; the JSON names the spread, the text says it, and
    the spread run's TTFT differs from the equal-length run's (its cohorts break up)."""
    kw = dict(concurrency=64, client="closed", requests=400, **ONE)
    api = topoc.infer(node, "llama3-8b", 1000, 500, length_spread=0.1, **kw).rows[0]
    same = topoc.infer(node, "llama3-8b", 1000, 500, **kw).rows[0]
    argv = ["infer", NODE, "--model", "llama3-8b", "--isl", "1000", "--osl", "500", "--gpus",
            "1", "--tp", "1", "--pp", "1", "--ep", "1", "--concurrency", "64", "--client",
            "closed", "--requests", "400", "--length-spread", "0.1"]
    assert main(argv + ["--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["length_spread"] == 0.1 and doc["rows"][0]["ttft"] == api.ttft
    assert api.ttft != same.ttft
    assert main(argv) == 0
    assert "lengths drawn within 10% of --isl and --osl" in capsys.readouterr().out
    with pytest.raises(InferError, match="length_spread needs client"):
        topoc.infer(node, "llama3-8b", 100, 100, length_spread=0.1, **ONE)


def test_trtllm_bench_builds_its_token_budget_from_the_kv_cache_and_the_lengths():
    """trtllm-bench's finetune_setting: the requests the KV cache holds (at most 4,096) x
    (1 + isl / osl), at most 32,768, at least 2,048, rounded up to 256, 512 or 1,024."""
    assert M.bench_tokens(502_893, 1000, 1000) == 2048      # 251 requests x 2 = 502: the floor
    assert M.bench_tokens(3e6, 1000, 1000) == 3072          # 1,500 x 2 = 3,000 -> 256s
    assert M.bench_tokens(1e7, 128, 128) == 8192            # 4,096 (the cap) x 2
    assert M.bench_tokens(1e7, 8000, 1000) == 10240         # 1,111 x 9 = 10,000 -> 1,024s
    assert M.bench_tokens(1e9, 8000, 100) == 32768          # the cap


def test_the_trtllm_bench_client_runs_on_the_engine_it_launches(node):
    """--client trtllm-bench: 1,000 requests with no warm-up in the loop (its --warmup runs
    before, apart), all C at once, on an engine with chunked context and the tuned budget:
    the same run as a plain closed loop on that scheduler, and unlike one on the default
    scheduler (8,192 tokens, whole prompts)."""
    c = M.client_for("trtllm-bench")
    assert (c.requests, c.warmup, c.per_client, c.chunked, c.tuned) == (1000, 0, 0, True, True)
    eng = engine(node)
    sched = M.ENGINES["trtllm"]
    bench = M.simulate(eng, 4000, 200, attrs.evolve(c, concurrency=32), sched)
    built = attrs.evolve(sched, chunked_prefill=True,
                         max_tokens=M.bench_tokens(eng.kv_capacity, 4000, 200))
    plain = M.Client("closed", 32, requests=1000)
    assert bench == M.simulate(eng, 4000, 200, plain, built)
    assert bench.ttft.mean != M.simulate(eng, 4000, 200, plain, sched).ttft.mean


def test_the_cli_says_trtllm_bench_launches_its_engine(node, capsys):
    argv = ["infer", NODE, "--model", "llama3-8b", "--isl", "2000", "--osl", "200", "--gpus",
            "1", "--tp", "1", "--pp", "1", "--ep", "1", "--concurrency", "24", "--client",
            "trtllm-bench"]
    assert main(argv + ["--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    api = topoc.infer(node, "llama3-8b", 2000, 200, concurrency=24, client="trtllm-bench",
                      **ONE).rows[0]
    assert doc["engine_by_client"] is True and doc["rows"][0]["ttft"] == api.ttft
    assert main(argv) == 0
    assert "as the client launches it" in capsys.readouterr().out


def test_given_build_limits_win_over_trtllm_benchs_own(node, capsys):
    """--max-num-tokens / --chunked-prefill beside --client trtllm-bench: the limits given
    are the engine's (a build the user states), in the CLI as in the API, the same run as a
    plain closed loop of 1,000 requests on those limits."""
    kw = dict(concurrency=24, **ONE)
    given = topoc.infer(node, "llama3-8b", 2000, 200, client="trtllm-bench",
                        max_num_tokens=4096, chunked_prefill=False, **kw).rows[0]
    plain = topoc.infer(node, "llama3-8b", 2000, 200, client="closed", max_num_tokens=4096,
                        chunked_prefill=False, **kw).rows[0]
    assert given.ttft == plain.ttft
    assert main(["infer", NODE, "--model", "llama3-8b", "--isl", "2000", "--osl", "200",
                 "--gpus", "1", "--tp", "1", "--pp", "1", "--ep", "1", "--concurrency", "24",
                 "--client", "trtllm-bench", "--max-num-tokens", "4096", "--chunked-prefill",
                 "off", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["ttft"] == given.ttft
