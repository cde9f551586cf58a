"""``topoc import iblinkinfo`` and iblinkinfo output as ``topoc diff``'s B (issue 47): the
dumps are iblinkinfo's output of ibsim running ``topoc export ibsim`` of a design
(tests/fixtures/iblinkinfo/README.md), read through the ibnetdiscover importer's records, so
HCA identity, SHARP nodes and unnamed HCAs come out as ibnetdiscover's do; and a live round
trip (design -> ibsim -> iblinkinfo -> diff) where ibsim is installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from topoc.cli import main
from topoc.importers import ImportFailure
from topoc.importers.detect import kind_of
from topoc.importers.iblinkinfo import from_iblinkinfo, parse

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
DUMP = FIX / "iblinkinfo" / "h100_cluster_8.txt"
SHARP = FIX / "iblinkinfo" / "h100_cluster_8_sharp.txt"
CLUSTER = str(ROOT / "library" / "nvidia" / "h100_cluster.topo")


def carve(text: str, desc: str) -> str:
    """The dump without the CA ``desc``, as iblinkinfo prints a fabric without it: its record
    goes and the switch port cabled to it is down."""
    text = re.sub(rf"^CA: {re.escape(desc)}:\n[^\n]*\n", "", text, flags=re.M)
    return re.sub(rf'^( +\d+ +\d+\[  \] )==\([^\n]*"{re.escape(desc)}" \([^\n]*$',
                  r'\1==(                Down/ Polling)==>             [  ] "" ( )', text,
                  flags=re.M)


def _diff(a: str, b: Path, capsys, *flags) -> tuple[int, dict]:
    code = main(["diff", a, str(b), "--format", "json", *flags])
    return code, json.loads(capsys.readouterr().out)


def test_the_dump_is_recognised_and_matches_its_design(capsys):
    assert kind_of(DUMP.read_text()) == "iblinkinfo"
    code, doc = _diff(CLUSTER, DUMP, capsys, "-D", "nodes=8")
    assert code == 0 and doc["equal"]
    assert {"hosts", "switches", "cabling"} <= set(doc["compared"])


def test_one_removed_hca_is_one_difference(tmp_path, capsys):
    dead = tmp_path / "dead.txt"
    dead.write_text(carve(DUMP.read_text(), "node3 mlx5_3"))
    assert dead.read_text().count("Active/") == DUMP.read_text().count("Active/")
    text, _ = from_iblinkinfo(dead.read_text(), "dead.txt")
    # node3 keeps mlx5_4..7 as themselves (the ibnetdiscover importer's HCA identity)
    assert "mlx5_0 : HCA_400G  mlx5_1 : HCA_400G  mlx5_2 : HCA_400G  mlx5_4 : HCA_400G" in text
    code, doc = _diff(CLUSTER, dead, capsys, "-D", "nodes=8")
    assert code == 1
    assert [(d["category"], d["where"]) for d in doc["differences"]] == [
        ("devices", "node3 mlx5_3")]


def test_the_same_fabric_from_either_tool_is_the_same_system(capsys):
    """SHARP aggregation nodes and HCAs with the adapter's default description, as iblinkinfo
    prints them, are recognised by the ibnetdiscover importer's rules: the iblinkinfo dump and
    the ibnetdiscover dump of the same fabric diff clean."""
    text, notes = from_iblinkinfo(SHARP.read_text(), "sharp.txt")
    assert any(n.startswith("12 SHARP aggregation node(s)") for n in notes)
    assert any(n.startswith("16 HCA(s) report the adapter's default") for n in notes)
    assert "host node6" not in text and "host node5" in text
    code, doc = _diff(str(FIX / "ibnetdiscover" / "h100_cluster_8_sharp.txt"), SHARP, capsys)
    assert code == 0 and doc["equal"]


def test_import_writes_the_fabric_and_its_ports(tmp_path, capsys):
    src = FIX / "iblinkinfo" / "two_switch.txt"
    out, ports = tmp_path / "f.topo", tmp_path / "ports.txt"
    assert main(["import", "iblinkinfo", str(src), "-o", str(out), "--ports", str(ports)]) == 0
    assert "an iblinkinfo dump: 3 switches, 4 HCAs in 2 hosts, 8 cables" in out.read_text()
    assert "dgx-b/1 1 leaf1 2" in ports.read_text().splitlines()
    capsys.readouterr()
    # the ports read from the iblinkinfo dump match the ibnetdiscover dump's of the same fabric
    assert main(["diff", str(out), str(FIX / "ibnetdiscover" / "two_switch.txt"), "--ports",
                 str(ports)]) == 0
    assert "ports" in capsys.readouterr().out
    # and an iblinkinfo B gives its own ports: a cable moved to another port is a difference
    design = FIX / "ibnetdiscover" / "two_switch.topo"
    assert main(["diff", str(design), str(src), "--ports", str(ports)]) == 0
    moved = tmp_path / "moved.txt"
    moved.write_text(ports.read_text().replace("dgx-b/1 1 leaf1 2", "dgx-b/1 1 leaf1 9"))
    capsys.readouterr()
    assert main(["diff", str(design), str(src), "--ports", str(moved)]) == 1
    assert "D09" in capsys.readouterr().out


def test_python_api_gives_ibnetdiscovers_records():
    nodes, cables, devids = parse((FIX / "iblinkinfo" / "two_switch.txt").read_text())
    assert nodes["200000"] == ("SW", "MF0;leaf0:QM9700/U1")
    assert nodes["100001"] == ("CA", "dgx-a mlx5_0")
    assert sorted(c[:4] for c in cables)[0] == ("100001", 1, "200000", 1)
    assert {c[4:] for c in cables} == {(8, "HDR")} and devids == {}


LINE = ("           0    1[  ] ==( 4X        106.25 Gbps  Active/  LinkUp)==>       0    1[  ] "
        '"h1 mlx5_0" ( )')
CA = ("CA: h1 mlx5_0:\n      0x0000000000000010      0    1[  ] ==( 4X        106.25 Gbps  "
      'Active/  LinkUp)==>       0    1[  ] "sw" ( )\n')


@pytest.mark.parametrize("text, where, says", [
    ("Switch: 0x01 sw:\n" + LINE.replace("106.25", "99.5") + "\n" + CA, "2:", "unknown lane"),
    ("Switch: 0x01 sw:\n" + LINE + "\n", "2:1:", "no node of that description"),
    (LINE + "\n", "1:1:", "before any Switch/CA header"),
    ("Switch: 0x01 sw:\nhello\n", "2:1:", "not an iblinkinfo header"),
    ("Switch: 0x01 sw:\n" + LINE + "\n" + LINE + "\n", "3:", "listed twice"),
    ("Switch: 0x01 sw:\n" + LINE.replace("  1[  ] ==", "  0[  ] ==") + "\n", "2:", "port 0"),
    ("Switch: 0x01 sw:\n" + LINE[:-5] + "\n", "2:", "expected the peer"),
    ("Switch: 0x01 sw:\n" + LINE.replace("4X", "4Y") + "\n", "2:", "expected '<width>X"),
    ("Switch: 0x01 " + "x" * 5000 + ":\n", "1:1:", "a line of 5,"),
    ("Switch: 0x01 sw:\n" + LINE + "\n" + CA.replace("4X", "2X"), "", "disagree"),
])
def test_a_bad_line_is_named_with_its_line_and_column(text, where, says, tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text(text)
    with pytest.raises(ImportFailure) as exc:
        from_iblinkinfo(text, str(bad))
    assert f"{bad}:{where}" in str(exc.value) and says in str(exc.value)
    out = tmp_path / "out.topo"
    assert main(["import", "iblinkinfo", str(bad), "-o", str(out)]) == 1   # EXIT_INPUT
    err = capsys.readouterr().err
    # the standard form: the dump's line and column (its start when no line is to blame)
    assert err.startswith(f"{bad}:{where}")
    assert re.match(rf"{re.escape(str(bad))}:\d+:\d+: E180 error: ", err), err
    assert "Traceback" not in err
    assert not out.exists()


def test_line_mode_gives_the_same_fabric_and_ports(tmp_path, capsys):
    """``iblinkinfo -l`` of the same ibsim fabrics: the same .topo and ports as the default
    format, and the SHARP fabric diffs clean (ports too) against its ibnetdiscover dump."""
    got = {}
    for name in ("two_switch.txt", "two_switch_l.txt"):
        out, ports = tmp_path / f"{name}.topo", tmp_path / f"{name}.ports"
        assert main(["import", "iblinkinfo", str(FIX / "iblinkinfo" / name), "-o", str(out),
                     "--ports", str(ports)]) == 0
        got[name] = (out.read_text().split("\n", 1)[1], ports.read_text())
    assert got["two_switch.txt"] == got["two_switch_l.txt"]
    lines = FIX / "iblinkinfo" / "h100_cluster_8_sharp_l.txt"
    assert kind_of(lines.read_text()) == "iblinkinfo"
    capsys.readouterr()
    code, doc = _diff(str(FIX / "ibnetdiscover" / "h100_cluster_8_sharp.txt"), lines, capsys)
    assert code == 0 and doc["equal"] and "ports" in doc["compared"]


L = ('0x0000000000200001 "                            sw"      0    1[  ] ==( 4X        106.25 '
     'Gbps  Active/  LinkUp)==>  0x0000000000000010      0    1[  ] "h1 mlx5_0" ( )\n')
H = ('0x0000000000000010 "                     h1 mlx5_0"      0    1[  ] ==( 4X        106.25 '
     'Gbps  Active/  LinkUp)==>  0x0000000000200001      0    1[  ] "sw" ( )\n')


DOWN = ('0x0000000000200001 "                            sw"      0    2[  ] ==(                '
        'Down/ Polling)==>             [  ] "" ( )\n')


@pytest.mark.parametrize("text, says", [
    (L, "<dump>:1:1: port 1 of 0x200001 names port 1 of 0x10, which is never listed"),
    (L + H.replace("4X", "1X"), "<dump>:2:1: the two ends of a cable disagree"),
    (L + DOWN + H.replace('0    1[  ] "sw"', '0    2[  ] "sw"'),
     "<dump>:3:1: port 1 of 0x10 names port 2 of 0x200001, which names another port back"),
    (L + "hello\n", "<dump>:2:1: not an iblinkinfo -l line"),
    (L + L, "<dump>:2:63: port 1 of 0x200001 listed twice"),
    (L + DOWN.replace('"                            sw"', '"                           sw2"'),
     "<dump>:2:21: node 0x200001 was 'sw'"),
])
def test_a_bad_line_mode_line_is_named(text, says):
    with pytest.raises(ImportFailure) as exc:
        parse(text)
    assert says in str(exc.value)


def _need(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (bash scripts/setup.sh installs them)")


def _iblinkinfo(net: Path, tmp_path: Path) -> Path:
    """iblinkinfo's output of ibsim running ``net``, as a file."""
    env = {**os.environ, "IBSIM_SOCKNAME": f"topoc-ibl-{os.getpid()}-{time.monotonic_ns()}"}
    sim = subprocess.Popen(["ibsim", "-s", str(net), "--no-console"], cwd=tmp_path, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            r = subprocess.run(["ibsim-run", "iblinkinfo"], env=env, cwd=tmp_path,
                               capture_output=True, text=True, timeout=60)
            if r.returncode == 0 and re.search(r"mlx5_|HCA-", r.stdout):
                dump = tmp_path / "links.txt"
                dump.write_text(r.stdout)
                return dump
            time.sleep(0.2)
    finally:
        sim.terminate()
        sim.wait(timeout=10)
    pytest.fail("ibsim-run iblinkinfo never listed an HCA")


def test_ibsim_round_trip_through_iblinkinfo(tmp_path, capsys):
    """The design exported to ibsim, iblinkinfo run on it, the output diffed with the design:
    no difference."""
    _need("ibsim", "ibsim-run", "iblinkinfo")
    net = tmp_path / "net"
    assert main(["export", "ibsim", CLUSTER, "-D", "nodes=4", "-o", str(net)]) == 0
    dump = _iblinkinfo(net, tmp_path)
    capsys.readouterr()
    code, doc = _diff(CLUSTER, dump, capsys, "-D", "nodes=4")
    assert code == 0 and doc["equal"] and {"hosts", "switches", "cabling"} <= set(doc["compared"])
    imported = tmp_path / "fabric.topo"
    assert main(["import", "iblinkinfo", str(dump), "-o", str(imported)]) == 0
    capsys.readouterr()
    code, doc = _diff(CLUSTER, imported, capsys, "-D", "nodes=4")
    assert code == 0 and doc["equal"]


def test_a_real_clusters_dump_round_trips_through_iblinkinfo(tmp_path, capsys):
    """topograph's real ibnetdiscover dump (1,114 cables, SHARP nodes, unnamed HCAs, a UFM
    host) imported with its ports, exported to ibsim, listed by iblinkinfo: the iblinkinfo
    output diffs clean, ports included, against the real dump itself."""
    _need("ibsim", "ibsim-run", "iblinkinfo")
    real = FIX / "ibnetdiscover" / "topograph_example.out"
    topo, ports, net = tmp_path / "f.topo", tmp_path / "ports.txt", tmp_path / "net"
    assert main(["import", "ibnetdiscover", str(real), "-o", str(topo), "--ports",
                 str(ports)]) == 0
    assert main(["export", "ibsim", str(topo), "--ports", str(ports), "-o", str(net)]) == 0
    dump = _iblinkinfo(net, tmp_path)
    capsys.readouterr()
    code, doc = _diff(str(real), dump, capsys)
    assert code == 0 and doc["equal"]
    assert {"hosts", "switches", "cabling", "ports"} <= set(doc["compared"])


@pytest.mark.parametrize("shown, lanes, name", [
    ("4X           2.5 Gbps", 4, "SDR"), ("4X          10.0 Gbps", 4, "QDR"),
    ("4X  10.0 Gbps (FDR10)", 4, "FDR10"), ("4X       14.0625 Gbps", 4, "FDR"),
    ("4X      25.78125 Gbps", 4, "EDR"), ("2X        53.125 Gbps", 2, "HDR"),
    ("4X        106.25 Gbps", 4, "NDR"), ("4X         212.5 Gbps", 4, "XDR")])
def test_lane_speeds_as_iblinkinfo_prints_them(shown, lanes, name):
    text = (FIX / "iblinkinfo" / "two_switch.txt").read_text().replace(
        "8X        53.125 Gbps", shown)
    assert {c[4:] for c in parse(text)[1]} == {(lanes, name)}


@pytest.mark.parametrize("name", ["two_switch.txt", "two_switch_l.txt"])
def test_switch_settings_of_iblinkinfo_p_are_left_aside(name, capsys, tmp_path):
    """``iblinkinfo -p`` appends `` (HOQ:0 VL_Stall:7)`` to the link, as ibsim's run of it
    printed: the same fabric."""
    text = (FIX / "iblinkinfo" / name).read_text().replace("LinkUp)==>",
                                                           "LinkUp) (HOQ:0 VL_Stall:7)==>")
    assert "(HOQ:0 VL_Stall:7)==>" in text
    dump = tmp_path / "p.txt"
    dump.write_text(text)
    code, doc = _diff(str(FIX / "ibnetdiscover" / "two_switch.topo"), dump, capsys)
    assert code == 0 and doc["equal"]
