"""``topoc schedule`` from the command line: JSON that replays, NCCL-style orders, one rank's
steps, and clear refusals."""

from __future__ import annotations

import json

import pytest

import topoc
from topoc.cli import main

from ..conftest import library_file

DGX = str(library_file("dgx_h100.topo"))


@pytest.mark.parametrize("collective", ["allreduce", "reducescatter", "allgather", "broadcast",
                                        "reduce"])
def test_dgx_ring_json_replays(collective, capsys):
    assert main(["schedule", DGX, "--ranks", "0..7", "--collective", collective,
                 "--algorithm", "ring", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "topoc.schedule/1" and doc["algorithm"] == "ring"
    assert doc["ranks"] == list(range(8)) and doc["devices"][0] == "dgx.gpu0"
    assert topoc.replay(doc) == []
    assert all(set(t) == {"src", "dst", "src_chunk", "dst_chunk", "op", "src_buf", "dst_buf",
                          "bytes", "links"} for r in doc["rounds"] for t in r)


def test_parallel_group_and_nccl_format(capsys):
    cluster = str(library_file("nvl72_cluster.topo"))
    assert main(["schedule", cluster, "-D", "racks=2", "--parallel", "train", "--group", "dp:3",
                 "--collective", "allreduce", "--algorithm", "ring", "--format", "nccl"]) == 0
    out = capsys.readouterr().out
    assert "Channel 00/02 :    3  75" in out and "Channel 01/02 :" in out
    assert main(["schedule", DGX, "--ranks", "0..7", "--collective", "allreduce",
                 "--algorithm", "tree", "--format", "nccl", "--rank", "0"]) == 0
    out = capsys.readouterr().out
    assert "Trees [0]" in out and "# steps of rank 0" in out and "round" in out


def test_rank_filter_keeps_only_that_rank(capsys):
    assert main(["schedule", DGX, "--ranks", "0..7", "--collective", "allgather",
                 "--rank", "3", "--algorithm", "ring"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert all(3 in (t["src"], t["dst"]) for r in doc["rounds"] for t in r)


@pytest.mark.parametrize("argv,needle,code", [
    (["--ranks", "0..7", "--collective", "allreduce", "--algorithm", "nvls"], "NVLS needs", 1),
    (["--ranks", "0..8", "--collective", "allreduce"], "outside the world", 2),
    (["--ranks", "2", "--collective", "alltoall"], "at least 2 ranks", 1),
    (["--group", "tp:0", "--collective", "allreduce"], "no parallel block", 2),
])
def test_impossible_requests_exit_by_the_policy(argv, needle, code, capsys):
    """The file cannot serve the request: 1; the command line names what the file lacks: 2."""
    pcie = str(library_file("pcie_server.topo"))
    assert main(["schedule", pcie, *argv]) == code
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_bad_size_is_usage_error(capsys):
    assert main(["schedule", DGX, "--ranks", "0..1", "--collective", "allreduce",
                 "--size", "12 parsecs"]) == 2
    assert "not a size" in capsys.readouterr().err


def test_python_api_groups_and_schedule():
    system = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 2})
    dp = topoc.groups(system, "dp")
    assert len(dp) == 72 and dp[5].ranks == (5, 77) and dp[5].name == "dp:5"
    sched = topoc.schedule(system, "allreduce", "tp:1", nbytes=2**30, algorithm="nvls")
    assert sched.algorithm == "nvls" and sched.group.ranks == tuple(range(8, 16))
    assert topoc.schedule(system, "alltoall", ranks="0..3").chunks == 4


def test_a_one_rank_group_says_it_has_no_ring(capsys):
    """A schedule on one rank is empty and says why instead of nothing (issue 40)."""
    assert main(["schedule", DGX, "--ranks", "3", "--collective", "allreduce"]) == 0
    err = capsys.readouterr().err
    assert "note: the group is one rank (world rank 3): it has no ring" in err
    assert main(["schedule", DGX, "--ranks", "3,4", "--collective", "allreduce"]) == 0
    assert "note:" not in capsys.readouterr().err


def test_root_out_of_group_is_a_usage_error(capsys):
    # a --root past the group is a bad command line (exit 2), not a file that cannot serve
    assert main(["schedule", DGX, "--ranks", "0..7", "--collective", "broadcast",
                 "--root", "9"]) == 2
    err = capsys.readouterr().err
    assert "topoc: error: --root 9 is not a position of the group (0..7)" in err


def test_root_with_a_collective_without_root_is_refused(capsys):
    # silently ignoring --root would hide a typo'd collective: say so, as other flags do
    assert main(["schedule", DGX, "--ranks", "0..7", "--collective", "allreduce",
                 "--root", "3"]) == 2
    err = capsys.readouterr().err
    assert "--root is for broadcast and reduce" in err and "allreduce" in err
