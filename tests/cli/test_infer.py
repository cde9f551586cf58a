"""``topoc infer``: the topoc.infer/1 contract, formats, exit codes and messages."""

from __future__ import annotations

import csv
import io
import json

import pytest

import topoc

from topoc.cli import main

from ..conftest import library_file

NVL72 = str(library_file("gb200_nvl72.topo"))
DGX = str(library_file("dgx_h100.topo"))
FIELDS = {"tp", "pp", "ep", "replicas", "gpus", "concurrency", "precision", "kv_precision",
          "ttft", "tpot", "throughput", "throughput_per_gpu", "tokens_per_s_per_user",
          "memory_per_gpu", "kv_capacity_tokens", "fits"}


def test_json_follows_the_contract(capsys):
    assert main(["infer", NVL72, "--model", "llama3-70b", "--isl", "1000", "--osl", "500",
                 "--gpus", "8", "--format", "json", "--top", "0"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "topoc.infer/1"
    assert doc["rows"] and all(FIELDS <= set(r) for r in doc["rows"])
    for r in doc["rows"]:
        assert r["replicas"] == 8 // (r["tp"] * r["pp"]) and r["gpus"] == 8
        assert r["throughput_per_gpu"] == pytest.approx(r["throughput"] / r["gpus"])
        assert isinstance(r["memory_per_gpu"], int)         # bytes, whole
    assert doc["rows"][0]["fits"]


def test_open_loop_rows_give_memory_in_whole_bytes(capsys):
    """An open-loop row's requests in flight come from Little's law, a fraction: its memory
    was printed as 38890330732.109 bytes."""
    assert main(["infer", DGX, "--model", "llama3-70b", "--isl", "1000", "--osl", "200",
                 "--tp", "8", "--pp", "1", "--ep", "1", "--request-rate", "3",
                 "--format", "json"]) == 0
    r = json.loads(capsys.readouterr().out)["rows"][0]
    assert isinstance(r["memory_per_gpu"], int) and r["memory_per_gpu"] > 0


def test_every_dimension_and_the_concurrency_given_is_rows_0(capsys):
    argv = ["infer", NVL72, "--model", "llama3-8b", "--isl", "512", "--osl", "128",
            "--gpus", "4", "--tp", "2", "--pp", "1", "--ep", "1", "--concurrency", "12",
            "--precision", "bf16", "--kv-precision", "bf16", "--format", "json"]
    assert main(argv) == 0
    r = json.loads(capsys.readouterr().out)["rows"][0]
    assert (r["tp"], r["pp"], r["ep"], r["replicas"], r["concurrency"]) == (2, 1, 1, 2, 12)
    assert (r["precision"], r["kv_precision"]) == ("bf16", "bf16")


def test_one_layout_and_one_configuration_are_singular_in_the_text(capsys):
    argv = ["infer", NVL72, "--model", "llama3-8b", "--isl", "512", "--osl", "128",
            "--gpus", "4", "--tp", "2", "--pp", "1", "--ep", "1", "--concurrency", "12"]
    assert main(argv) == 0
    assert "\n1 layout, 1 configuration costed, 1 fit\n" in capsys.readouterr().out


def test_text_and_csv_and_output_file(tmp_path, capsys):
    argv = ["infer", DGX, "--model", "llama3-70b", "--isl", "2000", "--osl", "200",
            "--concurrency", "max"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Pareto front" in text and "tok/s/GPU" in text
    out = tmp_path / "rows.csv"
    assert main([*argv, "--format", "csv", "-o", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert rows and FIELDS <= set(rows[0])
    assert main([*argv, "--format", "csv"]) == 0
    assert capsys.readouterr().out == out.read_text()        # deterministic


def test_a_model_that_does_not_fit_names_the_numbers(capsys):
    code = main(["infer", DGX, "--model", "llama3-405b", "--isl", "1000", "--osl", "1000",
                 "--gpus", "1", "--precision", "bf16", "--concurrency", "1"])
    err = capsys.readouterr().err
    assert code == 1
    assert "llama3_405b does not fit" in err and "GB per GPU" in err and "85.5 GB" in err


def test_a_concurrency_past_the_kv_cache_runs_and_queues(capsys):
    """An engine does not refuse a concurrency its KV cache cannot hold at once: its running
    batch is what fits and the rest wait in its queue (vLLM, TensorRT-LLM and SGLang all
    admit so). The row fits, every format says running and queued, and TTFT holds the wait."""
    argv = ["infer", DGX, "--model", "llama3-70b", "--isl", "1000", "--osl", "1000",
            "--tp", "8", "--pp", "1", "--ep", "1", "--concurrency", "5000"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "runs a batch of 1,616 requests per replica" in out     # 3,233,012 / 2,000
    assert "3,384 per replica wait in the engine's queue" in out
    assert main([*argv, "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["fits"] and row["running"] == 1616 and row["queued"] == 3384
    assert row["kv_capacity_tokens"] == 3233012 and row["concurrency"] == 5000
    assert main([*argv, "--format", "csv"]) == 0
    line = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))[0]
    assert line["running"] == "1616.0" and line["queued"] == "3384.0"
    # the queue's wait: 5,000 clients, each request lasts 5,000 / the request rate
    assert row["ttft"] > 100 * row["prefill_time"]


def test_not_one_request_fits_names_the_kv_cache(capsys):
    """Only a configuration where not even one request fits in the KV cache is refused."""
    code = main(["infer", DGX, "--model", "llama3-70b", "--isl", "4000000", "--osl", "1000",
                 "--tp", "8", "--pp", "1", "--ep", "1", "--concurrency", "1"])
    err = capsys.readouterr().err
    assert code == 1
    assert "one request of 4000000+1000 tokens needs 4,001,000 tokens of KV cache" in err
    assert "holds 3,233,012 tokens per replica (85.5 GB per GPU)" in err


def test_nothing_fits_leaves_the_output_file_alone(tmp_path, capsys):
    """Exit 1 (no configuration fits) writes no -o file and leaves an existing one as it was;
    without -o it prints nothing on stdout either (the message says why on stderr)."""
    out = tmp_path / "rows.json"
    out.write_text("before\n")
    argv = ["infer", DGX, "--model", "llama3-405b", "--isl", "1000", "--osl", "1000",
            "--gpus", "1", "--precision", "bf16", "--concurrency", "1", "--format", "json"]
    assert main([*argv, "-o", str(out)]) == 1
    assert out.read_text() == "before\n"
    assert not (tmp_path / "new.json").exists() and \
        main([*argv, "-o", str(tmp_path / "new.json")]) == 1
    assert not (tmp_path / "new.json").exists()
    assert "does not fit" in capsys.readouterr().err
    assert main(argv) == 1
    assert capsys.readouterr().out == ""


def test_heads_that_do_not_divide(capsys):
    code = main(["infer", DGX, "--model", "llama3-70b", "--isl", "10", "--osl", "10",
                 "--gpus", "6", "--tp", "6"])
    err = capsys.readouterr().err
    assert code == 1 and "64 attention heads do not divide over tp = 6" in err


@pytest.mark.parametrize("extra, words", [
    (["--concurrency", "lots"], "--concurrency lots"),
    (["--isl", "0"], "--isl 0"),
    (["--gpus", "9"], "--gpus 9"),
    (["--model", "llama9"], "unknown model"),
    (["--tpot-limit", "-1"], "--tpot-limit"),
])
def test_usage_errors_exit_2(capsys, extra, words):
    argv = ["infer", DGX, "--model", "llama3-8b", "--isl", "10", "--osl", "10"]
    for i in range(0, len(extra), 2):
        if extra[i] in argv:
            argv[argv.index(extra[i]) + 1] = extra[i + 1]
        else:
            argv += extra[i:i + 2]
    assert main(argv) == 2
    assert words in capsys.readouterr().err


def test_cli_python_api_and_report_agree(capsys):
    """One search behind the three faces: the CLI's JSON rows, ``topoc.infer``'s rows and the
    HTML report's serving view (1,000 tokens in and out, the GPUs' default precision, the
    concurrency sweep) are the same rows in the same order."""
    import topoc
    from topoc.compiler.analysis.infer import serving_view
    from topoc.compiler.lang.derive import find_model
    assert main(["infer", DGX, "--model", "llama3-70b", "--isl", "1000", "--osl", "1000",
                 "--top", "0", "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)["rows"]
    dgx = topoc.load(DGX)
    api = [r.as_dict() for r in topoc.infer(dgx, "llama3-70b", 1000, 1000).rows]
    view = serving_view(dgx, find_model(dgx, "llama3-70b"), 8)
    report = [r.as_dict() for r in view.result.rows]
    assert len(cli) == len(api) == len(report) > 10
    for a, b, c in zip(cli, api, report):
        assert a["rank"] >= 1
        for key in FIELDS:
            assert a[key] == pytest.approx(b[key]) and b[key] == pytest.approx(c[key])


def test_closed_loop_ttft_reaches_the_cli_and_the_api(capsys):
    """``ttft_closed_loop`` (docs/infer.md): the JSON row's field, the text table's line under
    row 1 and the Python API's part agree, for a fixed configuration at concurrency 100."""
    run = ["--gpus", "2", "--tp", "2", "--pp", "1", "--ep", "1", "--concurrency", "100"]
    args = ["infer", DGX, "--model", "llama3-70b", "--isl", "1000", "--osl", "1000", *run]
    assert main([*args, "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    api = topoc.infer(topoc.load(DGX), "llama3-70b", 1000, 1000, gpus=2, tp=2, pp=1, ep=1,
                      concurrency=100).rows[0]
    assert row["ttft_closed_loop"] == pytest.approx(dict(api.parts)["ttft_closed_loop"])
    assert row["ttft"] < row["ttft_closed_loop"] < row["ttft_wave"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"benchmark: {row['ttft_closed_loop'] * 1e3:.1f} ms (ttft_closed_loop" in text


def test_overlap_scheduler_reaches_the_cli(capsys):
    argv = ["infer", DGX, "--model", "llama3-8b", "--isl", "200", "--osl", "200", "--gpus", "1",
            "--tp", "1", "--pp", "1", "--ep", "1", "--concurrency", "250", "--format", "json"]
    rows = {}
    for flag in ("on", "off"):
        assert main(argv + ["--overlap-scheduler", flag]) == 0
        rows[flag] = json.loads(capsys.readouterr().out)["rows"][0]
    assert rows["off"]["decode_host"] == rows["on"]["decode_host"] > 0
    assert rows["off"]["tpot"] == pytest.approx(rows["on"]["tpot"] + rows["on"]["decode_host"])
    api = topoc.infer(topoc.load(DGX), "llama3-8b", 200, 200, gpus=1, tp=1, pp=1, ep=1,
                      concurrency=250,
                      settings=topoc.compiler.analysis.infer.Settings(overlap_scheduler=False))
    assert api.rows[0].tpot == pytest.approx(rows["off"]["tpot"])


def test_an_engines_build_limits_reach_the_cli_and_the_api(capsys):
    """``--max-num-tokens`` and ``--chunked-prefill`` replace the engine's token budget and
    chunking (a prebuilt engine's build limits): the CLI and ``topoc.infer(...,
    max_num_tokens=, chunked_prefill=)`` agree; in a simulated steady state of 1,000-token
    prompts a budget of 1,024 admits one prompt a step where 8,192 admits eight, so the
    cohorts and the TTFT shrink; activation memory follows the budget (more KV tokens)."""
    argv = ["infer", DGX, "--model", "llama3-70b", "--isl", "1000", "--osl", "1000", "--gpus",
            "2", "--tp", "2", "--pp", "1", "--ep", "1", "--concurrency", "100", "--client",
            "closed", "--requests", "1300", "--warmup", "300", "--format", "json"]
    assert main(argv) == 0
    wide = json.loads(capsys.readouterr().out)["rows"][0]
    assert main(argv + ["--max-num-tokens", "1024", "--chunked-prefill", "on"]) == 0
    narrow = json.loads(capsys.readouterr().out)["rows"][0]
    assert narrow["ttft"] < wide["ttft"] / 2
    assert narrow["kv_capacity_tokens"] > wide["kv_capacity_tokens"]
    api = topoc.infer(topoc.load(DGX), "llama3-70b", 1000, 1000, gpus=2, tp=2, pp=1, ep=1,
                      concurrency=100, client="closed", requests=1300, warmup=300,
                      max_num_tokens=1024, chunked_prefill=True).rows[0]
    assert api.ttft == narrow["ttft"]
    assert main(argv[:-2] + ["--max-num-tokens", "0"]) == 2
    assert "--max-num-tokens 0: 1 to" in capsys.readouterr().err


def test_the_docs_first_example_is_what_the_cli_prints(capsys):
    """docs/infer.md opens with `topoc infer library/nvidia/gb200_nvl72.topo --model llama3-70b
    --isl 1000 --osl 1000` and its first five rows: they are the CLI's rows today."""
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "docs" / "infer.md").read_text()
    block = doc.split("serving llama3_70b on rack:", 1)[1].split("```")[0]

    def table(text):
        return [w for w in (line.split() for line in text.splitlines())
                if len(w) > 1 and w[0].isdigit() and w[1].startswith("tp")]
    shown = table(block)
    assert len(shown) == 5
    assert main(["infer", NVL72, "--model", "llama3-70b", "--isl", "1000", "--osl", "1000",
                 "--top", "5"]) == 0
    printed = table(capsys.readouterr().out)[:5]
    assert printed == shown
    # and the sentence under it: rows[0] of the Python API under tpot_limit=0.05
    best = topoc.infer(topoc.load(NVL72), "llama3-70b", 1000, 1000, tpot_limit=0.05).rows[0]
    assert (f"tp1 pp1 row with TPOT {best.tpot * 1e3:.1f} ms, "
            f"{best.throughput_per_gpu:,.0f} tok/s per GPU") in " ".join(doc.split())


def test_top_keeps_the_first_rows_of_every_format(capsys):
    """docs/infer.md: --top K (default 20) keeps K rows in JSON and CSV too; `evaluated`
    counts them all."""
    argv = ["infer", DGX, "--model", "llama3-70b", "--isl", "1000", "--osl", "1000"]
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["rows"]) == 20 < doc["evaluated"] and all(p <= 20 for p in doc["pareto"])
    assert main([*argv, "--format", "csv", "--top", "3"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
    assert main([*argv, "--format", "json", "--top", "0"]) == 0
    assert len(json.loads(capsys.readouterr().out)["rows"]) == doc["evaluated"]


def test_one_request_past_the_kv_cache_says_so(capsys):
    """Under --request-rate a layout whose KV cache cannot hold one request does not fit;
    the message gives the tokens one request needs and the most a replica holds, not a
    --concurrency to lower."""
    code = main(["infer", DGX, "--model", "llama3-70b", "--isl", "5000000", "--osl", "10",
                 "--tp", "8", "--pp", "1", "--ep", "1", "--request-rate", "0.000001"])
    err = capsys.readouterr().err
    assert code == 1
    assert "one request of 5000000+10 tokens needs 5,000,010 tokens of KV cache" in err
    assert "holds 3,233,012 tokens per replica" in err and "--concurrency" not in err


@pytest.mark.parametrize("flag", ["--isl", "--osl", "--concurrency", "--scheduler-steps", "--tp"])
def test_a_number_past_a_float_is_a_usage_error_not_a_traceback(flag, capsys):
    """--isl 1e400 (as digits) raised OverflowError from the model: int too large for a float."""
    big = "1" + "0" * 400
    argv = ["infer", DGX, "--model", "llama3-8b", "--isl", "10", "--osl", "10"]
    if flag in argv:
        argv[argv.index(flag) + 1] = big
    else:
        argv += [flag, big]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{flag} 100000000000... (401 digits): must be at most 1,000,000,000" in err


def test_collectives_engine_costs_the_engines_all_reduce_as_cost_does(capsys):
    """--collectives engine: the --engine's all-reduce rule picks its own kernels (vLLM at TP4
    and a decode step's small message: one-shot), named under the table; the TPOT is faster
    than with NCCL's algorithms, and topoc cost --algorithm oneshot prices the same call."""
    args = ["infer", DGX, "--model", "llama3-8b", "--isl", "1000", "--osl", "1000", "--gpus",
            "4", "--tp", "4", "--concurrency", "8", "--precision", "bf16", "--format", "json"]
    assert main(args + ["--collectives", "engine", "--engine", "vllm"]) == 0
    engine = json.loads(capsys.readouterr().out)["rows"][0]
    assert main(args) == 0
    nccl = json.loads(capsys.readouterr().out)["rows"][0]
    assert engine["tpot"] < nccl["tpot"]
    assert main(args[:-2] + ["--collectives", "engine", "--engine", "vllm"]) == 0
    assert "allreduce on 4 GPUs costed as oneshot" in capsys.readouterr().out
    from topoc.compiler.analysis.infer import Comm
    from topoc.compiler.collectives.coster import cost_collective
    from topoc.compiler.ir.groups import RankGroup
    s = topoc.load(DGX)
    size = 8 * 4096 * 2                 # 8 tokens x hidden 4,096 x 2 bytes
    assert Comm(s, "vllm").time("allreduce", (0, 1, 2, 3), size) == cost_collective(
        s, RankGroup("g", (0, 1, 2, 3)), "allreduce", size, chooser="oneshot").time


def test_the_python_api_takes_collectives_as_the_cli_does(capsys):
    s = topoc.load(DGX)
    common = dict(gpus=4, tp=4, concurrency=8, precision="bf16")
    api = topoc.infer(s, "llama3-8b", 1000, 1000, engine="vllm", collectives="engine",
                      **common)
    assert any("oneshot" in names for c, n, names in api.collectives if c == "allreduce")
    assert main(["infer", DGX, "--model", "llama3-8b", "--isl", "1000", "--osl", "1000",
                 "--gpus", "4", "--tp", "4", "--concurrency", "8", "--precision", "bf16",
                 "--engine", "vllm", "--collectives", "engine", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["tpot"] == \
        pytest.approx(api.rows[0].tpot)
    from topoc.compiler.analysis.infer import InferError
    with pytest.raises(InferError, match="collectives 'ring'"):
        topoc.infer(s, "llama3-8b", 1000, 1000, collectives="ring", **common)


def test_nccl_release_prices_the_engines_nccl_calls_as_cost_does(capsys):
    """--nccl 2.20 (torch 2.4's NCCL): the tensor-parallel all-reduces go through that release's
    profile, as ``topoc cost --nccl 2.20`` prices them; the Python API's ``nccl`` gives the same
    row; an unknown release is a usage error."""
    args = ["infer", DGX, "--model", "llama3-8b", "--isl", "1000", "--osl", "1000", "--gpus",
            "4", "--tp", "4", "--concurrency", "8", "--precision", "bf16", "--format", "json"]
    assert main(args + ["--nccl", "2.20"]) == 0
    old = json.loads(capsys.readouterr().out)["rows"][0]
    assert main(args) == 0
    new = json.loads(capsys.readouterr().out)["rows"][0]
    assert old["tpot"] != new["tpot"]
    s = topoc.load(DGX)
    api = topoc.infer(s, "llama3-8b", 1000, 1000, gpus=4, tp=4, concurrency=8,
                      precision="bf16", nccl="2.20")
    assert api.rows[0].tpot == pytest.approx(old["tpot"])
    from topoc.compiler.analysis.infer import Comm
    from topoc.compiler.collectives.coster import cost_collective
    from topoc.compiler.ir.groups import RankGroup
    size = 8 * 4096 * 2
    assert Comm(s, "fastest", "2.20").time("allreduce", (0, 1, 2, 3), size) == cost_collective(
        s, RankGroup("g", (0, 1, 2, 3)), "allreduce", size, nccl="2.20",
        chooser="fastest").time
    assert main(args + ["--nccl", "1.9"]) == 2
    assert "--nccl" in capsys.readouterr().err
    assert main(args + ["--nccl", "3.1"]) == 0          # newer than the tables: said, as cost does
    assert "note: NCCL 3.1 is newer than the model's latest tables" in capsys.readouterr().err
