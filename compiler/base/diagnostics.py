"""Source spans and diagnostics: the one way topoc reports a problem in its input.

A diagnostic renders as ``path:line:col: CODE severity: message``, then the source line with
carets under the offending text, then notes that cite other spans ("first declared here").
Rendered text never holds a control character from the input: ESC, BEL, CR, NUL or a Unicode
line separator in a file, its name or a message is shown as an escape (``\x1b``), so a file
cannot retitle or clear the terminal of whoever lints it.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Sequence

import attrs

from .text import visible

ERROR = "error"
WARNING = "warning"
NOTE = "note"

#: Past this many diagnostics in one run, the rest are summarised as "... and N more".
MAX_REPORTED = 20


@attrs.frozen
class Source:
    """One input text with its display path; lines are split once, on demand."""

    path: str
    text: str = attrs.field(repr=False)

    @functools.cached_property
    def lines(self) -> tuple[str, ...]:
        """The text split into lines, once: at '\n' only, as the lexer counts them (a CRLF's
        '\r' is dropped; a lone '\r' or form feed stays inside its line)."""
        return tuple(line[:-1] if line.endswith("\r") else line
                     for line in self.text.split("\n"))

    def line(self, number: int) -> str:
        """The 1-based line ``number`` without its newline ('' past the end)."""
        return self.lines[number - 1] if 0 < number <= len(self.lines) else ""


@attrs.frozen
class Span:
    """A region of one source: 1-based line and column of its start and (inclusive) end."""

    source: Source = attrs.field(repr=False, eq=False)
    line: int
    col: int
    end_line: int = 0
    end_col: int = 0

    @property
    def path(self) -> str:
        """The display path of the source this span points into."""
        return self.source.path

    def location(self) -> str:
        """``path:line:col`` (the path with control characters escaped)."""
        return f"{visible(self.source.path)}:{self.line}:{self.col}"

    def excerpt(self) -> str:
        """The source line with carets under the span (multi-line spans mark the first line)."""
        text = self.source.line(self.line)
        if self.end_line == 0 or (not text and self.line > len(self.source.lines)):
            return ""  # a span for a whole file, or past its end: nothing to point at
        end = self.end_col if self.end_line == self.line and self.end_col > self.col else 0
        width = max(1, end - self.col) if end else max(1, len(text) - self.col + 1)
        gutter = f"{self.line:>5} | "
        pad = " " * (len(gutter) - 2) + "| "
        # Control characters are shown escaped (several columns each); tabs keep their width:
        # either way the carets line up under the text as displayed.
        shown = [c if c == "\t" else visible(c) for c in text]
        prefix = "".join(c if c == "\t" else " " * len(c) for c in shown[: self.col - 1])
        width += sum(len(c) - 1 for c in shown[self.col - 1: self.col - 1 + width])
        return f"{gutter}{''.join(shown)}\n{pad}{prefix}{'^' * width}"


@attrs.frozen
class Note:
    """A secondary message that points at another span."""

    message: str
    span: Span | None = None


@attrs.frozen
class Diagnostic:
    """One finding: a code (E1xx names, E2xx types/units/ports, E3xx parallel, W4xx/W5xx lint)."""

    code: str
    severity: str
    message: str
    span: Span
    notes: tuple[Note, ...] = ()

    def render(self) -> str:
        """The full text form: header line, source excerpt with carets, then the notes."""
        out = [f"{self.span.location()}: {self.code} {self.severity}: {visible(self.message)}"]
        excerpt = self.span.excerpt()
        if excerpt:
            out.append(excerpt)
        for note in self.notes:
            if note.span is None:
                out.append(f"  = note: {visible(note.message)}")
            else:
                out.append(f"{note.span.location()}: note: {visible(note.message)}")
                ex = note.span.excerpt()
                if ex:
                    out.append(ex)
        return "\n".join(out)

    def sort_key(self) -> tuple:
        """Order by file, position, then code, so reports are deterministic."""
        return (self.span.path, self.span.line, self.span.col, self.code, self.message)


class CompileError(Exception):
    """Raised by a stage that cannot go on; carries every diagnostic collected so far."""

    def __init__(self, diagnostics: Sequence[Diagnostic]):
        self.diagnostics = tuple(diagnostics)
        super().__init__(render_all(self.diagnostics))


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 GPU pair', '24 GPU pairs', '2 switches': a count and its noun, in agreement."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {many or (word + 'es' if word.endswith(('s', 'sh', 'ch', 'x')) else word + 's')}"


def error(code: str, message: str, span: Span, *notes: Note) -> Diagnostic:
    """Shorthand for an error-level diagnostic."""
    return Diagnostic(code, ERROR, message, span, tuple(notes))


def render_all(diagnostics: Iterable[Diagnostic], cap: int = MAX_REPORTED) -> str:
    """Render diagnostics in order, at most ``cap`` of them, then '... and N more'."""
    diags = list(diagnostics)
    shown = [d.render() for d in diags[:cap]]
    if len(diags) > cap:
        shown.append(f"... and {len(diags) - cap} more")
    return "\n".join(shown)


CLOSE_CUTOFF = 0.6  # difflib's ratio below which a candidate is not offered


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The one closest candidate to a mistyped name, or None when nothing is close. Every
    'did you mean' in topoc goes through here, so they all judge closeness alike. The name in
    another case comes first: difflib scores 'h100' as close to 'V100' as to 'H100'."""
    pool = sorted(set(candidates))
    same = [c for c in pool if c.casefold() == name.casefold()]
    if same:
        return same[0]
    close = difflib.get_close_matches(name, pool, n=1, cutoff=CLOSE_CUTOFF)
    if not close and len(name) == 2:
        # one letter off a two-letter name scores 0.5 ('dq', 'dp'): offered when it is the
        # only such name ('xp' is one letter off tp, cp, ep, dp and pp alike)
        close = [c for c in pool if len(c) == 2 and
                 sum(a != b for a, b in zip(c.casefold(), name.casefold())) == 1]
        close = close if len(close) == 1 else []
    return close[0] if close else None


def suggest(name: str, candidates: Iterable[str]) -> str:
    """'; did you mean 'x'?' for the closest candidate, or '' when nothing is close."""
    # 'H200@nvidia/devices.topo' names a shadowed declaration internally: never typed
    close = closest(name, (c for c in candidates if "@" not in c))
    return f"; did you mean '{close}'?" if close else ""


class Collector:
    """Collects diagnostics across a stage; ``check()`` raises if any error was collected."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def add(self, diagnostic: Diagnostic) -> None:
        """Record one diagnostic."""
        self.diagnostics.append(diagnostic)

    def error(self, code: str, message: str, span: Span, *notes: Note) -> None:
        """Record an error."""
        self.add(error(code, message, span, *notes))

    @property
    def has_errors(self) -> bool:
        """True when an error-level diagnostic was recorded."""
        return any(d.severity == ERROR for d in self.diagnostics)

    def check(self) -> None:
        """Raise CompileError with everything collected if any of it is an error."""
        if self.has_errors:
            raise CompileError(self.diagnostics)
