"""Rendered diagnostics hold no control character from the input (issue 44: raw ESC/BEL/CR in
a .topo were echoed, so a file could retitle or clear the terminal of whoever lints it)."""

from __future__ import annotations

import re

from topoc.cli import main
from topoc.compiler.base.diagnostics import Source, Span, error

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\r\u202e\x00"


def test_message_path_and_excerpt_are_escaped():
    src = Source(f"a{HOSTILE}.topo", f"device X{HOSTILE} : gpu {{ }}\n")
    col = src.text.index(" :") + 3
    d = error("E100", f"bad '{HOSTILE}'", Span(src, 1, 8, 1, col))
    out = d.render()
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202e]", out)
    assert "\\x1b]0;pwned\\x07" in out and "\\u202e" in out
    line, carets = out.splitlines()[1:3]
    # the carets still sit under "X ... :" as displayed, escapes included
    start = carets.index("^")
    assert line[start] == "X" and line[start + carets.count("^") - 1] == ":"


def test_lint_of_a_hostile_file_prints_no_control_character(tmp_path, capsys):
    path = tmp_path / "evil.topo"
    path.write_text(f'device X : gpu {{ }}\nsystem s : Nope{HOSTILE}\n'.replace("\x00", ""))
    assert main(["lint", str(path)]) == 1
    captured = capsys.readouterr()
    err = captured.out + captured.err
    assert "E1" in err and not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202e]", err)


def test_the_closest_name_is_first_the_same_name_in_another_case():
    from topoc.compiler.base.diagnostics import closest
    # difflib alone scores 'h100' as close to 'V100' as to 'H100', and picked 'V100'
    assert closest("h100", ["V100", "H100", "A100"]) == "H100"
    assert closest("nvswitch3", ["NVSwitch3", "NVSwitch5"]) == "NVSwitch3"
    assert closest("nvlnk4", ["nvlink4", "nvlink5"]) == "nvlink4"      # misspellings as before


def test_a_model_in_the_wrong_case_is_offered_in_the_right_one(tmp_path, capsys):
    f = tmp_path / "node.topo"
    f.write_text('use "nvidia/devices.topo"\ngroup N {\n  gpu[8] : h100\n}\nsystem n : N\n')
    assert main(["compile", str(f)]) == 1
    err = capsys.readouterr().err
    assert "unknown device model or group 'h100'; did you mean 'H100'?" in err


def test_a_two_letter_name_one_letter_off_is_offered_when_it_is_the_only_one():
    from topoc.compiler.base.diagnostics import closest
    kinds = ["tp", "cp", "ep", "dp", "pp", "edp", "dpcp", "world"]
    assert closest("dq", kinds) == "dp"                    # difflib alone: 0.5, below its cutoff
    assert closest("xp", kinds) is None                    # tp, cp, ep, dp, pp: no one answer
    assert closest("zz", kinds) is None


def test_an_unknown_group_kind_on_the_command_line_is_answered_with_the_closest(capsys):
    from tests.conftest import library_file
    argv = ["cost", str(library_file("nvl72_cluster.topo")), "-D", "racks=2", "--parallel",
            "train", "--group", "dq:3"]
    assert main(argv) == 2
    assert "unknown group kind 'dq'; did you mean 'dp'?" in capsys.readouterr().err
