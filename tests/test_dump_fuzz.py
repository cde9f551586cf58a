"""The issue-44 campaign kept: mutated real dumps (tests/fixtures) through every importer, the
generated .topo back through the compiler and the language server, every cluster export and
``diff``; and mutated host patterns through every export. Whatever the mutation, the answer is
a result or an ImportFailure/CompileError/an export's refusal, in bounded time, and no output
line of any export is one its tool's grammar does not have (no injected line, no control
character).

Marked ``fuzz`` (deselected by default): ``pytest -m fuzz tests/test_dump_fuzz.py``. Cases per
fixture: ``TOPOC_FUZZ_CASES`` (default 150); the whole run stops adding cases after
``TOPOC_FUZZ_SECONDS`` (default 900), as a nightly job with a time budget wants. The issue's
generated corpus of 2,000 dumps and 2,000 .topo files, each knowing the hosts it put in, with
the language server over stdio and a 3 GB cap, is tests/test_hostile_corpus.py."""

from __future__ import annotations

import os
import random
import re
import time
from pathlib import Path

import pytest

from topoc.backends import ibsim, k8s, names, slurm
from topoc.compiler.analysis.diff import DiffError, diff
from topoc.compiler.analysis.fabric import fabric
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.ir.hosts import HostnameError
from topoc.importers import ImportFailure
from topoc.importers.base import compile_imported
from topoc.importers.detect import to_topo
from topoc.lsp import Analysis

from .conftest import deadline
# what no export may hold, and every line each export may write: one definition for both
# campaigns
from .hostile_corpus import CONTROL, LINES, TOPO

FIX = Path(__file__).resolve().parent / "fixtures"
DUMPS = sorted(p for d in ("hwloc", "ibnetdiscover", "nccl") for p in (FIX / d).iterdir()
               if p.suffix in (".xml", ".txt"))
CASES = int(os.environ.get("TOPOC_FUZZ_CASES", "150"))
BUDGET = float(os.environ.get("TOPOC_FUZZ_SECONDS", "900"))
SECONDS = 20
START = time.monotonic()
HOSTILE = ['"', "\\", "\n", "\r", "\x1b]0;x\x07", "\u2028", "\u202e", "{node}", "{", "}",
           "&#10;", "&#13;", "&quot;", "' - '", "#", " ", "\t", "\x00", "\\n", "\"]"]


_ATTRIBUTE = re.compile(r'=\s*"([^"<]{0,200})"')


def _xml_escape(value: str) -> str:
    """``value`` as an XML attribute's text (what XML 1.0 cannot carry dropped)."""
    value = "".join(c for c in value if c in "\t\n\r" or ord(c) >= 0x20)
    return (value.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
            .replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;"))


def mutate(text: str, rng: random.Random) -> str:
    """One to four edits: a hostile string inserted, a line duplicated, deleted or truncated,
    a run of bytes flipped, a number replaced by text or a huge value, an XML attribute's value
    replaced by hostile text (escaped, so the XML stays well-formed)."""
    for _ in range(rng.randint(1, 4)):
        if not text:
            break
        at = rng.randrange(len(text))
        kind = rng.randrange(8)
        values = list(_ATTRIBUTE.finditer(text)) if kind >= 6 else []
        if values:                           # an XML attribute's value, still well-formed XML
            m = rng.choice(values)
            value = "".join(rng.choice(HOSTILE + ["a", "9", "-", "."]) for _ in range(6))
            text = text[:m.start(1)] + _xml_escape(value) + text[m.end(1):]
        elif kind == 0:
            text = text[:at] + rng.choice(HOSTILE) * rng.randint(1, 3) + text[at:]
        elif kind == 1:
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind == 2:
            lines = text.split("\n")
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
        elif kind == 3:
            text = text[:at]
        elif kind == 4:
            text = text[:at] + "".join(chr(rng.randrange(32, 0x2100)) for _ in range(4)) + \
                text[at + 4:]
        else:
            text = re.sub(r"\d+", lambda m: rng.choice(["x", "nan", "9" * 30, "-1", "0"]),
                          text, count=1) if at % 2 else text.replace('"', '"' + rng.choice(
                              HOSTILE), 1)
    return text


def exports_are_clean(system) -> None:
    """Every cluster export of ``system`` either refuses or writes only its tool's lines."""
    fab = fabric(system)
    renders = {"slurm": [lambda: slurm.render(fab, "tree"), lambda: slurm.render(fab, "block")],
               "k8s": [lambda: k8s.render(fab)], "ibsim": [lambda: ibsim.render_ibsim(fab)],
               "ibdiagnet": [lambda: ibsim.render_ibdiagnet(fab)]}
    for tool, calls in renders.items():
        for call in calls:
            try:
                text = call()
            except (slurm.ExportError, ibsim.ExportError, names.InvalidName):
                continue
            assert not CONTROL.search(text), (tool, text)
            for line in text.rstrip("\n").split("\n"):
                assert LINES[tool].fullmatch(line), (tool, line)
    try:                                     # yaml: one record per line, no control character
        text = slurm.render(fab, "tree", "yaml")
        assert not CONTROL.search(text)
    except (slurm.ExportError, names.InvalidName):
        pass


def one(path: Path, text: str) -> bool:
    """Import ``text`` as ``path``; when it imports, the language server, every export and
    diff. Whether it got as far as the exports."""
    with deadline(SECONDS):
        try:
            kind, topo, _ = to_topo(text, str(path))
            if kind == "topo":
                return False
            system = compile_imported(topo, str(path), kind)
        except (ImportFailure, CompileError):
            return False
        assert Analysis(topo, "imported.topo").diagnostics is not None
        exports_are_clean(system)
        try:
            diff(system, system)
        except (DiffError, HostnameError):
            pass
    return True


@pytest.mark.fuzz
@pytest.mark.parametrize("path", DUMPS, ids=lambda p: p.name)
def test_mutated_dumps_through_every_importer_and_export(path):
    original = path.read_text()
    reached = 0
    for seed in range(CASES):
        if time.monotonic() - START > BUDGET:
            pytest.skip(f"time budget of {BUDGET:g} s spent")
        reached += one(path, mutate(original, random.Random(f"{path.name}:{seed}")))
    if one(path, original):                  # a dump that imports: mutants reach the exports
        assert reached > 0


@pytest.mark.fuzz
def test_mutated_host_patterns_through_every_export():
    from topoc.compiler.lang import emit, pipeline
    rng = random.Random(44)
    for _ in range(CASES * 4):
        if time.monotonic() - START > BUDGET:
            pytest.skip(f"time budget of {BUDGET:g} s spent")
        pattern = mutate("n{node:02}-x", rng)
        text = TOPO.replace("PATTERN", emit.string(pattern))
        with deadline(SECONDS):
            try:
                system = pipeline.compile(text, "p.topo")
            except CompileError:
                continue
            assert Analysis(text, "p.topo").diagnostics is not None
            exports_are_clean(system)
