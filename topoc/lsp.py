"""``topoc lsp``: a language server for .topo files over stdio (pygls).

Diagnostics as you type, with the compiler's codes and spans (errors, then lint findings when
the file compiles); hover with a name's resolved figures (a link type's class, bandwidth and
latency; a device model's attributes and ports; a group's parameters and members; a model's
parameter count); go to definition across ``use`` imports and into the bundled library;
completion of link types, device models, groups, models and the system's parameters; and
formatting with ``topoc fmt``. The analysis (``Analysis``) is plain Python, independent of
pygls, so it is tested directly and through the protocol.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import attrs

from .compiler.lang import syntax as s
from .compiler.base.diagnostics import CompileError, Diagnostic, Span
from .compiler.lang.resolve import Program
from .compiler.base.units import BYTES, RATE, SECONDS, human

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
USE = re.compile(r'\s*use\s+"([^"]*)"')
KEYWORDS = ("use", "link", "device", "model", "group", "let", "host", "system", "parallel", "on",
            "traffic", "auto", "true", "false")


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
        return Found(d.code, 1, f"in the imported file {d.span.location()}: {d.message}",
                     (line, 0), (line, 10_000))
    start, end = _range(d.span)
    message = d.message + "".join(f"\n{n.span.location()}: note: {n.message}" for n in d.notes)
    return Found(d.code, 1 if d.severity == "error" else 2, message, start, end)


def _q(value, dim) -> str:
    return human(value, dim) if isinstance(value, (int, float)) else str(value)


def describe(decl) -> str:
    """A declaration's resolved figures as Markdown."""
    from .compiler.ir.system import DeviceModel, LinkType, Transformer
    if isinstance(decl, LinkType):
        lines = [f"**link {decl.name}** : {decl.cls}, {human(decl.bandwidth, RATE)} per lane per "
                 f"direction, latency {human(decl.latency, SECONDS)}"]
        lines += [f"- {k} = {v}" for k, v in decl.attrs]
        return "\n".join(lines)
    if isinstance(decl, DeviceModel):
        dims = {"hbm": BYTES, "memory": BYTES, "hbm_bandwidth": RATE, "memory_bandwidth": RATE,
                "rate": RATE}
        lines = [f"**device {decl.name}** : {decl.kind}"]
        lines += [f"- {k} = {_q(v, dims[k]) if k in dims else v}" for k, v in decl.attrs]
        lines += [f"- ports.{c} = {n}" for c, n in decl.ports]
        return "\n".join(lines)
    if isinstance(decl, Transformer):
        from .compiler.training.model import parameters
        p = parameters(decl)
        return (f"**model {decl.name}**: {p['total'] / 1e9:.2f} B parameters "
                f"({p['active'] / 1e9:.2f} B active), {decl.layers} layers, hidden {decl.hidden},"
                f" {decl.heads} heads ({decl.kv_heads} key/value), seq {decl.seq}, vocab "
                f"{decl.vocab}" + (f", {decl.experts} experts, top-{decl.top_k}"
                                   if decl.experts else ""))
    if isinstance(decl, s.GroupDecl):
        params = ", ".join(f"{q.name}: {q.type}" for q in decl.params)
        members = [st for st in decl.body if isinstance(st, s.Instance)]
        lines = [f"**group {decl.name}**" + (f"({params})" if params else "")]
        lines += [f"- {m.name}: {m.target}" for m in members[:12]]
        return "\n".join(lines)
    return str(decl)


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
    kinds = {"link": t.CompletionItemKind.Interface, "device": t.CompletionItemKind.Class,
             "group": t.CompletionItemKind.Module, "model": t.CompletionItemKind.Struct,
             "parameter": t.CompletionItemKind.Variable, "keyword": t.CompletionItemKind.Keyword}

    def analyse(uri: str) -> Analysis:
        doc = server.workspace.get_text_document(uri)
        a = Analysis(doc.source, uri_to_path(uri))
        docs[uri] = a
        return a

    def publish(uri: str) -> None:
        debouncer.submit(uri)       # analysed on the worker thread after a quiet moment

    def send(uri: str) -> None:
        a = analyse(uri)
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
        """The latest analysis, waiting a moment for a pending one (lsp_io.WAIT)."""
        debouncer.wait(uri)
        return docs.get(uri) or Analysis("", uri_to_path(uri))

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
                    t.CompletionOptions(trigger_characters=[":", "=", "("]))
    def completion(ls, params: t.CompletionParams):
        items = ask(params, "completions")
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
