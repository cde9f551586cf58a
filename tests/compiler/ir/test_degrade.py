"""Degraded systems (compiler.ir.degrade): selectors, rank space, dropped blocks, and the
property that every schedule on a randomly degraded system still computes its collective and
uses no failed link."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import topoc
from topoc.backends.schedule_json import document
from topoc.cli import main
from topoc.compiler.collectives.coster import cost as predict
from topoc.compiler.collectives.replay import check_links, replay
from topoc.compiler.collectives.schedule import SUPPORTED, ScheduleError, schedule
from topoc.compiler.ir.degrade import FaultError, Faults, apply, degrade
from topoc.compiler.ir.groups import select_group

from ...conftest import library_file


@pytest.fixture(scope="module")
def nvl72():
    return topoc.load(library_file("gb200_nvl72.topo"))


@pytest.fixture(scope="module")
def cluster():
    return topoc.load(library_file("h100_cluster.topo"), {"nodes": 4})


def test_a_failed_tray_leaves_68_gpus_ranked_in_order(nvl72):
    out = apply(nvl72, ["rack.tray3"])
    assert len(out.system.gpus) == 68 and out.gpus_before == 72
    assert not any(d.id.startswith("rack.tray3.") for d in out.system.devices)
    assert not any(link.src.startswith("rack.tray3.") or link.dst.startswith("rack.tray3.")
                   for link in out.system.links)
    survivors = [g.id for g in nvl72.gpus if not g.id.startswith("rack.tray3.")]
    assert [g.id for g in out.system.gpus] == survivors          # ranks 0..67 in order
    assert len(out.system.hosts) == len(nvl72.hosts) - 1
    assert "68 of 72 GPUs survive" in out.summary()[0]


def test_globs_links_and_rates(cluster):
    rail = apply(cluster, ["cluster.node*.nic3"])
    assert len(rail.failed_devices) == 4 and len(rail.system.gpus) == 32
    cable = apply(cluster, ["cluster.node0.nic3<->cluster.leaf3"])
    assert cable.failed_devices == () and cable.failed_links == 1
    assert len(cable.system.devices) == len(cluster.devices)
    slow = apply(cluster, [], ["cluster.node0.nic3<->cluster.leaf*=50%"])
    (link,) = [k for k in slow.system.links if k.src == "cluster.node0.nic3"
               and k.dst.startswith("cluster.leaf") or k.dst == "cluster.node0.nic3"
               and k.src.startswith("cluster.leaf")]
    (before,) = [k for k in cluster.links if k.id == link.id]
    assert link.type.bandwidth == before.type.bandwidth / 2 and slow.degraded_links == 1
    absolute = apply(cluster, [], ["cluster.node0.nic3<->cluster.leaf*=200Gb/s"])
    assert any(k.type.bandwidth == 25e9 for k in absolute.system.links)


@pytest.mark.parametrize("fail,degrade_,message", [
    (["cluster.node9"], [], "no device, instance or glob match"),
    (["cluster.nod0.gpu0"], [], "did you mean 'cluster.node0.gpu0'?"),
    ([], ["cluster.node0.nic3=150%"], "between 0 % (exclusive) and 100 %"),
    ([], ["cluster.node0.nic3=fast"], "is not a rate"),
    ([], ["cluster.node0.nic3=900Gb/s"], "above the link's declared"),
    ([], ["cluster.node0.nic3"], "write SELECTOR=RATE"),
])
def test_bad_selectors_say_why(cluster, fail, degrade_, message):
    with pytest.raises(FaultError, match=None) as info:
        apply(cluster, fail, degrade_)
    assert message in str(info.value)


def test_a_parallel_block_that_no_longer_fits_is_left_out_with_the_reason():
    system = topoc.load(library_file("h100_cluster.topo"))
    out = apply(system, ["cluster.node0.gpu0"])
    assert out.system.parallels == () and out.dropped
    assert "plan again" in out.dropped[0][1]


def test_a_lost_nic_costs_time_and_a_failed_tray_moves_the_nvls_group(nvl72, cluster):
    group = select_group(cluster, "world")
    size = 2**30
    healthy = predict(cluster, group, "allreduce", size).time
    degraded = apply(cluster, ["cluster.node0.nic3"]).system
    assert predict(degraded, select_group(degraded, "world"), "allreduce", size).time > healthy
    small = apply(nvl72, ["rack.tray3"]).system
    p = predict(small, select_group(small, "world"), "allreduce", size)
    assert p.time > 0 and len(select_group(small, "world").ranks) == 68


def test_cli_cost_and_render_take_failures(tmp_path, capsys):
    f = str(library_file("dgx_h100.topo"))
    assert main(["cost", f, "--fail", "dgx.gpu3", "--sizes", "1MiB"]) == 0
    out = capsys.readouterr()
    assert "7 of 8 GPUs survive" in out.err and " 7 " in out.out
    assert main(["cost", f, "--fail", "dgx.gpu33", "--sizes", "1MiB"]) == 2
    assert "did you mean 'dgx.gpu3'?" in capsys.readouterr().err
    assert main(["render", f, "--fail", "dgx.gpu3", "-o", str(tmp_path / "x.dot")]) == 0
    assert "dgx.gpu3" not in (tmp_path / "x.dot").read_text().replace("dgx.gpu3 ", "")


SYSTEMS = [("dgx_h100.topo", None), ("gb200_nvl72.topo", None),
           ("h100_cluster.topo", {"nodes": 4}), ("nvl72_cluster.topo", {"racks": 2})]
PAIRS = [(c, a) for c, algs in SUPPORTED.items() for a in algs]
_LOADED: dict = {}


def _system(i):
    if i not in _LOADED:
        name, defines = SYSTEMS[i]
        _LOADED[i] = topoc.load(library_file(name), defines)
    return _LOADED[i]


@given(st.data())
def test_schedules_on_degraded_systems_compute_their_collective(data):
    system = _system(data.draw(st.integers(0, len(SYSTEMS) - 1)))
    gpus = [g.id for g in system.gpus]
    others = [d.id for d in system.devices if d.kind in ("nic", "switch", "net_switch")]
    fail = data.draw(st.lists(st.sampled_from(gpus[1:] + others), max_size=3, unique=True))
    link = data.draw(st.sampled_from(system.links))
    faults = Faults(tuple(fail), ((f"{link.src}<->{link.dst}", "25%"),))
    try:
        out = degrade(system, faults).system
    except FaultError:
        return
    ranks = list(range(min(len(out.gpus), data.draw(st.integers(2, 16)))))
    if len(ranks) < 2:
        return
    group = select_group(out, ranks_text=",".join(map(str, ranks)))
    collective, algorithm = data.draw(st.sampled_from(PAIRS))
    try:
        sched = schedule(out, group, collective, algorithm, data.draw(st.integers(1, 10**8)))
    except ScheduleError:
        return      # refused for a stated reason (no route, NVLS across domains ...)
    doc = document(out, sched)
    assert replay(doc) == []
    alive = {k.id: (k.src, k.dst) for k in out.links}
    assert check_links(doc, alive) == []            # no failed link, no failed device
    gone = set(degrade(system, faults).failed_devices)
    assert not any(h in gone for r in doc["rounds"] for t in r for h in t.get("path", ()))


# -- blast radius ----------------------------------------------------------------------------

def test_blast_classes_every_domain_once_and_ranks_by_impact(cluster):
    from topoc.compiler.analysis.blast import blast, domains
    found = blast(cluster)
    whats = {d.what for d in found}
    assert {"gpu", "nic", "pcie_switch", "switch", "net_switch", "host"} <= whats
    total = sum(d.members for d in found)
    assert total == len(domains(cluster))           # every domain in exactly one class
    impacts = [d.impact for d in found]
    assert impacts == sorted(impacts, reverse=True)
    host = next(d for d in found if d.what == "host")
    assert host.gpus_lost == 8 and host.members == 4
    leaf = next(d for d in found if d.what == "net_switch" and "leaf" in d.example)
    assert leaf.gpus_lost == 0 and leaf.slowdown > 1.2        # a rail lost: every node slows
    spine = next(d for d in found if d.what == "net_switch" and "spine" in d.example)
    assert spine.slowdown < leaf.slowdown


def test_blast_on_a_rack_names_trays_and_nvswitch_trays(nvl72):
    from topoc.compiler.analysis.blast import blast
    found = {d.what: d for d in blast(nvl72)}
    assert found["host"].members == 18 and found["host"].gpus_lost == 4
    assert found["nvswitch tray"].members == 9 and found["nvswitch tray"].gpus_lost == 0


def test_blast_cli_text_and_json(capsys):
    import json
    f = str(library_file("h100_cluster.topo"))
    assert main(["blast", f, "-D", "nodes=2", "--parallel", "train", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("blast radius of cluster: 16 GPUs") and len(out.splitlines()) == 6
    assert "x N members (the members column), costed on one (the example)" in out
    assert main(["blast", f, "-D", "nodes=2", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "topoc.blast/1" and doc["domains"][0]["impact"] > 0


# -- diff --impact ---------------------------------------------------------------------------

def test_impact_of_a_slow_cable_and_of_a_lost_gpu(cluster):
    from topoc.compiler.analysis.impact import impact
    system = topoc.load(library_file("h100_cluster.topo"))
    slow = apply(system, [], ["cluster.node0.nic0<->cluster.leaf0=25%"]).system
    found = impact(system, slow, "train")
    assert found.valid and found.step_after > found.step_before
    dp = next(line for line in found.lines if line.dim == "dp")
    assert dp.change > 1.5 and dp.link_after.startswith("cluster.node0.nic0<->")
    tp = next(line for line in found.lines if line.dim == "tp")
    assert tp.change == pytest.approx(1.0)
    lost = impact(system, apply(system, ["cluster.node0.gpu0"]).system, "train")
    assert not lost.valid and "maps 256 GPUs" in lost.why


def test_diff_impact_cli(capsys):
    import json
    f = str(library_file("h100_cluster.topo"))
    args = ["diff", f, f, "--parallel", "train", "--impact",
            "--degrade", "cluster.node0.nic0<->cluster.leaf0=25%"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "impact on 'train':" in out and "dp allreduce" in out
    assert main([*args, "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["impact"]["valid"] and doc["impact"]["lines"][1]["after"] > \
        doc["impact"]["lines"][1]["before"]
    assert main(["diff", f, f, "--impact"]) == 2
    assert main(["diff", f, f, "--parallel", "nope", "--impact"]) == 2


def test_a_failure_file_replays_a_scenario_and_names_a_bad_line(tmp_path, capsys):
    scenario = tmp_path / "rack.faults"
    scenario.write_text("# tray 3 out\nfail rack.tray3\n\n"
                        "degrade rack.tray0.sc0.gpu0<->rack.nvswitch_tray0.chip0 = 50%\n")
    f = str(library_file("gb200_nvl72.topo"))
    assert main(["cost", f, "--faults", str(scenario), "--sizes", "1MiB"]) == 0
    err = capsys.readouterr().err
    assert "68 of 72 GPUs survive" in err and "degraded: 1 link" in err
    scenario.write_text("fail rack.tray3\nbreak it\n")
    assert main(["cost", f, "--faults", str(scenario), "--sizes", "1MiB"]) == 1
    err = capsys.readouterr().err
    assert f"{scenario}:2:1: E170 error" in err and "^^^^^^^^" in err
    assert main(["cost", f, "--faults", str(tmp_path / "none"), "--sizes", "1MiB"]) == 2


def test_degraded_link_arrays_are_the_surviving_links():
    """The degraded system's compact links (arrays copied from the healthy ones' buffers,
    ``degrade.column_array``) read back as the healthy links that end at no failed device,
    in order, the type column in its one-byte form."""
    system = topoc.load(library_file("nvl72_fourtier.topo"), {"racks": 4})
    for example in ("cluster.rack1.tray2", "cluster.rack0.tray0.nic1", "cluster.leaf2"):
        out = degrade(system, Faults((example,))).system
        gone = {d.id for d in system.devices} - {d.id for d in out.devices}
        assert gone
        want = [(x.src, x.dst, x.type, x.lanes) for x in system.links
                if x.src not in gone and x.dst not in gone]
        assert [(x.src, x.dst, x.type, x.lanes) for x in out.links] == want, example
        assert out.ends.type.typecode == system.ends.type.typecode


def test_a_failure_file_selector_that_names_nothing_is_reported_at_its_line(tmp_path, capsys):
    # the selector's line in the failure file, not the system file and a '--fail' never typed
    scenario = tmp_path / "faults.txt"
    scenario.write_text("# leaf 33 is out\nfail cluster.leaf33\n")
    f = str(library_file("h100_cluster.topo"))
    assert main(["compile", f, "--faults", str(scenario), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"{scenario}:2:6: E171 error: fail cluster.leaf33: no device" in err
    assert "did you mean 'cluster.leaf3'?" in err and "--fail" not in err
    assert "    2 | fail cluster.leaf33\n      |      ^^^^^^^^^^^^^^" in err
    assert not (tmp_path / "out").exists()
    # the same selector on the command line stays a usage error
    assert main(["compile", f, "--fail", "cluster.leaf33"]) == 2


def test_a_misspelt_failure_file_verb_suggests_the_verb(tmp_path, capsys):
    scenario = tmp_path / "faults.txt"
    scenario.write_text("fial cluster.leaf3\n")
    f = str(library_file("h100_cluster.topo"))
    assert main(["compile", f, "--faults", str(scenario)]) == 1
    err = capsys.readouterr().err
    assert f"{scenario}:1:1: E170 error" in err and "did you mean 'fail'?" in err
