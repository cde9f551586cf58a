"""``topoc fmt``: one canonical layout for .topo files, comments kept, idempotent.

The layout is printed from Lark's parse tree (so number and unit spellings survive), with
parentheses restored by precedence; a statement line already in this layout (``fastlines``)
is printed as it is written, without a parse tree, so a large file formats in linear time. Comments are read from the text and attached to the unit
they sit on (trailing) or before (leading): a top-level declaration, a group statement, an
attribute or parallel setting. Runs of blank lines between units become one blank line.
Attributes and parallel settings written on one line stay on one line, two spaces apart
(``tp = 8  pp = 4  dp = auto``), and a parallel block of settings or a traffic block written on
one line stays one line, as a link or device block does. A trailing comment keeps its column when the code before
it is unchanged but for spacing (comments aligned in a column stay aligned), else it sits two
spaces after the code.
"""

from __future__ import annotations

import bisect
import itertools
import re

import lark

from ..base.diagnostics import CompileError
from ..base.gcpause import gc_paused
from ..base.reading import strip_bom
from . import fastlines
from .parse import checked_tree

INDENT = "  "
WIDTH = 100
_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|\n|[^"#\n]+|.')
_PRECEDENCE = {"add": 1, "sub": 1, "mul": 2, "div": 2, "mod": 2}
_OP = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}


def _comments(text: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of every comment, skipping '#' inside strings."""
    out, line, col = [], 1, 1
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok.startswith("#"):
            out.append((line, col, tok.rstrip()))
        if tok == "\n":
            line, col = line + 1, 1
        else:
            col += len(tok)
    return out


class _Meta:
    def __init__(self, line: int):
        self.line = self.end_line = line


class _Fast:
    """A statement line read without Lark (``fastlines``), printed as it is written."""

    data = "fast"

    def __init__(self, line: int, text: str):
        self.meta, self.text = _Meta(line), text


class _Printer:
    def __init__(self, text: str, found: fastlines.Split | None = None):
        self.found = found
        self.lines = text.split("\n")
        self.comments = _comments(text)       # in text order, so sorted by line
        self.lines_of = [line for line, _, _ in self.comments]
        self.taken: set[int] = set()          # indices of comments already printed
        self.first = 0                        # every comment before this index is taken
        self.out: list[str] = []
        self.placed = False                   # a trailing comment awaits ``place``

    # Comments are found by line with bisect and a pointer past the taken ones, so formatting
    # stays linear in the file, however many comments it holds.
    def _between(self, start: int, end: int) -> range:
        """Indices of the comments on lines start..end."""
        return range(bisect.bisect_left(self.lines_of, start),
                     bisect.bisect_right(self.lines_of, end))

    def _open_before(self, line: int):
        """Indices of comments not yet taken on lines before ``line``."""
        while self.first < len(self.comments) and self.first in self.taken:
            self.first += 1
        i = self.first
        while i < len(self.comments) and self.lines_of[i] < line:
            if i not in self.taken:
                yield i
            i += 1

    # -- comments and blank lines
    def _code_before(self, line: int, col: int) -> bool:
        return bool(self.lines[line - 1][: col - 1].strip())

    def leading(self, upto_line: int, indent: str) -> None:
        """Own-line comments before ``upto_line`` not yet printed."""
        for i in list(self._open_before(upto_line)):
            line, col, text = self.comments[i]
            if not self._code_before(line, col):
                self.taken.add(i)
                if self.out and self.out[-1] != "" and self._blank_before(line) and \
                        not self.out[-1].endswith("{"):
                    self.out.append("")
                self.out.append(indent + text)

    def trailing(self, start: int, end: int, indent: str = "") -> str:
        """The comment after code on the lines start..end, for the end of the unit's line. A
        line holds one comment, so further ones go on their own lines just above the unit."""
        found = []
        for i in self._between(start, end):
            line, col, text = self.comments[i]
            if i not in self.taken and self._code_before(line, col):
                self.taken.add(i)
                found.append(i)
        self.out += [indent + self.comments[i][2] for i in found[:-1]]
        # the comment's index rides along between newlines (no code or comment holds one)
        # until ``place`` knows the whole line and sets the comment's column
        if not found:
            return ""
        self.placed = True
        return f"\n{found[-1]}\n{self.comments[found[-1]][2]}"

    def place(self, printed: str) -> str:
        """A printed line with its trailing comment where the source had it: at the comment's
        column when the code before it is the same but for spacing (so comments aligned in a
        column stay aligned), else two spaces after the code."""
        if "\n" not in printed:
            return printed
        code, *marked = printed.split("\n")
        out = code
        for k in range(0, len(marked), 2):      # more than one only where a rule appended
            line, col, text = self.comments[int(marked[k])]
            gap = col - 1 - len(out)
            written = self.lines[line - 1][: col - 1]
            if gap <= 2 or "".join(written.split()) != "".join(out.split()):
                gap = 2                         # too close, or the code before it changed
            out += " " * gap + text
        return out

    def _blank_before(self, line: int) -> bool:
        return line >= 2 and not self.lines[line - 2].strip()

    def gap(self, node_line: int, force: bool = False) -> None:
        """A blank line before a unit (before its leading comments, if any) where the source
        had one, or where ``force`` asks for one; then its leading comments; then a blank line
        between those comments and the unit if the source had one there."""
        pending = [self.comments[i][0] for i in self._open_before(node_line)
                   if not self._code_before(*self.comments[i][:2])]
        start = min(pending) if pending else node_line
        if self.out and self.out[-1] != "" and not self.out[-1].endswith("{") and \
                (force or self._blank_before(start)):
            self.out.append("")

    def unit(self, node_line: int, indent: str, force: bool = False) -> None:
        """Blank lines and leading comments before a unit that starts at ``node_line``."""
        self.gap(node_line, force)
        printed = len(self.out)
        self.leading(node_line, indent)
        if len(self.out) > printed and self._blank_before(node_line) and self.out[-1] != "":
            self.out.append("")

    # -- expressions and values
    def expr(self, node, parent_prec: int = 0, right: bool = False) -> str:
        if isinstance(node, lark.Token):
            return str(node)
        kind = node.data
        if kind in ("num", "var"):
            return str(node.children[0])
        if kind == "neg":
            return "-" + self.expr(node.children[0], 3)
        prec = _PRECEDENCE[kind]
        text = f"{self.expr(node.children[0], prec)} {_OP[kind]} " \
               f"{self.expr(node.children[1], prec, right=True)}"
        if prec < parent_prec or (right and prec == parent_prec):
            return f"({text})"
        return text

    def value(self, node) -> str:
        kind = node.data
        if kind == "quantity":
            number, unit = node.children
            return f"{number} {unit}" if unit else str(number)
        if kind == "string":
            return str(node.children[0])
        if kind in ("true", "false", "auto"):
            return kind
        if kind == "name_list":
            return ", ".join(str(c) for c in node.children)
        raise ValueError(kind)

    def selector(self, node) -> str:
        if node.data == "star":
            return "*"
        if node.data == "range":
            return f"{self.expr(node.children[0])}..{self.expr(node.children[1])}"
        return self.expr(node.children[0])

    def segment(self, node) -> str:
        name, sel = node.children
        return str(name) + (f"[{self.selector(sel)}]" if sel is not None else "")

    def args(self, node) -> str:
        if node is None:
            return ""
        items = [c for c in node.children if c is not None]
        if node.data == "params":
            parts = [f"{p.children[0]}: {p.children[1]}" + (
                f" = {self.expr(p.children[2])}" if p.children[2] is not None else "")
                for p in items]
        else:
            parts = [f"{a.children[0]} = {self.expr(a.children[1])}" for a in items]
        return "(" + ", ".join(parts) + ")"

    # -- blocks
    def attr_text(self, attr) -> str:
        key, value = attr.children
        return f"{'.'.join(str(t) for t in key.children)} = {self.value(value)}"

    # Settings written on one line stay on one line (``tp = 8  pp = 4  dp = auto``), two
    # spaces apart, as the docs write them: the line is the user's grouping, and a layout that
    # split it would reject the docs' own style under ``fmt --check``.
    @staticmethod
    def rows(items: list, text, indent: str) -> list[list]:
        """``items`` (attributes or settings) in runs that share a source line; a run wider
        than WIDTH is split one item a line, so the layout is stable under a second pass."""
        out: list[list] = []
        for it in items:
            if out and out[-1][-1].meta.end_line == it.meta.line:
                out[-1].append(it)
            else:
                out.append([it])
        split = []
        for row in out:
            fits = len(indent + "  ".join(text(it) for it in row)) <= WIDTH
            split += [row] if fits or len(row) == 1 else [[it] for it in row]
        return split

    def line(self, row: list, text, indent: str) -> None:
        """One run of items on a line, with the comment that ends the line."""
        comment = self.trailing(row[0].meta.line, row[-1].meta.end_line, indent)
        self.out.append(indent + "  ".join(text(it) for it in row) + comment)

    def setting_text(self, setting) -> str:
        return f"{setting.children[0]} = {self.value(setting.children[1])}"

    def block(self, head: str, attrs: list, meta, indent: str) -> None:
        """``head { a = 1  b = 2 }`` on one line when it fits and holds no comments."""
        inner = [self.attr_text(a) for a in attrs]
        first = attrs[0].meta.line if attrs else meta.end_line
        # A block written on several lines stays on several lines when it holds a comment
        # anywhere (header line and closing line included): joining its lines would move the
        # comment onto another line's code, and a suppression there would start hiding
        # findings it never hid.
        has_comments = meta.end_line > meta.line and any(
            i not in self.taken for i in self._between(meta.line, meta.end_line))
        one = f"{head} {{ {'  '.join(inner)} }}" if inner else f"{head} {{ }}"
        if not has_comments and len(indent + one) <= WIDTH:
            line = self.trailing(meta.line, meta.end_line, indent)
            self.out.append(indent + one + line)
            return
        head_comment = self.trailing(meta.line, first - 1, indent)
        self.out.append(f"{indent}{head} {{" + head_comment)
        for row in self.rows(attrs, self.attr_text, indent + INDENT):
            self.leading(row[0].meta.line, indent + INDENT)
            self.line(row, self.attr_text, indent + INDENT)
        self.leading(meta.end_line, indent + INDENT)
        last = attrs[-1].meta.end_line + 1 if attrs else meta.line
        rest = self.trailing(last, meta.end_line - 1, indent + INDENT)
        self.out[-1] += rest
        self.out.append(indent + "}" + self.trailing(meta.end_line, meta.end_line, indent))

    def statement(self, node, indent: str) -> str:
        kind = node.data
        if kind == "fast":
            return node.text
        if kind == "let":
            return f"let {node.children[0]} = {self.expr(node.children[1])}"
        if kind == "require":
            left, op, right, why = node.children
            return f"require {self.expr(left)} {op} {self.expr(right)}" + \
                (f", {why}" if why is not None else "")
        if kind == "instance":
            host, seg, target, args, pattern = node.children
            return ("host " if host is not None else "") + \
                f"{self.segment(seg)} : {target}{self.args(args)}" + \
                (f" {pattern}" if pattern is not None else "")
        left, arrow, right, link, lanes = node.children
        path = lambda p: ".".join(self.segment(s) for s in p.children)  # noqa: E731
        text = f"{path(left)} {arrow} {path(right)} : {link}"
        return text + (f" x {self.expr(lanes.children[0])}" if lanes is not None else "")

    def body(self, items, meta, indent: str) -> None:
        for item in items:
            self.unit(item.meta.line, indent)
            comment = self.trailing(item.meta.line, item.meta.end_line, indent)
            self.out.append(indent + self.statement(item, indent) + comment)
        self.leading(meta.end_line, indent)

    # -- top level
    def item(self, node) -> None:
        kind, c = node.data, node.children
        if kind == "use":
            comment = self.trailing(node.meta.line, node.meta.end_line)
            alias = f" as {c[1]}" if len(c) > 1 and c[1] is not None else ""
            self.out.append(f"use {c[0]}{alias}" + comment)
        elif kind == "link_decl":
            self.block(f"link {c[0]} : {c[1]}", c[2].children, node.meta, "")
        elif kind == "device_decl":
            self.block(f"device {c[0]} : {c[1]}", c[2].children if c[2] is not None else [],
                       node.meta, "")
        elif kind == "model_decl":
            self.block(f"model {c[0]}", c[1].children, node.meta, "")
        elif kind == "system_decl":
            comment = self.trailing(node.meta.line, node.meta.end_line)
            self.out.append(f"system {c[0]} : {c[1]}{self.args(c[2])}" + comment)
        elif kind == "group_decl":
            name, params, *stmts = c
            stmts = self._with_fast(stmts, node.meta)
            first = stmts[0].meta.line - 1 if stmts else node.meta.end_line - 1
            # a statement on the header's line keeps its own comment (printed with it)
            comment = self.trailing(node.meta.line, first) if first >= node.meta.line else ""
            self.out.append(f"group {name}{self.args(params)} {{" + comment)
            self.body(stmts, node.meta, INDENT)
            comment = self.trailing(node.meta.end_line, node.meta.end_line)
            self.out.append("}" + comment)
        elif kind == "parallel_decl":
            name, system, *items = c
            head = f"parallel {name} on {system}"
            one = self.one_line_parallel(node)
            if one is not None:
                self.out.append(one + self.trailing(node.meta.line, node.meta.end_line))
                return
            first = items[0].meta.line - 1 if items else node.meta.end_line - 1
            comment = self.trailing(node.meta.line, first) if first >= node.meta.line else ""
            self.out.append(f"{head} {{" + comment)
            # settings in runs between traffic blocks, so no setting moves past one
            for setting, run in itertools.groupby(items, lambda it: it.data == "psetting"):
                run = list(run)
                if not setting:
                    for it in run:
                        self.unit(it.meta.line, INDENT)
                        self.traffic(it)
                    continue
                for row in self.rows(run, self.setting_text, INDENT):
                    self.unit(row[0].meta.line, INDENT)
                    self.line(row, self.setting_text, INDENT)
            self.leading(node.meta.end_line, INDENT)
            comment = self.trailing(node.meta.end_line, node.meta.end_line)
            self.out.append("}" + comment)

    def one_line_parallel(self, node) -> str | None:
        """A parallel block of settings written on one line, as one line (as a link's block
        is) when it fits; None for any other parallel block."""
        name, system, *items = node.children
        if not items or node.meta.line != node.meta.end_line or \
                any(it.data != "psetting" for it in items):
            return None
        one = f"parallel {name} on {system} {{ {'  '.join(map(self.setting_text, items))} }}"
        return one if len(one) <= WIDTH else None

    def flow_text(self, flow) -> str:
        dim, coll, size, count = flow.children
        text = f"{dim} {coll} {self.value(size)}"
        return text + (f" x {self.expr(count.children[0])}" if count is not None else "")

    def traffic(self, it) -> None:
        """A parallel block's ``traffic { ... }``: one line when written on one line and it
        fits (as the README writes ``traffic { tp allreduce 64 MiB x 160 }``), else one flow
        a line."""
        one = f"{INDENT}traffic {{ {'  '.join(map(self.flow_text, it.children))} }}"
        if it.children and it.meta.line == it.meta.end_line and len(one) <= WIDTH:
            self.out.append(one + self.trailing(it.meta.line, it.meta.end_line, INDENT))
            return
        first = it.children[0].meta.line if it.children else it.meta.end_line
        head = self.trailing(it.meta.line, it.meta.line, INDENT) \
            if first > it.meta.line else ""    # a flow on this line keeps its own
        self.out.append(INDENT + "traffic {" + head)
        for f in it.children:
            self.leading(f.meta.line, INDENT * 2)
            comment = self.trailing(f.meta.line, f.meta.end_line, INDENT * 2)
            self.out.append(INDENT * 2 + self.flow_text(f) + comment)
        self.leading(it.meta.end_line, INDENT * 2)
        comment = self.trailing(it.meta.end_line, it.meta.end_line, INDENT)
        self.out.append(INDENT + "}" + comment)

    def _with_fast(self, stmts: list, meta) -> list:
        """A group's statements with its lines read without Lark, in line order."""
        found = self.found
        if found is None:
            return stmts
        lo = bisect.bisect_left(found.lines, meta.line)
        hi = bisect.bisect_right(found.lines, meta.end_line)
        if lo == hi:
            return stmts
        fast = [_Fast(found.lines[i], fastlines.text(found.matches[i])) for i in range(lo, hi)]
        return sorted([*stmts, *fast], key=lambda st: st.meta.line)   # stable: one per line

    def run(self, tree) -> str:
        previous = None
        for node in tree.children:
            # Declarations are separated by a blank line, except runs of one-line
            # declarations of one kind (use, link, device, parallel blocks printed on one
            # line), which stay together.
            kind = node.data
            if kind == "parallel_decl" and self.one_line_parallel(node) is not None:
                kind = "one_line_parallel"
            run = previous == kind and kind in ("use", "link_decl", "device_decl",
                                                "one_line_parallel")
            self.unit(node.meta.line, "", force=previous is not None and not run)
            self.item(node)
            previous = kind
        self.leading(len(self.lines) + 1, "")
        # Whatever a layout rule did not place is kept at the end: no comment is ever lost.
        self.out += [text for i, (_, _, text) in enumerate(self.comments) if i not in self.taken]
        while self.out and self.out[-1] == "":
            self.out.pop()
        lines = map(self.place, self.out) if self.placed else self.out
        return "\n".join(lines) + "\n" if self.out else ""


@gc_paused()          # the parse trees of a large file: the collector would make it quadratic
def fmt(text: str, path: str = "<input>") -> str:
    """The canonical layout of ``text``; raises CompileError if it does not parse."""
    text = strip_bom(text)
    tree, found = checked_tree(text, path)  # the same diagnostics as every other verb
    return _Printer(text, found).run(tree)


__all__ = ["fmt", "CompileError"]
