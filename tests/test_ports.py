"""Switch and HCA port numbers through import, diff and export (issue 47,
topoc/importers/ports.py): a real cluster's ibnetdiscover dump (topograph's, in
tests/fixtures/ibnetdiscover) keeps every cable's two ports, diff reports a cable moved to
another port of the same switch, and the ibsim/ibdiagnet exports number cables as the dump did."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import topoc
from topoc.backends import ibsim
from topoc.cli import main
from topoc.compiler.analysis.fabric import fabric, wiring
from topoc.importers import ImportFailure
from topoc.importers.base import ident
from topoc.importers.ibnetdiscover import from_ibnetdiscover
from topoc.importers.ports import port_map, read_ports, write_ports

REAL = Path(__file__).parent / "fixtures" / "ibnetdiscover" / "topograph_example.out"
LEAF = "2c5eab0300b87a80"       # MF0;A09-P1-IBLEAF-01-02, port 14: a06-p1-dgx-02-c14 HCA-1


def _switch_cables(text: str) -> set[tuple[str, int, str, int]]:
    """Every switch-to-switch cable as the dump's own lines say it, read independently of the
    importer: (name, port, peer name, peer port) from each switch's block."""
    out, current = set(), None
    for line in text.splitlines():
        m = re.match(r'^Switch\s+\d+\s+"S-[0-9a-f]+"\s+# "MF0;([^:]+):', line)
        if m:
            current = ident(m.group(1))
            continue
        if line.startswith("Ca") or not line.strip():
            current = None if line.startswith("Ca") else current
            continue
        m = re.match(r'^\[(\d+)\]\s+"S-[0-9a-f]+"\[(\d+)\]\s+# "MF0;([^:]+):', line)
        if current and m:
            out.add((current, int(m.group(1)), ident(m.group(3)), int(m.group(2))))
    return out


def _move(text: str, switch: str, old: int, new: int) -> str:
    """The dump with the cable on ``switch``'s port ``old`` moved to its port ``new``: the
    switch's port line and the peer's line naming that port."""
    out, mine = [], False
    for line in text.split("\n"):
        if line.startswith(("Switch", "Ca")):
            mine = f'"S-{switch}"' in line
        if mine and line.startswith(f"[{old}]\t"):
            line = f"[{new}]" + line[len(f"[{old}]"):]
        line = line.replace(f'"S-{switch}"[{old}]', f'"S-{switch}"[{new}]')
        out.append(line)
    return "\n".join(out)


def test_import_keeps_every_cables_ports():
    records: list = []
    text, _ = from_ibnetdiscover(REAL.read_text(), "example.out", None, records)
    ports = port_map(records)
    fab = fabric(topoc.loads(text))
    # every cable between the fabric's switches and GPU hosts' HCAs, each once
    assert {tuple(sorted((c.a, c.b))): c.count for c in fab.cables} == \
        {k: len(v) for k, v in ports.items()}
    assert ports[("A09_P1_IBLEAF_01_02", "a06-p1-dgx-02-c14/1")] == ((14, 1),)
    # the switch-to-switch cables as the dump's lines give them, from both ends
    theirs = _switch_cables(REAL.read_text())
    assert len(theirs) == 2 * sum(len(v) for (a, b), v in ports.items() if "/" not in a + b)
    for a, pa, b, pb in theirs:
        key, pair = ((a, b), (pa, pb)) if (a, pa) < (b, pb) else ((b, a), (pb, pa))
        assert pair in ports[key]
    assert read_ports(write_ports(ports)) == ports


def test_diff_reports_a_cable_moved_to_another_port(tmp_path, capsys):
    moved = tmp_path / "moved.txt"
    moved.write_text(_move(REAL.read_text(), LEAF, 14, 15))
    assert main(["diff", str(REAL), str(REAL), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["equal"] and "ports" in doc["compared"]
    assert main(["diff", str(REAL), str(moved), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(d["code"], d["where"], d["a"], d["b"]) for d in doc["differences"]] == [
        ("D09", "A09_P1_IBLEAF_01_02 <-> a06-p1-dgx-02-c14/1",
         "A09_P1_IBLEAF_01_02 port 14 - a06-p1-dgx-02-c14/1 port 1",
         "A09_P1_IBLEAF_01_02 port 15 - a06-p1-dgx-02-c14/1 port 1")]
    # an imported design with its ports file: the same one difference
    topo, ports = tmp_path / "fabric.topo", tmp_path / "ports.txt"
    assert main(["import", "ibnetdiscover", str(REAL), "-o", str(topo), "--ports",
                 str(ports)]) == 0
    capsys.readouterr()
    assert main(["diff", str(topo), str(REAL), "--ports", str(ports)]) == 0
    capsys.readouterr()
    assert main(["diff", str(topo), str(moved), "--ports", str(ports)]) == 1
    out = capsys.readouterr().out
    assert "D09 ports: A09_P1_IBLEAF_01_02 <-> a06-p1-dgx-02-c14/1: cabled " in out
    assert "1 difference between" in out
    # without the ports file a design has no ports: the move is not seen
    assert main(["diff", str(topo), str(moved)]) == 0
    capsys.readouterr()


def test_exports_number_cables_as_the_dump(tmp_path, capsys):
    records: list = []
    text, _ = from_ibnetdiscover(REAL.read_text(), "example.out", None, records)
    ports = port_map(records)
    fab = fabric(topoc.loads(text))
    wires = wiring(fab, ports)
    got = port_map((w.a, w.a_port, w.b, w.b_port) for w in wires)
    assert got == ports
    net = ibsim.render_ibsim(fab, "x", ports)
    assert '[14]\t"a06-p1-dgx-02-c14 mlx5_1"[1]' in net
    # a switch's radix covers its highest port in use
    assert re.search(r'^Switch\t(\d+) "MF0;A09_P1_IBLEAF_01_02:', net, re.M).group(1) == "50"
    plan = ibsim.render_ibdiagnet(fab, "x", ports)
    assert "P14 -> " in plan and "a06-p1-dgx-02-c14/U2 P1" in plan
    # a partial file: the cables it names so, the others on each end's lowest free ports
    one = {("A09_P1_IBLEAF_01_02", "a06-p1-dgx-02-c14/1"): ((1, 1),)}
    partial = wiring(fab, one)
    used = {(w.a, w.a_port) for w in partial} | {(w.b, w.b_port) for w in partial}
    assert len(used) == 2 * len(partial)        # no port twice
    assert ("A09_P1_IBLEAF_01_02", 1) in {(w.a, w.a_port) for w in partial
                                          if w.b == "a06-p1-dgx-02-c14/1"}
    # without a ports file nothing changes: each end numbers its cables from 1
    assert wiring(fab) == wiring(fab, None)


def test_bad_ports_files_say_why(tmp_path, capsys):
    topo, ports = tmp_path / "fabric.topo", tmp_path / "ports.txt"
    assert main(["import", "ibnetdiscover", str(REAL), "-o", str(topo), "--ports",
                 str(ports)]) == 0
    with pytest.raises(ImportFailure, match=r"p:2: port 1 of 'a' is already cabled at line 1"):
        read_ports("a 1 b 1\na 1 c 1\n", "p")
    with pytest.raises(ImportFailure, match=r"p:1: expected '<end> <port> <end> <port>'"):
        read_ports("a 0 b 1\n", "p")
    bad = tmp_path / "bad.txt"
    bad.write_text("nowhere 1 leaf 2\n")
    capsys.readouterr()
    assert main(["export", "ibsim", str(topo), "--ports", str(bad), "-o",
                 str(tmp_path / "net")]) == 2
    assert "'leaf' is no switch or HCA of the fabric" in capsys.readouterr().err
    assert not (tmp_path / "net").exists()
    assert main(["export", "slurm", str(topo), "--topology", "tree", "--ports", str(ports),
                 "-o", "-"]) == 2
    assert "--ports is for export ibsim and ibdiagnet" in capsys.readouterr().err
    assert main(["diff", str(topo), str(topo), "--ports", str(ports)]) == 2
    assert "B is not an ibnetdiscover dump" in capsys.readouterr().err
    assert main(["import", "hwloc", str(REAL), "--ports", str(ports), "-o",
                 str(tmp_path / "x.topo")]) == 2
