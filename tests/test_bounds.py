"""Bounds checked before the work (issue 44): a host pattern's format width, a run of blank
lines through the dump detectors and the nvidia-smi legend (each quadratic before), and a -p
ibnetdiscover line with many quotes and dashes. The inputs are large enough that the quadratic
forms ran for minutes; ``deadline`` catches a hang, it is not a speed target (benchmarks/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from topoc.cli import main
from topoc.compiler.base.limits import LIMITS
from topoc.compiler.ir.hosts import HostnameError, pattern_fields
from topoc.importers import ImportFailure, from_smi
from topoc.importers.detect import kind_of
from topoc.importers.ibnetdiscover import parse as parse_ib
from topoc.lsp import Analysis

from .conftest import deadline

FIX = Path(__file__).resolve().parent / "fixtures"
WIDE = """device C : cpu { }
group N { cpu : C }
group Cl { host node[2] : N "n{node:02900000000}" }
system c : Cl
"""


@pytest.mark.parametrize("pattern", ["n{node:02900000000}", "n{node:0254}", "n{node:{host}}",
                                     "x" * 250 + "{node}", "n{node!r}"])
def test_a_pattern_that_could_pass_the_hostname_limit_is_refused_first(pattern):
    with pytest.raises(HostnameError):
        pattern_fields(pattern)


def test_a_wide_pattern_is_a_diagnostic_in_compile_and_the_language_server(tmp_path, capsys):
    path = tmp_path / "wide.topo"
    path.write_text(WIDE)
    with deadline(20):
        assert main(["compile", str(path)]) == 1
    assert f"E217 error: hostname pattern 'n{{node:02900000000}}' can make names longer than " \
           f"{LIMITS.hostname}" in capsys.readouterr().err
    with deadline(20):
        found = Analysis(WIDE, str(path)).diagnostics
    assert [f.code for f in found] == ["E217"]


def test_blank_lines_cost_linear_time_in_detection_and_the_legend():
    blank = "\n" * 60_000
    with deadline(20):
        assert kind_of(blank + "x") == "topo"
        assert kind_of(blank + "Switch\t36 \"S-1\"") == "ibnetdiscover"
    text = (FIX / "nccl" / "hgx_h200_topo_m.txt").read_text()
    with deadline(20):
        topo, _ = from_smi(text + blank + " " * 60_000 + "x")
    assert "mlx5_0" in topo


def test_a_p_format_line_full_of_quotes_and_dashes_is_read_in_linear_time():
    line = ("CA     0  1 0x0000000000100003 4x NDR - SW     0  1 0x0000000000200001 ( '"
            + "' - '" * 700 + "a mlx5_0' - 'MF0;leaf1:QM9700/U1' )")
    port = "[1](1)\t\"S-2\"[1]\t\t# " + "1" * 4000 + "x"
    with deadline(20):
        nodes, cables, _ = parse_ib("\n".join([line] * 200))
        with pytest.raises(ImportFailure, match="no cabled port"):
            parse_ib("Switch\t36 \"S-2\"\t# \"s\"\n" + "\n".join([port] * 300))
    assert nodes["200001"] == ("SW", "MF0;leaf1:QM9700/U1") and len(cables) == 1
