"""The parser builds spans, refuses bad input with positions, and caches its grammar."""

from __future__ import annotations

import pytest

from topoc.compiler.lang import syntax as s
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.lang.parse import parse
from topoc.grammar import parser

SKETCH = '''
link nvlink5 : nvlink { bandwidth = 50 GB/s   latency = 0.5 us }
device B200 : gpu { hbm = 186 GB  hbm_bandwidth = 8 TB/s  ports.nvlink = 18 }
group Pod(racks: int = 4) {
  rack[racks] : B200
  let half = racks / 2
  rack[i] <-> rack[(i + 1) % racks] : nvlink5 x 2
  rack[0..1] -> rack[half] : nvlink5
}
system cluster : Pod(racks = 8)
parallel train on cluster { tp = 4 dp = auto order = tp, dp traffic { tp allreduce 64 MiB x 160 } }
'''


def test_parser_is_built_once():
    assert parser() is parser()


def test_sketch_parses_with_spans():
    mod = parse(SKETCH, "sketch.topo")
    kinds = [type(i).__name__ for i in mod.items]
    assert kinds == ["LinkDecl", "DeviceDecl", "GroupDecl", "SystemDecl", "ParallelDecl"]
    link = mod.items[0]
    assert link.span.line == 2 and link.span.col == 1
    bw = link.attrs[0].value
    assert isinstance(bw, s.QuantityValue) and bw.quantity.value == 50 * 10**9
    group = mod.items[2]
    conn = [st for st in group.body if isinstance(st, s.Connection)]
    assert conn[0].lanes == s.Num(2, None) and not conn[0].directed
    assert conn[1].directed and isinstance(conn[1].left.segments[0].selector, s.Range)
    par = mod.items[4]
    assert [f.collective for f in par.flows] == ["allreduce"]
    assert par.flows[0].size.quantity.value == 64 * 2**20


def test_unit_names_do_not_eat_attribute_names():
    # 'bandwidth' starts with the unit 'b', 'sm' with 's': both stay names.
    mod = parse("link l : nvlink { latency = 1 us bandwidth = 2 GB/s }\n"
                "device g : gpu { hbm = 1 GB sm = 90 }")
    assert [a.key for a in mod.items[0].attrs] == ["latency", "bandwidth"]
    assert [a.key for a in mod.items[1].attrs] == ["hbm", "sm"]


@pytest.mark.parametrize("text,code,line,col", [
    ("group G {\n  gpu[8] : \n}", "E100", 3, 1),
    ("group G { gpu[8] : H100 @ }", "E101", 1, 25),
    ("group G {", "E103", 1, 9),
    ("system s :", "E102", 1, 11),
    ("group G { gpu[1.5] : H100 }", "E205", 1, 15),
])
def test_syntax_errors_have_positions(text, code, line, col):
    with pytest.raises(CompileError) as info:
        parse(text, "x.topo")
    d = info.value.diagnostics[0]
    assert (d.code, d.span.line, d.span.col) == (code, line, col)
    assert d.render().startswith(f"x.topo:{line}:{col}: {code} error: ")
    assert "^" in d.render()


def test_comments_and_strings():
    mod = parse('# hello\ndevice g : gpu { vendor = "a \\"quoted\\" name" }  # trailing\n')
    assert mod.items[0].attrs[0].value.value == 'a "quoted" name'


@pytest.mark.parametrize("text, word", [
    ("device X : gpu { hbm = 1 EB }", "EB"),
    ("device X : gpu { hbm = 1.5 EiB\n  sm = 90 }", "EiB"),
    ("link l : pcie { bandwidth = 10 GBps latency = 1 us }", "GBps"),
    ("link l : pcie { bandwidth = 1 EB/s }", "EB/s"),
    ("link l : pcie { bandwidth = 1 GB/s  latency = 5 sec }", "sec"),
    ("device X : gpu { hbm = 1 EB", "EB"),
])
def test_an_unknown_unit_is_a_unit_error_naming_the_units(text, word):
    """'1 EB' said 'unexpected }' (the lexer read EB as a name); now E206 at the word, with
    the units the language accepts (issue 40)."""
    with pytest.raises(CompileError) as info:
        parse(text)
    [d] = info.value.diagnostics
    assert d.code == "E206" and f"unknown unit '{word}'" in d.message
    assert "KiB" in d.message and "GB/s" in d.message and "ns us" in d.message
    first = text.splitlines()[0]
    assert (d.span.line, d.span.col, d.span.end_col) == \
        (1, first.index(f" {word}") + 2, first.index(f" {word}") + 2 + len(word))


def test_a_number_then_the_next_key_is_no_unit_error():
    with pytest.raises(CompileError) as info:
        parse("parallel p on s { tp = 8 dp = 2 pp }")
    assert [d.code for d in info.value.diagnostics] == ["E100"]
