"""``require``: a group states the limits of its parameters; outside them the error is the
condition, its values and the reason at the require's line, with the instantiation as a note,
and nothing of the group's body cascades after it (E223)."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.lang.fmt import fmt

from .test_elaborate import BASE, compile_text

POD = '''
group Pod(n: int = 2) {
  require n <= 4, "its switch has 4 ports"
  require 8 % n == 0
  let per = 8 / (4 - n)
  g[n] : G
  s : S
  g[*] <-> s : nv x per
}
'''


def errors(text: str) -> list:
    with pytest.raises(CompileError) as info:
        compile_text(text)
    return info.value.diagnostics


def test_a_met_requirement_changes_nothing():
    assert len(compile_text(POD + "system p : Pod(n = 2)").links) == 2


def test_an_unmet_requirement_is_one_error_with_values_reason_and_the_call():
    text = POD + "system p : Pod(n = 5)"
    lines = (BASE + text).splitlines()
    (d,) = errors(text)
    assert d.code == "E223"
    assert d.message == ("requirement not met: n <= 4 (5 <= 4 is false): its switch has 4 "
                         "ports")
    # at the require, not at the division by zero further down
    assert lines[d.span.line - 1].strip().startswith("require n <= 4")
    (note,) = d.notes
    assert note.message == "'Pod' instantiated here"
    assert lines[note.span.line - 1].startswith("system p : Pod")


def test_every_comparison_and_a_requirement_without_reason():
    (d,) = errors(POD + "system p : Pod(n = 3)")
    assert d.message == "requirement not met: 8 % n == 0 (2 == 0 is false)"
    for cond, ok in (("1 < 2", True), ("2 < 2", False), ("3 >= 3", True), ("2 > 3", False),
                     ("1 != 1", False), ("-1 <= 0 - 1", True)):
        text = f"group Q {{ require {cond}\n  g : G }}\nsystem q : Q"
        if ok:
            assert len(compile_text(text).devices) == 1
        else:
            assert [e.code for e in errors(text)] == ["E223"]


def test_fmt_keeps_requirements_canonical():
    text = 'group P(n: int = 1) {\n  require n>=1 , "why"\n  g[n] : G\n}\n'
    once = fmt(text)
    assert "  require n >= 1, \"why\"\n" in once and fmt(once) == once


@pytest.mark.parametrize("path, define, limit", [
    ("library/nvidia/h100_cluster.topo", "nodes", 256),
    ("library/nvidia/nvl72_cluster.topo", "racks", 64),
    ("library/nvidia/h100_superpod.topo", "nodes", 8192),
    ("library/nvidia/nvl72_superpod.topo", "racks", 1024),
    ("library/nvidia/nvl72_fourtier.topo", "racks", 8192),
    ("library/nvidia/h100_fourtier.topo", "nodes", 32768),
    ("library/nvidia/h100_roce_cluster.topo", "nodes", 64),
])
def test_bundled_clusters_state_their_reach(path, define, limit):
    with pytest.raises(CompileError) as info:
        topoc.load(path, {define: limit + 1})
    assert [d.code for d in info.value.diagnostics] == ["E223"]
    assert f"{define} <= {limit}" in info.value.diagnostics[0].message


def test_the_language_server_shows_the_requirement_at_its_line(tmp_path):
    from topoc.lsp import Analysis
    text = ('use "nvidia/devices.topo"\ngroup Pod(n: int = 2) {\n'
            '  require n <= 4, "four ports"\n  gpu[n] : H100\n}\nsystem s : Pod(n = 5)\n')
    path = tmp_path / "pod.topo"
    path.write_text(text)
    (found,) = Analysis(text, str(path)).diagnostics
    assert found.code == "E223" and found.start == (2, 2) and "instantiated here" in found.message
