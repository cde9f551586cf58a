"""``topoc cost`` and ``topoc report`` from the command line: the sweep in its three formats,
the contract's JSON keys, strategy traffic, the report, and clear refusals."""

from __future__ import annotations

import csv
import io
import json

import pytest

import topoc
from topoc.backends.report import seconds
from topoc.cli import main, parse_size
from topoc.compiler.analysis.strategy import analyse

from ..conftest import library_file

DGX = str(library_file("dgx_h100.topo"))
CLUSTER = str(library_file("nvl72_cluster.topo"))
ROW_KEYS = {"collective", "group", "ranks", "size", "algorithm", "protocol", "time", "algbw",
            "busbw", "bottleneck"}


def test_sweep_json_follows_the_contract(capsys):
    assert main(["cost", DGX, "--ranks", "0..7", "--sizes", "8B..8GiB", "--format",
                 "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "topoc.cost/1"
    rows = doc["rows"]
    assert [r["size"] for r in rows] == [8 * 2**k for k in range(31)]
    for r in rows:
        assert ROW_KEYS <= set(r)
        assert r["collective"] == "allreduce" and r["ranks"] == 8 and r["group"] == "ranks"
        assert r["busbw"] == pytest.approx(r["algbw"] * 2 * 7 / 8)
        assert r["algbw"] == pytest.approx(r["size"] / r["time"])
    assert rows[0]["protocol"] == "LL" and rows[-1]["algorithm"] == "nvls"


def test_table_and_csv_carry_the_same_rows(capsys):
    assert main(["cost", DGX, "--group", "world", "--sizes", "32KiB,1MiB,1GiB",
                 "--collective", "allgather"]) == 0
    table = capsys.readouterr().out
    assert main(["cost", DGX, "--group", "world", "--sizes", "32KiB,1MiB,1GiB",
                 "--collective", "allgather", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [int(r["size"]) for r in rows] == [32 * 1024, 2**20, 2**30]
    lines = [line for line in table.splitlines() if not line.startswith("#")]
    assert len(lines) == 3
    for line, row in zip(lines, rows):
        cells = line.split()
        assert cells[0] == row["size"] and row["algorithm"] in cells
        assert f"{float(row['time']) * 1e6:.2f}" in cells
    assert "time(us)" in table and "busbw(GB/s)" in table


def test_strategy_traffic_rows(capsys):
    assert main(["cost", CLUSTER, "--parallel", "train", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["group"], r["collective"], r["size"]) for r in rows] == [
        ("tp:0", "allreduce", 64 * 2**20), ("dp:0", "allreduce", 2 * 10**9),
        ("pp:0", "sendrecv", 16 * 2**20)]
    assert rows[0]["bottleneck"] == "nvlink" and rows[1]["bottleneck"] == "infiniband"


def test_group_of_a_strategy(capsys):
    assert main(["cost", CLUSTER, "--parallel", "train", "--group", "dp:3", "--sizes", "1GiB",
                 "--algorithm", "ring", "--format", "csv"]) == 0
    row = next(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert row["group"] == "dp:3" and row["algorithm"] == "ring" and row["ranks"] == "8"


def test_thousand_rack_world_from_the_compact_schedule(capsys):
    """A large world group costs seconds, not 10^10 steps (issue 4); 64 racks here, the
    benchmark runs 1,024."""
    assert main(["cost", CLUSTER, "-D", "racks=64", "--group", "world", "--sizes", "1GiB",
                 "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["ranks"] == 4608 and row["time"] > 0


@pytest.mark.parametrize("argv, message, code", [
    (["--ranks", "0..7", "--algorithm", "nvls"], "NVLS", 1),        # the file cannot serve it
    (["--group", "tp"], "name the strategy", 2),                     # names the file lacks: usage
    (["--parallel", "nope"], "no parallel block 'nope'", 2),
    (["--ranks", "0..9"], "rank", 2),
])
def test_refusals_exit_by_the_policy(argv, message, code, capsys):
    a100 = str(library_file("dgx_a100.topo"))
    assert main(["cost", a100, *argv, "--sizes", "1MiB"]) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("sizes, message", [("1GiB..1KiB", "larger than the last"),
                                           ("12 parsecs", "not a size"), (",", "1 to 64 sizes"),
                                           ("0B..1KiB", "not a size")])
def test_bad_sizes_are_usage_errors(sizes, message, capsys):
    assert main(["cost", DGX, "--ranks", "0..7", "--sizes", sizes]) == 2
    assert message in capsys.readouterr().err


def test_a_group_without_links_between_its_gpus_is_an_input_error(capsys):
    tray = str(library_file("gb200_tray.topo"))
    assert main(["cost", tray, "--group", "world", "--sizes", "1MiB"]) == 1
    err = capsys.readouterr().err
    assert "no path from tray.sc0" in err and "Traceback" not in err


def test_bad_sizes_are_refused_before_compiling(tmp_path, capsys):
    missing = str(tmp_path / "absent.topo")      # would be an input error if it were read
    assert main(["cost", missing, "--group", "world", "--sizes", "12 parsecs"]) == 2
    assert "not a size" in capsys.readouterr().err


@pytest.mark.parametrize("text, expected", [("1G", 2**30), ("64M", 2**26), ("8k", 2**13),
                                            ("1GB", 10**9), ("1GiB", 2**30), ("4096", 4096)])
def test_sizes_take_nccl_tests_suffixes_as_binary(text, expected):
    assert parse_size(text) == expected


def test_cost_output_is_deterministic(tmp_path):
    outs = []
    for i in range(2):
        out = tmp_path / f"c{i}.json"
        assert main(["cost", CLUSTER, "--group", "world", "--format", "json", "-o",
                     str(out)]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


REPORTED = '''
use "nvidia/dgx_h100.topo"
system box : DGXH100
parallel train on box {
  tp = 4  dp = 2
  compute = 25 s
  baseline = 100 s
  traffic {
    tp allreduce 64 MiB x 100
    dp allreduce 2 GB
  }
}
'''


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_report(fmt, tmp_path, capsys):
    path = tmp_path / "box.topo"
    path.write_text(REPORTED)
    assert main(["report", str(path), "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert "T_total = T_compute + T_comm + T_idle = 25.00 s" in out
    assert "speedup S = T1 / T_total = 100.00 s" in out and "efficiency E = S / N = 4.00 / 8" in out
    assert "yes, with the backward pass" in out and "no: on the critical path" in out
    assert ("| tp | allreduce | 64 MiB | 100 |" in out) == (fmt == "markdown")


def test_report_names_the_strategy(tmp_path, capsys):
    path = tmp_path / "box.topo"
    path.write_text(REPORTED)
    assert main(["report", str(path), "--parallel", "trian"]) == 2
    assert "did you mean 'train'" in capsys.readouterr().err


def test_report_without_a_strategy_says_so(capsys):
    assert main(["report", str(library_file("dgx_h100.topo"))]) == 2
    assert "has no parallel block" in capsys.readouterr().err


def test_report_without_compute_says_what_can_overlap(capsys):
    cluster = library_file("nvl72_cluster.topo")
    step = analyse(topoc.load(cluster), "train")
    hideable = sum(f.per_step for f in step.flows if f.hidden)
    assert step.compute is None and hideable > 0
    assert main(["report", str(cluster)]) == 0
    out = capsys.readouterr().out
    assert f"{seconds(hideable)} of it can overlap the backward pass" in out


def test_hierarchical_is_labelled_and_never_auto(capsys):
    nvl = str(library_file("nvl72_cluster.topo"))
    assert main(["cost", nvl, "-D", "racks=2", "--group", "world", "--sizes", "1GiB",
                 "--algorithm", "hierarchical"]) == 0
    assert "hierarchical is topoc's own algorithm" in capsys.readouterr().out
    for racks in ("2", "3", "4"):
        assert main(["cost", nvl, "-D", f"racks={racks}", "--group", "world", "--sizes",
                     "1MiB,64MiB,8GiB", "--format", "json"]) == 0
        rows = json.loads(capsys.readouterr().out)["rows"]
        assert {r["algorithm"] for r in rows} <= {"ring", "tree", "nvls", "nvlstree"}


def test_three_racks_keep_their_rails():
    """An odd island count used to cross rails on every channel's wrap-around (5x slower)."""
    import topoc
    from topoc.compiler.collectives.coster import cost
    from topoc.compiler.ir.groups import select_group
    busbw = {}
    for racks in (2, 3, 4):
        system = topoc.load(library_file("nvl72_cluster.topo"), {"racks": racks})
        busbw[racks] = cost(system, select_group(system), "allreduce", 8 * 2**30, "ring").busbw
    assert busbw[3] > 0.8 * min(busbw[2], busbw[4])


def test_nvls_start_up_is_flagged_outside_its_fit(capsys):
    rack = str(library_file("gb200_nvl72.topo"))
    assert main(["cost", rack, "--group", "world", "--sizes", "8B", "--algorithm", "nvls"]) == 0
    assert "overstates small messages" in capsys.readouterr().out
    assert main(["cost", rack, "--group", "world", "--sizes", "8B,4GiB", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["algorithm"] == "ring" and rows[0]["time"] < 200e-6   # auto avoids it
    assert rows[1]["algorithm"] == "nvls"


def test_report_writes_an_odd_size_in_a_human_unit(tmp_path, capsys):
    """The report printed '17225026 KiB' for a traffic size (issue 40)."""
    path = tmp_path / "t.topo"
    path.write_text('use "nvidia/dgx_h100.topo"\nsystem dgx : DGXH100\n'
                    'parallel p on dgx { dp = 8  traffic { dp allreduce 17225026 KiB } }\n')
    assert main(["report", str(path), "--parallel", "p"]) == 0
    out = capsys.readouterr().out
    assert " 16.427 GiB " in out and "KiB" not in out


def test_a_group_of_one_rank_prints_no_empty_bottleneck_line(capsys):
    assert main(["cost", DGX, "--ranks", "0", "--sizes", "1K"]) == 0
    out = capsys.readouterr().out
    assert "# bottleneck at" not in out and out.count("\n") == 3      # title, head, one row
    assert main(["cost", DGX, "--ranks", "0..7", "--sizes", "1K"]) == 0
    assert "# bottleneck at 1 KiB: dgx." in capsys.readouterr().out
