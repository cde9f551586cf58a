"""Lint: compile errors plus the rule catalogue, filtered by configuration and suppressions.

Configuration comes from ``[tool.topoc.lint]`` in the nearest ``pyproject.toml`` above the linted
file, then from the command line::

    [tool.topoc.lint]
    select = ["W4", "W5"]          # codes or prefixes; default: every rule that is not off
    ignore = ["W404"]
    strict = false                 # warnings fail the run too
    [tool.topoc.lint.severity]
    W503 = "error"                 # error, warning, note or off
    [tool.topoc.lint.options]
    W503 = { threshold = 0.3 }

A finding is suppressed by a comment on its line: ``# topoc: ignore[W402] why``; a suppression
that suppresses nothing is reported itself (W400).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..base.diagnostics import (ERROR, NOTE, WARNING, CompileError, Diagnostic, Note, Source, Span,
                          suggest)
from ..base.gcpause import gc_paused
from ..ir.system import System
from .rules import RULES
from ..lang import pipeline
from ..base import reading
from ..lang.verify import ORIGIN, at_user_line, verify

SEVERITIES = (ERROR, WARNING, NOTE, "off")
_SUPPRESS = re.compile(r"#\s*topoc:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")


class ConfigError(ValueError):
    """A configuration (or --select/--ignore) that names no rule or setting."""


@attrs.frozen
class LintConfig:
    """Which rules run, at which severity, with which options."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: tuple[tuple[str, str], ...] = ()
    options: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    strict: bool = False

    def merged(self, select=(), ignore=(), strict=False) -> LintConfig:
        """This configuration with command-line choices on top."""
        return attrs.evolve(self, select=tuple(select) or self.select,
                            ignore=self.ignore + tuple(ignore), strict=self.strict or strict)

    def level(self, code: str) -> str:
        """The severity a code reports at ('off' when it does not run). Compile errors (not in
        the catalogue) are always errors; a rule that is off by default runs as a note when
        selected explicitly."""
        if code not in RULES:
            return ERROR
        configured = dict(self.severity)
        level = configured.get(code, RULES[code].severity)
        selected = any(code.startswith(p) for p in self.select)
        if self.select and not selected:
            return "off"
        if selected and level == "off" and code not in configured:
            level = NOTE
        if any(code.startswith(p) for p in self.ignore):
            return "off"
        return level

    def rule_options(self, code: str) -> dict[str, float]:
        """Thresholds of one rule: its defaults, then configured values."""
        return {**dict(RULES[code].options), **dict(dict(self.options).get(code, ()))}


def _known(code_or_prefix: str) -> bool:
    return code_or_prefix.startswith("E") or any(c.startswith(code_or_prefix) for c in RULES)


def check_codes(codes: Iterable[str], what: str) -> None:
    """Refuse codes or prefixes that match no rule (with a suggestion)."""
    for code in codes:
        if not _known(code):
            raise ConfigError(f"{what}: '{code}' matches no rule" + suggest(code, RULES))


def find_config(start: Path) -> LintConfig:
    """``[tool.topoc.lint]`` from the nearest pyproject.toml at or above ``start``."""
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.is_file():
            try:
                data = tomllib.loads(reading.read_text(path, 2**20))
            except (OSError, UnicodeDecodeError, ValueError) as exc:   # TOML, size, encoding
                raise ConfigError(f"{path}: cannot read it: {exc}") from None
            section = data.get("tool", {})
            for key in ("topoc", "lint"):
                section = section.get(key) if isinstance(section, dict) else None
            if section is not None:
                where = f"{path}: [tool.topoc.lint]"
                if not isinstance(section, dict):
                    raise ConfigError(f"{where} must be a table")
                return parse_config(section, where)
    return LintConfig()


def _codes(section: dict, key: str, where: str) -> tuple[str, ...]:
    """``select``/``ignore``: a list of code strings (one string is taken as a list of one)."""
    value = section.get(key, ())
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
        raise ConfigError(f"{where}: {key} must be a list of codes, as {key} = [\"W4\", "
                          f"\"W501\"], not {value!r}")
    return tuple(value)


def parse_config(section: dict[str, Any], where: str = "config") -> LintConfig:
    """A LintConfig from the ``[tool.topoc.lint]`` table, every key checked."""
    allowed = {"select", "ignore", "strict", "severity", "options"}
    for key in section:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key '{key}'" + suggest(key, allowed))
    select, ignore = _codes(section, "select", where), _codes(section, "ignore", where)
    check_codes(select, f"{where}: select")
    check_codes(ignore, f"{where}: ignore")
    if not isinstance(section.get("strict", False), bool):
        raise ConfigError(f"{where}: strict must be true or false, not "
                          f"{section['strict']!r}")
    severity = section.get("severity", {})
    if not isinstance(severity, dict) or not all(isinstance(v, str) for v in severity.values()):
        raise ConfigError(f"{where}: severity must be a table of CODE = \"error\" | "
                          "\"warning\" | \"note\" | \"off\"")
    if not isinstance(section.get("options", {}), dict) or not all(
            isinstance(v, dict) for v in section.get("options", {}).values()):
        raise ConfigError(f"{where}: options must be a table of tables, as "
                          "[tool.topoc.lint.options.W405] max_ratio = 2")
    for code, level in severity.items():
        if code not in RULES:
            raise ConfigError(f"{where}: severity for unknown rule '{code}'" + suggest(code, RULES))
        if level not in SEVERITIES:
            raise ConfigError(f"{where}: severity '{level}' for {code} is not one of "
                              f"{', '.join(SEVERITIES)}")
    options = []
    for code, values in section.get("options", {}).items():
        if code not in RULES:
            raise ConfigError(f"{where}: options for unknown rule '{code}'" + suggest(code, RULES))
        known = dict(RULES[code].options)
        for key, value in values.items():
            if key not in known:
                raise ConfigError(f"{where}: {code} has no option '{key}'" + suggest(key, known))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value):
                raise ConfigError(f"{where}: {code}.{key} must be a finite number")
        options.append((code, tuple(sorted(values.items()))))
    return LintConfig(select, ignore, tuple(sorted(severity.items())), tuple(sorted(options)),
                      bool(section.get("strict", False)))


@gc_paused()
def rule_findings(system: System, config: LintConfig) -> list[Diagnostic]:
    """Every enabled rule's findings at their configured severity (the collector paused, as
    in ``lint_system``: the rules' tables are many small objects that live on)."""
    out = []
    for code in sorted(RULES):
        level = config.level(code)
        if level == "off":
            continue
        for f in RULES[code].check(system, config.rule_options(code)):
            out.append(at_user_line(system, Diagnostic(f.code, level, f.message, f.span,
                                                        f.notes), f.subject))
    return out


def _suppressions(source: Source) -> dict[int, tuple[set[str] | None, Span]]:
    """Line -> (codes or None for all, span of the comment)."""
    out = {}
    for n, line in enumerate(source.lines, start=1):
        m = _SUPPRESS.search(line)
        if m:
            codes = None if m.group(1) is None else \
                {c.strip() for c in m.group(1).split(",") if c.strip()}
            out[n] = (codes, Span(source, n, m.start() + 1, n, m.end() + 1))
    return out


def apply_suppressions(found: Sequence[Diagnostic], root: Source | None,
                       config: LintConfig) -> list[Diagnostic]:
    """Drop suppressed findings; report the root file's suppressions that matched nothing."""
    tables: dict[int, dict] = {}
    used: set[tuple[str, int]] = set()
    kept = []
    for d in found:
        # a suppression on the user's line, or on the library line the finding comes from
        places = [d.span] + [n.span for n in d.notes if n.message == ORIGIN and n.span]
        for span in places:
            table = tables.setdefault(id(span.source), _suppressions(span.source))
            entry = table.get(span.line)
            if entry and d.severity != ERROR and (entry[0] is None or d.code in entry[0]):
                used.add((span.source.path, span.line))
                break
        else:
            kept.append(d)
    if root is not None and config.level("W400") != "off":
        for line, (codes, span) in sorted(_suppressions(root).items()):
            if (root.path, line) not in used:
                what = ", ".join(sorted(codes)) if codes else "anything"
                kept.append(Diagnostic("W400", config.level("W400"),
                                       f"this suppression of {what} suppresses nothing", span))
    return kept


@gc_paused()
def lint_system(system: System, config: LintConfig = LintConfig()) -> list[Diagnostic]:
    """Port-budget errors and rule findings of a compiled system (no suppression applied)."""
    return verify(system) + rule_findings(system, config)


def lint_file(path: str | os.PathLike, config: LintConfig | None = None,
              defines=None, import_roots=(), cache: bool = False,
              notes: list[str] | None = None) -> list[Diagnostic]:
    """Everything lint reports for one file: compile errors, else rule findings, suppressed
    as the comments say, sorted by position. With ``cache``, the System comes from the
    compiled-system cache when it holds it, and is stored there when it has no error
    (``pipeline.load``; ``notes`` as there)."""
    config = config if config is not None else find_config(Path(path).resolve())
    try:
        text = pipeline.read(path)
    except (OSError, UnicodeDecodeError) as exc:
        return [unreadable(path, exc)]
    except CompileError as exc:
        return list(exc.diagnostics)
    try:
        program = pipeline.front_end(text, path, import_roots)
        root = program.root_span.source
        system = pipeline.cached(program, defines, notes) if cache and program.systems \
            else None
        hit = system is not None
        if system is None:
            system = pipeline.lower(program, defines)
    except CompileError as exc:
        return sorted(exc.diagnostics, key=Diagnostic.sort_key)
    if system is None:     # a file of declarations: what its declarations say
        shadows = [attrs.evolve(d, severity=config.level(d.code)) for d in program.notes
                   if config.level(d.code) != "off"]
        return sorted([library_note(program), *shadows], key=Diagnostic.sort_key)
    if cache and not hit:
        pipeline.store(program, defines, system)        # when verify finds no error
    found = lint_system(system, config)
    found = [d for d in found if d.severity == ERROR or config.level(d.code) != "off"]
    return sorted(apply_suppressions(found, root, config), key=Diagnostic.sort_key)


#: What a file of declarations only has, in the order the note names them.
_DECLARED = (("link_types", "link type"), ("device_models", "device model"),
             ("groups", "group"), ("models", "model"))


def library_note(program: pipeline.Program) -> Diagnostic:
    """E150 as a note: a file with no ``system`` (a library of declarations) is checked as far
    as its declarations go, and lint says so and how many of the file's own it checked, where
    the verbs that need a system (compile, render, the analyses) stop with error E150."""
    path = program.root_span.path
    counts = [(sum(1 for v in getattr(program, field).values() if v.span is not None
                   and v.span.path == path), what) for field, what in _DECLARED]
    total = sum(n for n, _ in counts)
    said = ", ".join(f"{n} {what}{'s' if n != 1 else ''}" for n, what in counts if n)
    return Diagnostic("E150", NOTE, f"declares no system: checked {total} declaration"
                      f"{'s' if total != 1 else ''}{f' ({said})' if said else ''}; compile, "
                      "render and the analyses need 'system NAME : Group'", program.root_span)



def unreadable(path: str | os.PathLike, exc: Exception) -> Diagnostic:
    """E105 for a file lint cannot read (missing, a folder, not UTF-8): one finding of that
    file, so a CI run still reports every other file. For text that is not UTF-8, at the
    first bad byte."""
    name = os.fspath(path)
    line = col = 1
    if isinstance(exc, UnicodeDecodeError):
        data = exc.object[:exc.start]
        line = data.count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n") + 1) + 1
        why = (f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); save the file as "
               "UTF-8")
    else:
        why = getattr(exc, "strerror", None) or str(exc)
    return Diagnostic("E105", ERROR, f"cannot read the file: {why}",
                      Span(Source(name, ""), line, col, 0, 0))
