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
    assert doc["rows"][0]["fits"]


def test_every_dimension_and_the_concurrency_given_is_rows_0(capsys):
    argv = ["infer", NVL72, "--model", "llama3-8b", "--isl", "512", "--osl", "128",
            "--gpus", "4", "--tp", "2", "--pp", "1", "--ep", "1", "--concurrency", "12",
            "--precision", "bf16", "--kv-precision", "bf16", "--format", "json"]
    assert main(argv) == 0
    r = json.loads(capsys.readouterr().out)["rows"][0]
    assert (r["tp"], r["pp"], r["ep"], r["replicas"], r["concurrency"]) == (2, 1, 1, 2, 12)
    assert (r["precision"], r["kv_precision"]) == ("bf16", "bf16")


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


def test_a_model_that_does_not_fit_leaves_the_output_file_alone(tmp_path, capsys):
    """Exit 1 writes nothing: neither the table on stdout nor over the -o file."""
    out = tmp_path / "rows.csv"
    out.write_text("kept\n")
    argv = ["infer", DGX, "--model", "deepseek-v3", "--isl", "1000", "--osl", "200"]
    assert main([*argv, "--format", "csv", "-o", str(out)]) == 1
    assert out.read_text() == "kept\n"
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "deepseek_v3 does not fit" in captured.err


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
