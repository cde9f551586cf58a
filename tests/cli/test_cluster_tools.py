"""The exports checked by the tools that read them, run for real (scripts/setup.sh installs
them from Debian's packages): Slurm's own controller loads ``topoc export slurm --topology
tree`` and ``scontrol show topology`` reads back the same switches; ``topoc export ibsim`` runs
in ibsim, ``ibnetdiscover`` discovers it, ``topoc import ibnetdiscover`` reads the dump and
``topoc diff`` finds no difference with the source.

Daemons run as this user on private sockets and files in pytest's temp folder (munged on its
own socket, slurmctld on free loopback ports, ibsim on an abstract socket named for the test)
and are stopped when the test ends. A test skips, saying why, only when its tool is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from topoc.cli import main

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "library" / "nvidia"


def _need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None and not Path(t).exists()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (bash scripts/setup.sh installs "
                    "them from Debian's packages)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen | None = None, pidfile: Path | None = None) -> None:
    """Stop one daemon we started: by its Popen, or by the pid file it wrote."""
    pid = None
    if pidfile is not None and pidfile.exists():
        try:
            pid = int(pidfile.read_text().split()[0])
        except (ValueError, IndexError):
            pid = None
    if pid:
        try:
            os.kill(pid, signal.SIGTERM)
            for _ in range(50):
                os.kill(pid, 0)
                time.sleep(0.1)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _topo_switch_lines(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in
            re.finditer(r"^SwitchName=(\S+) (?:Nodes|Switches)=(\S+)", text, re.M)}


def _slurm_version() -> tuple[int, int]:
    out = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True, timeout=20).stdout
    m = re.search(r"(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _run_slurmctld(tmp_path: Path, names: list[str], plugin: str, query: list[str],
                   ready: str) -> tuple[str, str]:
    """Start munged and slurmctld with ``names`` as nodes and TopologyPlugin ``plugin`` (the
    topology.conf is already in tmp_path), run ``scontrol *query`` until its output holds
    ``ready``; (that output, slurmctld's log). Both daemons are stopped before returning."""
    (tmp_path / "state").mkdir()
    key = tmp_path / "munge.key"
    subprocess.run(["mungekey", "-c", "-k", str(key), "-b", "1024"], check=True,
                   capture_output=True)
    key.chmod(0o600)
    sock = tmp_path / "munge.sock"
    munge_pid = tmp_path / "munged.pid"
    ctld_pid = tmp_path / "slurmctld.pid"
    log = tmp_path / "slurmctld.log"
    port = _free_port()
    nodes = "\n".join(f"NodeName={n} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN" for n in names)
    slurm_conf = tmp_path / "slurm.conf"
    slurm_conf.write_text(f"""ClusterName=topoc
SlurmctldHost=localhost
SlurmUser={os.environ.get('USER') or 'root'}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={tmp_path / 'state'}
SlurmdSpoolDir={tmp_path / 'spool'}
SlurmctldPidFile={ctld_pid}
SlurmctldPort={port}
SlurmdPort={_free_port()}
SlurmctldLogFile={log}
SlurmctldDebug=debug
TopologyPlugin={plugin}
SelectType=select/cons_tres
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
{nodes}
PartitionName=all Nodes=ALL Default=YES State=UP
""")
    env = {**os.environ, "SLURM_CONF": str(slurm_conf)}
    try:
        subprocess.run(["munged", f"--key-file={key}", f"--socket={sock}",
                        f"--pid-file={munge_pid}", f"--log-file={tmp_path / 'munged.log'}",
                        f"--seed-file={tmp_path / 'munge.seed'}", "--force"],
                       check=True, capture_output=True, timeout=20)
        subprocess.run(["slurmctld", "-f", str(slurm_conf), "-i"], check=True, env=env,
                       capture_output=True, timeout=30)
        shown = None
        for _ in range(100):
            r = subprocess.run(["scontrol", *query], env=env, capture_output=True,
                               text=True, timeout=20)
            if r.returncode == 0 and ready in r.stdout:
                shown = r.stdout
                break
            time.sleep(0.2)
        assert shown is not None, log.read_text()[-2000:] if log.exists() else "no log"
    finally:
        _stop(pidfile=ctld_pid)
        _stop(pidfile=munge_pid)
    return shown, log.read_text()


def _host_names(file: str, defines: list[str]) -> list[str]:
    from topoc import load
    from topoc.compiler.analysis.fabric import fabric
    return [h.name for h in fabric(load(LIB / file, defines={
        defines[1].split("=")[0]: int(defines[1].split("=")[1])})).hosts]


@pytest.mark.parametrize("file,defines,hosts", [
    ("nvl72_cluster.topo", ["-D", "racks=2"], 36),
    ("h100_cluster.topo", ["-D", "nodes=8"], 8),
])
def test_slurmctld_loads_the_tree(tmp_path, capsys, file, defines, hosts):
    _need("slurmctld", "scontrol", "munged", "mungekey")
    conf = tmp_path / "topology.conf"
    assert main(["export", "slurm", str(LIB / file), *defines, "--topology", "tree",
                 "-o", str(conf)]) == 0
    ours = conf.read_text()
    # Every host of the file is a Slurm node; name them all on loopback.
    names = _host_names(file, defines)
    assert len(names) == hosts
    shown, log = _run_slurmctld(tmp_path, names, "topology/tree", ["show", "topology"],
                                "SwitchName=")
    expected = _topo_switch_lines(ours)
    back = {}
    for m in re.finditer(r"^SwitchName=(\S+) Level=(\d+).*?(?:Nodes=(\S+))?(?: Switches=(\S+))?$",
                         shown, re.M):
        name, level, nodes_, switches = m.groups()
        back[name] = switches if int(level) > 0 else nodes_
    assert back == expected
    assert len(back) == ours.count("SwitchName=")
    # Both clusters are rail-optimised (every node on several leaves): the merged tree gives
    # slurmctld one leaf per node, so it logs no complaint at start.
    assert "Multiple leaf switches contain nodes" not in log
    assert "topology" in log.lower()


def test_slurmctld_loads_the_tree_of_a_real_dump(tmp_path, capsys):
    """A real cluster's dump (topograph's, with SHARP nodes, unnamed HCAs, a UFM host and
    hosts named localhost/ubuntu): its tree names only the GPU hosts, and slurmctld loads it
    with every switch and without complaint."""
    _need("slurmctld", "scontrol", "munged", "mungekey")
    from topoc import loads
    from topoc.compiler.analysis.fabric import fabric
    dump = ROOT / "tests" / "fixtures" / "ibnetdiscover" / "topograph_example.out"
    imported = tmp_path / "fabric.topo"
    assert main(["import", "ibnetdiscover", str(dump), "-o", str(imported)]) == 0
    conf = tmp_path / "topology.conf"
    assert main(["export", "slurm", str(imported), "--topology", "tree", "-o", str(conf)]) == 0
    capsys.readouterr()
    names = [h.name for h in fabric(loads(imported.read_text())).hosts]
    assert len(names) == 119 and not any(n in ("localhost", "ubuntu") for n in names)
    shown, log = _run_slurmctld(tmp_path, names, "topology/tree", ["show", "topology"],
                                "SwitchName=")
    back = {}
    for m in re.finditer(r"^SwitchName=(\S+) Level=(\d+).*?(?:Nodes=(\S+))?(?: Switches=(\S+))?$",
                         shown, re.M):
        name, level, nodes_, switches = m.groups()
        back[name] = switches if int(level) > 0 else nodes_
    assert back == _topo_switch_lines(conf.read_text())
    assert "Multiple leaf switches contain nodes" not in log
    assert not [ln for ln in log.splitlines()
                if re.search(r"error|fatal", ln, re.I) and re.search(r"topolog|switch", ln, re.I)]


def test_ibsim_round_trip_keeps_a_real_dumps_ports(tmp_path, capsys):
    """topograph's real dump imported with --ports, exported to ibsim with them, rediscovered
    by ibnetdiscover: the same cables on the same ports (diff compares ports, no
    difference); without --ports the export numbers each end's cables from 1, and diff then
    names every cable whose ports moved."""
    _need("ibsim", "ibsim-run", "ibnetdiscover")
    dump = ROOT / "tests" / "fixtures" / "ibnetdiscover" / "topograph_example.out"
    topo, ports = tmp_path / "fabric.topo", tmp_path / "ports.txt"
    assert main(["import", "ibnetdiscover", str(dump), "-o", str(topo), "--ports",
                 str(ports)]) == 0
    again = {}
    for label, flags in (("kept", ["--ports", str(ports)]), ("renumbered", [])):
        net = tmp_path / f"net-{label}"
        assert main(["export", "ibsim", str(topo), *flags, "-o", str(net)]) == 0
        env = {**os.environ, "IBSIM_SOCKNAME": f"topoc-test-{os.getpid()}-{time.monotonic_ns()}"}
        sim = subprocess.Popen(["ibsim", "-s", str(net), "--no-console"], cwd=tmp_path, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(50):
                r = subprocess.run(["ibsim-run", "ibnetdiscover"], env=env, cwd=tmp_path,
                                   capture_output=True, text=True, timeout=30)
                if r.returncode == 0 and "mlx5_" in r.stdout:
                    again[label] = tmp_path / f"again-{label}.txt"
                    again[label].write_text(r.stdout)
                    break
                time.sleep(0.2)
        finally:
            _stop(sim)
    assert set(again) == {"kept", "renumbered"}
    capsys.readouterr()
    import json
    assert main(["diff", str(topo), str(again["kept"]), "--ports", str(ports), "--format",
                 "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["equal"] and "ports" in doc["compared"]
    assert main(["diff", str(topo), str(again["renumbered"]), "--ports", str(ports),
                 "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["differences"] and {d["code"] for d in doc["differences"]} == {"D09"}


def test_slurmctld_loads_blocks(tmp_path):
    """topology/block (Slurm 23.11+), where the installed Slurm has it: a 16-tray rack among
    18-tray racks, written for this Slurm's version, loads and keeps every block."""
    _need("slurmctld", "scontrol", "munged", "mungekey")
    version = _slurm_version()
    plugins = list(Path("/usr/lib").glob("**/slurm*/topology_block.so"))
    if version < (23, 11) or not plugins:
        pytest.skip(f"the installed Slurm {version[0]}.{version[1]:02d} has no topology/block "
                    "(Slurm 23.11+); the block file is checked against Slurm's own rules in "
                    "tests/backends/test_cluster_exports.py")
    conf = tmp_path / "topology.conf"
    assert main(["export", "slurm", str(LIB / "nvl72_cluster.topo"), "-D", "racks=2",
                 "--topology", "block", "--slurm-version", f"{version[0]}.{version[1]}",
                 "-o", str(conf)]) == 0
    names = _host_names("nvl72_cluster.topo", ["-D", "racks=2"])
    shown, log = _run_slurmctld(tmp_path, names, "topology/block", ["show", "topology"],
                                "BlockName=")
    assert "BlockName=block0" in shown and "BlockName=block1" in shown
    assert "fatal" not in log


def test_ibsim_round_trip_shows_no_difference(tmp_path, capsys):
    _need("ibsim", "ibsim-run", "ibnetdiscover")
    src = tmp_path / "cluster.topo"
    src.write_text(f"""use "nvidia/links.topo"
use "nvidia/devices.topo"
use "nvidia/dgx_h100.topo"
group C(nodes: int = 6) {{
  host node[nodes] : DGXH100 "dgx-{{node:02}}"
  leaf[8] : QM9700
  spine[4] : QM9700
  node[k].nic[n] <-> leaf[n] : ndr
  leaf[*] <-> spine[*] : ndr x 2
}}
system cluster : C
""")
    net = tmp_path / "net"
    assert main(["export", "ibsim", str(src), "-o", str(net)]) == 0
    sockname = f"topoc-test-{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "IBSIM_SOCKNAME": sockname}
    sim = subprocess.Popen(["ibsim", "-s", str(net), "--no-console"], cwd=tmp_path, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dumps = {}
    try:
        for fmt, flags in (("default", []), ("ports", ["-p"])):
            for _ in range(50):
                r = subprocess.run(["ibsim-run", "ibnetdiscover", *flags], env=env, cwd=tmp_path,
                                   capture_output=True, text=True, timeout=30)
                if r.returncode == 0 and "mlx5_" in r.stdout:
                    dumps[fmt] = r.stdout
                    break
                time.sleep(0.2)
    finally:
        _stop(sim)
    assert set(dumps) == {"default", "ports"}
    for fmt, dump in dumps.items():
        dump_path = tmp_path / f"dump-{fmt}.txt"
        dump_path.write_text(dump)
        imported = tmp_path / f"fabric-{fmt}.topo"
        assert main(["import", "ibnetdiscover", str(dump_path), "-o", str(imported)]) == 0
        capsys.readouterr()
        assert main(["diff", str(src), str(imported), "--format", "json"]) == 0
        import json
        doc = json.loads(capsys.readouterr().out)
        assert doc["equal"] and doc["differences"] == []
        assert {"hosts", "switches", "cabling"} <= set(doc["compared"])
        # and the dump itself, read as B directly
        assert main(["diff", str(src), str(dump_path)]) == 0
        capsys.readouterr()
    # A cable running at half its rate is drift: exit 1, and the cable is named.
    lines = dumps["default"].splitlines()
    slow = {i for i, ln in enumerate(lines) if '"dgx-03 mlx5_2"' in ln and ln.startswith("[")}
    slow |= {i + 1 for i, ln in enumerate(lines) if ln.startswith("Ca") and
             '"dgx-03 mlx5_2"' in ln}
    assert len(slow) == 2
    broken = tmp_path / "broken.txt"
    broken.write_text("\n".join(ln.replace("8xHDR", "4xHDR") if i in slow else ln
                                for i, ln in enumerate(lines)) + "\n")
    assert main(["diff", str(src), str(broken)]) == 1
    out = capsys.readouterr().out
    assert "dgx-03/2 <-> leaf2: cables at 1 x 400 Gb/s in A, 1 x 200 Gb/s in B" in out
    # ibsim's HCAs report no device id, so the import names HCAs by rate only (HCA_200G for the
    # slow one), which diff compares by count: the one difference is the cable.
    assert out.count("D08") == 1 and "D02" not in out and "1 difference between" in out


@pytest.mark.parametrize("name", ["h100_cluster_8_sharp.txt", "topograph_example.out"])
def test_ibsim_round_trip_of_a_dump_with_sharp_nodes_is_idempotent(name, tmp_path, capsys):
    """A dump with SHARP aggregation nodes and unnamed HCAs (tests/fixtures/ibnetdiscover; the
    second a real cluster's, with a UFM host and hosts that never set a hostname too):
    imported, exported to ibsim, rediscovered and imported again, it shows no difference."""
    _need("ibsim", "ibsim-run", "ibnetdiscover")
    dump = ROOT / "tests" / "fixtures" / "ibnetdiscover" / name
    first = tmp_path / "first.topo"
    assert main(["import", "ibnetdiscover", str(dump), "-o", str(first)]) == 0
    net = tmp_path / "net"
    assert main(["export", "ibsim", str(first), "-o", str(net)]) == 0
    sockname = f"topoc-test-{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "IBSIM_SOCKNAME": sockname}
    sim = subprocess.Popen(["ibsim", "-s", str(net), "--no-console"], cwd=tmp_path, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    again = None
    try:
        for _ in range(50):
            r = subprocess.run(["ibsim-run", "ibnetdiscover"], env=env, cwd=tmp_path,
                               capture_output=True, text=True, timeout=30)
            if r.returncode == 0 and "mlx5_" in r.stdout:
                again = r.stdout
                break
            time.sleep(0.2)
    finally:
        _stop(sim)
    assert again is not None
    (tmp_path / "again.txt").write_text(again)
    capsys.readouterr()
    assert main(["diff", str(first), str(tmp_path / "again.txt"), "--format", "json"]) == 0
    import json
    doc = json.loads(capsys.readouterr().out)
    assert doc["equal"] and {"hosts", "switches", "cabling"} <= set(doc["compared"])
