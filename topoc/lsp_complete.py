"""Completion from the syntax around the cursor, whether or not the file parses (issue 40).

While a file is typed it rarely parses: a block's ``}`` is not there yet, a line is half
written. Completion therefore never asks the parser where the cursor is. ``Context`` reads the
text before the cursor tolerantly (strings and comments skipped, nothing ever rejected): braces
open and close blocks, each block knows the statement that opened it (a ``group``, a
``device X : gpu`` attribute block, a ``parallel`` block, a ``traffic`` block...), and the
tokens since the last line or brace say where in a statement the cursor stands. ``complete``
maps that position to what may be written there:

- top level: the declaration keywords; after ``link X :`` the link classes; after
  ``device X :`` the device kinds and models (a parent); after ``system X :`` the groups;
  after ``parallel X on`` the systems; inside ``use "`` the library's and the neighbouring
  .topo files;
- in a group: at a statement's start its members so far and ``let``/``require``/``host``;
  after a member's ``:`` device models, groups and the group's device parameters; after a
  connection's ``:`` link types; after an arrow or a ``.`` the members (of the group the path
  reaches); in ``(`` arguments the target group's parameters; in expressions the group's
  parameters and ``let`` names;
- in a ``link``/``device``/``model`` attribute block its schema's keys (a device's for its
  kind, with ``ports.<class>``), and after ``=`` the values of a key with a few choices;
- in a ``parallel`` block the settings (and ``traffic``), after ``=`` a setting's values (every
  model the file knows and every bundled one after ``model =``); in a ``traffic`` block the
  group kinds, then the collectives.

The names offered come from ``Names``: the program of the text when it resolves, else the last
program of the document that resolved, the files its ``use`` lines import (each resolved once
per version on disk), and the declarations the text itself spells (a keyword at the start of
a line: ``link fast : nvlink`` is offered as soon as it is typed).
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

import attrs

from .compiler.base import reading
from .compiler.base.diagnostics import CompileError
from .compiler.base.units import BYTES, NUMBER, RATE, SECONDS
from .compiler.ir.kinds import KINDS
from .compiler.ir.system import (COLLECTIVES, GROUP_KINDS, LINK_CLASSES, NIC_ROLES,
                                 NIC_TUNERS, PARALLEL_DIMS, TRANSPORTS)
from .compiler.lang import syntax as s
from .compiler.lang.derive import BOOL_SETTINGS, SETTING_CHOICES, bundled_models
from .compiler.lang.resolve import (BOOL, DTYPES, INT, LINK_SCHEMA, MODEL_SCHEMA,
                                    STRING, Program, library_root)
from .compiler.training.model import RECOMPUTE_MODULES
from .lsp_help import COLLECTIVE_DOCS, HIDDEN, SETTING_DOCS, describe

Item = tuple[str, str, str]          # (label, kind, detail)

#: What starts a declaration at the top level of a file.
TOP = {"use": 'use "file.topo": import its declarations', "link": "link NAME : class { ... }",
       "device": "device NAME : kind-or-model { ... }", "model": "model NAME { ... }",
       "group": "group NAME(params) { members and connections }",
       "system": "system NAME : Group(args)", "parallel": "parallel NAME on system { ... }"}
GROUP_WORDS = {"let": "let NAME = expression", "require": 'require expr <= expr, "why"',
               "host": "host NAME[n] : Model: each element is one host"}

_TOKEN = re.compile(r'''(?P<string>"(?:[^"\\\n]|\\.)*"?)|(?P<comment>\#[^\n]*)|(?P<nl>\n)
    |(?P<space>[ \t\r\f\v]+)|(?P<arrow><->|->)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<number>\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)|(?P<punct>.)''', re.X | re.S)
_UNIT = re.compile(r"(?:[KkMGTP]i?)?[Bb]|ns|us|ms|s")
# Each starts with its keyword, so that the regular expression engine skips to its occurrences
# (a pattern that starts with '^' in multi-line mode is tried at every character: a tenth of a
# second on a document at the size limit); ``_at_line_start`` then keeps those that begin a
# line.
_DECLS = {word: re.compile(word + r"[ \t]+([A-Za-z_]\w*)(?:[ \t]*(?::[ \t]*([A-Za-z_]\w*)"
                           r"|\(([^)\n]*)))?") for word in ("link", "device", "group", "model",
                                                            "system")}
_USE = re.compile(r'use[ \t]+"([^"\n]*)"')
_PARAM = re.compile(r"([A-Za-z_]\w*)\s*:\s*([A-Za-z_]\w*)")
_KV = ("link", "device", "model", "parallel")        # blocks of 'key = value' settings


@attrs.frozen
class Tok:
    kind: str           # name, number, string, arrow, punct, or block (a closed inner block)
    text: str


@attrs.define
class Frame:
    """An open block: what opened it and what has been said inside it so far (``members``
    and ``lets`` for the innermost group, ``flat`` for the innermost block of settings)."""

    kind: str                       # group, link, device, model, parallel, traffic or ''
    head: tuple[Tok, ...] = ()      # the statement before its '{'
    flat: list[Tok] = attrs.Factory(list)   # every token at this block's level, lines joined
    body: str = ""                  # the text inside it so far (strings and comments blanked)

    @property
    def members(self) -> dict[str, str]:
        """A group's members so far: instance -> target (read when asked: a regular expression
        over a group of a million lines takes a few tenths of a second)."""
        return {m.group(1): m.group(2) for m in _MEMBER.finditer(self.body)
                if m.group(1) not in ("let", "require")
                and m.end() < len(self.body)}       # not the line being typed

    @property
    def lets(self) -> list[str]:
        return _LET.findall(self.body)


_MEMBER = re.compile(r"^[ \t]*(?:host[ \t]+)?([A-Za-z_]\w*)[ \t]*(?:\[[^\]\n]*\])?[ \t]*:[ \t]*"
                     r"([A-Za-z_]\w*)", re.M)
_LET = re.compile(r"^[ \t]*let[ \t]+([A-Za-z_]\w*)", re.M)


class Context:
    """Where the end of a text stands: the open blocks (outermost first), the statement so far
    (before the word being typed), and the unterminated string the cursor is in, if any.

    Fast on a large document: strings and comments are blanked and the braces found by
    regular expressions; only the statements that open the blocks, the current statement and
    the innermost block of settings are tokenized, and a group's members so far are read by
    one regular expression over its body."""

    def __init__(self, before: str):
        self.in_string: str | None = None
        self.in_comment = False

        def blank(m: re.Match) -> str:
            t = m.group()
            if t[0] == '"' and m.end() == len(before) and (len(t) == 1 or t[-1] != '"'):
                self.in_string = t[1:]
                return " " * len(t)
            if t[0] == "#" and m.end() == len(before):
                self.in_comment = True
            return ('"' + " " * (len(t) - 2) + '"') if t[0] == '"' else " " * len(t)

        self.clean = clean = HIDDEN.sub(blank, before)
        end = len(clean)
        braces = sorted(_find(clean, "{") + _find(clean, "}"))
        opened: list[int] = []
        self.pairs: list[tuple[int, int, int]] = []         # (open, close, depth)
        for i in braces:
            if clean[i] == "{":
                opened.append(i)
            elif opened:
                self.pairs.append((opened.pop(), i, len(opened)))
        self.braces = braces
        self.frames = tuple(Frame(_opens(head := self._tokens(self._start(p), p)), tuple(head))
                            for p in opened)
        stmt = self._tokens(self._start(end), end)
        typing = bool(stmt) and stmt[-1].kind == "name" and self.in_string is None and \
            bool(re.search(r"[A-Za-z0-9_]$", clean))
        self.stmt = tuple(stmt[:-1] if typing else stmt)    # the editor filters on the word
        if opened:
            inner, p = self.frames[-1], opened[-1]
            if inner.kind == "group":
                inner.body = clean[p + 1:]
            elif inner.kind:
                inner.flat = self._level(p + 1, end)[:-1 if typing else None]

    def _before(self, pos: int) -> int:
        """The position after the last brace before ``pos`` (0 if none)."""
        i = bisect.bisect_left(self.braces, pos)
        return self.braces[i - 1] + 1 if i else 0

    def _start(self, pos: int) -> int:
        """Where the statement that ``pos`` ends starts: after the last brace, at the start of
        its line, or of an earlier line while a '(' or '[' opened above is still open there
        (arguments over several lines)."""
        lo = self._before(pos)
        start = max(lo, self.clean.rfind("\n", lo, pos) + 1)
        depth = _depth(self.clean, lo, start)
        for _ in range(50):
            if start <= lo or depth <= 0:
                break
            above = max(lo, self.clean.rfind("\n", lo, start - 1) + 1)
            depth -= _depth(self.clean, above, start)
            start = above
        return start

    def _tokens(self, a: int, b: int) -> list[Tok]:
        return [Tok(m.lastgroup, m.group()) for m in _TOKEN.finditer(self.clean, a, b)
                if m.lastgroup not in ("space", "nl", "comment")]

    def _level(self, a: int, b: int) -> list[Tok]:
        """The tokens of ``[a, b)`` outside the blocks closed inside it, each of those one
        'block' token."""
        out: list[Tok] = []
        for o, c, _ in sorted(p for p in self.pairs if a <= p[0] and p[1] < b):
            if o < a:
                continue                # inside a block already passed
            out += self._tokens(a, o)
            out.append(Tok("block", "{}"))
            a = c + 1
        return out + self._tokens(a, b)

    def closed_groups(self) -> dict[str, dict[str, str]]:
        """The members of each group closed before the cursor, as its text spells them."""
        out = {}
        for o, c, depth in self.pairs:
            head = self._tokens(self._start(o), o)
            if depth == 0 and _opens(head) == "group" and len(head) > 1:
                out[head[1].text] = {m.group(1): m.group(2) for m in
                                     _MEMBER.finditer(self.clean, o + 1, c)}
        return out


def _depth(text: str, a: int, b: int) -> int:
    """Brackets opened minus brackets closed in ``text[a:b]``."""
    return (text.count("(", a, b) + text.count("[", a, b)
            - text.count(")", a, b) - text.count("]", a, b))


def _find(text: str, char: str) -> list[int]:
    """Where ``char`` occurs in ``text`` (str.find skips along at memory speed; a regular
    expression of a character set tries each character in turn, ten times slower)."""
    out, i = [], text.find(char)
    while i >= 0:
        out.append(i)
        i = text.find(char, i + 1)
    return out


def _opens(head: list[Tok]) -> str:
    word = head[0].text if head and head[0].kind == "name" else ""
    return word if word in ("group", "link", "device", "model", "parallel", "traffic") else ""


def context(before: str) -> Context:
    """Where the end of ``before`` stands (``Context``)."""
    return Context(before)


# ---- the names a document knows -------------------------------------------------------------

@attrs.frozen
class Names:
    """Declarations by name, each with a one-line detail."""

    links: dict[str, str]
    devices: dict[str, tuple[str, str]]                     # name -> (kind, detail)
    groups: dict[str, tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]]
    models: dict[str, str]
    systems: tuple[str, ...]


_IMPORTED: dict[tuple[Path, int, int], Program | None] = {}


def imported(path: Path) -> Program | None:
    """The program of an imported file, resolved once per version of it on disk; None when it
    does not resolve."""
    from .compiler.lang import pipeline
    try:
        st = path.stat()
    except OSError:
        return None
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _IMPORTED:
        if len(_IMPORTED) > 64:
            _IMPORTED.clear()
        try:
            _IMPORTED[key] = pipeline.front_end(reading.read_text(path), str(path))
        except (CompileError, OSError, ValueError, RecursionError):
            _IMPORTED[key] = None
    return _IMPORTED[key]


def _first(decl) -> str:
    return describe(decl).split("\n")[0].replace("**", "")


_DECLARES: dict[int, tuple[Program, tuple]] = {}


def _declares(p: Program) -> tuple:
    """A program's (links, devices, groups, models, systems) with their details, kept per
    program (a program never changes; describing each declaration at every keystroke took
    most of a completion's time)."""
    kept = _DECLARES.get(id(p))
    if kept is not None and kept[0] is p:
        return kept[1]
    # 'H200@nvidia/devices.topo' is a shadowed declaration's internal key: never typed
    groups = {n: (tuple((q.name, q.type) for q in g.params),
                  tuple((st.name, st.target) for st in g.body if isinstance(st, s.Instance)))
              for n, g in p.groups.items() if "@" not in n}
    out = ({n: _first(lt) for n, lt in p.link_types.items() if "@" not in n},
           {n: (d.kind, _first(d)) for n, d in p.device_models.items() if "@" not in n},
           groups, {n: _first(m) for n, m in p.models.items() if "@" not in n},
           {sd.name: None for sd in p.systems})
    if len(_DECLARES) > 32:
        _DECLARES.clear()
    _DECLARES[id(p)] = (p, out)
    return out


def names(text: str, programs: list[Program | None], scan: bool = True) -> Names:
    """What ``text`` can name: the declarations of ``programs`` (its imports, the last program
    that resolved, its own: later ones win), and with ``scan`` those it spells itself."""
    links: dict[str, str] = {}
    devices: dict[str, tuple[str, str]] = {}
    groups: dict = {}
    models: dict[str, str] = {}
    systems: dict[str, None] = {}
    for p in programs:
        if p is not None:
            for table, part in zip((links, devices, groups, models, systems), _declares(p)):
                table.update(part)
    for word, m in _declared(text) if scan else ():     # the text's own, as far as typed
        name, target, params = m.groups()
        if word == "link" and name not in links:
            links[name] = f"link {name} : {target or '?'} (this file)"
        elif word == "device" and name not in devices:
            kind = target if target in KINDS else devices.get(target or "", ("",))[0]
            devices[name] = (kind, f"device {name} : {target or '?'} (this file)")
        elif word == "group" and name not in groups:
            groups[name] = (tuple(_PARAM.findall(params or "")), ())
        elif word == "model" and name not in models:
            models[name] = f"model {name} (this file)"
        elif word == "system":
            systems.setdefault(name, None)
    return Names(links, devices, groups, models, tuple(systems))


def _at_line_start(text: str, m: re.Match) -> bool:
    return not text[text.rfind("\n", 0, m.start()) + 1:m.start()].strip(" \t")


def _declared(text: str) -> list[tuple[str, re.Match]]:
    """(keyword, match) of each declaration ``text`` spells at the start of a line, in order."""
    found = [(word, m) for word, pattern in _DECLS.items() for m in pattern.finditer(text)
             if _at_line_start(text, m)]
    return sorted(found, key=lambda f: f[1].start())


def uses(text: str) -> list[str]:
    """The paths the ``use`` lines of ``text`` name."""
    return [m.group(1) for m in _USE.finditer(text) if _at_line_start(text, m)]


# ---- what fits the cursor -------------------------------------------------------------------

def complete(before: str, known: Names, files=lambda: []) -> list[Item]:
    """The choices at the end of ``before`` (the text up to the cursor); ``files`` lists the
    .topo paths a ``use`` may name."""
    ctx = context(before)
    words = [t.text for t in ctx.stmt]
    frame = ctx.frames[-1] if ctx.frames else None
    if ctx.in_comment:
        return []
    if ctx.in_string is not None:
        if not ctx.frames and words == ["use"]:
            return [(f, "file", "") for f in files()]
        if frame is not None and frame.kind in _KV:     # 'transport = "': the choices, bare
            return [(label.strip('"'), kind, detail)
                    for label, kind, detail in _settings(frame, known) if label[0] == '"']
        return []
    if frame is None:
        return _top(words, known)
    if frame.kind == "group":
        return _group(ctx, frame, words, known)
    if frame.kind in _KV:
        return _settings(frame, known)
    if frame.kind == "traffic":
        return _traffic(frame)
    return []


def _links(known: Names) -> list[Item]:
    return [(n, "link", d) for n, d in sorted(known.links.items())]


def _devices(known: Names, kind: str | None = None) -> list[Item]:
    return [(n, "device", d) for n, (k, d) in sorted(known.devices.items())
            if kind is None or k == kind]


def _groups(known: Names) -> list[Item]:
    return [(n, "group", f"group {n}" + (f"({', '.join(f'{a}: {b}' for a, b in g[0])})"
                                          if g[0] else ""))
            for n, g in sorted(known.groups.items())]


def _models(known: Names) -> list[Item]:
    every = {n: _first(m) for n, m in bundled_models().items()}     # cached: once per run
    every.update(known.models)
    return [(n, "model", d) for n, d in sorted(every.items())]


def _top(words: list[str], known: Names) -> list[Item]:
    if not words:
        return [(k, "keyword", d) for k, d in TOP.items()]
    head, shape = words[0], words[2:3]
    if len(words) == 3 and shape == [":"]:
        if head == "link":
            return [(c, "class", "link class") for c in LINK_CLASSES]
        if head == "device":
            return ([(k, "kind", "device kind") for k in KINDS]
                    + [d for d in _devices(known) if d[0] != words[1]])
        if head == "system":
            return _groups(known)
    if head == "parallel" and len(words) == 2:
        return [("on", "keyword", "parallel NAME on system")]
    if head == "parallel" and len(words) == 3 and words[2] == "on":
        return [(n, "system", f"system {n}") for n in sorted(known.systems)]
    if head == "group" and len(words) > 2 and words[-1] == ":" and "(" in words:
        return [("int", "kind", "a whole number")] + [(k, "kind", f"a {k} model")
                                                     for k in KINDS]
    if head == "system" and len(words) > 4 and words[2] == ":":
        return _arguments(words[3:], known, {}, ())
    return []


def _arguments(words: list[str], known: Names, params: dict[str, str],
               lets: tuple[str, ...]) -> list[Item]:
    """Inside ``Target(...)``: the target's parameter names, or after ``name =`` a value."""
    if "(" not in words:
        return []
    open_at = len(words) - 1 - words[::-1].index("(")
    if ")" in words[open_at:]:
        return []
    target = words[open_at - 1] if open_at else ""
    given = {words[i - 1] for i in range(open_at + 1, len(words)) if words[i] == "="}
    declared = dict(known.groups.get(target, ((), ()))[0])
    if words[-1] in ("(", ","):
        return [(n, "parameter", f"{n}: {t}") for n, t in declared.items() if n not in given]
    if words[-1] == "=":
        kind = declared.get(words[-2], "int")
        if kind in KINDS:
            return _devices(known, kind)
        return _expression(params, lets)
    return []


def _expression(params: dict[str, str], lets: tuple[str, ...]) -> list[Item]:
    return ([(n, "parameter", f"{n}: {t}") for n, t in sorted(params.items()) if t == "int"]
            + [(n, "parameter", "let") for n in sorted(set(lets))])


def _group(ctx: Context, frame: Frame, words: list[str], known: Names) -> list[Item]:
    head = [t.text for t in frame.head]
    inner = " ".join(head)
    params = dict(_PARAM.findall(inner[inner.index("(") + 1:])) if "(" in head else {}
    if not words:
        return _members(frame.members) + [(k, "keyword", d) for k, d in GROUP_WORDS.items()]
    opened = words.count("(") > words.count(")")
    if opened:
        return _arguments(words, known, params, tuple(frame.lets))
    if words.count("[") > words.count("]") or words[0] in ("let", "require"):
        if words[0] == "let" and len(words) < 3:
            return []
        # after an operator ('<=' and '==' end in '=', a range's '..' in '.')
        if words[-1] in ("[", "=", "require", "+", "-", "*", "/", "%", ".", ",", "(", "<", ">"):
            return _expression(params, tuple(frame.lets))
        return []
    connection = "<->" in words or "->" in words
    if words[-1] == ":":
        if connection:
            return _links(known)
        return (_devices(known) + _groups(known)
                + [(n, "parameter", f"{n}: {t}") for n, t in sorted(params.items())
                   if t in KINDS])
    if connection and words[-1] == "x":
        return _expression(params, tuple(frame.lets))
    if words[-1] in ("<->", "->"):
        return _members(frame.members)
    if words[-1] == ".":
        return _inner_members(words, frame, known, ctx.closed_groups())
    return []


def _members(members: dict[str, str]) -> list[Item]:
    return sorted((n, "member", f"{n} : {t}") for n, t in members.items())


def _inner_members(words: list[str], frame: Frame, known: Names,
                   typed: dict[str, dict[str, str]]) -> list[Item]:
    """After ``a[0].b.``: the members of the group that path reaches (as the text before the
    cursor spells it, else as the known program declares it)."""

    def members(group: str | None) -> dict[str, str]:
        return typed.get(group or "") or dict(known.groups.get(group or "", ((), ()))[1])

    path: list[str] = []
    i = len(words) - 1
    while i >= 0 and words[i] not in ("<->", "->"):
        path.insert(0, words[i])
        i -= 1
    segments = [w for j, w in enumerate(path) if j == 0 or path[j - 1] == "."]
    segments = [w for w in segments if re.fullmatch(r"[A-Za-z_]\w*", w)]
    target = frame.members.get(segments[0]) if segments else None
    for name in segments[1:]:
        target = members(target).get(name)
    return _members(members(target))


def _settings(frame: Frame, known: Names) -> list[Item]:
    """In a ``key = value`` block: its keys, or after ``=`` the key's values."""
    flat = frame.flat
    last = flat[-1] if flat else None
    given = {flat[i - 1].text for i in range(1, len(flat)) if flat[i].text == "="}
    if last is not None and last.text in ("=", ","):
        key = next((flat[i - 1].text for i in range(len(flat) - 1, 0, -1)
                    if flat[i].text == "="), "")
        return _values(frame, key, known)
    if last is not None and last.text == "." and len(flat) > 1 and flat[-2].text == "ports":
        return [(c, "class", "ports per link class") for c in LINK_CLASSES] \
            if frame.kind == "device" else []
    if last is not None and last.kind == "name" and not _ends_value(flat):
        return []                   # a key waiting for its '='
    keys = _keys(frame, known)
    return [k for k in keys if k[0] not in given]


def _ends_value(flat: list[Tok]) -> bool:
    """Whether the last name ends a value (a unit, a name after '=', true/false) rather than
    starting a key."""
    if len(flat) < 2:
        return False
    prev, last = flat[-2], flat[-1]
    return (prev.text in ("=", ",", "/") or last.text in ("true", "false", "auto")
            or (prev.kind == "number" and bool(_UNIT.fullmatch(last.text))))


def _kind(frame: Frame, known: Names) -> str | None:
    words = [t.text for t in frame.head]
    target = words[3] if len(words) > 3 and words[2] == ":" else ""
    return target if target in KINDS else known.devices.get(target, (None,))[0]


def _keys(frame: Frame, known: Names) -> list[Item]:
    if frame.kind == "parallel":
        return ([(k, "setting", d) for k, d in sorted(SETTING_DOCS.items())]
                + [("traffic", "keyword", "traffic { dim collective size }")])
    if frame.kind == "link":
        schema = LINK_SCHEMA
    elif frame.kind == "model":
        schema = MODEL_SCHEMA
    else:
        kind = _kind(frame, known)
        schema = _schema(kind) or {k: v for sch in _schemas().values() for k, v in sch.items()}
        ports = [(f"ports.{c}", "attribute", f"lanes of {c} the device has")
                 for c in LINK_CLASSES]
        return [(k, "attribute", _dim(v)) for k, v in sorted(schema.items())] + ports
    return [(k, "attribute", _dim(v)) for k, v in sorted(schema.items())]


_DIMS = {NUMBER: "a number", BYTES: "bytes, as 80 GB", SECONDS: "a time, as 1 us",
         RATE: "a rate, as 50 GB/s", BOOL: "true or false", INT: "a whole number",
         STRING: 'a string, as "text"'}


def _dim(kind) -> str:
    return _DIMS.get(kind, str(kind))


def _values(frame: Frame, key: str, known: Names) -> list[Item]:
    if frame.kind == "parallel":
        if key == "model":
            return _models(known)
        if key in SETTING_CHOICES:
            return [(c, "value", key) for c in SETTING_CHOICES[key]]
        if key == "recompute_modules":
            return [(c, "value", key) for c in RECOMPUTE_MODULES]
        if key in BOOL_SETTINGS:
            return [("true", "value", key), ("false", "value", key)]
        if key == "order":
            return [(d, "value", "parallel dimension") for d in PARALLEL_DIMS]
        if key in PARALLEL_DIMS:
            return [("auto", "value", "what the other sizes leave")]
        return []
    schema = (LINK_SCHEMA if frame.kind == "link" else MODEL_SCHEMA if frame.kind == "model"
              else _schema(_kind(frame, known)))
    choices = {"role": NIC_ROLES, "transport": TRANSPORTS, "tuner": NIC_TUNERS,
               "dtype": DTYPES}.get(key) if frame.kind in ("device", "model") else None
    if choices:
        return [(f'"{c}"', "value", key) for c in choices]
    if schema.get(key) == BOOL:
        return [("true", "value", key), ("false", "value", key)]
    return []


def _traffic(frame: Frame) -> list[Item]:
    """``dim collective size [x count]`` lines: where the last one stands."""
    state = 0           # 0 dim, 1 collective, 2 size, 3 unit, 4 'x' or a new line, 5 count
    for t in frame.flat:
        if state in (0, 4) and t.kind == "name" and t.text != "x":
            state = 1
        elif state == 4 and t.text == "x":
            state = 5
        elif state == 1 and t.kind == "name":
            state = 2
        elif state == 2 and t.kind == "number":
            state = 3
        elif state == 3 and t.kind == "name":
            state = 4
        elif state == 5:
            state = 0
    if state in (0, 4):
        return [(g, "value", "group kind") for g in GROUP_KINDS]
    if state == 1:
        return [(c, "keyword", COLLECTIVE_DOCS[c]) for c in COLLECTIVES]
    return []


def topo_files(folder: Path) -> list[str]:
    """What a ``use`` in a file of ``folder`` may name: the .topo files beside it (one level
    down too) and the bundled library's."""
    out: set[str] = set()
    for base in (folder, library_root()):
        try:
            found = [*base.glob("*.topo"), *base.glob("*/*.topo")]
        except OSError:
            continue
        out.update(str(p.relative_to(base)) for p in found[:500])
    return sorted(out)


def _schemas() -> dict[str, dict]:
    """Every device kind's attributes with their types (the registry may grow)."""
    return {name: kind.schema() for name, kind in KINDS.items()}


def _schema(kind: str | None) -> dict:
    found = KINDS.get(kind or "")
    return found.schema() if found is not None else {}
