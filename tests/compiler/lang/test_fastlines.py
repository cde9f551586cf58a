"""The fast path of parse and fmt (``fastlines``) gives exactly Lark's answer: the same syntax
nodes with the same spans, the same diagnostics, the same formatted text, on every library
file, on mutated files and on the cases where a line read alone would mean something else."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given

from topoc import library
from topoc.compiler.base.diagnostics import CompileError, Span
from topoc.compiler.lang import fastlines
from topoc.compiler.lang.fmt import fmt
from topoc.compiler.lang.parse import parse

from ...strategies import grammar_programs, mutated_library_files


def _shape(node):
    """Every field of a syntax tree, spans included (syntax equality ignores spans)."""
    if isinstance(node, Span):
        return ("span", node.source.path, node.line, node.col, node.end_line, node.end_col)
    if attrs.has(type(node)):
        return (type(node).__name__,
                *(_shape(getattr(node, f.name)) for f in attrs.fields(type(node))))
    if isinstance(node, tuple):
        return tuple(_shape(n) for n in node)
    return node


def _answer(run, text: str):
    try:
        return "ok", run(text)
    except CompileError as exc:
        return "error", [d.render() for d in exc.diagnostics]
    except RecursionError:
        return "recursion", None


def _both(monkeypatch, text: str):
    """(fast, Lark only) answers of parse and of fmt."""
    fast = (_answer(lambda t: _shape(parse(t, "f.topo")), text), _answer(fmt, text))
    with monkeypatch.context() as m:
        m.setattr(fastlines, "split", lambda _text: None)
        slow = (_answer(lambda t: _shape(parse(t, "f.topo")), text), _answer(fmt, text))
    return fast, slow


@pytest.mark.parametrize("path", library.files(), ids=lambda p: p.name)
def test_every_library_file_parses_and_formats_as_with_lark(path, monkeypatch):
    text = path.read_text()
    fast, slow = _both(monkeypatch, text)
    assert fast == slow and fast[0][0] == "ok"


def test_the_library_exercises_the_fast_path():
    """Most library statements use expressions (``gpu[i]``) and stay with Lark; the plain
    ones are read without it, and their skeletons fit."""
    from topoc.compiler.base.diagnostics import Source
    from topoc.compiler.lang.parse import syntax_tree
    read = 0
    for p in library.files():
        text = p.read_text()
        _, found = syntax_tree(text, Source(str(p), text))
        read += len(found.lines) if found is not None else 0
    assert read > 100


HEAD = "link l : nvlink { bandwidth = 1 GB/s }\ndevice X : gpu { }\n"
CASES = [
    # ordinary bodies: connections with stars, ranges, lanes, one-way, comments, CRLF
    "group G {\n  a[4] : X\n  a[0] <-> a[1] : l x 2  # c\n  a[*] -> a[0..3] : l\n}\n",
    "group G {\r\n  a[4] : X\r\n  a[0] <-> a[1] : l\r\n}\r\nsystem s : G\r\n",
    "group G(n: int = 2) {  # head\n  a[4] : X\n  a[0].b <-> a[1] : l\n}\n",
    # a line after a recognised one that Lark reads as that line's continuation or lanes
    "group G {\n  a[4] : X\n  a[0] <-> a[1] : l\n  x 4\n}\n",
    "group G {\n  a[4] : X\n  a[0] <-> a[1] : l\n  x[1] : X\n}\n",
    "group G {\n  a[4] : X\n  a[0] <-> a[1] : l x 2\n  * 3\n}\n",
    "group G {\n  a[4] : X\n  b : X\n  (n = 1)\n}\n",
    'group G {\n  a[4] : X\n  b : X\n  "b-{a}"\n}\n',
    # a statement of the skeleton that would span a recognised line
    "group G {\n  a[4] : X\n  a[0] <-> a[1] :\n  a[2] <-> a[3] : l\n  l\n}\n",
    "group G {\n  a[4] : X\n  a[0] <->\n  a[2] <-> a[3] : l\n  a[1] : l\n}\n",
    # recognised lines where no statement belongs
    "a[0] <-> a[1] : l\ngroup G {\n  a[4] : X\n}\n",
    "link m : nvlink {\n  a[0] <-> a[1] : l\n}\n",
    "group G(\n  a[0] <-> a[1] : l\n) {\n  a[4] : X\n}\n",
    "group G\n  a[0] <-> a[1] : l\n{\n  a[4] : X\n}\n",
    "group G { a[4] : X\n  a[0] <-> a[1] : l }\n",
    "group G {\n  a[4] : X\n  a[0] <-> a[1] : l\n",
    "parallel p on s {\n  a[0] <-> a[1] : l\n}\n",
    "group G {\n  a[4] : X\n}\n  a[0] <-> a[1] : l\n",
    # keywords, big numbers, odd spellings stay with Lark
    "group G {\n  let[4] : X\n  host[2] : X\n  a[4] : X\n  a[0] <-> a[1] : x\n}\n",
    "group G {\n  a[4] : X\n  a[007] <-> a[1_0] : l\n  a[99999999999] <-> a[1] : l\n}\n",
    "group G {\n  a[4] : X\n  a[0]  <->  a[1] : l\n  a[0]<->a[1]:l\n}\n",
    "group G {\n  a[4] : X\n  a[0] <-> a[1] : l # \"{\n}\n",
    'group G {  # "\n  a[4] : X\n  a[0] <-> a[1] : l\n}\n',
]


@pytest.mark.parametrize("body", CASES)
def test_lines_read_alone_would_mean_something_else(body, monkeypatch):
    text = HEAD + body
    fast, slow = _both(monkeypatch, text)
    assert fast == slow


@given(mutated_library_files())
def test_mutated_files_parse_and_format_as_with_lark(case):
    import pytest as _pytest
    with _pytest.MonkeyPatch.context() as m:
        fast, slow = _both(m, case[1])
    assert fast == slow


@given(grammar_programs())
def test_programs_from_the_grammar_parse_as_with_lark(text):
    import pytest as _pytest
    with _pytest.MonkeyPatch.context() as m:
        fast, slow = _both(m, text)
    assert fast == slow


def test_a_large_file_is_read_without_lark_line_by_line():
    """The lines of a large machine-written body are all read by the fast path (the speed
    itself is in benchmarks/robust.py)."""
    body = "".join(f"  a[{i % 97}] <-> a[{(i * 7 + 1) % 97}] : l\n" for i in range(2_000)
                   if i % 97 != (i * 7 + 1) % 97)
    text = HEAD + "group G {\n  a[97] : X\n" + body + "}\n"
    found = fastlines.split(text)
    assert found is not None and len(found.lines) == body.count("\n") + 1
    assert len(parse(text).items[2].body) == len(found.lines)


_LINES = ["  a[0] <-> a[1] : l", "  a[1].b[2] -> a[*] : l x 3", "  a[0..2] <-> a[3] : l  # c",
          "  b : X", "  a[4] : X", "c[2] : X", "x 4", "  x[1] : X", "  * 3", "  + 1", "  (n = 1)",
          '  "p-{a}"', "}", "group H {", "group K(n: int = 1) {", "group L(", ") {", "  a[0] <->",
          "  a[0] <-> a[1] :", "  l", "# c", "", "  let k = 2", "  host h[2] : X", "{",
          "parallel p on s {", "  tp = 2", "link m : nvlink {", "  bandwidth = 1 GB/s",
          "system s : H", "  a[k] <-> a[0] : l", "  a[0] <-> a[1] : l x", "  a[0] <-> a[1] : l\r"]


_PLAIN = [line for line in _LINES if line.startswith(("  a[0", "  a[1]", "  b :")) or
          line in ("# c", "", "  a[k] <-> a[0] : l")]


def _line_soups():
    """Mostly lines that parse, with up to three of any kind put among them."""
    from hypothesis import strategies as st

    @st.composite
    def soup(draw):
        lines = draw(st.lists(st.sampled_from(_PLAIN), min_size=1, max_size=30))
        for _ in range(draw(st.integers(0, 3))):
            lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(_LINES)))
        return HEAD + "group G {\n  a[4] : X\n" + "\n".join(lines) + "\n}\nsystem s : G\n"
    return soup()


@given(_line_soups())
def test_line_soups_parse_and_format_as_with_lark(text):
    """Recognised lines mixed with every kind of line that could change what they mean."""
    import pytest as _pytest
    with _pytest.MonkeyPatch.context() as m:
        fast, slow = _both(m, text)
    assert fast == slow
