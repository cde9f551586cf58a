"""Issue 40: completion from the syntax around the cursor, also where the file does not parse
(an unclosed block, a half-typed line): each position of a statement offers what may be
written there, never the top-level keywords inside a block."""

from __future__ import annotations

import pytest

from topoc.lsp import Analysis

#: A file of every construct, typed in order; the tests cut it at a point and complete there.
TYPED = '''use "nvidia/links.topo"
use "nvidia/devices.topo"
use "models/llama3.topo"
link fast : nvlink { bandwidth = 50 GB/s latency = 1 us }
device Acc : gpu { hbm = 80 GB tflops_bf16 = 989 }
device Nic2 : nic { rate = 50 GB/s transport = "roce" }
group Node(n: int = 8) {
  gpu[n] : H100
  sw[2] : NVSwitch3
  nic : CX7
  gpu[*] <-> sw[*] : nvlink4 x 2
  gpu[0] <-> nic : pcie5
}
group Pair {
  a : Node(n = 4)
  b : Node
  a.nic <-> b.nic : ndr
}
system box : Node(n = 8)
parallel p on box {
  tp = 8
  model = llama3_8b
  batch = 64
  recompute = full
}
parallel q on box {
  tp = 8
  traffic {
    tp allreduce 1 GiB
  }
}
'''
TOP = {"use", "link", "device", "model", "group", "system", "parallel"}     # top-level keywords
LINKS = {"nvlink4", "ndr", "pcie5", "fast"}
#: (the text typed up to the end of the first occurrence of this, labels that must be offered
#: there, labels that must not)
POSITIONS = [
    ("link fast : ", {"nvlink", "infiniband", "pcie"}, {"nvlink4", "use"}),
    ("device Acc : ", {"gpu", "nic", "H100"}, {"Acc", "nvlink4"}),
    ("device Acc : gpu { ", {"hbm", "tflops_bf16", "ports.nvlink"}, {"rate", "link"}),
    ("device Acc : gpu { hbm = 80 GB ", {"tflops_bf16"}, {"hbm"}),
    ("device Nic2 : nic { ", {"rate", "transport", "role"}, {"hbm"}),
    ("transport = ", {'"roce"', '"ib"'}, {"rate"}),
    ('transport = "', {"roce", "ib"}, {"rate", '"roce"'}),
    ("link fast : nvlink { ", {"bandwidth", "latency"}, {"hbm"}),
    ("group Node(n: ", {"int", "gpu"}, {"H100"}),
    ("group Node(n: int = 8) {\n  ", {"let", "require", "host"}, TOP),
    ("  gpu[n] : ", {"H100", "NVSwitch3", "Acc", "Node"}, {"nvlink4"} | TOP),
    ("  gpu[*] <-> ", {"gpu", "sw", "nic"}, {"H100"} | TOP),
    ("  gpu[*] <-> sw[*] : ", LINKS, {"H100", "gpu"} | TOP),
    ("  gpu[*] <-> sw[*] : nv", LINKS, {"H100", "gpu"} | TOP),      # the trap
    ("nvlink4 x ", {"n"}, TOP),
    ("  a : Node(", {"n"}, TOP),
    ("  a.", {"gpu", "sw", "nic"}, TOP),
    ("  a.nic <-> b.", {"gpu", "sw", "nic"}, TOP),
    ("system box : ", {"Node", "Pair"}, {"H100"}),
    ("system box : Node(", {"n"}, set()),
    ("parallel p on ", {"box"}, set()),
    ("parallel p on box {\n  ", {"tp", "model", "batch", "traffic"}, TOP - {"model"}),
    ("  tp = 8\n  ", {"model", "batch"}, {"tp"}),
    ("  model = ", {"llama3_8b", "llama3_70b", "gpt3_175b"}, {"tp"}),
    ("  recompute = ", {"none", "selective", "full"}, set()),
    ("  traffic {\n    ", {"tp", "dp", "ep"}, {"allreduce"} | TOP),
    ("    tp ", {"allreduce", "alltoall"}, {"tp"}),
    ("  }\n}\n", TOP, {"tp"}),
    ('use "', {"nvidia/links.topo", "models/llama3.topo"}, TOP),
]


def complete_at(tmp_path, mark: str, good=None) -> list[str]:
    """The labels offered when ``TYPED`` has been typed up to the end of ``mark``'s first
    occurrence (the rest of the file not typed yet)."""
    before = TYPED[:TYPED.index(mark) + len(mark)]
    lines = before.split("\n")
    a = Analysis(before, str(tmp_path / "typed.topo"))
    found = a.completions(len(lines) - 1, len(lines[-1]), *([good] if good else []))
    return [c[0] for c in found]


def test_link_types_in_an_unclosed_group(tmp_path):
    """The issue's trap: after 'gpu[*] <-> sw[*] : nv' in a group whose '}' is not typed yet
    the link types were not offered, only the top-level keywords."""
    labels = complete_at(tmp_path, "  gpu[*] <-> sw[*] : nv")
    assert LINKS <= set(labels) and not TOP & set(labels)
    assert "H100" not in labels


@pytest.mark.parametrize("mark, wanted, unwanted", POSITIONS)
def test_what_each_position_offers(tmp_path, mark, wanted, unwanted):
    labels = set(complete_at(tmp_path, mark))
    assert wanted <= labels, sorted(wanted - labels)
    assert not unwanted & labels, sorted(unwanted & labels)


def test_names_from_the_last_program_that_resolved(tmp_path):
    """A text that does not parse and imports nothing still completes the link types of the
    document's last program that resolved."""
    path = str(tmp_path / "typed.topo")
    good = Analysis(TYPED, path).program
    assert good is not None
    broken = "group G {\n  a <-> b : "
    plain = Analysis(broken, path)
    assert plain.completions(1, 12) == []
    assert {"fast", "nvlink4"} <= {c[0] for c in plain.completions(1, 12, good)}


def test_names_the_text_declares_before_it_resolves(tmp_path):
    text = "link mine : nvlink { bandwidth = 1 GB/s }\ngroup G {\n  a[2] : X\n  a[0] <-> a[1] : "
    a = Analysis(text, str(tmp_path / "t.topo"))
    assert a.program is None
    assert [c[0] for c in a.completions(3, len("  a[0] <-> a[1] : "))] == ["mine"]


def test_strings_and_comments_are_not_read_as_syntax(tmp_path):
    text = ('use "nvidia/links.topo"\ngroup G { # a { brace in a comment\n  h : X "n{x}"\n'
            "  h <-> h : ")
    a = Analysis(text, str(tmp_path / "t.topo"))
    assert "nvlink4" in {c[0] for c in a.completions(3, len("  h <-> h : "))}
    from topoc.lsp_complete import TOP as top, context
    assert set(top) == TOP
    ctx = context(text)
    assert [f.kind for f in ctx.frames] == ["group"] and ctx.frames[0].members == {"h": "X"}
    assert a.completions(1, len("group G { # a ")) == []          # in a comment: nothing


def test_arguments_over_several_lines(tmp_path):
    text = ("group N(a: int = 1, b: int = 2) {\n  x : X\n}\ngroup P {\n  y : N(a = 1,\n"
            "         ")
    a = Analysis(text, str(tmp_path / "t.topo"))
    assert [c[0] for c in a.completions(5, 9)] == ["b"]
    closed = text + "b = 2)\n  "
    after = Analysis(closed, str(tmp_path / "t.topo")).completions(6, 2)
    assert {"y", "let"} <= {c[0] for c in after}
