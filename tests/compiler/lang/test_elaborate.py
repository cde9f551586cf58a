"""Selectors, named indices, parameters and templates elaborate to the right devices and links."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.base.diagnostics import CompileError

BASE = '''
link nv : nvlink { bandwidth = 50 GB/s }
link pc : pcie { bandwidth = 63 GB/s }
device G : gpu { hbm = 80 GB ports.nvlink = 18 }
device S : switch { ports.nvlink = 72 }
device P : pcie_switch { }
device C : cpu { }
'''


def compile_text(body: str, **defines):
    return topoc.loads(BASE + body, defines or None)


def pairs(system, cls=None):
    return sorted((link.src, link.dst, link.lanes) for link in system.links
                  if cls is None or link.cls == cls)


def test_stars_enumerate_independently():
    sys_ = compile_text("group N { g[3] : G  s[2] : S  g[*] <-> s[*] : nv }\nsystem n : N")
    assert len(sys_.links) == 6


def test_named_index_zips_both_sides():
    sys_ = compile_text("group B { g[8] : G  sw[4] : P  c[2] : C\n"
                        "  g[i] <-> sw[i / 2] : pc\n  sw[i] <-> c[i / 2] : pc }\nsystem b : B")
    got = pairs(sys_)
    assert ("b.g5", "b.sw2", 1) in got and ("b.sw3", "b.c1", 1) in got
    assert len(got) == 12


def test_index_arithmetic_and_nested_paths():
    sys_ = compile_text('''
group T { g[2] : G  n[2] : P }
group R { t[3] : T  leaf[4] : S
  t[*].n[k] <-> leaf[2 * k + 1] : pc }
system r : R''')
    got = pairs(sys_)
    assert ("r.t2.n1", "r.leaf3", 1) in got and ("r.t0.n0", "r.leaf1", 1) in got
    assert len(got) == 6


def test_ranges_and_integer_selectors_and_lanes():
    sys_ = compile_text("group N { g[4] : G  s : S\n  g[1..2] <-> s : nv x 3\n"
                        "  g[0] -> g[3] : nv }\nsystem n : N")
    got = pairs(sys_)
    assert got == [("n.g0", "n.g3", 1), ("n.g1", "n.s", 3), ("n.g2", "n.s", 3)]
    directed = [link for link in sys_.links if not link.duplex]
    assert len(directed) == 1 and directed[0].id == "n.g0->n.g3:nv"


def test_parameters_defaults_lets_and_overrides():
    text = "group Par(n: int = 2, m: int = n * 2) { let k = m + 1\n  g[k] : G }\nsystem p : Par(n = 3)"
    assert len(compile_text(text).devices) == 7
    assert len(compile_text(text, n=1).devices) == 3
    assert dict(compile_text(text).params) == {"n": 3, "m": 6}


def test_rewiring_the_same_pair_adds_lanes():
    sys_ = compile_text("group N { a : G  b : G\n a <-> b : nv x 2\n b <-> a : nv }\nsystem n : N")
    assert pairs(sys_) == [("n.a", "n.b", 3)]


def test_templates_are_shared_across_instances():
    # 1,000 identical racks elaborate one template and instantiate it 1,000 times.
    sys_ = compile_text('''
group Rack { g[8] : G  s[2] : S  g[*] <-> s[*] : nv x 9 }
group Row(racks: int = 1000) { rack[racks] : Rack }
system row : Row''')
    assert len(sys_.devices) == 10_000 and len(sys_.links) == 16_000
    assert sys_.devices[0].id == "row.rack0.g0" and sys_.devices[-1].id == "row.rack999.s1"


def test_declaration_order_gives_world_ranks():
    sys_ = compile_text("group T { g[2] : G }\ngroup R { t[2] : T  x : G }\nsystem r : R")
    assert [g.id for g in sys_.gpus] == ["r.t0.g0", "r.t0.g1", "r.t1.g0", "r.t1.g1", "r.x"]


def test_several_errors_reported_in_one_run():
    with pytest.raises(CompileError) as info:
        compile_text("group N { a : Q  b : R  c : G  c <-> c2 : nv }\nsystem n : N")
    codes = [d.code for d in info.value.diagnostics]
    assert codes == ["E110", "E110", "E112"]


def test_zipped_index_out_of_range_names_the_binding():
    with pytest.raises(CompileError) as info:
        compile_text("group N { g[4] : G  s[2] : S  g[i] <-> s[i - 1] : nv }\nsystem n : N")
    d = info.value.diagnostics[0]
    assert d.code == "E210" and "(when i=0)" in d.message and "s[-1]" in d.message


def test_a_failing_program_does_not_expand_a_ten_million_link_connection():
    """Issue 25: a mutated GB300 rack (fuzz campaign) whose tray already failed (E210) went on to
    enumerate 16,000 GPUs x 648 switch chips = 10.4 M links before reporting it (about 20 s);
    once an error is recorded a large connection is not expanded. The deadline catches a
    hang, not a slow run."""
    from tests.conftest import deadline, library_file
    path = library_file("gb300_nvl72.topo")
    text = path.read_text()
    for old, new in (("gpu[2] : B300_GB300", "gpu[1_000] : B300_GB300"),
                     ("nic[4] : CX8", "nic[18] : CX8"),
                     ("sc[i / 2].gpu[i % 2]", "sc[i / 3].gpu[i % 99999999999999]"),
                     ("chip[2] : NVSwitch5", "chip[72] : NVSwitch5"),
                     ("host tray[18] : GB300Tray", "host tray[8] : GB300Tray")):
        assert old in text, old
        text = text.replace(old, new)
    with deadline(60):
        with pytest.raises(CompileError) as exc:
            topoc.compile(text, path)
    assert [d.code for d in exc.value.diagnostics] == ["E210"]
    assert exc.value.diagnostics[0].span.line == text[:text.index("sc[i / 3]")].count("\n") + 1


def test_a_large_connection_is_still_expanded_when_nothing_failed():
    """The shortcut above applies only after an error: 200 x 100 = 20,000 links compile."""
    system = compile_text('''
group Big { c[200] : C p[100] : P  c[*] <-> p[*] : pc }
system big : Big
''')
    assert len(system.links) == 20_000


def _over_wired(chips: int) -> str:
    # A tray whose own links give each GPU 4 c2c lanes against a budget of 2, under a rack that
    # wires 100 trays x 100 GPUs to ``chips`` switch chips.
    return BASE + f'''
link c2c : nvlink_c2c {{ bandwidth = 450 GB/s }}
device W : gpu {{ hbm = 80 GB ports.nvlink_c2c = 2 ports.nvlink = 100000 }}
group Tray {{ cpu : C  gpu[100] : W  gpu[*] <-> cpu : c2c x 4 }}
group Rack {{ tray[100] : Tray  sw[{chips}] : S  tray[*].gpu[*] <-> sw[*] : nv }}
system rack : Rack
'''


def test_a_group_over_its_port_budget_does_not_expand_the_connections_above_it():
    """Issue 25: fuzzed GB300 racks whose Superchip group already broke a port budget built
    10 M links (24-55 s) before verify reported E220. The group's own links make E220 certain,
    so connections above it larger than 10,000 links are not expanded; E220 is still reported
    at the group's line, and a smaller connection above it is still built."""
    from topoc.compiler.lang.pipeline import front_end, lower
    from topoc.compiler.lang.verify import verify
    big = lower(front_end(_over_wired(chips=2)))           # 100 x 100 x 2 = 20,000 links
    assert len(big.links) == 100 * 100                      # only the trays' own links
    assert {d.code for d in verify(big)} == {"E220"}
    small = lower(front_end(_over_wired(chips=1)))         # 10,000 links: within the bound
    assert len(small.links) == 100 * 100 * 2
    with pytest.raises(CompileError) as exc:
        topoc.loads(_over_wired(chips=2))
    assert [d.code for d in exc.value.diagnostics] == ["E220"]
    assert "has 4 nvlink_c2c lanes" in exc.value.diagnostics[0].message
