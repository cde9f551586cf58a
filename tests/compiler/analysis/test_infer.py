"""``topoc infer``'s model on real systems: validation against published serving runs, TP
scaling, the search, and errors that name the numbers."""

import csv
import re
import math

import pytest

import topoc
from topoc.compiler.analysis.infer import InferError, Settings
from tests import serving_rows as S
from tests.conftest import library_file


@pytest.fixture(scope="module")
def errors():
    return [(c, S.error(c)) for c in S.checks()]


def test_fit_rows_are_at_most_a_third(errors):
    fit = {c.row for c, _ in errors if c.fit}
    assert len(fit) <= math.ceil(len({c.row for c, _ in errors}) / 3)
    assert len({c.row for c, _ in errors}) >= 100


@pytest.mark.parametrize("kind, limit", [("throughput", 0.10), ("tpot", 0.10),
                                         ("ttft idle", 0.15), ("ttft loaded", 0.65)])
def test_validation_medians_do_not_regress(errors, kind, limit):
    """Held-out rows (never fitted on): medians as docs/infer.md reports them, with a small
    margin. The issue's targets are 20 % (throughput), 15 % (TPOT), 25 % (TTFT). TTFT with one
    request in flight holds (6.0 % over 7 rows); TTFT under load in NIM's closed-loop sweeps
    does not (57.9 % over 30 rows, waits that grow with concurrency far past a queue of
    independent arrivals), and this test keeps that visible rather than hidden."""
    val = [e for c, e in errors if S.kind(c) == kind and not c.fit]
    assert val, kind
    assert S.median_abs(val) <= limit


def _series(errors):
    """Offline max-throughput series (TensorRT-LLM's tables) at TP 1, 2, 4 and 8."""
    out = {}
    for c, _ in errors:
        if c.metric == "throughput" and not c.per_gpu and c.concurrency == "max":
            key = (c.gpu, c.model, c.isl, c.osl)
            out.setdefault(key, {})[c.tp] = (c.measured / c.gpus, S.predict(c) / c.gpus)
    return {k: v for k, v in out.items() if sorted(v) == [1, 2, 4, 8]}


def test_tp_scaling_follows_the_measurements(errors):
    """Per-GPU throughput from TP2 to TP8 falls in every measured series (TP1 on H100 is
    KV-starved: it rises to TP2, and so does the prediction); topoc's steps go the same way
    in most cases and its TP8/TP2 ratio is near the measured one."""
    series = _series(errors)
    assert len(series) >= 10
    same = steps = 0
    ratios = []
    for v in series.values():
        for a, b in ((1, 2), (2, 4), (4, 8)):
            steps += 1
            same += (v[b][0] < v[a][0]) == (v[b][1] < v[a][1])
        ratios.append((v[8][1] / v[2][1]) / (v[8][0] / v[2][0]) - 1)
        assert v[8][1] < v[2][1]
    assert same / steps >= 0.9
    assert S.median_abs(ratios) <= 0.25


def test_tpot_falls_less_than_linearly_with_tp():
    """Batch-1 TPOT of Llama 3 70B on an H100 node: each doubling of tp helps less, because
    every layer pays two all-reduces at their small-message latency on NVLink."""
    dgx = topoc.load(library_file("dgx_h100.topo"))
    tpot, comm = {}, {}
    for tp in (1, 2, 4, 8):
        r = topoc.infer(dgx, "llama3-70b", 1000, 100, gpus=tp, tp=tp, pp=1, ep=1,
                        concurrency=1).rows[0]
        tpot[tp], comm[tp] = r.tpot, dict(r.parts)["decode_comm"]
    assert tpot[1] > tpot[2] > tpot[4] > tpot[8] > tpot[1] / 8
    assert tpot[1] / tpot[2] > tpot[4] / tpot[8]
    assert comm[1] == 0 < comm[2] < comm[8]


def test_fixed_configuration_is_rows_0():
    node = topoc.load(library_file("hgx_b200.topo"))
    res = topoc.infer(node, "llama3-70b", 2048, 256, tp=4, pp=1, ep=1, concurrency=64,
                      precision="fp4", kv_precision="fp8")
    r = res.rows[0].as_dict()
    assert (r["tp"], r["pp"], r["ep"], r["replicas"], r["gpus"], r["concurrency"]) == \
        (4, 1, 1, 2, 8, 64)
    assert (r["precision"], r["kv_precision"]) == ("fp4", "fp8")
    assert r["fits"] and r["kv_capacity_tokens"] > 64 * 2304
    assert r["throughput_per_gpu"] == pytest.approx(r["throughput"] / 8)
    assert r["tokens_per_s_per_user"] == pytest.approx(1 / r["tpot"])


def test_search_ranks_and_marks_a_pareto_front():
    rack = topoc.load(library_file("gb200_nvl72.topo"))
    res = topoc.infer(rack, "llama3-70b", 1000, 1000, tpot_limit=0.05)
    rows = res.rows
    good = [r for r in rows if r.fits and r.within_limits]
    assert good and rows[:len(good)] == tuple(good)
    assert all(r.tpot <= 0.05 for r in good)
    assert [r.throughput_per_gpu for r in good] == \
        sorted((r.throughput_per_gpu for r in good), reverse=True)
    front = [r for r in rows if r.pareto]
    assert len(front) >= 3
    for r in front:      # nothing beats a front row on both axes
        assert not any(o.throughput_per_gpu > r.throughput_per_gpu and
                       o.tokens_per_s_per_user > r.tokens_per_s_per_user for o in good)
    assert {r.config.tp for r in rows} >= {1, 2, 4, 8}


def test_disaggregated_rows_pay_the_kv_move():
    rack = topoc.load(library_file("gb200_nvl72.topo"))
    agg = topoc.infer(rack, "llama3-70b", 8000, 500, gpus=16, tp=4, pp=1, ep=1,
                      concurrency=64).rows[0]
    dis = topoc.infer(rack, "llama3-70b", 8000, 500, gpus=16, tp=4, pp=1, ep=1,
                      concurrency=64, disaggregate=True).rows[0]
    assert 1 <= dis.config.prefill_replicas < dis.config.replicas == 4
    assert dis.tpot < agg.tpot          # no prefill interference in decode


def test_a_model_too_big_says_by_how_much():
    node = topoc.load(library_file("dgx_h100.topo"))
    res = topoc.infer(node, "llama3-405b", 1000, 1000, gpus=1, concurrency=1,
                      precision="bf16")
    assert not any(r.fits for r in res.rows)
    from topoc.compiler.analysis.infer import too_big
    from topoc.compiler.lang.derive import find_model
    msg = too_big(node, find_model(node, "llama3-405b"), res, 1000, 1000)
    assert "GB per GPU" in msg and "85.5 GB" in msg     # 81,559 MiB


def test_heads_that_do_not_divide_are_an_error_with_the_numbers():
    node = topoc.load(library_file("dgx_h100.topo"))
    with pytest.raises(InferError, match="64 attention heads do not divide over tp = 3"):
        topoc.infer(node, "llama3-70b", 100, 100, gpus=3, tp=3, pp=1, ep=1)


def test_settings_change_the_answer():
    node = topoc.load(library_file("dgx_h100.topo"))
    a = topoc.infer(node, "llama3-8b", 500, 500, gpus=1, tp=1, pp=1, ep=1, concurrency=8)
    b = topoc.infer(node, "llama3-8b", 500, 500, gpus=1, tp=1, pp=1, ep=1, concurrency=8,
                    settings=Settings(hbm_efficiency=0.5))
    assert b.rows[0].tpot > a.rows[0].tpot


def test_a_tensor_group_across_nodes_pays_the_network_per_layer():
    """The seed's point: TP all-reduces in every layer of every token cost their latency on the
    path they take; tp 16 spans two H100 nodes and its per-step communication grows past tp 8's
    on NVLink."""
    cluster = topoc.load(library_file("h100_cluster.topo"))
    comm = {}
    for tp in (8, 16):
        r = topoc.infer(cluster, "llama3-8b", 1000, 100, gpus=tp, tp=tp, pp=1, ep=1,
                        concurrency=1).rows[0]
        comm[tp] = dict(r.parts)["decode_comm"]
    assert comm[16] > 1.1 * comm[8] > 0


def test_throughput_counts_the_requests_in_flight_not_the_replicas():
    node = topoc.load(library_file("dgx_h100.topo"))
    five = topoc.infer(node, "llama3-8b", 500, 500, tp=1, pp=1, ep=1, concurrency=5).rows[0]
    eight = topoc.infer(node, "llama3-8b", 500, 500, tp=1, pp=1, ep=1, concurrency=8).rows[0]
    assert five.config.replicas == eight.config.replicas == 8
    assert five.tpot == pytest.approx(eight.tpot)
    assert five.throughput == pytest.approx(eight.throughput * 5 / 8)


def test_idle_ttft_is_the_prefill_and_loaded_ttft_waits_for_a_step():
    """One request in flight: TTFT is the request overhead and its prefill step (which emits
    the first token), no decode step. With others in flight it also waits for the step under
    way and rides a step that decodes them."""
    node = topoc.load(library_file("dgx_h100.topo"))
    s = Settings()
    one = topoc.infer(node, "llama3-8b", 1000, 1000, gpus=1, tp=1, pp=1, ep=1,
                      concurrency=1).rows[0]
    parts = dict(one.parts)
    assert one.ttft == pytest.approx(s.request_overhead + parts["prefill_time"], rel=0.02)
    many = topoc.infer(node, "llama3-8b", 1000, 1000, gpus=1, tp=1, pp=1, ep=1,
                       concurrency=25).rows[0]
    assert many.ttft > one.ttft + 1.5 * dict(many.parts)["decode_step"] * 0.99


def test_requests_beyond_the_kv_cache_queue():
    """Past what the KV cache holds the engine runs at its capacity and the other clients wait:
    throughput stays, TTFT grows by Little's law; the row fits (an engine admits what its KV
    cache holds and queues the rest, it does not refuse) and says running and queued."""
    node = topoc.load(library_file("dgx_h100.topo"))
    run = dict(gpus=2, tp=2, pp=1, ep=1)
    cap = topoc.infer(node, "llama3-70b", 5000, 500, concurrency="max", **run).rows[0]
    held = cap.config.concurrency
    over = topoc.infer(node, "llama3-70b", 5000, 500, concurrency=2 * held, **run).rows[0]
    assert cap.fits and over.fits and dict(over.parts)["queued"] == held
    assert dict(over.parts)["running"] == held and dict(cap.parts)["queued"] == 0
    assert over.throughput == pytest.approx(cap.throughput)
    assert over.tpot == pytest.approx(cap.tpot)
    # closed loop: 2 x held clients, each request lasts clients / request rate
    assert over.ttft == pytest.approx(2 * held * 500 / over.throughput - 499 * over.tpot)
    assert over.ttft > 10 * cap.ttft


def test_routed_experts_run_faster_per_token_with_more_tokens_each():
    """Small-M grouped GEMMs: an expert with few tokens wastes its tile, so the MoE step's cost
    per token falls as the batch grows (expert_tile sets how fast)."""
    node = topoc.load(library_file("hgx_b200.topo"))
    fixed = dict(gpus=8, tp=8, pp=1, ep=8, precision="fp8")
    small = topoc.infer(node, "qwen3-235b-a22b", 1000, 1000, concurrency=64, **fixed).rows[0]
    big = topoc.infer(node, "qwen3-235b-a22b", 1000, 1000, concurrency=1024, **fixed).rows[0]
    per_token = [dict(r.parts)["decode_step"] / r.config.concurrency for r in (small, big)]
    assert per_token[1] < 0.5 * per_token[0]
    wide = Settings(expert_tile=1024.0)
    slow = topoc.infer(node, "qwen3-235b-a22b", 1000, 1000, concurrency=1024, settings=wide,
                       **fixed).rows[0]
    assert slow.throughput < big.throughput


def test_a_synchronised_wave_waits_for_the_prefills_ahead():
    """``ttft_wave``: C requests arriving together get their first tokens step by step, at most
    max_tokens // isl prefills a step, so the mean wait rises with C; one request alone sees the
    idle TTFT (its prefill), and a wave never beats the steady state's TTFT."""
    node = topoc.load(library_file("dgx_h100.topo"))
    run = dict(gpus=1, tp=1, pp=1, ep=1)
    rows = {c: topoc.infer(node, "llama3-8b", 1000, 1000, concurrency=c, **run).rows[0]
            for c in (1, 5, 8, 9, 25, 100)}
    wave = {c: dict(r.parts)["ttft_wave"] for c, r in rows.items()}
    assert wave[1] == pytest.approx(rows[1].ttft, rel=0.01)   # steady: a tiny queue
    assert wave[1] < wave[5] < wave[8] < wave[9] < wave[25] < wave[100]
    assert all(wave[c] >= rows[c].ttft for c in rows if c > 1)
    # 8 prefills of 1,000 tokens fill one 8,192-token step: the ninth request waits a step more
    ovh = Settings().request_overhead
    step8 = wave[8] - ovh
    ninth = 9 * (wave[9] - ovh) - 8 * step8       # the ninth request's own wait
    assert step8 < ninth < 1.5 * step8
    # a wave of 100 spans 13 steps: its mean is about 7 steps of 8 prefills
    assert 5 * step8 < wave[100] < 8 * step8


def test_nim_loaded_ttft_lies_between_the_steady_state_and_the_wave(errors):
    """NIM's fixed-length closed-loop sweeps (r159-r229) at concurrency > 1: the measured TTFT
    lies between topoc's steady-state TTFT (independent arrivals, the model's figure) and the
    synchronised wave's (``ttft_wave``), within 10 % and 15 % of them. Where it lies differs
    by table (docs/infer.md: about half-way for the 8B TP1 tables, a tenth for the 70B TP2
    ones), which is why neither is yet the prediction."""
    loaded = [c for c, _ in errors if S.kind(c) == "ttft loaded" and int(c.row[1:]) >= 159]
    assert len(loaded) >= 35
    for c in loaded:
        lo, hi = S.predict(c), S.wave_ttft(c)
        assert 0.9 * lo <= c.measured <= 1.15 * hi, (c.row, lo, c.measured, hi)


def test_closed_loop_ttft_lies_between_the_steady_state_and_the_wave():
    """``ttft_closed_loop`` = ttft^(1 - w) x ttft_wave^w: the row's TTFT with one request in
    flight (both bounds agree), between the two bounds above it, rising with concurrency, and
    the exponent moves it (w = 0 is the steady TTFT, w = 1 the wave's)."""
    node = topoc.load(library_file("dgx_h100.topo"))
    run = dict(gpus=2, tp=2, pp=1, ep=1)
    rows = {c: topoc.infer(node, "llama3-70b", 1000, 1000, concurrency=c, **run).rows[0]
            for c in (1, 5, 25, 100)}
    closed = {c: dict(r.parts)["ttft_closed_loop"] for c, r in rows.items()}
    assert closed[1] == pytest.approx(rows[1].ttft)
    assert closed[1] < closed[5] < closed[25] < closed[100]
    for c in (5, 25, 100):
        lo, hi = rows[c].ttft, dict(rows[c].parts)["ttft_wave"]
        assert lo < closed[c] < hi
        w = Settings().closed_loop_share
        assert closed[c] == pytest.approx(lo ** (1 - w) * hi ** w, rel=1e-9)
    # NIM measured 0.334 s for r218 (70B TP2, 1000/1000, concurrency 100); the steady TTFT
    # says 0.14 s, the wave 4.3 s, this 0.45 s
    assert 0.40 < closed[100] < 0.50
    for w, bound in ((0.0, rows[100].ttft), (1.0, dict(rows[100].parts)["ttft_wave"])):
        row = topoc.infer(node, "llama3-70b", 1000, 1000, concurrency=100,
                          settings=Settings(closed_loop_share=w), **run).rows[0]
        assert dict(row.parts)["ttft_closed_loop"] == pytest.approx(bound)


def test_closed_loop_ttft_against_the_loaded_rows():
    """The empirical closed-loop TTFT on held-out rows (docs/infer.md, "Closed-loop TTFT"):
    TTFT idle and loaded together within 25 % median (23.8 % over 37 rows), NIM's 70B TP2
    tables within 25 % (17.2 % over 14 rows). Its known gap stays visible: the 8B TP1 tables
    are under-predicted (54.6 % median over 13 rows, every one of them low but r160)."""
    val = [(c, S.closed_loop_ttft(c)) for c in S.checks() if c.metric == "ttft" and not c.fit]
    assert len(val) >= 37
    assert S.median_abs([p / c.measured - 1 for c, p in val]) <= 0.25
    big = [p / c.measured - 1 for c, p in val
           if S.kind(c) == "ttft loaded" and c.model == "llama3_70b"]
    assert len(big) >= 14 and S.median_abs(big) <= 0.25
    small = [(c.row, p / c.measured - 1) for c, p in val
             if S.kind(c) == "ttft loaded" and c.model == "llama3_8b"]
    assert len(small) >= 13
    assert sum(e < 0 for _, e in small) >= len(small) - 1
    assert 0.40 <= S.median_abs([e for _, e in small]) <= 0.65


def test_host_work_grows_with_the_sequences_and_an_overlap_scheduler_hides_it():
    """``sequence_overhead``: per running sequence and step, host work (scheduling, sampling,
    detokenisation) adds to the decode step of an engine without an overlap scheduler; with
    one it hides behind the GPU's step until it is the longer of the two."""
    node = topoc.load(library_file("dgx_h100.topo"))
    run = dict(gpus=1, tp=1, pp=1, ep=1)
    serial = Settings(overlap_scheduler=False)
    rows = {(c, o): topoc.infer(node, "llama3-8b", 200, 200, concurrency=c, settings=s,
                                **run).rows[0]
            for c in (1, 250) for o, s in (("on", Settings()), ("off", serial))}
    host = {k: dict(r.parts)["decode_host"] for k, r in rows.items()}
    assert host[(250, "off")] == pytest.approx(250 * Settings().sequence_overhead)
    assert host[(250, "on")] == host[(250, "off")] > 100 * host[(1, "off")]
    step = {k: dict(r.parts)["decode_step"] for k, r in rows.items()}
    assert step[(250, "off")] == pytest.approx(step[(250, "on")] + host[(250, "off")])
    # a host-bound engine (work longer than the GPU's step) runs at the host's pace
    slow = Settings(sequence_overhead=1e-3)
    bound = topoc.infer(node, "llama3-8b", 200, 200, concurrency=250, settings=slow,
                        **run).rows[0]
    assert dict(bound.parts)["decode_step"] == pytest.approx(0.25 + Settings().step_overhead)


def test_host_work_fixes_the_8b_tpot_at_high_concurrency(errors):
    """NIM's Llama 3.1 8B TP1 TPOT at concurrency 150-250 (NIM's TensorRT engines, no overlap
    scheduler): within 15 % each (it was 20-30 % low without the per-sequence host work)."""
    rows = [(c, e) for c, e in errors if c.metric == "tpot" and c.model == "llama3_8b"
            and c.engine.startswith("NIM") and c.isl <= 1000 and c.concurrency >= 150]
    assert len(rows) == 9
    assert all(abs(e) <= 0.15 for _, e in rows), [(c.row, round(e, 3)) for c, e in rows]


def test_sharegpt_bursts_compare_with_the_engines_peak_rate(errors):
    """GPUStack's DeepSeek-R1 ShareGPT bursts (r153-r156, 1,000 prompts at once on H200): the
    throughput check is the benchmark's peak output rate (the engine with ~1,000 sequences
    decoding), not its average over a burst that holds 1,000 admissions and ShareGPT's long
    output tail; topoc's continuous batching at concurrency 1,000 lies within 15 % of vLLM's
    and SGLang's peaks (it was +198..+230 % against the burst average); TensorRT-LLM's EP8
    (r155) stays 36 % over, a known miss (docs/infer.md). Each burst average lies below half
    the peak, far below topoc's rate."""
    with open(S.CSV, encoding="utf-8") as f:
        average = {r["id"]: float(r["throughput_tok_s"]) for r in csv.DictReader(f)
                   if r["id"] in S.BURST_PEAK}
    rows = [(c, e) for c, e in errors if c.row in S.BURST_PEAK and c.metric == "throughput"]
    assert sorted(c.row for c, _ in rows) == sorted(S.BURST_PEAK)
    for c, e in rows:
        assert c.measured == S.BURST_PEAK[c.row]
        assert abs(e) <= (0.40 if c.row == "r155" else 0.15), (c.row, round(e, 3))
        assert average[c.row] < 0.5 * c.measured < S.predict(c), c.row


def test_moe_throughput_median_on_held_out_rows(errors):
    """Mixtures of experts' throughput on the validation rows: 20.7 % median over 18 (41.3 %
    on main at 8d4145a; 19.9 % while the Blackwell parts had their marketed memory, before
    issue 40), just over the issue's 20 %, with the rows still off listed in docs/infer.md
    ("Mixtures of experts, row by row") with their mechanism or why it is unknown."""
    val = [e for c, e in errors if c.metric == "throughput" and not c.fit
           and S.arch(c.model).experts]
    assert len(val) == 18
    assert S.median_abs(val) <= 0.22


def test_routed_experts_run_at_their_own_gemm_width():
    """DeepSeek-V3 (3 dense layers of 61) at TP8 without EP: the dense MLP's GEMMs are
    18,432 / 8 = 2,304 columns per GPU, a routed expert's 2,048 / 8 = 256; each kernel class
    gets its own n / (n + gemm_width), not the dense layers' figure for the experts too."""
    from topoc.compiler.analysis.infer import Engine, gpu_of
    from topoc.compiler.training.serving import Layout
    sysm, comm = S.system("H200")
    a, s = S.arch("deepseek_v3"), Settings()
    tp8 = Engine(sysm, a, Layout(8, 1, 1, False), "fp8", "bf16", gpu_of(sysm, 8), s, comm)
    assert tp8.shape == pytest.approx(2304 / (2304 + s.gemm_width))
    assert tp8.expert_shape == pytest.approx(256 / (256 + s.gemm_width))
    ep8 = Engine(sysm, a, Layout(8, 1, 8, False), "fp8", "bf16", gpu_of(sysm, 8), s, comm)
    assert ep8.expert_shape == pytest.approx(2048 / (2048 + s.gemm_width))


def _nim_rows() -> dict[str, dict]:
    with open(S.CSV, encoding="utf-8") as f:
        return {r["id"]: r for r in csv.DictReader(f) if r["engine"].startswith("NIM")}


def test_a_frontend_queue_cannot_explain_nim_loaded_ttft():
    """The serving-frontend hypothesis (docs/infer.md, "The serving frontend, tested"): a
    single-threaded server whose wait grows with its loads (SSE chunks/s, requests/s, prompt
    tokens/s, open streams). NIM's 8B 200/200 at concurrency 25 (r161) carries every load of
    its 1000/1000 at 25 (r177) and waits a tenth as long over idle, so a frontend explains at
    most a tenth of r177's wait; and at the same lengths and chunk rate the 70B TP2 (r212)
    waits 8.5 times as long as the 8B (r161), the opposite of what a frontend loaded by the
    8B's higher token rates would give."""
    rows = _nim_rows()

    def load(rid):
        r = rows[rid]
        chunks = float(r["throughput_tok_s"])
        return chunks, chunks / int(r["osl"]), chunks / int(r["osl"]) * int(r["isl"])

    def wait(rid, idle):
        return float(rows[rid]["ttft_s"]) - float(rows[idle]["ttft_s"])

    assert rows["r161"]["concurrency"] == rows["r177"]["concurrency"] == "25"
    assert all(a <= b for a, b in zip(load("r177"), load("r161")))
    assert wait("r177", "r175") > 9 * wait("r161", "r159")
    assert (rows["r161"]["isl"], rows["r161"]["osl"]) == (rows["r212"]["isl"], rows["r212"]["osl"])
    assert load("r212")[0] == pytest.approx(load("r161")[0], rel=0.05)
    assert wait("r212", "r206") > 8 * wait("r161", "r159")


def test_the_70b_tables_hold_no_synchronised_first_wave():
    """C prompts that arrive at once cannot average a TTFT below request_overhead + (C + 1) / 2
    x the shortest per-request prefill (topoc's, at its best batch). genai-perf's default
    measures max(10, 2 C) requests without a warm-up, its first C starting together. NIM's
    70B TP2 rows from concurrency 25 lie below half that bound (all but r208), so their
    measured requests never held a synchronised first wave, while the 8B TP1 rows at
    concurrency 5 lie on it (0.96-1.16 at every length): the two tables were not measured the
    same way, which no setting of the engine's model can follow (docs/infer.md)."""
    def ratio(c):
        eng = S.engine(c)
        best = min(eng.prefill(c.isl, n) / n
                   for n in range(1, max(1, eng.s.max_tokens // c.isl) + 1))
        return c.measured / (eng.s.request_overhead + (c.concurrency + 1) / 2 * best)

    loaded = [c for c in S.checks() if S.kind(c) == "ttft loaded" and c.engine.startswith("NIM")]
    big = {c.row: ratio(c) for c in loaded if c.model == "llama3_70b" and c.concurrency >= 25}
    assert len(big) == 16
    assert sum(r < 0.5 for r in big.values()) >= 15 and max(big.values()) < 0.75, big
    small = {c.row: ratio(c) for c in loaded if c.model == "llama3_8b" and c.concurrency == 5}
    assert len(small) == 5
    assert all(0.9 <= r <= 1.2 for r in small.values()), small


def test_a_layout_without_a_path_is_rejected_not_the_search():
    """A GB200 tray alone: its two superchips' GPUs share no link (their NVLinks go to the
    rack's switch trays), so tp 4 and a pipeline across the superchips have no path; those
    layouts are rejected with the reason and the ones inside a superchip are costed."""
    tray = topoc.load(library_file("gb200_tray.topo"))
    res = topoc.infer(tray, "llama3-70b", 1000, 1000, concurrency="max")
    assert res.rows and res.rows[0].fits
    assert {(r.config.tp, r.config.pp) for r in res.rows} >= {(1, 1), (2, 1)}
    assert all((r.config.tp, r.config.pp) not in {(4, 1), (2, 2)} for r in res.rows)
    assert any("tp 4 x pp 1 x ep 1: allreduce" in m and "no path" in m for m in res.rejected)
    with pytest.raises(InferError, match="no layout of llama3_70b runs on 4 GPUs: tp 4 x pp 1"):
        topoc.infer(tray, "llama3-70b", 1000, 1000, tp=4, pp=1, ep=1, concurrency=1)


def test_a_gpu_without_a_figure_serving_needs_is_named():
    """A part that declares memory and bandwidth but no tensor peak, or no HBM bandwidth: the
    error names the GPU model and the figure, as for every missing figure."""
    text = library_file("hgx_b300.topo").read_text(encoding="utf-8")
    for bare, words in (
            ("device Bare : gpu { hbm = 288 GB  hbm_bandwidth = 8 TB/s  ports.nvlink = 18 }\n",
             "GPU model 'Bare' declares no tflops_bf16"),
            ("device Bare : gpu { tflops_bf16 = 2250  hbm = 288 GB  ports.nvlink = 18 }\n",
             "GPU model 'Bare' declares no hbm_bandwidth")):
        node = topoc.loads(bare + text.replace(": B300", ": Bare")
                           .replace('use "', 'use "nvidia/'))
        with pytest.raises(InferError, match=words):
            topoc.infer(node, "llama3-8b", 10, 10)


@pytest.mark.parametrize("kw, words", [
    ({"concurrency": 0}, "concurrency 0"),
    ({"concurrency": -3}, "concurrency -3"),
    ({"concurrency": "lots"}, "concurrency 'lots'"),
    ({"gpus": 0}, "gpus 0"),
    ({"tp": 0}, "tp = 0"),
    ({"pp": -1}, "pp = -1"),
    ({"ttft_limit": -1}, "ttft_limit -1"),
    ({"tpot_limit": 0}, "tpot_limit 0"),
])
def test_the_python_api_refuses_what_the_cli_refuses(kw, words):
    """concurrency 0 or -3 gave rows at that concurrency, "lots" a sweep, gpus=0 or tp=0 the
    whole search and a negative limit every row over it, all without a word."""
    node = topoc.load(library_file("dgx_h100.topo"))
    with pytest.raises(InferError, match=words):
        topoc.infer(node, "llama3-8b", 10, 10, **kw)


def test_the_replica_costed_is_the_one_astride_two_racks():
    """Two NVL72 racks, tp 16: replicas are 16 consecutive ranks, so the fifth (ranks 64..79)
    has 8 GPUs in each rack and its every all-reduce crosses InfiniBand. It is the one costed
    (its requests see the slower TPOT, which a limit must hold for), not replica 0 inside a
    rack; tp 8 divides a rack, so replica 0 stands for all. From 32 requests its all-reduces are
    the slower; at a few requests NCCL's tree across the two racks (two chains of 8 and one
    network hop, eligible across NVL72 racks since issue 45) has less latency than the ring of 16
    inside a rack, so there the replica astride is not the slower one (slowest_replica goes by
    the topology, not by the cost)."""
    from topoc.compiler.analysis.infer import Comm, Engine, gpu_of, slowest_replica
    from topoc.compiler.training.serving import Layout
    sysm = topoc.load(S.ROOT / "library" / "nvidia" / "nvl72_cluster.topo", {"racks": 2})
    a, s, comm = S.arch("llama3_70b"), Settings(), Comm(sysm)
    gpu = gpu_of(sysm, 144)
    assert slowest_replica(sysm, Layout(8, 1, 1, False), 18) == 0
    assert slowest_replica(sysm, Layout(16, 1, 1, False), 9) == 64
    assert slowest_replica(sysm, Layout(8, 2, 1, False), 9) == 64   # its send crosses racks
    inside, astride = (Engine(sysm, a, Layout(16, 1, 1, False), "fp8", "fp8", gpu, s, comm,
                              first)
                       for first in (0, 64))
    assert astride.decode_step(32, 1500)[0] > inside.decode_step(32, 1500)[0]
    assert astride.decode_step(64, 1500)[0] > 1.1 * inside.decode_step(64, 1500)[0]
    row = topoc.infer(sysm, "llama3-70b", isl=1000, osl=1000, tp=16, pp=1, ep=1,
                      concurrency=64).rows[0]
    # 64 requests on 9 replicas: 8 on the busiest, at a mean context of 1,500 tokens
    assert row.tpot >= astride.decode_step(8, 1500)[0]


def _every_replica_ranked(system, lay, replicas):
    """slowest_replica as it was: every replica's key computed (the reference)."""
    import numpy as np
    n = lay.tp * lay.pp
    per = np.asarray(system.locality.island[:replicas * n]).reshape(replicas, lay.pp, lay.tp)
    tp_span = (1 + (np.diff(np.sort(per, axis=2), axis=2) != 0).sum(axis=2)).max(axis=1)
    sends = (np.diff(per[:, :, 0], axis=1) != 0).sum(axis=1) if lay.pp > 1 else 0 * tp_span
    span = 1 + (np.diff(np.sort(per.reshape(replicas, n), axis=1), axis=1) != 0).sum(axis=1)
    return int(np.argmax((tp_span * (n + 1) + sends) * (n + 1) + span)) * n


@pytest.mark.parametrize("name, defines", [("nvl72_cluster.topo", {"racks": 5}),
                                           ("h100_cluster.topo", {"nodes": 12}),
                                           ("gb200_nvl72.topo", {}),
                                           ("pcie_server.topo", {})])
def test_the_slowest_replica_from_one_period_of_islands_is_the_one_of_all(name, defines):
    """Ranking the replicas of one period of the islands (s / gcd(n, s) replicas) finds the
    replica that ranking every replica finds, for every tp x pp that fits; a system whose
    islands differ in size (a failed GPU) is ranked whole."""
    from topoc.compiler.analysis.infer import slowest_replica
    from topoc.compiler.ir.locality import island_period
    from topoc.compiler.ir.degrade import apply
    from topoc.compiler.training.serving import Layout
    healthy = topoc.load(library_file(name), defines)
    uneven = apply(healthy, [healthy.gpus[3].id]).system
    for system in (healthy, uneven):
        total, checked = len(system.gpus), 0
        for tp in (1, 2, 3, 4, 5, 8, 12, 16, 24, 36, 64, 72):
            for pp in (1, 2, 3, 5, 7):
                n = tp * pp
                for replicas in {total // n, total // n // 2}:
                    if replicas >= 1:
                        lay = Layout(tp, pp, 1, False)
                        assert slowest_replica(system, lay, replicas) == \
                            _every_replica_ranked(system, lay, replicas), (tp, pp, replicas)
                        checked += 1
        assert checked > 10
    assert island_period(healthy) > 0
    if len(set(healthy.locality.island)) > 1:
        assert island_period(uneven) == 0


@pytest.mark.parametrize("kw, words", [
    ({"isl": 10**400}, "isl 100000000000... (401 digits)"),
    ({"osl": 0}, "osl 0"),
    ({"concurrency": 10**400}, "concurrency 100000000000"),
    ({"tp": True}, "tp = True"),
    ({"gpus": True}, "gpus True"),
])
def test_the_python_api_bounds_sizes_as_the_cli_does(kw, words):
    """isl=10**400 or concurrency=10**400 raised OverflowError from the model, and True passed
    for a whole number; the API refuses them with the numbers, as the CLI does."""
    node = topoc.load(S.ROOT / "library" / "nvidia" / "dgx_h100.topo")
    args = {"isl": 10, "osl": 10, **kw}
    with pytest.raises(InferError, match=re.escape(words)):
        topoc.infer(node, "llama3-8b", **args)


def test_no_configuration_an_engine_ran_is_refused():
    """Every measured configuration of tests/serving_runs.csv ran on its engine, so every row
    fits: 19 of them ask more requests than the KV cache holds (70B TP2 on H100 at 5000/500
    from concurrency 100, 20000/2000 from 25; DeepSeek-R1 on H200 at 32000/100), which the
    engine ran as a smaller batch and a queue. They say so (``running``, ``queued``)."""
    rows = {c.row: S.predicted_row(c) for c in S.checks()}
    assert all(r.fits for r in rows.values()), [k for k, r in rows.items() if not r.fits]
    queued = {k for k, r in rows.items() if dict(r.parts)["queued"] > 0}
    assert len(queued) == 19 and {"r123", "r157", "r229"} <= queued
    assert dict(rows["r229"].parts)["running"] == 22


def test_the_collectives_chooser_is_named_and_reaches_the_one_door():
    """infer costs its collectives through collectives.coster with ``Settings.collectives``
    (default ``fastest``): on four p5 nodes a tensor group of 32 pays NCCL's tuner's pick with
    ``nccl`` (tree/LL128 for 1 MiB, 507 us, against 137 us), so its TPOT is longer."""
    from topoc.compiler.analysis.infer import CHOOSER, infer
    p5 = topoc.load(library_file("aws_p5.topo"), {"nodes": 4})
    model = S.arch("llama3_70b")
    assert Settings().collectives == CHOOSER == "fastest"
    rows = {c: infer(p5, model, 1000, 100, fixed={"tp": 32, "pp": 1, "ep": 1},
                     concurrency=8, settings=Settings(collectives=c)).rows[0]
            for c in ("fastest", "nccl")}
    assert rows["nccl"].tpot > rows["fastest"].tpot
    with pytest.raises(InferError, match="collectives 'ring'"):
        infer(p5, model, 1000, 100, fixed={"tp": 8, "pp": 1, "ep": 1}, concurrency=8,
              settings=Settings(collectives="ring"))
