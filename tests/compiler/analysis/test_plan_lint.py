"""Planner and linter agree (issue 42): on every bundled cluster, ``topoc plan``'s top
candidates pass ``topoc lint``'s placement rules (W501 tensor parallelism outside one NVLink
domain, W502 expert parallelism across nodes, W504 the inverted mapping), run as the rules
themselves on each candidate's strategy placed where the search costs it
(``strategy.placement``). Small searches: dense models (W502 concerns MoE layouts, which the
search does not restrict) with the micro-batch, recompute and sharding fixed."""

from __future__ import annotations

import types

import pytest

import topoc
from topoc.compiler.analysis.plan import plan, strategy_for, tp_within_domains
from topoc.compiler.analysis.strategy import placement
from topoc.compiler.ir.gpus import gpu_figures
from topoc.compiler.lang.derive import find_model
from topoc.compiler.lint.rules import ep_scaleout, inverted, tp_outside
from topoc.compiler.training.model import Training

from ...conftest import LIBRARY

FIXED = {"microbatch": 1, "recompute": "selective", "cp": 1, "sequence_parallel": True,
         "zero": 1}
#: Every bundled file of more than one node or rack, with a model and batch its GPUs train.
CLUSTERS = [("a100_cluster.topo", {}, "llama3-70b", 320),
            # two pods, so the core tier is crossed
            ("a100_superpod.topo", {"nodes": 240}, "llama3-70b", 1920),
            ("aws_p4de.topo", {}, "llama3-70b", 64),
            ("aws_p5.topo", {}, "llama3-70b", 64),
            ("aws_p5en.topo", {}, "llama3-70b", 64),
            ("aws_p6_b200.topo", {}, "llama3-70b", 64),
            ("gb200_tray.topo", {}, "llama3-8b", 16),
            ("gcp_a3_mega.topo", {}, "llama3-70b", 64),
            ("h100_cluster.topo", {}, "llama3-70b", 512),
            ("h100_fourtier.topo", {}, "llama3-70b", 1024),
            ("h100_roce_cluster.topo", {}, "llama3-70b", 64),
            ("h100_sharp_cluster.topo", {}, "llama3-70b", 128),
            ("h100_superpod.topo", {}, "llama3-405b", 2048),
            ("nvl72_cluster.topo", {}, "llama3-405b", 1152),
            ("nvl72_fourtier.topo", {}, "llama3-405b", 1152),
            ("nvl72_superpod.topo", {"racks": 16}, "llama3-405b", 1152)]
TOP = 3
#: A file whose GPUs share no link as a whole is planned on the GPUs that do: gb200_tray's two
#: Superchips meet only through the rack's NVLink switch trays, which the tray file does not
#: hold, so a mapping over all four GPUs cannot run (below) and the search takes one Superchip.
GPUS = {"gb200_tray.topo": 2}


def placement_findings(system, strategy, gpus: int) -> list[str]:
    """The codes lint's placement rules report for ``strategy`` on the GPUs the search places
    it on: the rules read ``parallels`` and the locality, whose per-GPU tables are read
    through the placement (a strategy's rank r runs on GPU ``where[r]``)."""
    loc = system.locality
    where = placement(system, gpus) or range(gpus)
    view = types.SimpleNamespace(island=[loc.island[g] for g in where],
                                 domain_root=[loc.domain_root[g] for g in where])
    placed = types.SimpleNamespace(parallels=(strategy,), locality=view)
    return [f.code for rule in (tp_outside, ep_scaleout, inverted) for f in rule(placed, {})]


def test_every_bundled_cluster_is_listed():
    multi = []
    for path in sorted((LIBRARY / "nvidia").glob("*.topo")):
        if path.name in ("devices.topo", "links.topo"):
            continue
        system = topoc.load(path)
        if len(set(system.locality.island)) > 1:
            multi.append(path.name)
    assert multi == sorted(c[0] for c in CLUSTERS)


@pytest.mark.parametrize("file, defines, name, batch", CLUSTERS,
                         ids=[c[0].removesuffix(".topo") for c in CLUSTERS])
def test_plans_top_candidates_pass_lints_placement_rules(tmp_path, monkeypatch, file, defines,
                                                         name, batch):
    monkeypatch.setenv("TOPOC_CACHE", str(tmp_path))
    system = topoc.load(LIBRARY / "nvidia" / file, defines)
    model = find_model(system, name)
    base = Training(model, batch, overlap=True)
    result = plan(system, model, base, gpus=GPUS.get(file), fixed=FIXED, jobs=1)
    assert result.rows
    gpu = gpu_figures(system)
    for row in result.rows[:TOP]:
        p = strategy_for(base, row.candidate, gpu)
        assert placement_findings(system, p, result.gpus) == [], row.candidate.key


def test_a_file_whose_gpus_share_no_link_has_no_mapping_over_all_of_them(tmp_path, monkeypatch):
    """Over both of gb200_tray's Superchips every mapping has a group with no path between its
    GPUs: the search rejects them all rather than ranking one with no communication cost."""
    monkeypatch.setenv("TOPOC_CACHE", str(tmp_path))
    system = topoc.load(LIBRARY / "nvidia" / "gb200_tray.topo")
    model = find_model(system, "llama3-8b")
    result = plan(system, model, Training(model, 16, overlap=True), fixed=FIXED, jobs=1)
    assert result.rows == () and result.invalid == result.considered > 0


def test_the_check_sees_a_tp_group_across_nodes(tmp_path, monkeypatch):
    """The superpod's 405B search picked tp 16 across two nodes (W501) before the search kept
    tp inside one NVLink domain; asked for with --tp 16, it still does, and lint says so."""
    monkeypatch.setenv("TOPOC_CACHE", str(tmp_path))
    system = topoc.load(LIBRARY / "nvidia" / "h100_superpod.topo")
    model = find_model(system, "llama3-405b")
    base = Training(model, 2048, overlap=True)
    ok = tp_within_domains(system, len(system.gpus))
    assert [ok(t) for t in (1, 2, 4, 8, 16, 32)] == [True] * 4 + [False] * 2
    result = plan(system, model, base, fixed={**FIXED, "tp": 16}, jobs=1)
    p = strategy_for(base, result.rows[0].candidate, gpu_figures(system))
    assert placement_findings(system, p, result.gpus) == ["W501"]


def test_the_issues_8000_gpu_case_cannot_rank_tp_across_nodes_first():
    """Issue 42: for Llama 3 405B on 8,000 H100s the #1 mapping was TP32 across four nodes over
    InfiniBand (W501). On the superpod at 1,000 nodes the search's tp sizes stop at one NVLink
    domain (8 GPUs): 16 and 32 are not offered, so no such mapping can rank first."""
    system = topoc.load(LIBRARY / "nvidia" / "h100_superpod.topo", {"nodes": 1000})
    ok = tp_within_domains(system, 8000)
    assert [ok(t) for t in (1, 2, 4, 8, 16, 32)] == [True] * 4 + [False] * 2


def test_compare_names_a_tp_size_the_search_leaves_out(capsys):
    from topoc.cli import main
    cluster = str(LIBRARY / "nvidia" / "h100_cluster.topo")
    args = ["plan", cluster, "--gpus", "32", "--model", "llama3-70b", "--batch", "64",
            "--jobs", "1", "--no-cache", "--microbatch", "1", "--recompute", "full"]
    assert main(args + ["--compare", "tp=16,pp=2"]) == 2
    err = capsys.readouterr().err
    assert "tp=16 is not searched: its groups leave one NVLink domain (lint's W501)" in err
    # fixed with --tp it is searched: ranked among the tp 16 mappings
    assert main(args + ["--tp", "16", "--compare", "tp=16,pp=2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pp=2,tp=16: rank ") and "against #1 (tp16-" in out
