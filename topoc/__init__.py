"""topoc: a declarative language and compiler for GPU system topologies.

>>> import topoc
>>> system = topoc.load("library/nvidia/gb200_nvl72.topo")   # doctest: +SKIP
>>> topoc.summary(system)["devices"]                           # doctest: +SKIP
{'cpu': 36, 'gpu': 72, 'nic': 72, 'switch': 18}
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from .compiler.diagnostics import CompileError, Diagnostic
from .compiler.elaborate import elaborate
from .compiler.ir import System
from .compiler.parse import parse
from .compiler.ranks import ranks
from .compiler.resolve import Program, resolve
from .compiler.replay import replay
from .compiler.verify import verify

__version__ = "0.1.0"
__all__ = ["CompileError", "Diagnostic", "System", "check", "compile", "load", "loads",
           "lint", "replay", "__version__"]

PathLike = str | os.PathLike


def compile(text: str, path: PathLike | None = None, defines: Mapping[str, int] | None = None,
            import_roots: Sequence[PathLike] = ()) -> System:
    """Compile .topo source text to a System: the pipeline, one stage after the other.

    ``path`` names the file (for diagnostics and relative imports), ``defines`` overrides
    parameters of the file's system (``-D racks=20``), ``import_roots`` allows more folders for
    imports. Raises ``CompileError`` carrying the diagnostics when the input has errors.
    """
    module = parse(text, _display(path))
    program = resolve(module, path, import_roots)
    system = elaborate(program, defines)
    system = ranks(program, system)
    errors = verify(system)
    if errors:
        raise CompileError(errors)
    return system


def load(path: PathLike, defines: Mapping[str, int] | None = None,
         import_roots: Sequence[PathLike] = ()) -> System:
    """Read and compile one .topo file (see ``compile``)."""
    return compile(_read(path), path, defines, import_roots)


def loads(text: str, defines: Mapping[str, int] | None = None,
          import_roots: Sequence[PathLike] = ()) -> System:
    """Compile .topo text that has no file; imports resolve from the current folder."""
    return compile(text, None, defines, import_roots)


def check(path: PathLike, defines: Mapping[str, int] | None = None,
          import_roots: Sequence[PathLike] = ()) -> list[Diagnostic]:
    """Every error diagnostic for one file, [] when it is clean. A file with no ``system``
    (a library of declarations) is checked as far as its declarations go."""
    try:
        text = _read(path)
        module = parse(text, _display(path))
        program: Program = resolve(module, path, import_roots)
        if not program.systems:
            return []
        system = ranks(program, elaborate(program, defines))
        return verify(system)
    except CompileError as exc:
        return list(exc.diagnostics)


def lint(path: PathLike, config=None, defines: Mapping[str, int] | None = None,
         import_roots: Sequence[PathLike] = ()) -> list[Diagnostic]:
    """Compile errors, or else the rule catalogue's findings, for one file, filtered by its
    ``[tool.topoc.lint]`` configuration and ``# topoc: ignore[...]`` comments (docs/rules.md)."""
    from .compiler.lint import lint_file
    return lint_file(path, config, defines, import_roots)


def _lint_pipeline(path: PathLike, defines, import_roots):
    """The pipeline as lint runs it: a file without a system stops after its declarations."""
    module = parse(_read(path), _display(path))
    program = resolve(module, path, import_roots)
    if not program.systems:
        return None, module.span.source
    return ranks(program, elaborate(program, defines)), module.span.source


def summary(system: System) -> dict:
    """Counts per kind, HBM, scale-up and scale-out figures (``compiler.summary``)."""
    from .compiler.summary import summarize
    return summarize(system)


def groups(system: System, kind: str, parallel: str | None = None):
    """The rank groups of one dimension (tp, cp, ep, dp, pp) of a strategy, as RankGroups
    named ``kind:index``; ``parallel`` may be omitted when the file has one strategy."""
    from .compiler.ranks import groups as rank_groups
    return rank_groups(system, kind, parallel)


def schedule(system: System, collective: str, group=None, *, ranks: str | None = None,
             algorithm: str = "auto", nbytes: int = 2**30, **options):
    """Plan ``collective`` on ``group`` (a RankGroup, a spec like ``'dp:0'`` or ``'world'``)
    or on ``ranks`` (``'0..7,16'``); see ``compiler.schedule.schedule`` for the options."""
    from .compiler.ranks import select_group
    from .compiler.schedule import schedule as plan
    if group is None or isinstance(group, str):
        group = select_group(system, group, options.pop("parallel", None), ranks)
    return plan(system, group, collective, algorithm, nbytes, **options)


def _read(path: PathLike) -> str:
    """The file's text; OSError and UnicodeDecodeError go to the caller (a usage/I-O error)."""
    return Path(path).read_text(encoding="utf-8")


def _display(path: PathLike | None) -> str:
    return "<input>" if path is None else os.fspath(path)
