"""compiler.lang.emit: data written into .topo text reads back as exactly that data, never as
code (issue 44: a quote in a hostname added hosts, a newline in a file name a declaration)."""

from __future__ import annotations

import re

from hypothesis import given, strategies as st

from topoc.compiler.ir.hosts import format_hostname
from topoc.compiler.lang import emit, syntax as s
from topoc.compiler.lang.fastlines import KEYWORDS
from topoc.compiler.lang.parse import parse

#: Characters that ended strings, comments or lines before: quotes, backslashes, newlines, NUL,
#: terminal controls, Unicode line separators, bidi overrides, braces of host patterns.
HOSTILE = '"\\\n\r\t\x00\x07\x1b\x0b\x0c\x1c\x85\u2028\u2029\u202e{}#\'x0uU'
hostile = st.text(st.one_of(st.sampled_from(HOSTILE), st.characters()), max_size=40)


@given(hostile)
def test_string_reads_back_exactly(text):
    items = parse(f"use {emit.string(text)}\n", "t.topo").items
    assert [type(i) for i in items] == [s.Use] and items[0].path == text


@given(hostile)
def test_comment_stays_one_comment(text):
    body = emit.comment(text)
    assert "\n" not in body and body.isprintable()
    items = parse(f"# {body}\nuse \"x\"\n", "t.topo").items
    assert [(type(i), i.path) for i in items] == [(s.Use, "x")]


@given(hostile)
def test_ident_is_one_name_that_is_no_keyword(text):
    name = emit.ident(text)
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name not in KEYWORDS
    group = parse(f"group G {{\n  host {name} : D\n  {name}.a <-> b : L\n}}\n", "t").items[0]
    assert len(group.body) == 2


@given(hostile)
def test_pattern_names_the_host_literally(text):
    items = parse(f"group G {{ host h : D {emit.pattern(text)} }}\n", "t.topo").items
    literal = items[0].body[0].hostname
    assert format_hostname(literal, (), 0) == text


def test_escapes_the_parser_reads():
    items = parse('use "a\\x41\\u00e9\\U0001F600\\r\\n\\t\\"\\\\\\q\\x4"\n', "t").items
    assert items[0].path == 'aAé\U0001F600\r\n\t"\\qx4'
