"""The command line: verbs, formats, exit codes, -D, atomic output, determinism."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from topoc.cli import main

from ..conftest import library_file

NVL72 = str(library_file("gb200_nvl72.topo"))
CLUSTER = str(library_file("nvl72_cluster.topo"))


def run(*argv, env=None):
    """Run the installed CLI in a fresh interpreter (as a user would)."""
    return subprocess.run([sys.executable, "-m", "topoc", *argv], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_compile_summary_reports_seed_figures(capsys):
    assert main(["compile", NVL72]) == 0
    out = capsys.readouterr().out
    assert "72 gpu" in out and "36 cpu" in out and "18 switch" in out
    # 72 x 189,471 MiB: GB200's B200 as the driver reports it (the marketed 186 GB gave
    # 13.392 TB), and the summary says which convention it is
    assert "HBM        14.305 TB over 72 GPUs (as the driver reports)" in out
    assert "129.6 TB/s" in out


@pytest.mark.parametrize("kind, dump", [("nccl-topo", "hgx_h200_topo.xml"),
                                        ("nvidia-smi", "dgx_a100_topo_m.txt")])
def test_an_import_without_hbm_says_unknown_not_zero(kind, dump, tmp_path, capsys):
    # an NCCL dump names the GPU's sm, a matrix without --gpu nothing: the memory is unknown,
    # never '0 B over 8 GPUs'
    out = tmp_path / "node.topo"
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "nccl" / dump
    assert main(["import", kind, str(fixture), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["compile", str(out)]) == 0
    summary = capsys.readouterr().out
    assert "HBM        unknown (the GPU models declare no hbm)" in summary
    assert "0 B over" not in summary


def test_compile_json_follows_the_contract(capsys):
    assert main(["compile", NVL72, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "topoc.system/1" and doc["name"] == "rack"
    ids = [d["id"] for d in doc["devices"]]
    assert ids == sorted(ids) and len(ids) == len(set(ids)) == 198
    link_ids = [link["id"] for link in doc["links"]]
    assert link_ids == sorted(link_ids) and len(set(link_ids)) == len(link_ids)
    for d in doc["devices"]:
        assert set(d) == {"id", "kind", "model", "rank", "attrs"}
        assert (d["rank"] is not None) == (d["kind"] == "gpu")
    assert sorted(d["rank"] for d in doc["devices"] if d["kind"] == "gpu") == list(range(72))
    for link in doc["links"]:
        assert set(link) >= {"id", "src", "dst", "class", "type", "lanes", "bandwidth",
                             "latency", "duplex"}
    nv = [link for link in doc["links"] if link["class"] == "nvlink"]
    assert len(nv) == 72 * 18 and all(link["bandwidth"] == 50e9 for link in nv)
    s = doc["summary"]
    assert s["devices"] == {"cpu": 36, "gpu": 72, "nic": 72, "switch": 18}
    assert s["hbm_bytes"] == 72 * 189471 * 2**20 and s["scaleup_bandwidth"] == 129.6e12


def test_json_is_byte_identical_across_hash_seeds():
    outs = {run("compile", CLUSTER, "--format", "json", "-D", "racks=2",
                env={"PYTHONHASHSEED": seed}).stdout for seed in ("0", "1", "12345")}
    assert len(outs) == 1 and outs.pop().startswith("{")


def test_define_overrides_and_bad_defines(capsys):
    assert main(["compile", CLUSTER, "-D", "racks=1"]) == 0
    assert "72 gpu" in capsys.readouterr().out
    assert main(["compile", CLUSTER, "-D", "racks"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err
    assert main(["compile", CLUSTER, "-D", "rackz=3"]) == 1
    assert "did you mean 'racks'" in capsys.readouterr().err


def test_output_file_is_written_atomically(tmp_path, capsys):
    out = tmp_path / "sys.json"
    assert main(["compile", NVL72, "--format", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["name"] == "rack"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sys.json"]
    bad = tmp_path / "bad.topo"
    bad.write_text("group G { g : Nope }\nsystem s : G\n")
    target = tmp_path / "never.json"
    assert main(["compile", str(bad), "--format", "json", "-o", str(target)]) == 1
    assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.topo", "sys.json"]


def test_exit_codes_for_usage_and_io(capsys, tmp_path):
    assert main(["compile", str(tmp_path / "missing.topo")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main([]) == 2
    with pytest.raises(SystemExit) as info:
        main(["compile"])
    assert info.value.code == 2


def test_lint_library_is_clean_and_errors_fail(tmp_path, capsys):
    from topoc import library
    assert main(["lint", *map(str, library.files())]) == 0
    bad = tmp_path / "bad.topo"
    bad.write_text('use "nvidia/devices.topo"\ngroup G { g[2] : H100 }\nsystem s : G\n'
                   "parallel p on s { tp = 3 }\n")
    assert main(["lint", str(bad)]) == 1
    assert "E302 error" in capsys.readouterr().out
    assert main(["lint", str(bad), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["diagnostics"][0]["code"] == "E302" and doc["diagnostics"][0]["line"] == 4


def test_version_and_help():
    assert run("--version").stdout.startswith("topoc ")
    helptext = run("--help").stdout
    assert "compile" in helptext and "lint" in helptext


def test_no_colour_when_not_a_terminal(tmp_path):
    bad = tmp_path / "bad.topo"
    bad.write_text("group G { g : Nope }\nsystem s : G\n")
    result = run("compile", str(bad))
    assert result.returncode == 1 and "\x1b[" not in result.stderr
    assert "E110 error" in result.stderr


def test_plan_flags_that_set_a_parallel_setting_say_what_the_language_server_says():
    # one text per setting: plan's --help repeats the hover text of the parallel block's
    # setting it sets, and adds only what the flag alone has (a default, another name)
    import argparse

    from topoc.cli import plan
    from topoc.lsp_help import SETTING_DOCS

    sub = argparse.ArgumentParser().add_subparsers()
    plan.add_parser(sub)
    helps = {a.dest: a.help for a in sub.choices["plan"]._actions}
    shared = ("batch", "distributed_optimizer", "fsdp", "pure_bf16", "first_stage_layers",
              "last_stage_layers", "deepep", "ep_overlap", "fsdp_prefetch", "route_nodes",
              "dualpipe", "recompute_norms", "fp8_activations", "bf16_moments", "fp8",
              "flash_attention", "attention_kernel", "overlap", "imbalance", "gemm_efficiency")
    assert [k for k in shared if not helps[k].startswith(SETTING_DOCS[k])] == []


#: Every verb that needs a system, as it is run on a file (the file's path goes last).
_NEEDS_SYSTEM = [["compile"], ["compile", "--format", "json"], ["render", "-o", "{out}.svg"],
                 ["export", "nccl-topo", "-o", "{out}.xml"], ["schedule", "--collective", "allreduce"],
                 ["cost"], ["report"], ["plan", "--model", "llama3_8b", "--batch", "8"],
                 ["infer", "--model", "llama3_8b", "--isl", "128", "--osl", "128"]]


@pytest.mark.parametrize("verb", _NEEDS_SYSTEM, ids=lambda v: " ".join(v[:1] + v[2:3]))
def test_a_declarations_only_file_is_e150_pointing_at_lint(verb, tmp_path, capsys):
    """One behaviour for a library file (issue 40): every verb that needs a system stops with
    E150 and says lint checks such a file; no output file is left behind."""
    lib = str(library_file("devices.topo"))
    argv = [a.replace("{out}", str(tmp_path / "x")) for a in verb]
    assert main([*argv, lib]) == 1
    err = capsys.readouterr().err
    assert "devices.topo:1:1: E150 error: no system declared" in err
    assert "checked by 'topoc lint'" in err
    assert list(tmp_path.iterdir()) == []


def test_diff_of_a_declarations_only_file_is_e150(capsys):
    lib = str(library_file("devices.topo"))
    assert main(["diff", lib, NVL72]) == 2
    assert "E150 error" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_lint_on_a_declarations_only_file_says_what_it_checked(fmt, capsys):
    lib = str(library_file("devices.topo"))
    assert main(["lint", "--strict", "--format", fmt, lib]) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        [d] = json.loads(out)["diagnostics"]
        assert (d["code"], d["severity"], d["line"]) == ("E150", "note", 1)
        out = d["message"]
    # the count is the file's own declarations, not the ones it imports
    models = sum(1 for line in open(lib, encoding="utf-8") if line.startswith("device "))
    assert f"declares no system: checked {models} declarations ({models} device models)" in out
    assert main(["fmt", "--check", lib]) == 0


def test_lint_on_a_declarations_only_file_still_reports_its_errors(tmp_path, capsys):
    bad = tmp_path / "lib.topo"
    bad.write_text('use "nvidia/links.topo"\ndevice X : gpu { hbm = 80 GB/s }\n'
                   'link l : pcie { bandwidth = 1 GB/s }\n')
    assert main(["lint", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "E201 error" in out and "E150" not in out
    bad.write_text('use "nvidia/links.topo"\ndevice X : gpu { hbm = 80 GB }\n'
                   'link l : pcie { bandwidth = 1 GB/s }\n')
    assert main(["lint", str(bad)]) == 0
    assert "checked 2 declarations (1 link type, 1 device model)" in capsys.readouterr().out
