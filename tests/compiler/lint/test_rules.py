"""Every lint rule: an input that triggers it and one that does not."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.lint.lint import LintConfig, apply_suppressions, lint_system

BASE = '''link nv : nvlink { bandwidth = 25 GB/s }
link pc : pcie { bandwidth = 63 GB/s }
link ib : infiniband { bandwidth = 400 Gb/s }
link upi : inter_socket { bandwidth = 22 GB/s }
device G : gpu { hbm = 80 GB }
device C : cpu { }
device S : switch { reduction = true }
device P : pcie_switch { }
device N : nic { ports.pcie = 1 }
device L : net_switch { }
'''
# A node: 4 GPUs on one NVSwitch, GPU i and NIC i under PCIe switch i, switches 0,1 on CPU 0.
NODE = '''group Node {
  gpu[4] : G  sw : S  pcie[4] : P  nic[4] : N  cpu[2] : C
  gpu[*] <-> sw : nv x 4
  gpu[i] <-> pcie[i] : pc  nic[i] <-> pcie[i] : pc  pcie[i] <-> cpu[i / 2] : pc
  cpu[0] <-> cpu[1] : upi
}
'''
TWO = '''group Two { node[2] : Node  leaf[4] : L  node[*].nic[n] <-> leaf[n] : ib }
system two : Two
'''


def codes(text: str, select: str = "") -> list[str]:
    system = topoc.loads(text)
    config = LintConfig(select=(select,) if select else ())
    return sorted(d.code for d in lint_system(system, config) if d.severity != "error")


def has(code: str, text: str) -> bool:
    return code in codes(text, code)


# four trays of two GPUs on one NVSwitch: one NVLink domain of 8 GPUs over 4 hosts
TRAYS = BASE + '''group Tray { gpu[2] : G  cpu : C  pcie : P  gpu[*] <-> pcie : pc  pcie <-> cpu : pc }
group Rack { host tray[4] : Tray  sw : S  tray[*].gpu[*] <-> sw : nv x 4 }
system r : Rack
'''
CASES = {
    "W409": (BASE + "device Q : net_switch { ports.infiniband = 64 }\n" + NODE
             + "group Two { node[2] : Node  leaf : Q  node[*].nic[*] <-> leaf : ib }\n"
             "system two : Two\n", BASE + NODE + "group Two { node[2] : Node  leaf : L  "
             "node[*].nic[*] <-> leaf : ib }\nsystem two : Two\n"),
    # two leaves (rails) whose uplinks all land on one spine, against two spines
    "W411": (BASE + "device Q : net_switch { ports.infiniband = 64 }\n" + NODE
             + "group Two { node[2] : Node  leaf[2] : Q  spine : Q\n"
             "  node[*].nic[n] <-> leaf[n / 2] : ib  leaf[*] <-> spine : ib x 4 }\n"
             "system two : Two\n",
             BASE + "device Q : net_switch { ports.infiniband = 64 }\n" + NODE
             + "group Two { node[2] : Node  leaf[2] : Q  spine[2] : Q\n"
             "  node[*].nic[n] <-> leaf[n / 2] : ib  leaf[*] <-> spine[*] : ib x 2 }\n"
             "system two : Two\n"),
    "W410": (TRAYS + "parallel p on r { tp = 8 }\n", TRAYS + "parallel p on r { tp = 4  dp = 2 }\n"),
    # the file's own H100 hides the library's: a note, and the library's groups keep theirs
    "W120": ('use "nvidia/devices.topo"\n' + BASE.replace("device G :", "device H100 :")
             .replace("device C :", "device G : H100 { }\ndevice C :") + NODE
             + "system x : Node\n", BASE + NODE + "system x : Node\n"),
    "W401": (BASE + NODE + "group X { n : Node  spare : G }\nsystem x : X\n",
             BASE + NODE + "system x : Node\n"),
    "W402": (BASE + "group B { g[2] : G  p[2] : P  c : C  g[i] <-> p[i] : pc  p[i] <-> c : pc }\n"
             "system b : B\n",
             BASE + "group B { g[2] : G  p : P  c : C  g[*] <-> p : pc  p <-> c : pc }\n"
             "system b : B\n"),
    "W403": (BASE + "group B { g : G  n : N  c[2] : C  p[2] : P\n  g <-> p[0] : pc  "
             "n <-> p[1] : pc  p[i] <-> c[i] : pc  c[0] <-> c[1] : upi }\nsystem b : B\n",
             BASE + NODE + "system x : Node\n"),
    "W404": (BASE + "group B { g[2] : G  s : S  g[0] <-> s : nv x 4  g[1] <-> s : nv x 2 }\n"
             "system b : B\n",
             BASE + NODE + "system x : Node\n"),
    "W405": (BASE + NODE + "group Two { node[2] : Node  leaf : L  spine : L\n"
             "  node[*].nic[*] <-> leaf : ib  leaf <-> spine : ib x 2 }\nsystem two : Two\n",
             BASE + NODE + "group Two { node[2] : Node  leaf : L  spine : L\n"
             "  node[*].nic[*] <-> leaf : ib  leaf <-> spine : ib x 8 }\nsystem two : Two\n"),
    "W406": (BASE + NODE + "group Two { node[2] : Node  leaf[4] : L\n"
             "  node[0].nic[n] <-> leaf[n] : ib  node[1].nic[n] <-> leaf[(n + 1) % 4] : ib }\n"
             "system two : Two\n",
             BASE + NODE + TWO),
    "W407": (BASE + NODE + "system x : Node\n",
             BASE.replace("ports.pcie = 1", "ports.pcie = 2") + NODE + "system x : Node\n"),
    "W408": (BASE.replace("bandwidth = 25 GB/s", "bandwidth = 900 Gb/s") + NODE
             + "system x : Node\n", BASE + NODE + "system x : Node\n"),
    "W501": (BASE + NODE + TWO + "parallel p on two { tp = 8  traffic { tp allreduce 1 MiB } }\n",
             BASE + NODE + TWO + "parallel p on two { tp = 4  dp = 2  traffic { tp allreduce "
             "1 MiB  dp allreduce 1 GB } }\n"),
    # Megatron's EP: expert groups split the 8 data-parallel ranks of two 4-GPU nodes
    "W502": (BASE + NODE + TWO + "parallel p on two { dp = 8  ep = 8  traffic { ep alltoall "
             "1 MiB  dp allreduce 1 GB } }\n",
             BASE + NODE + TWO + "parallel p on two { dp = 8  ep = 4  traffic { ep alltoall "
             "1 MiB  dp allreduce 1 GB } }\n"),
    "W503": (BASE + NODE + TWO + "parallel p on two { pp = 4  dp = 2  microbatches = 2\n"
             "  traffic { pp sendrecv 1 MiB  dp allreduce 1 GB } }\n",
             BASE + NODE + TWO + "parallel p on two { pp = 4  dp = 2  microbatches = 64\n"
             "  traffic { pp sendrecv 1 MiB  dp allreduce 1 GB } }\n"),
    "W504": (BASE + NODE + TWO + "parallel p on two { tp = 2  dp = 4  order = dp, tp\n"
             "  traffic { tp allreduce 1 MiB  dp allreduce 1 GB } }\n",
             BASE + NODE + TWO + "parallel p on two { tp = 2  dp = 4  order = tp, dp\n"
             "  traffic { tp allreduce 1 MiB  dp allreduce 1 GB } }\n"),
    "W505": (BASE + NODE + TWO + "parallel p on two { dp = 8  traffic { tp allreduce 1 MiB "
             "dp allreduce 1 GB } }\n",
             BASE + NODE + TWO + "parallel p on two { dp = 8  traffic { dp allreduce 1 GB } }\n"),
    "W506": ('use "nvidia/dgx_h100.topo"\nuse "models/llama3.topo"\nsystem dgx : DGXH100\n'
             "parallel p on dgx { tp = 8  model = llama3_405b  batch = 8 }\n",
             'use "nvidia/dgx_h100.topo"\nuse "models/llama3.topo"\nsystem dgx : DGXH100\n'
             "parallel p on dgx { tp = 8  model = llama3_8b  batch = 8  recompute = full }\n"),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_fires_on_the_bad_example_only(code):
    bad, good = CASES[code]
    assert has(code, bad), codes(bad, code)
    assert not has(code, good), codes(good, code)


def test_every_rule_has_a_case_and_a_page():
    from topoc.compiler.lint.rules import RULES

    from ...conftest import ROOT
    page = (ROOT / "docs/rules.md").read_text()
    for code in RULES:
        assert code in CASES or code in ("W400", "W507")     # W507: below, it needs -D
        assert f"## {code}" in page, code


def test_w507_a_block_that_does_not_fit_the_d_size_is_left_out_with_a_warning():
    text = ('use "nvidia/h100_cluster.topo"\nsystem s : H100Cluster(nodes = 2)\n'
            "parallel p on s { tp = 8  pp = 2 }\n")
    assert "W507" not in codes(text)
    system = topoc.loads(text, {"nodes": 3})
    found = [d for d in lint_system(system, LintConfig()) if d.code == "W507"]
    assert found and "does not fit" in found[0].message and system.parallels == ()


def test_messages_name_the_devices():
    bad, _ = CASES["W401"]
    (finding,) = [d for d in lint_system(topoc.loads(bad)) if d.code == "W401"]
    assert "x.spare" in finding.message and finding.span.line > 0


def test_w400_unused_suppression_and_used_one():
    bad, _ = CASES["W401"]
    used = bad.replace("spare : G }", "spare : G }  # topoc: ignore[W401] kept for a test")
    system = topoc.loads(used)
    root = system.device("x.spare").span.source
    kept = apply_suppressions(lint_system(system), root, LintConfig())
    assert [d.code for d in kept] == []
    unused = BASE + NODE + "system x : Node  # topoc: ignore[W404]\n"
    system = topoc.loads(unused)
    kept = apply_suppressions(lint_system(system), system.span.source, LintConfig())
    assert [d.code for d in kept] == ["W400"]


@pytest.mark.parametrize("change,needle", [
    (("bandwidth = 25 GB/s", "bandwidth = 900 Gb/s"), "25 GB/s (a GPU's both-ways total"),
    (("bandwidth = 25 GB/s", "bandwidth = 50 Gb/s"), "50 GB/s (the figure in bytes where bits"),
    (("device G : gpu { hbm = 80 GB }", "device G : gpu { hbm = 80 GB  sm = 9.0 }"), "as 90"),
    (("device N : nic { ports.pcie = 1 }", "device N : nic { ports.pcie = 1  rate = 200 Gb/s }"),
     "cabled at 50 GB/s"),
])
def test_implausible_figures_name_the_likely_meant_value(change, needle):
    text = BASE.replace(*change) + NODE + TWO
    messages = [d.message for d in lint_system(topoc.loads(text), LintConfig())
                if d.code == "W408"]
    assert any(needle in m for m in messages), messages


def test_w506_leaves_a_tight_strategy_alone():
    """Issue 42: a strategy predicted a few GB over HBM, inside the memory model's uncertainty,
    is 'tight' (topoc plan answers it; runs like it happened), not out of memory."""
    from topoc.compiler.ir.gpus import hbm_of
    from topoc.compiler.training.memory import TIGHT, fit
    src = ('use "nvidia/dgx_h100.topo"\nuse "models/llama3.topo"\nsystem dgx : DGXH100\n'
           "parallel p on dgx { dp = 8  model = llama3_8b  batch = 128  microbatch = 2\n"
           "  recompute = full  fp8 = true  distributed_optimizer = true }\n")
    system = topoc.compile(src, "tight.topo")
    mem, hbm = system.parallels[0].derived.memory.total, hbm_of(system)
    assert hbm < mem and fit(mem, hbm) == TIGHT          # over HBM, inside the band
    assert "W506" not in [d.code for d in lint_system(system)]


def _library_systems():
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[3] / "library"
    return sorted(p for p in root.rglob("*.topo")
                  if re.search(r"^system ", p.read_text(), re.M))


@pytest.mark.parametrize("path", _library_systems() + ["bad", "good"],
                         ids=lambda p: getattr(p, "name", p))
def test_w409_from_the_arrays_is_the_pass_over_each_nic(path):
    """W409's hosts by switch in numpy equal the pass over each compute NIC's links, on
    every library file and on the rule's own examples (the bad one has findings)."""
    from topoc.compiler.lint import rules
    system = topoc.loads(CASES["W409"][path == "good"]) if isinstance(path, str) \
        else topoc.load(path)
    hosts = rules._host_devices(system)
    found = rules._one_switch_arrays(system, hosts)
    assert found is not None
    assert dict(found) == dict(rules._one_switch_pass(system, hosts))
    assert bool(found) == (path == "bad") or not isinstance(path, str)
