"""``topoc infer --request-rate``: open-loop arrivals (compiler/analysis/infer_rate.py) and
their validation against runs with a documented arrival protocol (tests/serving_openloop.csv)."""

import math

import attrs
import pytest

import topoc
from topoc.compiler.analysis.infer import InferError
from tests import serving_openloop_rows as O
from tests import serving_rows as S

NODE = "library/nvidia/dgx_h100.topo"
ONE = dict(gpus=4, tp=4, pp=1, ep=1, precision="bf16", kv_precision="bf16")


@pytest.fixture(scope="module")
def node():
    return topoc.load(NODE)


@pytest.fixture(scope="module")
def errors():
    return O.errors()


def _row(node, rate, requests=None, isl=224, osl=189):
    return topoc.infer(node, "llama3-70b", isl, osl, request_rate=rate, requests=requests,
                       **ONE).rows[0]


def test_ttft_rises_with_the_rate_and_diverges_at_capacity(node):
    """Below capacity the TTFT grows with the rate (more requests in flight: the step in
    progress is longer, prefills queue); at capacity there is no steady state, the row says
    so, and its TTFT is the run's, which grows with the run's requests."""
    cap = dict(_row(node, 1.0).parts)["capacity_rate"]
    rates = [f * cap for f in (0.02, 0.2, 0.5, 0.8, 0.95)]
    rows = [_row(node, r) for r in rates]
    ttfts = [r.ttft for r in rows]
    assert all(r.stable for r in rows)
    assert ttfts == sorted(ttfts) and ttfts[-1] > 1.3 * ttfts[0]
    assert [r.config.concurrency for r in rows] == sorted(r.config.concurrency for r in rows)
    over = _row(node, 1.5 * cap, requests=4000)
    longer = _row(node, 1.5 * cap, requests=8000)
    assert not over.stable and dict(over.extra)["utilization"] == pytest.approx(1.5)
    assert longer.ttft > 1.5 * over.ttft > 10 * ttfts[-1]
    # the sustained rate, not the offered one, is what comes out
    assert over.throughput == pytest.approx(cap * 189, rel=1e-6)


def test_a_slow_rate_is_the_idle_request_and_little_s_law_holds(node):
    """At a trickle one request is alone: TTFT is the request overhead and its prefill, as
    the closed-loop row at concurrency 1 has it. At the rate a closed-loop concurrency
    sustains, the open-loop row holds that concurrency in flight and decodes at its TPOT."""
    idle = topoc.infer(node, "llama3-70b", 224, 189, concurrency=1, **ONE).rows[0]
    trickle = _row(node, 1e-4)
    assert trickle.ttft == pytest.approx(idle.ttft, rel=0.01)
    closed = topoc.infer(node, "llama3-70b", 224, 189, concurrency=64, **ONE).rows[0]
    rate = closed.throughput / 189
    open_ = _row(node, rate)
    assert dict(open_.parts)["in_flight"] == pytest.approx(64, rel=0.02)
    assert open_.tpot == pytest.approx(closed.tpot, rel=0.02)
    assert open_.throughput == pytest.approx(closed.throughput, rel=1e-6)


def test_a_burst_that_fits_is_the_synchronised_wave(node):
    """All requests at once, fewer than the KV cache holds: the first wave of the closed-loop
    rows (``ttft_wave``), step by step at the token budget."""
    wave = dict(topoc.infer(node, "llama3-70b", 1000, 200, concurrency=64,
                            **ONE).rows[0].parts)["ttft_wave"]
    burst = topoc.infer(node, "llama3-70b", 1000, 200, request_rate=math.inf, requests=64,
                        **ONE).rows[0]
    assert dict(burst.extra)["arrival"] == "burst" and not burst.stable
    assert burst.ttft == pytest.approx(wave, rel=0.05)


def test_multi_step_scheduling_makes_new_requests_wait(errors):
    """vLLM 0.6 with --num-scheduler-steps 10 (o003, o004): a request joins only when the
    10-step schedule in progress ends. With the documented steps the rows are within 20 %;
    taken as one step they would be 60 % low. (o004 was at -20.7 % while the launch from NCCL
    2.21 was 4.5 us, and is back inside with 7.5: collectives/constants.py; its run had NCCL
    2.20.5, which the rows do not pin yet: docs/infer.md, `nccl`.)"""
    from topoc.compiler.analysis.infer import Settings
    runs = [r for r in O.runs() if r.scheduler_steps == 10 and r.gpu == "H100"]
    assert [r.row for r in runs] == ["o003", "o004"]
    for run in runs:
        assert abs(O.predict(run, "ttft") / run.ttft - 1) < 0.20
        one = O.predict(attrs.evolve(run, scheduler_steps=1), "ttft", Settings())
        assert one / run.ttft - 1 < -0.5


def test_fit_rows_are_at_most_a_third():
    runs = O.runs()
    assert len(runs) >= 40
    assert sum(r.fit for r in runs) <= math.ceil(len(runs) / 3)


def test_poisson_ttft_within_the_target_on_rows_below_capacity(errors):
    """Poisson arrivals below capacity (SGLang's and vLLM's H100 runs, DataCrunch's H200
    runs): TTFT within 25 % median on the held-out rows (7.5 % over 11 at this revision; 20.5 %
    over the 7 fit rows, on which nothing was fitted). TPOT there is 25.8 % (the decode model
    over-predicts SGLang's BF16 steps on H200 at small batches)."""
    for is_fit, limit in ((False, 0.25), (True, 0.25)):
        ttft = [e for run, k, m, _, e in errors if k == "poisson stable" and m == "ttft"
                and run.fit == is_fit]
        assert len(ttft) >= 7 and S.median_abs(ttft) <= limit
    tpot = [e for run, k, m, _, e in errors if k == "poisson stable" and m == "tpot"]
    assert S.median_abs(tpot) <= 0.30


def test_known_protocol_rows_say_what_does_not_hold(errors):
    """Bursts (rate inf) and rates past capacity are not within 25 %: the burst class is kept
    visible here (48 % median at this revision) rather than hidden in a total."""
    burst = [e for run, k, m, _, e in errors if k == "burst" and m == "ttft" and not run.fit]
    assert len(burst) >= 12 and 0.25 < S.median_abs(burst) <= 0.60
    over = {run.row for run, k, m, _, e in errors if k == "poisson over capacity"}
    # the runs whose benchmark did not keep up (duration far past the arrivals' span)
    assert {"o009", "o014", "o020"} <= over


def test_the_rate_reaches_the_cli_json_and_csv(capsys):
    import csv
    import io
    import json
    from topoc.cli import main
    argv = ["infer", NODE, "--model", "llama3-70b", "--isl", "224", "--osl", "189",
            "--gpus", "4", "--tp", "4", "--pp", "1", "--ep", "1", "--request-rate", "4"]
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    row = doc["rows"][0]
    assert doc["request_rate"] == 4 and row["request_rate"] == 4 and row["stable"] is True
    assert row["throughput"] == pytest.approx(4 * 189)
    assert main([*argv, "--format", "csv"]) == 0
    first = capsys.readouterr().out
    assert main([*argv, "--format", "csv"]) == 0
    assert capsys.readouterr().out == first                      # deterministic
    line = next(csv.DictReader(io.StringIO(first)))
    assert line["arrival"] == "poisson" and float(line["request_rate"]) == 4
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "4 requests/s" in text and "load" in text
    assert main([*argv[:-1], "1000", "--requests", "2000"]) == 0
    assert "over capacity" in capsys.readouterr().out
    assert main([*argv, "--concurrency", "8"]) == 2
    assert main([*argv[:-1], "-1"]) == 2
    assert main([*argv[:-2], "--requests", "10"]) == 2


def test_the_python_api_refuses_two_loads(node):
    with pytest.raises(InferError):
        topoc.infer(node, "llama3-70b", 224, 189, concurrency=8, request_rate=4, **ONE)


def test_a_run_of_a_billion_requests_is_refused_before_it_runs(node, capsys):
    """The fluid recursion is linear in a replica's requests: ``--request-rate inf --requests
    1000000000`` took over a minute and 8 GB before it was bounded."""
    from topoc.cli import main
    from topoc.compiler.analysis.infer_rate import MAX_REQUESTS
    argv = ["infer", NODE, "--model", "llama3-8b", "--isl", "1000", "--osl", "200",
            "--request-rate", "inf", "--requests"]
    assert main([*argv, "1000000000"]) == 2
    err = capsys.readouterr().err
    assert "--requests 1000000000" in err and f"{MAX_REQUESTS:,}" in err
    with pytest.raises(InferError, match="requests"):
        topoc.infer(node, "llama3-8b", 1000, 200, request_rate=math.inf,
                    requests=MAX_REQUESTS + 1, **ONE)
    assert topoc.infer(node, "llama3-8b", 1000, 200, request_rate=math.inf, requests=MAX_REQUESTS,
                       **ONE).rows


def test_an_absurd_rate_prints_its_load_in_a_few_characters(capsys):
    """--request-rate 1e300 printed the load as a 300-digit number, a column 400 wide."""
    from topoc.cli import main
    assert main(["infer", NODE, "--model", "llama3-8b", "--isl", "1000", "--osl", "200",
                 "--gpus", "4", "--tp", "4", "--pp", "1", "--ep", "1",
                 "--request-rate", "1e300"]) == 0
    out = capsys.readouterr().out
    assert "e+29" in out and "x over" in out
    assert max(len(line) for line in out.splitlines()) < 200
