"""The language features of issue 29: hosts and hostname patterns, device inheritance,
device-model group parameters, and indices bound only inside expressions."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.ir.hosts import HostnameError, hosts, read_mapping
from topoc.compiler.lang.fmt import fmt as format_source

HEAD = 'use "nvidia/links.topo"\nuse "nvidia/devices.topo"\n'


def codes(text: str) -> list[str]:
    with pytest.raises(CompileError) as exc:
        topoc.loads(HEAD + text)
    return [d.code for d in exc.value.diagnostics]


def test_inheritance_overrides_and_keeps_the_rest():
    s = topoc.loads(HEAD + "device X : H200 { tflops_bf16 = 1 }\n"
                    "group G { a : H200  b : X }\nsystem s : G\n")
    h200, x = s.device("s.a").model, s.device("s.b").model
    assert h200.kind == "gpu" and h200.attr("hbm") == 143771 * 2**20
    assert h200.attr("hbm_bandwidth") == 4.8e12
    assert h200.attr("tflops_bf16") == 989 and h200.port_budget("nvlink") == 18   # H100's
    assert x.attr("tflops_bf16") == 1 and x.attr("hbm") == 143771 * 2**20                # two levels


def test_inheritance_order_free_and_cycles_and_schema():
    s = topoc.loads(HEAD + "device Y : Z { }\ndevice Z : CX7 { rate = 200 Gb/s }\n"
                    "group G { n : Y }\nsystem s : G\n")
    assert s.device("s.n").model.attr("rate") == 200e9 / 8
    assert codes("device A : B { }\ndevice B : A { }\ngroup G { a : A }\nsystem s : G\n") \
        == ["E141"]
    assert codes("device A : CX7 { hbm = 1 GB }\ngroup G { a : A }\nsystem s : G\n") == ["E202"]
    assert codes("device A : Nope { }\ngroup G { a : A }\nsystem s : G\n")[0] == "E204"


MODEL_GROUP = "group Box(G: gpu = H100, n: int = 2) { gpu[n] : G }\n"


def test_model_parameters():
    s = topoc.loads(HEAD + MODEL_GROUP + "system s : Box\n")
    assert {g.model.name for g in s.gpus} == {"H100"}
    s = topoc.loads(HEAD + MODEL_GROUP + "system s : Box(G = H200, n = 3)\n")
    assert [g.model.name for g in s.gpus] == ["H200"] * 3
    outer = "group Pod(M: gpu = B200) { box[2] : Box(G = M) }\nsystem s : Pod\n"
    s = topoc.loads(HEAD + MODEL_GROUP + outer)
    assert {g.model.name for g in s.gpus} == {"B200"} and len(s.gpus) == 4
    assert codes(MODEL_GROUP + "system s : Box(G = CX7)\n") == ["E205"]
    assert codes(MODEL_GROUP + "system s : Box(G = 3)\n") == ["E205"]
    assert codes(MODEL_GROUP + "system s : Box(n = H100)\n") == ["E205"]
    assert codes(MODEL_GROUP + "system s : Box(G = H1000)\n") == ["E110"]
    assert codes("group B(G: gpux = H100) { gpu : G }\nsystem s : B\n") == ["E205"]
    # -D overrides integers only
    with pytest.raises(CompileError) as exc:
        topoc.loads(HEAD + MODEL_GROUP + "system s : Box\n", defines={"G": 1})
    assert exc.value.diagnostics[0].code == "E205"


def test_index_expressions_on_both_sides():
    s = topoc.loads(HEAD + "group G { gpu[8] : H100_NVL\n"
                    "  gpu[2 * p] <-> gpu[2 * p + 1] : nvlink4 x 12 }\nsystem s : G\n")
    pairs = sorted((ln.src[-1], ln.dst[-1], ln.lanes) for ln in s.links)
    assert pairs == [("0", "1", 12), ("2", "3", 12), ("4", "5", 12), ("6", "7", 12)]
    # a ring written with one free index: (i + 1) % n stays in range, i takes 0..n-1
    s = topoc.loads(HEAD + "group G { gpu[4] : H100\n  gpu[k] <-> gpu[(k + 1) % 4] : nvlink4 }\n"
                    "system s : G\n")
    assert len(s.links) == 4
    assert codes("group G { gpu[4] : H100\n  gpu[q + 4] <-> gpu[0] : nvlink4 }\nsystem s : G\n") \
        == ["E213"]
    # explicit selectors out of range stay errors
    assert codes("group G { gpu[4] : H100\n  gpu[i] <-> gpu[i + 1] : nvlink4 }\nsystem s : G\n") \
        == ["E210"]


NODE = "group N { cpu : Grace  gpu[2] : B200_GB200  cpu <-> gpu[*] : c2c x 5 }\n"


def test_host_marker_and_patterns():
    s = topoc.loads(HEAD + NODE + "group R { host tray[3] : N \"gb-{rack:02}-{tray:02}\" }\n"
                    "group C { rack[2] : R }\nsystem c : C\n")
    hs = hosts(s)
    assert [h.name for h in hs] == ["gb-00-00", "gb-00-01", "gb-00-02", "gb-01-00",
                                    "gb-01-01", "gb-01-02"]
    assert hs[4].id == "c.rack1.tray1" and len(hs[4].devices) == 3
    assert [h.name for h in hosts(s, "n{host:03}")][-1] == "n005"
    assert hosts(s, mapping={"rack1-tray2": "special"})[-1].name == "special"
    with pytest.raises(HostnameError):
        hosts(s, "n{node}")
    with pytest.raises(HostnameError):
        hosts(s, "same")


def test_hosts_inferred_without_marker():
    tray = "group T { sc[2] : N  nic[2] : CX7  nic[i] <-> sc[i].cpu : pcie5 }\n"
    s = topoc.loads(HEAD + NODE + tray + "group R { tray[2] : T }\nsystem r : R\n")
    hs = hosts(s)   # each tray's two CPU islands are one host, named after the tray
    assert [(h.id, h.name, len(h.devices)) for h in hs] == [("r.tray0", "tray0", 8),
                                                           ("r.tray1", "tray1", 8)]
    dgx = topoc.load("library/nvidia/dgx_h100.topo")
    assert [(h.id, h.name, len(h.devices)) for h in hosts(dgx)] == [("dgx", "dgx", 30)]


def test_host_errors():
    assert codes(NODE + "group C { node[2] : N \"n{node}\" }\nsystem s : C\n") == ["E104"]
    assert codes("group N { host cpu : Grace }\ngroup C { host node[2] : N }\nsystem s : C\n") \
        == ["E216"]
    assert codes(NODE + "group C { host node[2] : N \"n{rack}\" }\nsystem s : C\n") == ["E217"]
    assert codes(NODE + "group C { host node[2] : N \"fixed\" }\nsystem s : C\n") == ["E217"]


def test_mapping_file_and_fmt():
    assert read_mapping("# c\nnode0 dgx-a\nc.node1, dgx-b\n") == {"node0": "dgx-a",
                                                                   "c.node1": "dgx-b"}
    with pytest.raises(HostnameError):
        read_mapping("just-one-field\n")
    src = HEAD + NODE + 'group C {\n  host   node[2]:N   "n-{node}"\n}\nsystem s : C\n'
    out = format_source(src)
    assert '  host node[2] : N "n-{node}"' in out
    assert format_source(out) == out
