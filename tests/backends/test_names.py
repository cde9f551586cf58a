"""backends.names: every cluster export checks host and switch names for its tool before it
writes a line (issue 44: a newline from --hostnames or the file's own pattern became a line of
topology.conf, topology.yaml, the ibsim net file and the ibdiagnet plan, exit 0)."""

from __future__ import annotations

import pytest

import topoc
from topoc.backends import ibsim, k8s, names, slurm
from topoc.cli import main
from topoc.compiler.analysis.fabric import fabric

LIB = "library/nvidia/nvl72_cluster.topo"
EXPORTS = [["slurm", "--topology", "block"], ["slurm", "--topology", "tree"],
           ["slurm", "--format", "yaml"], ["k8s"], ["ibsim"], ["ibdiagnet"]]
INJECTED = "SwitchName=evil Nodes=x"


@pytest.mark.parametrize("export", EXPORTS, ids=lambda e: "-".join(e))
@pytest.mark.parametrize("pattern", ["gb-{rack:02}-{tray:02}\n" + INJECTED,
                                     "gb-{rack:02}\r{tray:02}", "gb {rack} {tray}",
                                     "gb-{rack}-{tray}\x1b]0;pwned\x07"])
def test_a_hostname_with_a_newline_or_control_never_becomes_a_line(tmp_path, capsys, export,
                                                                     pattern):
    out = tmp_path / "out"
    code = main(["export", export[0], LIB, "-D", "racks=1", *export[1:], "--hostnames", pattern,
                 "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert "host 'cluster.rack0.tray0'" in err and "--hostnames" in err
    assert "\n" + INJECTED not in err and "\x1b" not in err and "\r" not in err


SMALL = """link ib : infiniband { bandwidth = 400 Gb/s }
link pc : pcie { bandwidth = 64 GB/s }
device G : gpu { }
device C : cpu { }
device X : nic { rate = 400 Gb/s }
device L : net_switch { }
group N { cpu : C  gpu : G  nic : X  gpu <-> cpu : pc  nic <-> cpu : pc }
group Cl { host node[2] : N "n{node}\\nX=1"  leaf : L  node[*].nic <-> leaf : ib }
system c : Cl
"""


@pytest.mark.parametrize("export", EXPORTS, ids=lambda e: "-".join(e))
def test_the_files_own_pattern_is_checked_too(tmp_path, capsys, export):
    (tmp_path / "c.topo").write_text(SMALL)
    out = tmp_path / "out"
    code = main(["export", export[0], str(tmp_path / "c.topo"), *export[1:], "-o", str(out)])
    assert code == 1 and not out.exists()
    assert "host 'c.node0' is called 'n0\\nX=1'" in capsys.readouterr().err


def test_each_tool_has_its_rule():
    fab = fabric(topoc.load(LIB, defines={"racks": 1}), "GB-{rack:02}-{tray:02}")
    slurm.render(fab, "block")                          # Slurm takes capitals
    ibsim.render_ibsim(fab)
    with pytest.raises(names.InvalidName, match="RFC 1123"):
        k8s.render(fab)                                 # a Node name is lower case
    long = fabric(topoc.load(LIB, defines={"racks": 1}), "n" * 60 + "{rack}{tray:02}")
    with pytest.raises(names.InvalidName, match="at most 48"):
        ibsim.render_ibsim(long)                        # a NodeDescription is 64 bytes
