"""Linear parsing of large files: the statement lines they are made of, read without Lark.

A large .topo file is nearly all group statements of a few shapes, one per line, in the layout
``topoc fmt`` prints: ``a[3].nic[0] <-> leaf[1] : ib x 4`` and ``gpu[8] : H100``. Lark's LALR
parser spends about 60 us of Python per such line (tokens, parse tree, positions), so a 5 MB
file took 20 s to parse and twice that to format. ``split`` recognises these lines with one
regular expression each (integer indices, ranges and stars; no expressions, no keywords as
names) and blanks them out of the text, so Lark parses only the skeleton that remains, line and
column numbers unchanged; ``build`` makes the syntax nodes of a recognised line directly, with
the spans Lark would have given them, and ``fmt`` prints such a line as it is written (it is
already canonical).

The result is the parse of the whole text, exactly: ``fits`` accepts the skeleton's parse tree
only when every recognised line sits in a group's body (after the line that opens it, before
the one that closes it) and no statement of the skeleton spans a recognised line; a recognised
line followed by a line starting with ``x`` (which Lark would read as the lanes of the line
before) turns the fast path off. Whenever the skeleton does not parse or does not fit, the
caller parses the whole text with Lark, so every syntax error is reported as before.
tests/compiler/lang/test_fastlines.py compares both parses on every library file and on
mutated files.
"""

from __future__ import annotations

import bisect
import re

import attrs

from . import syntax as s
from ..base.diagnostics import Source, Span

# The language's reserved words (the grammar's keywords; tests/test_editors.py checks the
# grammar's against the editors' highlighting): a name that Lark could read as a keyword
# somewhere in a statement is left to Lark.
KEYWORDS = ("use", "link", "device", "model", "group", "system", "parallel", "on", "traffic",
             "auto", "true", "false", "let", "require", "host", "x")
_NAME = r"(?!(?:%s)(?![A-Za-z0-9_]))[A-Za-z_][A-Za-z0-9_]*" % "|".join(KEYWORDS)
_INT = r"(?:0|[1-9][0-9]{0,8})"                 # well inside E297's limits, spelled as printed
_SEG = rf"{_NAME}(?:\[(?:\*|{_INT}(?:\.\.{_INT})?)\])?"
_PATH = rf"{_SEG}(?:\.{_SEG})*"
_TAIL = r"[ \t\r]*(?:#[^\n]*)?"
CONNECTION = re.compile(rf"[ \t]*(({_PATH}) (<->|->) ({_PATH}) : ({_NAME})(?: x ({_INT}))?){_TAIL}")
INSTANCE = re.compile(rf"[ \t]*(({_NAME})(?:\[({_INT})\])? : ({_NAME})){_TAIL}")
_SEGMENT = re.compile(rf"({_NAME})(?:\[(?:(\*)|({_INT})(?:\.\.({_INT}))?)\])?")
_LANES_NEXT = re.compile(r"[ \t]*x(?![A-Za-z0-9_])")


@attrs.frozen
class Split:
    """The skeleton text (recognised lines blanked) and the recognised lines: their 1-based
    numbers in order and their matches."""

    skeleton: str
    lines: tuple[int, ...]
    matches: tuple[re.Match, ...]


def split(text: str) -> Split | None:
    """Blank out the lines ``build`` can read; None when there are none or when the fast path
    would not give Lark's parse (a line after a recognised one that starts with ``x``)."""
    lines = text.split("\n")
    numbers, matches = [], []
    after = False
    for i, line in enumerate(lines):
        m = (CONNECTION.fullmatch(line) if "<->" in line or "->" in line else
             INSTANCE.fullmatch(line) if ":" in line else None)
        if m is not None:
            numbers.append(i + 1)
            matches.append(m)
            lines[i] = ""
            after = True
        elif after:
            code = line.lstrip()
            if code and not code.startswith("#"):
                if _LANES_NEXT.match(line):
                    return None
                after = False
    if not numbers:
        return None
    return Split("\n".join(lines), tuple(numbers), tuple(matches))


def _code(line: str) -> str:
    """A line without its comment (a '#' in a string makes the answer unsure: '')."""
    if '"' in line:
        return ""
    return line.split("#", 1)[0].rstrip()


def fits(tree, found: Split, text_lines: list[str]) -> bool:
    """Whether the skeleton's parse tree plus the recognised lines is the parse of the whole
    text: each recognised line inside a group body whose header line ends with its '{', and no
    statement of the skeleton spans a recognised line."""
    numbers = found.lines
    covered = 0
    for node in tree.children:
        meta = node.meta
        lo = bisect.bisect_left(numbers, meta.line)
        hi = bisect.bisect_right(numbers, meta.end_line)
        if lo == hi:
            continue
        if node.data != "group_decl":
            return False
        params = node.children[1]
        if params is not None and params.meta.end_line != meta.line:
            return False
        if not _code(text_lines[meta.line - 1]).endswith("{") or \
                numbers[lo] == meta.line or numbers[hi - 1] == meta.end_line:
            return False
        for stmt in node.children[2:]:
            at = bisect.bisect_left(numbers, stmt.meta.line)
            if at < len(numbers) and numbers[at] <= stmt.meta.end_line:
                return False
        covered += hi - lo
    return covered == len(numbers)


def _span(source: Source, line: int, start: int, end: int) -> Span:
    return Span(source, line, start + 1, line, end + 1)


def _shape(text: str) -> tuple:
    """A path's segments as offsets into its text: (name, start, end, selector), the selector
    None, ("*", start, end) or (lo, start, end, hi, start, end) with hi None for an index."""
    out = []
    for m in _SEGMENT.finditer(text):
        if m.end() - m.start() == len(m.group(1)):
            selector = None
        elif m.group(2):
            selector = ("*", m.start(2), m.end(2))
        elif m.group(4) is None:
            selector = (int(m.group(3)), m.start(3), m.end(3), None, 0, 0)
        else:
            selector = (int(m.group(3)), m.start(3), m.end(3),
                        int(m.group(4)), m.start(4), m.end(4))
        out.append((m.group(1), m.start(), m.end(), selector))
    return tuple(out)


def _path(source: Source, line: int, text: str, at: int, shapes: dict) -> s.Path:
    """The path written at column offset ``at`` of ``line`` (its shape looked up once per
    distinct text)."""
    shape = shapes.get(text)
    if shape is None:
        shape = shapes[text] = _shape(text)
    segments = []
    for name, start, end, sel in shape:
        if sel is None:
            selector = None
        elif sel[0] == "*":
            selector = s.Star(Span(source, line, at + sel[1] + 1, line, at + sel[2] + 1))
        else:
            lo_span = Span(source, line, at + sel[1] + 1, line, at + sel[2] + 1)
            lo = s.Num(sel[0], lo_span)
            if sel[3] is None:
                selector = s.Index(lo, lo_span)
            else:
                hi = s.Num(sel[3], Span(source, line, at + sel[4] + 1, line, at + sel[5] + 1))
                selector = s.Range(lo, hi, Span(source, line, at + sel[1] + 1, line,
                                                at + sel[5] + 1))
        segments.append(s.Segment(name, selector,
                                  Span(source, line, at + start + 1, line, at + end + 1)))
    span = segments[0].span if len(segments) == 1 else _span(source, line, at, at + len(text))
    return s.Path(tuple(segments), span)


def build(source: Source, line: int, m: re.Match, shapes: dict) -> s.Connection | s.Instance:
    """The syntax node of one recognised line, with Lark's spans (``shapes``: the paths' shapes
    seen so far)."""
    if m.re is INSTANCE:
        name, size, target = m.group(2), m.group(3), m.group(4)
        size_node = None if size is None else \
            s.Num(int(size), _span(source, line, m.start(3), m.end(3)))
        return s.Instance(name, size_node, target, (), _span(source, line, m.start(1), m.end(1)),
                          _span(source, line, m.start(4), m.end(4)))
    left = _path(source, line, m.group(2), m.start(2), shapes)
    right = _path(source, line, m.group(4), m.start(4), shapes)
    lanes = None if m.group(6) is None else \
        s.Num(int(m.group(6)), _span(source, line, m.start(6), m.end(6)))
    return s.Connection(left, right, m.group(3) == "->", m.group(5), lanes,
                        _span(source, line, m.start(1), m.end(1)),
                        _span(source, line, m.start(5), m.end(5)))


def statements(source: Source, found: Split, first: int, last: int) -> list:
    """The syntax nodes of the recognised lines first..last (1-based, inclusive)."""
    lo = bisect.bisect_left(found.lines, first)
    hi = bisect.bisect_right(found.lines, last)
    shapes: dict = {}
    return [build(source, found.lines[i], found.matches[i], shapes) for i in range(lo, hi)]


def text(m: re.Match) -> str:
    """A recognised line's statement as ``fmt`` prints it (it is already canonical)."""
    return m.group(1)
