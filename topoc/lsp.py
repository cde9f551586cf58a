"""``topoc lsp``: a language server for .topo files over stdio (pygls).

Diagnostics as you type, with the compiler's codes and spans (errors, then lint findings when
the file compiles); hover with a name's resolved figures (a link type's class, bandwidth and
latency; a device model's attributes and ports; a group's parameters and members; a model's
parameter count); go to definition across ``use`` imports and into the bundled library;
completion from the syntax around the cursor, also where the file does not parse
(``lsp_complete``); and formatting with ``topoc fmt``. The analysis (``Analysis``) is plain
Python, independent of pygls, so it is tested directly and through the protocol.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import attrs

from .compiler.lang import syntax as s
from .compiler.base.diagnostics import CompileError, Diagnostic, Span
from .compiler.lang.resolve import Program
from .compiler.base.text import visible
from .compiler.base.units import RATE, human
from .lsp_help import describe

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
USE = re.compile(r'\s*use\s+"([^"]*)"')


def uri_to_path(uri: str) -> str:
    """file:///a/b.topo -> /a/b.topo."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def path_to_uri(path: str) -> str:
    """A display or absolute path -> file:// URI."""
    return Path(path).resolve().as_uri()


@attrs.frozen
class Found:
    """A diagnostic for the editor: 0-based range, severity 1 (error) or 2 (warning)."""

    code: str
    severity: int
    message: str
    start: tuple[int, int]
    end: tuple[int, int]


def _range(span: Span) -> tuple[tuple[int, int], tuple[int, int]]:
    start = (max(0, span.line - 1), max(0, span.col - 1))
    if span.end_line:
        end = (span.end_line - 1, max(0, span.end_col - 1))
    else:
        end = (start[0], start[1] + 1)
    return start, end if end > start else (start[0], start[1] + 1)


def _found(d: Diagnostic, path: str, uses: dict[Path, int] | None = None) -> Found | None:
    """Findings in this document, their notes joined to the message; an error in a file this
    one imports is shown on the ``use`` line that leads to it (``uses``: imported file -> 0-based
    line), since the editor shows only this document."""
    if Path(d.span.path).resolve() != Path(path).resolve():
        line = (uses or {}).get(Path(d.span.path).resolve())
        if line is None and uses and d.severity == "error":
            line = min(uses.values())       # imported further down: the first use
        if line is None or d.severity != "error":
            return None
        return Found(d.code, 1, f"in the imported file {visible(d.span.location())}: "
                     f"{visible(d.message)}", (line, 0), (line, 10_000))
    start, end = _range(d.span)
    # control characters escaped as in the CLI's diagnostics: an editor's message pane is a
    # terminal for some clients; the notes' own line breaks kept
    message = visible(d.message) + "".join(
        f"\n{visible(n.span.location())}: note: {visible(n.message)}" for n in d.notes)
    return Found(d.code, 1 if d.severity == "error" else 2, message, start, end)


def _inside(f: Found, lines: list[str]) -> Found:
    """``f`` with its range inside the document (an error at the end of the file points past
    the last character, one in an imported file at the whole ``use`` line): each end moved
    back to the end of its line, and a range that becomes empty covers the character before."""
    def clamp(pos: tuple[int, int]) -> tuple[int, int]:
        line = min(max(pos[0], 0), len(lines) - 1)
        return line, min(max(pos[1], 0), len(lines[line]))
    start, end = clamp(f.start), clamp(f.end)
    if start == end and start[1] > 0:
        start = (start[0], start[1] - 1)
    return attrs.evolve(f, start=start, end=end)


#: Documents up to this many characters are small: a request waits for their pending analysis
#: (a fraction of a second) and a half-typed line is recovered around; larger ones answer at
#: once from the last analysis (lsp_io explains why).
SMALL = 2**18


class Stale(Exception):
    """An analysis given up because the document changed again while it ran."""


class Analysis:
    """Everything the server knows about one document's text."""

    def __init__(self, text: str, path: str, stale=None):
        self.text, self.path = text, path
        self.program: Program | None = None
        self.diagnostics: list[Found] = []
        self._recovered: dict[int | None, Program | None] = {}
        self._stale = stale
        self._run()

    @classmethod
    def answering(cls, text: str, path: str, last: Analysis | None,
                  good: Program | None) -> Analysis:
        """What requests on ``text`` are answered from, without running the pipeline: the last
        finished analysis when it is of this very text; else this text (positions and the words
        under the cursor are read from it) with the last program that resolved."""
        if last is not None and (last.text is text or last.text == text):
            if last.program is not None or len(text) <= SMALL or good is None:
                return last
        view = cls.__new__(cls)
        view.text, view.path, view.program = text, path, good
        view.diagnostics, view._recovered, view._stale = [], {}, None
        return view

    def _check(self) -> None:
        if self._stale is not None and self._stale():
            raise Stale()

    def _run(self) -> None:
        from .compiler.base.gcpause import gc_paused
        with gc_paused():       # one collection after the analysis, not one per stage
            self._analyse()

    def _analyse(self) -> None:
        """The pipeline once (as ``topoc.compile`` runs it, the resolved program kept for hover
        and definition), then the lint rules when it compiles; between stages, ``Stale`` when
        the document has changed again (the newer text is analysed instead)."""
        from .compiler.lang import pipeline
        from .compiler.lang.verify import verify
        found: list[Diagnostic] = []
        try:
            self.program = pipeline.front_end(self.text, self.path)
            self._check()
            system = pipeline.lower(self.program)
            self._check()
            if system is not None:
                found = verify(system)        # E220 on a library device: at the user's line
                if not found:
                    self._check()
                    from .compiler.lint.lint import LintConfig, apply_suppressions, lint_system
                    found = apply_suppressions(lint_system(system), system.span.source,
                                               LintConfig())
        except CompileError as exc:
            found = list(exc.diagnostics)
        except RecursionError:
            pass                # nested too deeply to analyse: nothing to say at a position
        except MemoryError:
            # past what E292's estimate foresaw: the analysis is dropped (its objects freed as
            # the exception unwinds) and the server keeps serving the other documents
            pass
        uses = self.uses()
        lines = self.text.split("\n")
        self.diagnostics = [_inside(f, lines) for d in found
                            if (f := _found(d, self.path, uses))]

    # -- imports
    def uses(self) -> dict[Path, int]:
        """Each file a ``use`` line of this document imports -> that line (0-based)."""
        out = {}
        for i, line in enumerate(self.text.split("\n")):
            m = USE.match(line)
            if m:
                found = self.use_target(m.group(1))
                if found is not None:
                    out.setdefault(found.resolve(), i)
        return out

    def use_target(self, name: str) -> Path | None:
        """The file a ``use "name"`` resolves to: next to this document, then the library."""
        from .compiler.lang.resolve import library_root
        for base in (Path(self.path).resolve().parent, library_root()):
            candidate = base / name
            if candidate.is_file():
                return candidate
        return None

    def shown(self, path: str) -> str:
        """A path as the editor's user reads it: relative to this document's folder, or
        'library: nvidia/devices.topo' for the bundled library, never the server's cwd."""
        from .compiler.lang.resolve import library_root
        p = Path(path).resolve()
        for base, prefix in ((Path(self.path).resolve().parent, ""),
                             (library_root().resolve(), "library: ")):
            try:
                return prefix + str(p.relative_to(base))
            except ValueError:
                continue
        return str(p)

    def _program(self, line: int | None = None) -> Program | None:
        """The resolved program, or when the text does not resolve (a half-typed line), the
        program of the text around it (``lsp_help.recover``, for small documents: on a large
        one that is seconds of parsing, and requests must answer at once)."""
        if self.program is not None:
            return self.program
        if len(self.text) > SMALL:
            return None
        if line not in self._recovered:
            from .lsp_help import recover
            self._recovered[line] = recover(self.text, self.path, line)
        return self._recovered[line]

    # -- positions
    def word_at(self, line: int, character: int) -> str | None:
        """The name under a 0-based position."""
        lines = self.text.split("\n")
        if not 0 <= line < len(lines):
            return None
        for m in WORD.finditer(lines[line]):
            if m.start() <= character <= m.end():
                return m.group(0)
        return None

    def declaration(self, name: str):
        """The resolved declaration called ``name`` (link type, device model, group, model)."""
        p = self._program()
        if p is None:
            return None
        for table in (p.link_types, p.device_models, p.groups, p.models):
            if name in table:
                return table[name]
        return None

    def instance(self, name: str, line: int):
        """The ``name[n] : Target`` statement of the group around 0-based ``line``, if any."""
        p = self._program()
        if p is None:
            return None
        for g in p.groups.values():
            span = g.span
            if span is None or Path(span.path).resolve() != Path(self.path).resolve():
                continue
            if span.line - 1 <= line <= (span.end_line or span.line) - 1:
                return next((st for st in g.body
                             if isinstance(st, s.Instance) and st.name == name), None)
        return None

    def target(self, line: int, character: int):
        """What the name under the cursor stands for: a declaration, or an instance's target."""
        name = self.word_at(line, character) or ""
        decl = self.declaration(name)
        if decl is None:
            inst = self.instance(name, line)
            decl = self.declaration(inst.target) if inst is not None else None
        return decl

    def definition(self, line: int, character: int) -> tuple[str, tuple, tuple] | None:
        """(path, start, end) of what the cursor names: a ``use`` path's file; a member used in
        a connection, its ``name[n] : Target`` line; a declaration's name (or the target of a
        member line), its declaration."""
        lines = self.text.split("\n")
        text = lines[line] if 0 <= line < len(lines) else ""
        m = USE.match(text)
        if m and m.start(1) - 1 <= character <= m.end(1) + 1:
            found = self.use_target(m.group(1))
            return None if found is None else (str(found.resolve()), (0, 0), (0, 0))
        name = self.word_at(line, character) or ""
        inst = self.instance(name, line)
        member_line = inst is not None and inst.span is not None and inst.span.line - 1 == line
        if inst is not None and not member_line and self.declaration(name) is None:
            start, end = _range(inst.span)
            return str(Path(inst.span.path).resolve()), start, end
        decl = self.target(line, character)
        if decl is None or decl.span is None:
            return None
        start, end = _range(decl.span)
        return str(Path(decl.span.path).resolve()), start, end

    def hover(self, line: int, character: int) -> str | None:
        """Markdown with the resolved figures of the name under the cursor (an instance's name
        shows its device model or group)."""
        from .lsp_help import COLLECTIVE_DOCS, SETTING_DOCS, blocks_at, lanes_at
        lines = self.text.split("\n")
        text = lines[line] if 0 <= line < len(lines) else ""
        lanes = lanes_at(text, character)
        if lanes is not None:
            lt = (self._program(line).link_types.get(lanes[0])
                  if self._program(line) is not None else None)
            if lt is not None:
                return (f"**{lanes[1]} lanes** of {lt.name} ({lt.cls}): {lanes[1]} x "
                        f"{human(lt.bandwidth, RATE)} = {human(lanes[1] * lt.bandwidth, RATE)} "
                        "per direction")
            return f"**{lanes[1]} lanes**: parallel links of the connection's type"
        name = self.word_at(line, character) or ""
        blocks = blocks_at(lines, line, character)
        if "traffic" in blocks and name in COLLECTIVE_DOCS:
            return f"**{name}**: {COLLECTIVE_DOCS[name]}"
        if "parallel" in blocks and "traffic" not in blocks and name in SETTING_DOCS \
                and re.search(rf"\b{name}\s*=", text):
            return f"**{name}** (parallel setting): {SETTING_DOCS[name]}"
        decl = self.target(line, character)
        if decl is None:
            return None
        inst = self.instance(name, line) if self.declaration(name) is None else None
        head = f"`{name}` : {inst.target}\n\n" if inst is not None else ""
        where = (f"\n\n*declared at {self.shown(decl.span.path)}:{decl.span.line}*"
                 if decl.span else "")
        return head + describe(decl) + where

    def completions(self, line: int, character: int,
                    good: Program | None = None) -> list[tuple[str, str, str]]:
        """(label, kind, detail) choices for the cursor, read from the syntax around it even
        when the file does not parse (``lsp_complete``): link types after a connection's ':',
        device models and groups after a member's ':', a device's attribute keys in its block,
        a parallel block's settings, and so on. The names come from this text's program when
        it resolves, else from ``good`` (the document's last program that resolved), the files
        its ``use`` lines import and the declarations the text spells."""
        from . import lsp_complete as c
        lines = self.text.split("\n")
        if not 0 <= line < len(lines):
            return []
        offset = len("\n".join(lines[:line])) + bool(line) + min(character, len(lines[line]))
        programs: list[Program | None] = []
        if self.program is None:
            programs += [c.imported(p) for u in c.uses(self.text)
                         if (p := self.use_target(u)) is not None]
            programs.append(good)
        programs.append(self.program)
        known = c.names(self.text, programs, scan=self.program is None)
        return c.complete(self.text[:offset], known,
                          lambda: c.topo_files(Path(self.path).resolve().parent))

    def formatted(self) -> str | None:
        """The document in topoc fmt's layout (None when it does not parse)."""
        from .compiler.lang.fmt import fmt
        try:
            return fmt(self.text, self.path)
        except CompileError:
            return None


# ---- the protocol (pygls) -----------------------------------------------------------------------

def build_server():
    """The pygls LanguageServer with topoc's features registered."""
    try:
        from lsprotocol import types as t
        from pygls.lsp.server import LanguageServer
    except ImportError:
        raise RuntimeError("topoc lsp needs pygls: pip install 'topoc[lsp]'") from None
    from . import __version__
    from .lsp_io import Debouncer
    server = LanguageServer("topoc", __version__)
    docs: dict[str, Analysis] = {}
    k = t.CompletionItemKind
    kinds = {"link": k.Interface, "device": k.Class, "group": k.Module, "model": k.Struct,
             "parameter": k.Variable, "keyword": k.Keyword, "class": k.EnumMember,
             "kind": k.EnumMember, "value": k.Value, "setting": k.Property,
             "attribute": k.Property, "member": k.Field, "system": k.Module, "file": k.File}

    good: dict[str, Program] = {}       # per document, the last program that resolved

    def analyse(uri: str) -> Analysis:
        import gc
        from .compiler.base.gcpause import gc_paused
        doc = server.workspace.get_text_document(uri)
        with gc_paused():
            a = Analysis(doc.source, uri_to_path(uri), stale=lambda: debouncer.pending(uri))
            docs[uri] = a
            if a.program is not None:
                good[uri] = a.program
            if len(a.text) > SMALL:
                # A large document's program is a million long-lived objects; a full pass of
                # the cyclic collector over them holds the interpreter for seconds, and the
                # requests with it. An analysis leaves no cycles behind (the old one is freed
                # by reference counting), so they are set aside from the collector.
                gc.freeze()
        return a

    def publish(uri: str) -> None:
        debouncer.submit(uri)       # analysed on the worker thread after a quiet moment

    def send(uri: str) -> None:
        try:
            a = analyse(uri)
        except Stale:
            return                  # a newer edit is due: its analysis publishes
        server.text_document_publish_diagnostics(t.PublishDiagnosticsParams(
            uri=uri, diagnostics=[
                t.Diagnostic(range=t.Range(t.Position(*f.start), t.Position(*f.end)),
                             message=f.message, code=f.code, source="topoc",
                             severity=t.DiagnosticSeverity(f.severity))
                for f in a.diagnostics]))

    @server.feature(t.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params: t.DidOpenTextDocumentParams):
        publish(params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: t.DidChangeTextDocumentParams):
        publish(params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params: t.DidSaveTextDocumentParams):
        publish(params.text_document.uri)

    debouncer = Debouncer(send)

    def current(uri: str) -> Analysis:
        """What a request is answered from: for a small document its analysis (waiting a moment
        for a pending one, lsp_io.WAIT); for a large one, at once, the current text with the
        last analysis (``Analysis.answering``)."""
        try:
            text = server.workspace.get_text_document(uri).source
        except Exception:           # a document the client never opened
            text = ""
        if len(text) <= SMALL:
            debouncer.wait(uri)
        return Analysis.answering(text, uri_to_path(uri), docs.get(uri), good.get(uri))

    def ask(params, question: str):
        """The document's answer at the request's position (hover, definition, ...)."""
        analysis = current(params.text_document.uri)
        return getattr(analysis, question)(params.position.line, params.position.character)

    @server.feature(t.TEXT_DOCUMENT_HOVER)
    def hover(ls, params: t.HoverParams):
        text = ask(params, "hover")
        if text is None:
            return None
        return t.Hover(contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=text))

    @server.feature(t.TEXT_DOCUMENT_DEFINITION)
    def definition(ls, params: t.DefinitionParams):
        found = ask(params, "definition")
        if found is None:
            return None
        path, start, end = found
        return t.Location(uri=path_to_uri(path),
                          range=t.Range(t.Position(*start), t.Position(*end)))

    @server.feature(t.TEXT_DOCUMENT_COMPLETION,
                    t.CompletionOptions(trigger_characters=[":", "=", "(", ".", '"']))
    def completion(ls, params: t.CompletionParams):
        uri = params.text_document.uri
        items = current(uri).completions(params.position.line, params.position.character,
                                         good.get(uri))
        return t.CompletionList(is_incomplete=False, items=[
            t.CompletionItem(label=label, kind=kinds[kind], detail=detail)
            for label, kind, detail in items])

    @server.feature(t.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls, params: t.DocumentFormattingParams):
        a = current(params.text_document.uri)
        new = a.formatted()
        if new is None or new == a.text:
            return []
        lines = a.text.split("\n")
        end = t.Position(len(lines) - 1, len(lines[-1]))
        return [t.TextEdit(range=t.Range(t.Position(0, 0), end), new_text=new)]

    return server
