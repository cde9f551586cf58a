"""Stage 1: .topo text to a syntax tree (``parse``), every node carrying its span."""

from __future__ import annotations

import functools
import re
import string
from pathlib import Path
from fractions import Fraction

import attrs
import lark
from lark import Transformer, v_args

from ...grammar import parser
from . import fastlines
from . import syntax as s
from .closest import model_spelling
from ..base.diagnostics import CompileError, Note, Source, Span, error
from ..base.gcpause import gc_paused
from ..base.limits import LIMITS
from ..base.reading import strip_bom
from ..base.units import ACCEPTED, LiteralRange, literal, unknown_unit

# Token names as people know them, for "expected ..." messages.
_PRETTY = {
    "NAME": "a name", "QNAME": "a name", "NUMBER": "a number", "STRING": "a string", "UNIT": "a unit",
    "ARROW": "'<->' or '->'", "COMPARE": "'<=', '<', '>=', '>', '==' or '!='", "LBRACE": "'{'", "RBRACE": "'}'", "LSQB": "'['", "RSQB": "']'",
    "LPAR": "'('", "RPAR": "')'", "COLON": "':'", "EQUAL": "'='", "COMMA": "','", "DOT": "'.'",
    "STAR": "'*'", "PLUS": "'+'", "MINUS": "'-'", "SLASH": "'/'", "PERCENT": "'%'",
    "$END": "end of file",
}


_WORDS = ("NAME", "NUMBER", "STRING", "UNIT")


class _Build(Transformer):
    """Lark tree to syntax nodes; every method sees the node's ``meta`` for its span."""

    def __init__(self, source: Source):
        super().__init__()
        self.source = source
        self.depth: dict[int, int] = {}   # id(expression node) -> nesting depth

    def _deep(self, node, children):
        """Refuse expressions nested past the limit (they would exhaust recursion later)."""
        depth = 1 + max(self.depth.get(id(c), 0) for c in children)
        if depth > LIMITS.expression:
            raise CompileError([error("E296", f"expression nested deeper than "
                                      f"{LIMITS.expression} levels", node.span)])
        self.depth[id(node)] = depth
        return node

    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.source, 1, 1, 1, 1)
        return Span(self.source, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tok(self, tok: lark.Token) -> Span:
        return Span(self.source, tok.line, tok.column, tok.end_line, tok.end_column)

    # -- values
    @v_args(meta=True)
    def quantity(self, meta, children):
        number, unit = children
        span = self._span(meta)
        value = _digits(number, span)
        text = f"{number} {unit}" if unit else str(number)
        return s.QuantityValue(s.Quantity.of(value, str(unit) if unit else None), text, span)

    @v_args(meta=True)
    def string(self, meta, children):
        raw = str(children[0])[1:-1]
        return s.StringValue(_unescape(raw), self._span(meta))

    @v_args(meta=True)
    def true(self, meta, _):
        return s.BoolValue(True, self._span(meta))

    @v_args(meta=True)
    def false(self, meta, _):
        return s.BoolValue(False, self._span(meta))

    @v_args(meta=True)
    def name_list(self, meta, children):
        return s.NameList(tuple(str(c) for c in children), self._span(meta))

    @v_args(meta=True)
    def auto(self, meta, _):
        return s.Auto(self._span(meta))

    @v_args(meta=True)
    def key(self, meta, children):
        return ".".join(str(c) for c in children)

    @v_args(meta=True)
    def attr(self, meta, children):
        return s.Attr(children[0], children[1], self._span(meta))

    psetting = attr

    @v_args(meta=True)
    def attr_block(self, meta, children):
        return tuple(children)

    # -- expressions
    @v_args(meta=True)
    def num(self, meta, children):
        span = self._span(meta)
        value = _digits(children[0], span)
        if value.denominator != 1:
            raise CompileError([error("E205", f"expected a whole number, found '{children[0]}'",
                                      span)])
        return s.Num(int(value), span)

    @v_args(meta=True)
    def var(self, meta, children):
        return s.Var(str(children[0]), self._span(meta))

    def _binop(op):  # noqa: N805 - a factory for the four methods below
        @v_args(meta=True)
        def build(self, meta, children):
            return self._deep(s.BinOp(op, children[0], children[1], self._span(meta)), children)
        return build

    add, sub, mul, div, mod = _binop("+"), _binop("-"), _binop("*"), _binop("/"), _binop("%")

    @v_args(meta=True)
    def neg(self, meta, children):
        return self._deep(s.Neg(children[0], self._span(meta)), children)

    # -- paths and selectors
    @v_args(meta=True)
    def star(self, meta, _):
        return s.Star(self._span(meta))

    @v_args(meta=True)
    def range(self, meta, children):
        return s.Range(children[0], children[1], self._span(meta))

    @v_args(meta=True)
    def index(self, meta, children):
        return s.Index(children[0], self._span(meta))

    @v_args(meta=True)
    def segment(self, meta, children):
        return s.Segment(str(children[0]), children[1], self._span(meta))

    @v_args(meta=True)
    def path(self, meta, children):
        return s.Path(tuple(children), self._span(meta))

    # -- groups
    @v_args(meta=True)
    def param(self, meta, children):
        return s.Param(str(children[0]), str(children[1]), children[2], self._span(meta))

    @v_args(meta=True)
    def params(self, meta, children):
        return tuple(c for c in children if c is not None)

    @v_args(meta=True)
    def arg(self, meta, children):
        return s.Arg(str(children[0]), children[1], self._span(meta))

    @v_args(meta=True)
    def args(self, meta, children):
        return tuple(c for c in children if c is not None)

    @v_args(meta=True)
    def let(self, meta, children):
        return s.Let(str(children[0]), children[1], self._span(meta))

    @v_args(meta=True)
    def require(self, meta, children):
        left, op, right, message = children
        text = None if message is None else _unescape(str(message)[1:-1])
        return s.Require(left, str(op), right, text, self._span(meta))

    @v_args(meta=True)
    def lanes(self, meta, children):
        return children[0]

    @v_args(meta=True)
    def instance(self, meta, children):
        host, seg, target, args, pattern = children
        size = None
        if pattern is not None and host is None:
            raise CompileError([error(
                "E104", "a hostname pattern belongs to a host instance: write "
                f"'host {seg.name}... : {target} {pattern}'", self._tok(pattern))])
        if seg.selector is not None:
            if not isinstance(seg.selector, s.Index):
                raise CompileError([error(
                    "E100", f"an array declaration needs a size, as in '{seg.name}[8] : ...'",
                    seg.selector.span)])
            size = seg.selector.expr
        return s.Instance(seg.name, size, str(target), args or (), self._span(meta),
                          self._tok(target), host is not None,
                          None if pattern is None else _unescape(str(pattern)[1:-1]))

    @v_args(meta=True)
    def connection(self, meta, children):
        left, arrow, right, link, lanes = children
        return s.Connection(left, right, str(arrow) == "->", str(link), lanes, self._span(meta),
                            self._tok(link))

    @v_args(meta=True)
    def group_decl(self, meta, children):
        name, params, *body = children
        return s.GroupDecl(str(name), params or (), tuple(body), self._span(meta))

    # -- top level
    @v_args(meta=True)
    def use(self, meta, children):
        path, alias = children
        return s.Use(_unescape(str(path)[1:-1]), self._span(meta),
                     None if alias is None else str(alias))

    @v_args(meta=True)
    def link_decl(self, meta, children):
        name, cls, attrs_ = children
        return s.LinkDecl(str(name), str(cls), attrs_, self._span(meta), self._tok(cls))

    @v_args(meta=True)
    def device_decl(self, meta, children):
        name, kind, attrs_ = children
        return s.DeviceDecl(str(name), str(kind), attrs_ or (), self._span(meta), self._tok(kind))

    @v_args(meta=True)
    def model_decl(self, meta, children):
        name, attrs_ = children
        return s.ModelDecl(str(name), attrs_, self._span(meta))

    @v_args(meta=True)
    def system_decl(self, meta, children):
        name, group, args = children
        return s.SystemDecl(str(name), str(group), args or (), self._span(meta), self._tok(group))

    @v_args(meta=True)
    def flow(self, meta, children):
        dim, coll, size, count = children
        return s.Flow(str(dim), str(coll), size, count, self._span(meta))

    @v_args(meta=True)
    def traffic(self, meta, children):
        return ("traffic", tuple(children))

    @v_args(meta=True)
    def parallel_decl(self, meta, children):
        name, system, *items = children
        settings = tuple(i for i in items if isinstance(i, s.Attr))
        flows = tuple(f for i in items if isinstance(i, tuple) for f in i[1])
        return s.ParallelDecl(str(name), str(system), settings, flows, self._span(meta),
                              self._tok(system))


def _digits(token, span: Span) -> Fraction:
    """The literal's exact value, refused past the length and magnitude limits (E297) before
    any big integer is built."""
    try:
        return literal(str(token))
    except LiteralRange as exc:
        raise CompileError([error("E297", str(exc), span)]) from None


_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


def _unescape(raw: str) -> str:
    """A string literal's text: ``\\n``, ``\\t``, ``\\r``, ``\\xHH``, ``\\uHHHH`` and
    ``\\UHHHHHHHH`` are those characters (what ``compiler.lang.emit.string`` writes); a
    backslash before anything else is that character (``\\"``, ``\\\\``)."""
    out, i = [], 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw):
            c = raw[i + 1]
            width = _HEX_ESCAPES.get(c)
            digits = raw[i + 2:i + 2 + width] if width else ""
            if width and len(digits) == width and all(d in string.hexdigits for d in digits) \
                    and int(digits, 16) <= 0x10FFFF:
                out.append(chr(int(digits, 16)))
                i += 2 + width
                continue
            out.append(_SIMPLE_ESCAPES.get(c, c))
            i += 2
        else:
            out.append(raw[i])
            i += 1
    return "".join(out)


def _expected(names) -> str:
    pretty = sorted({_PRETTY.get(n, f"'{n.lower()}'" if n.isupper() else n) for n in names})
    if len(pretty) > 6:
        pretty = pretty[:6] + ["..."]
    return ", ".join(pretty)


_DECLARATIONS = {"use", "link", "device", "model", "group", "system", "parallel"}


def _unclosed(source: Source, line: int, col: int) -> tuple[int, int] | None:
    """Line and column of the innermost '{' still open before (line, col), comments and
    strings skipped; None when every block is closed."""
    stack: list[tuple[int, int]] = []
    for n in range(1, min(line, len(source.lines)) + 1):
        text = source.line(n)
        end = col - 1 if n == line else len(text)
        i, quoted = 0, False
        while i < end:
            ch = text[i]
            if quoted and ch == "\\":
                i += 1                                  # an escaped character
            elif ch == '"':
                quoted = not quoted
            elif not quoted and ch == "#":
                break
            elif not quoted and ch == "{":
                stack.append((n, i + 1))
            elif not quoted and ch == "}" and stack:
                stack.pop()
            i += 1
    return stack[-1] if stack else None


def _missing_brace(source: Source, at: Span, what: str):
    """E103 at the block that was never closed, when the parser stopped at a new declaration
    or the end of the file inside it; None otherwise."""
    opened = _unclosed(source, at.line, at.col)
    if opened is None:
        return None
    line, col = opened
    header = source.line(line).strip().split("{")[0].strip() or "block"
    return error("E103", f"'{header}' opened here is never closed: add '}}' before {what}",
                 Span(source, line, col, line, col + 1), Note(f"{what} found here", at))


#: A parallel block's setting whose name value goes on with '-' or '.' ('model = llama3-8b').
_SETTING_NAME = re.compile(r"(\w+)[ \t]*=[ \t]*([A-Za-z_]\w*)$")


@functools.cache
def _preset_names() -> tuple[str, ...]:
    """The names of the bundled models (library/models/*.topo), read as text: this module
    parses, so it cannot ask the stages above it (derive.bundled_models) for them."""
    from ... import library
    folder = Path(library.__file__).resolve().parent / "models"
    return tuple(m.group(1) for p in sorted(folder.glob("*.topo"))
                 for m in re.finditer(r"^model[ \t]+(\w+)", p.read_text(encoding="utf-8"), re.M))


def _joined_name(source: Source, line: int, col: int, tok: str):
    """E100 for 'model = llama3-8b' in a parallel block: the CLI's spelling of a model is not
    one name in the language, and the parser would otherwise stop at the '-' (or report the
    block as never closed when the setting starts a line). Suggests the bundled preset it
    means, or the name with '_'."""
    text = source.line(line)
    m = _SETTING_NAME.search(text[:col - 1].rstrip())
    opened = _unclosed(source, line, col)
    if tok not in ("-", ".") or m is None or opened is None or \
            not source.line(opened[0]).lstrip().startswith("parallel"):
        return None
    start = m.start(2)
    word = re.match(r"[\w.\-]+", text[start:]).group(0).rstrip("-.")
    fixed = (model_spelling(word, _preset_names()) if m.group(1) == "model" else None) or \
        re.sub(r"[-.]", "_", word)
    what = "a model name" if m.group(1) == "model" else "a name"
    return error("E100", f"'{word}' is not one name: {what} is an identifier (letters, digits, "
                 f"'_') or a string; write '{m.group(1)} = {fixed}'",
                 Span(source, line, start + 1, line, start + 1 + len(word)))


#: A number and the word written after it (``1 EB``, ``10 GBps``): the word unless it is the
#: next attribute's key (followed by '=' or '.').
_NUMBER_WORD = re.compile(r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?[ \t]+"
                          r"([A-Za-zµ]+(?:/s)?)(?![\w/])(?![ \t]*[=.])")


def _unknown_unit(source: Source, line: int, col: int):
    """E206 when the parser stopped just after a number written with a unit the language has
    not got: the lexer read the unit as a name, so the error would otherwise land on the
    token after it. None when no such word precedes the stop (on its line or the one before)."""
    found = None
    for n in range(max(1, line - 1), line + 1):
        for m in _NUMBER_WORD.finditer(source.line(n)):
            if (n < line or m.start(1) < col - 1) and unknown_unit(m.group(1)):
                found = Span(source, n, m.start(1) + 1, n, m.end(1) + 1)
    if found is None:
        return None
    word = source.line(found.line)[found.col - 1:found.end_col - 1]
    return error("E206", f"unknown unit '{word}'; the units are {ACCEPTED}", found)


def _syntax_error(exc: lark.exceptions.UnexpectedInput, source: Source):
    line, col = max(1, exc.line or 1), max(1, exc.column or 1)
    if not isinstance(exc, lark.exceptions.UnexpectedCharacters):
        at_end = isinstance(exc, lark.exceptions.UnexpectedEOF) or exc.token.type == "$END"
        unit = (_unknown_unit(source, len(source.lines), len(source.line(len(source.lines))) + 1)
                if at_end else _unknown_unit(source, line, col))
        if unit is not None:
            return unit
    if isinstance(exc, lark.exceptions.UnexpectedCharacters):
        char = source.line(line)[col - 1: col] or "?"
        return error("E101", f"unexpected character '{char}'", Span(source, line, col, line, col + 1))
    if isinstance(exc, lark.exceptions.UnexpectedEOF) or (
            isinstance(exc, lark.exceptions.UnexpectedToken) and exc.token.type == "$END"):
        last = max(1, len(source.lines))
        while last > 1 and not source.line(last).strip():
            last -= 1                       # point just past the last text, not at blank lines
        end_col = len(source.line(last)) + 1
        at = Span(source, last, end_col, last, end_col + 1)
        if "RBRACE" in exc.expected:
            found = _missing_brace(source, Span(source, len(source.lines) + 1, 1, 0, 0),
                                   "the end of the file")
            if found is not None:
                return attrs.evolve(found, notes=(Note("the file ends here", at),))
        return error("E102", f"unexpected end of file; expected {_expected(exc.expected)}", at)
    tok = exc.token
    width = max(1, len(str(tok)))
    at = Span(source, line, col, line, col + width)
    text = source.line(line)
    first = text.split(None, 1)[0] if text.strip() else ""
    joined = _joined_name(source, line, col, str(tok))
    if joined is not None:
        return joined
    if first in _DECLARATIONS:           # a new declaration where a block should have closed
        start = len(text) - len(text.lstrip()) + 1
        found = _missing_brace(source, Span(source, line, start, line, start + len(first)),
                               f"'{first}'")
        if found is not None:
            return found
    what = f"{_PRETTY[tok.type][2:]} '{tok}'" if tok.type in _WORDS else f"'{tok}'"
    return error("E100", f"unexpected {what}; expected {_expected(exc.expected)}", at)


def _too_deep(source: Source):
    return error("E296", f"input nested too deeply to read (expressions nest at most "
                 f"{LIMITS.expression} levels)", Span(source, 1, 1, 0, 0))


def syntax_tree(text: str, source: Source):
    """Lark's parse tree of ``text`` and the lines read without Lark (``fastlines``), or None
    when every line went through Lark; syntax errors raise ``CompileError``."""
    found = fastlines.split(text)
    if found is not None:
        try:
            tree = parser().parse(found.skeleton)
        except lark.exceptions.UnexpectedInput:
            tree = None                     # the whole text says what is wrong, and where
        if tree is not None and fastlines.fits(tree, found, source.lines):
            return tree, found
    try:
        return parser().parse(text), None
    except lark.exceptions.UnexpectedInput as exc:
        raise CompileError([_syntax_error(exc, source)]) from None


def build(tree, source: Source) -> tuple:
    """The top-level syntax nodes of a Lark tree; the stage's errors raise ``CompileError``."""
    try:
        return tuple(_Build(source).transform(tree).children)
    except lark.exceptions.VisitError as exc:
        if isinstance(exc.orig_exc, CompileError):
            raise exc.orig_exc from None
        if isinstance(exc.orig_exc, RecursionError):
            raise CompileError([_too_deep(source)]) from None
        raise
    except RecursionError:
        raise CompileError([_too_deep(source)]) from None


def _checked(text: str, path: str) -> Source:
    source = Source(path, text)
    if len(text) > LIMITS.file_bytes:
        raise CompileError([error("E290", f"file is {len(text)} characters; the limit is "
                                  f"{LIMITS.file_bytes}", Span(source, 1, 1, 0, 0))])
    return source


@gc_paused()          # a large file's trees and tokens: keep the collector from going quadratic
def parse(text: str, path: str = "<input>") -> s.Module:
    """Parse one .topo text into a ``Module``; syntax errors raise ``CompileError``. A leading
    byte-order mark is dropped."""
    text = strip_bom(text)
    source = _checked(text, path)
    tree, found = syntax_tree(text, source)
    items = build(tree, source)
    if found is not None:               # each group's body with the lines read without Lark
        items = tuple(_with_fast(item, source, found) for item in items)
    return s.Module(path, items, Span(source, 1, 1, 0, 0))


def _with_fast(item, source: Source, found: fastlines.Split):
    if not isinstance(item, s.GroupDecl):
        return item
    fast = fastlines.statements(source, found, item.span.line, item.span.end_line)
    if not fast:
        return item
    body = sorted((*item.body, *fast), key=lambda st: (st.span.line, st.span.col))
    return attrs.evolve(item, body=tuple(body))


@gc_paused()
def checked_tree(text: str, path: str = "<input>"):
    """For ``fmt``: Lark's tree and the fast lines (as ``syntax_tree``), after every check
    ``parse`` makes (the same diagnostics as every other verb). ``text`` has no BOM."""
    source = _checked(text, path)
    tree, found = syntax_tree(text, source)
    build(tree, source)
    return tree, found
