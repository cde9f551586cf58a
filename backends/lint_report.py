"""``topoc lint --format text|json|github|sarif``: diagnostics for people and for CI systems."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from ..compiler.base.diagnostics import Diagnostic, render_all
from ..compiler.lint.rules import RULES

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_SARIF_LEVEL = {"error": "error", "warning": "warning", "note": "note"}
_GITHUB_LEVEL = {"error": "error", "warning": "warning", "note": "notice"}


def text(found: Sequence[Diagnostic]) -> str:
    """rustc/ruff-style text: each finding with its source line and carets, then a count."""
    if not found:
        return ""
    counts = Counter(d.severity for d in found)
    tally = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in sorted(counts.items()))
    return render_all(found, cap=len(found)) + f"\nfound {tally}\n"


def as_json(found: Sequence[Diagnostic]) -> str:
    """``topoc.lint/1``: one object per finding, with its span and notes."""
    return json.dumps({"schema": "topoc.lint/1", "diagnostics": [
        {"path": d.span.path, "line": d.span.line, "col": d.span.col,
         "end_line": d.span.end_line or d.span.line, "end_col": d.span.end_col or d.span.col,
         "code": d.code, "severity": d.severity, "message": d.message,
         "notes": [{"message": n.message, "path": n.span.path if n.span else None,
                    "line": n.span.line if n.span else None} for n in d.notes]}
        for d in found]}, indent=1) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(found: Sequence[Diagnostic]) -> str:
    """GitHub Actions workflow commands: ``::error file=...,line=...,col=...,title=CODE::msg``."""
    lines = []
    for d in found:
        props = [f"file={_escape_property(d.span.path)}", f"line={d.span.line}",
                 f"col={d.span.col}"]
        if d.span.end_line == d.span.line and d.span.end_col > d.span.col:
            props.append(f"endColumn={d.span.end_col}")
        props.append(f"title={_escape_property(d.code)}")
        lines.append(f"::{_GITHUB_LEVEL[d.severity]} {','.join(props)}::"
                     f"{_escape_data(d.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def sarif(found: Sequence[Diagnostic], version: str) -> str:
    """SARIF 2.1.0 for code scanning: the rules used, one result per finding."""
    used = sorted({d.code for d in found})
    rules = [{"id": code, "shortDescription": {"text": RULES[code].summary if code in RULES
                                               else "topoc compile error"},
              "helpUri": f"docs/{'rules' if code in RULES else 'errors'}.md#{code.lower()}"}
             for code in used]
    results = []
    for d in found:
        region = {"startLine": d.span.line, "startColumn": d.span.col}
        if d.span.end_line:
            region.update(endLine=d.span.end_line, endColumn=max(d.span.end_col, d.span.col))
        results.append({"ruleId": d.code, "ruleIndex": used.index(d.code),
                        "level": _SARIF_LEVEL[d.severity], "message": {"text": d.message},
                        "locations": [{"physicalLocation": {
                            "artifactLocation": {"uri": d.span.path.replace("\\", "/")},
                            "region": region}}]})
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "topoc", "version": version, "rules": rules}},
        "results": results}]}, indent=1) + "\n"
