"""The bundled library as data: every declaration of every library file, its source comment,
and what the library's own groups call their members (``catalog``).

Two users read it: the hints of unknown-name errors (``compiler.lang.hints``), which must know
which names exist, of what kind, and how a group is parameterised, so that a suggestion never
offers a GPU where a switch is expected; and the generated reference ``docs/library.md``
(``backends.library_doc``). Both read the library's declarations, never a table of names kept
by hand, so a library change is seen by both.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import attrs

from . import syntax as s
from ..ir.kinds import KINDS
from ..ir.system import DeviceModel, LinkType, Transformer
from .parse import parse
from .resolve import Program, library_root, resolve

#: The kind of a group in a catalog: a group holds devices of many kinds.
GROUP = "group"
#: A library comment's pointer to the hardware fact sheet (docs/hardware.md): the generated
#: reference sits beside it in docs/, so the path is written as the page's own name.
_INTERNAL_SHEET = re.compile(r"\s*\((?:docs/)?hardware\.md\)|(?:docs/)?hardware\.md")
_SHEET = "hardware.md"


@attrs.frozen
class Entry:
    """One declaration of a library file: a device model, link type, group or model."""

    name: str
    what: str                   # "device", "link", "group" or "model"
    kind: str                   # device kind, link class, GROUP, or "model"
    file: str                   # path under the library: "nvidia/devices.topo"
    line: int
    comment: str                # the comment above the declaration and at its line's end
    #: The device model a device declaration inherits from (``device B300_GB300 : B300``).
    parent: str | None
    value: DeviceModel | LinkType | Transformer | s.GroupDecl = attrs.field(eq=False,
                                                                               repr=False)


@attrs.frozen
class LibraryFile:
    """One library file: its header comment, declarations in order, and its system if any."""

    path: str
    header: str
    entries: tuple[Entry, ...]
    system: s.SystemDecl | None = attrs.field(eq=False, repr=False)
    #: The file's program (its imports resolved), for what an entry refers to.
    program: Program = attrs.field(eq=False, repr=False)


@attrs.frozen
class Catalog:
    """Every library file, and indexes over them."""

    files: tuple[LibraryFile, ...]

    @functools.cached_property
    def by_name(self) -> dict[str, Entry]:
        """Each declared name's entry (the first file that declares it)."""
        out: dict[str, Entry] = {}
        for f in self.files:
            for e in f.entries:
                out.setdefault(e.name, e)
        return out

    @functools.cached_property
    def roles(self) -> dict[str, frozenset[str]]:
        """What the library's groups call their members: member name -> the kinds of what
        those members are (``leaf`` -> net_switch, ``node`` -> group, ``gpu`` -> gpu)."""
        found: dict[str, set[str]] = {}
        for f in self.files:
            for e in f.entries:
                if e.what != "group":
                    continue
                params = {p.name: p.type for p in e.value.params}
                for stmt in e.value.body:
                    if isinstance(stmt, s.Instance):
                        kind = self.kind_of(stmt.target, f.program) or params.get(stmt.target)
                        if kind is not None and kind != "int":
                            found.setdefault(stmt.name.lower(), set()).add(kind)
        return {k: frozenset(v) for k, v in found.items()}

    @staticmethod
    def kind_of(name: str, program: Program) -> str | None:
        """A device model's kind, GROUP for a group, None for neither, in ``program``."""
        model = program.device_models.get(name)
        if model is not None:
            return model.kind
        return GROUP if name in program.groups else None

    def systems_of(self, group: str) -> tuple[tuple[str, s.SystemDecl], ...]:
        """(file, system) for every library file whose system instantiates ``group``."""
        return tuple((f.path, f.system) for f in self.files
                     if f.system is not None and f.system.group == group)

    def mentions(self, word: str) -> tuple[Entry, ...]:
        """The entries whose source comment names ``word`` as a whole word (``Q3400`` in the
        comment of ``QX800``, the Quantum-X800 Q3400), case-insensitively."""
        return self._words.get(word.lower(), ())

    @functools.cached_property
    def _words(self) -> dict[str, tuple[Entry, ...]]:
        out: dict[str, list[Entry]] = {}
        for f in self.files:
            for e in f.entries:
                for w in sorted(_words(e.comment.lower())):
                    out.setdefault(w, []).append(e)
        return {w: tuple(es) for w, es in out.items()}


def written(span) -> str:
    """The source text of a one-line span (an argument's value, a parameter's default) as its
    author wrote it."""
    line = span.source.line(span.line)
    end = span.end_col if span.end_line == span.line else len(line) + 1
    return line[span.col - 1:end - 1]


def call(group: str, args: tuple[s.Arg, ...]) -> str:
    """``DGXH100(G = H200)``: a group with its arguments as written."""
    return group + (f"({', '.join(f'{a.name} = {written(a.value.span)}' for a in args)})"
                    if args else "")


def _words(text: str) -> set[str]:
    out, cur = set(), []
    for ch in text + " ":
        if ch.isalnum() or ch == "_":
            cur.append(ch)
        elif cur:
            out.add("".join(cur))
            cur = []
    return out


def comment_above(lines: tuple[str, ...], line: int) -> str:
    """The comment of the declaration at 1-based ``line``: the contiguous comment lines above
    it (up to a blank line or a ``# ----`` section rule) and a comment at the end of its own
    line, joined into one paragraph."""
    above: list[str] = []
    i = line - 2
    while i >= 0:
        text = lines[i].strip()
        if not text.startswith("#") or text.startswith("# ----") or text.startswith("#!"):
            break
        above.append(text.lstrip("#").strip())
        i -= 1
    above.reverse()
    own = lines[line - 1] if line - 1 < len(lines) else ""
    if "#" in own and '"' not in own.split("#", 1)[0]:
        above.append(own.split("#", 1)[1].strip())
    return _public(" ".join(t for t in above if t))


def _header(lines: tuple[str, ...]) -> str:
    """The file's opening comment block."""
    out = []
    for text in lines:
        text = text.strip()
        if not text.startswith("#"):
            break
        out.append(text.lstrip("#").strip())
    return _public(" ".join(t for t in out if t))


def _public(text: str) -> str:
    """The comment with the fact sheet's path replaced by its name (once where the comment
    gives both)."""
    return _INTERNAL_SHEET.sub(lambda m: "" if m.group(0).lstrip().startswith("(")
                               else _SHEET, text)


def _load(path: Path, root: Path, parsed: dict[Path, s.Module]) -> LibraryFile:
    module = parsed[path]
    program = resolve(module, str(path), parsed=parsed)
    lines = module.span.source.lines
    entries = []
    for item in module.items:
        parent = None
        if isinstance(item, s.DeviceDecl):
            value = program.device_models[item.name]
            what, kind = "device", value.kind
            parent = None if item.kind in KINDS else item.kind
        elif isinstance(item, s.LinkDecl):
            value = program.link_types[item.name]
            what, kind = "link", value.cls
        elif isinstance(item, s.GroupDecl):
            value, what, kind = item, "group", GROUP
        elif isinstance(item, s.ModelDecl):
            value, what, kind = program.models[item.name], "model", "model"
        else:
            continue
        entries.append(Entry(item.name, what, kind, path.relative_to(root).as_posix(),
                             item.span.line, comment_above(lines, item.span.line), parent,
                             value))
    return LibraryFile(path.relative_to(root).as_posix(), _header(lines), tuple(entries),
                       program.systems[0] if program.systems else None, program)


@functools.lru_cache(maxsize=1)
def catalog() -> Catalog:
    """The bundled library, read once per process (only error paths and the doc generator
    ask for it)."""
    root = library_root()
    paths = sorted(p.resolve() for p in root.rglob("*.topo"))
    parsed = {p: parse(p.read_text(encoding="utf-8"), str(p)) for p in paths}
    return Catalog(tuple(_load(p, root, parsed) for p in paths))

