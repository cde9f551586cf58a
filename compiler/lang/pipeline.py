"""The pipeline: .topo text to a checked System, one stage after the other.

Every caller runs these functions: the package front (``topoc.compile``/``load``/``check``),
the CLI, lint, the language server, the plan workers (process pool and Ray) and the report.
``front_end`` stops at the resolved program (what hover and definition need), ``lower`` builds
the System from it (elaborate, then the parallel blocks), ``compile`` adds verification.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ..base import reading
from ..base.diagnostics import CompileError, Diagnostic, Source, Span, error
from ..ir.system import System
from .elaborate import elaborate
from .parse import parse
from .ranks import ranks
from . import syscache
from .resolve import Program, resolve
from .verify import verify

PathLike = str | os.PathLike


def display(path: PathLike | None) -> str:
    """The name diagnostics give a source: its path as given, or ``<input>``."""
    return "<input>" if path is None else os.fspath(path)


def read(path: PathLike) -> str:
    """A source file's text, read through the bounded reader: past the size limit, E290 (a
    ``CompileError``) without reading more; OSError and UnicodeDecodeError go to the caller
    (an I/O error). A UTF-8 byte-order mark is dropped."""
    try:
        return reading.read_text(path)
    except reading.TooLarge as exc:
        raise CompileError([too_large(display(path), exc)]) from None


def too_large(path: str, exc: reading.TooLarge, span=None) -> Diagnostic:
    """E290 for an input the bounded reader stopped reading (at ``span``, else the file's
    start)."""
    return error("E290", f"file is larger than the limit of {exc.limit} bytes; nothing past "
                 "it was read", span or Span(Source(path, ""), 1, 1, 0, 0))


def front_end(text: str, path: PathLike | None = None,
              import_roots: Sequence[PathLike] = ()) -> Program:
    """Parse and resolve: every declaration reachable from ``text``, checked and indexed."""
    return resolve(parse(text, display(path)), path, import_roots)


def lower(program: Program, defines: Mapping[str, int] | None = None) -> System | None:
    """The program's System with its parallel strategies; None for a file with no ``system``
    (a library of declarations)."""
    if not program.systems:
        return None
    return ranks(program, elaborate(program, defines), lenient=bool(defines))


def compile(text: str, path: PathLike | None = None, defines: Mapping[str, int] | None = None,
            import_roots: Sequence[PathLike] = (), cache: bool = False,
            notes: list[str] | None = None, keep: bool = True) -> System:
    """The whole pipeline; raises ``CompileError`` with every diagnostic when the input has
    errors. A file with no system is an error here (elaborate says so). With ``cache``,
    through the compiled-system cache (``syscache``): the System stored for the same sources,
    parameters and code when there is one, else compiled and (unless ``keep`` is False)
    stored; a cache file that could not be used is recompiled and a note saying why is
    appended to ``notes``."""
    program = front_end(text, path, import_roots)
    found = cached(program, defines, notes) if cache else None
    if found is not None:
        return found
    system = ranks(program, elaborate(program, defines), lenient=bool(defines))
    errors = verify(system)
    if errors:
        raise CompileError(errors)
    if cache and keep:
        store(program, defines, system)
    return system


def load(path: PathLike, defines: Mapping[str, int] | None = None,
         import_roots: Sequence[PathLike] = (), cache: bool = False,
         notes: list[str] | None = None) -> System:
    """Read and compile one .topo file (``compile``; ``cache`` and ``notes`` as there)."""
    return compile(read(path), path, defines, import_roots, cache, notes)


def cached(program: Program, defines: Mapping[str, int] | None = None,
           notes: list[str] | None = None) -> System | None:
    """The System the compiled-system cache holds for ``program`` and ``defines`` (checked:
    only systems without errors are stored), or None; a note in ``notes`` when a file was
    there but could not be used."""
    system, note = syscache.load(syscache.key(program.sources, defines))
    if note is not None and notes is not None:
        notes.append(note)
    return system


def store(program: Program, defines: Mapping[str, int] | None, system: System) -> bool:
    """Keep ``system``, lowered from ``program`` with ``defines``, in the compiled-system
    cache when it verifies without error and is large enough to be worth it (``syscache``)."""
    if verify(system):
        return False
    return syscache.save(syscache.key(program.sources, defines), system)


def check(path: PathLike, defines: Mapping[str, int] | None = None,
          import_roots: Sequence[PathLike] = ()) -> list[Diagnostic]:
    """Every error diagnostic for one file, [] when it is clean; a file with no system is
    checked as far as its declarations go."""
    try:
        system = lower(front_end(read(path), path, import_roots), defines)
        return [] if system is None else verify(system)
    except CompileError as exc:
        return list(exc.diagnostics)
