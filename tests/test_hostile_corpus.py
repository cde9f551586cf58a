"""The generated hostile corpus (issue 44, ``tests/hostile_corpus.py``): dumps and .topo files
through every importer, the language server over stdio, lint, every cluster export and diff,
in a worker capped at 3 GB with each case under 20 s; no traceback, no host or GPU the
generator did not put in, no line an export's tool does not read.

A deterministic slice of 50 cases runs by default. The whole corpus (2,000 dumps and 2,000
.topo files) is marked ``fuzz``:

    TOPOC_FUZZ_SECONDS=1800 .venv/bin/python -m pytest -m fuzz tests/test_hostile_corpus.py

``TOPOC_CORPUS_CASES`` sets the cases per kind (default 2,000) and ``TOPOC_FUZZ_SECONDS`` the
time budget per kind (default 1,800 s): past it no new case starts and the cases checked so
far must have passed. ``benchmarks/hostile_corpus.py`` runs it and prints the counts."""

from __future__ import annotations

import os
import re

import pytest

from . import hostile_corpus as corpus

pytest.importorskip("pygls")


def _failures(rows: list[dict]) -> list[str]:
    return [f"{r.get('i', 'lsp')} {r.get('label', '')}: {r.get('error', '')}\n{r.get('trace', '')}"
            for r in rows if r.get("outcome") == "FAIL"]


@pytest.mark.parametrize("kind", ["dumps", "topo"])
def test_a_slice_of_the_corpus(kind):
    rows = corpus.run(kind, 25, seed=7)
    assert not _failures(rows), "\n".join(_failures(rows))
    cases = [r for r in rows if "i" in r]
    assert len(cases) == 25
    assert any(r["outcome"] == "exported" for r in cases)     # the slice reaches the exports
    assert any("lsp" in r for r in rows)                      # and the language server


@pytest.mark.fuzz
@pytest.mark.parametrize("kind", ["dumps", "topo"])
def test_the_whole_corpus(kind):
    n = int(os.environ.get("TOPOC_CORPUS_CASES", "2000"))
    budget = float(os.environ.get("TOPOC_FUZZ_SECONDS", "1800"))
    rows = corpus.run(kind, n, budget=budget)
    assert not _failures(rows), "\n".join(_failures(rows))


def test_the_corpus_is_deterministic_and_knows_what_it_put_in():
    a, b = corpus.dumps(60), corpus.dumps(60)
    assert a == b and corpus.topo_files(30) == corpus.topo_files(30)
    labels = {c.label for c in a}
    assert {"hwloc", "ibnetdiscover", "nvidia-smi", "nccl-xml"} <= labels
    assert all(c.hosts for c in a if c.label == "ibnetdiscover")
    text = "".join(c.text for c in a)
    for piece in ['"', "\\", "\u2028", "\x1b"]:
        assert piece in text


def test_hostlist_expansion():
    assert corpus.expand("a[1-3,05],b,c[9]x") == ["a1", "a2", "a3", "a05", "b", "c9x"]


def test_a_host_named_nul_is_equal_to_itself_in_diff():
    """A NUL at the start of a host's name was diff's mark for a left-over HCA: the host's
    cables dropped out of B's side and a dump diffed against itself had differences."""
    from topoc.compiler.analysis.diff import diff
    from topoc.importers.base import compile_imported
    from topoc.importers.ibnetdiscover import from_ibnetdiscover
    dump = "".join(f"CA     0  1 0x{0x100000 + i:016x} 4x NDR - SW     0 {i + 1} "
                   f"0x00000000000a0000 ( '{name} mlx5_0' - 'MF0;leaf:QM9700/U1' )\n"
                   for i, name in enumerate(["\x00", "b"]))
    topo, _ = from_ibnetdiscover(dump, "d.txt")
    system = compile_imported(topo, "d.txt", "ibnetdiscover")
    assert diff(system, system).equal


def test_language_server_messages_escape_control_characters():
    from topoc.lsp import Analysis
    text = 'use "\x1b]0;x\x07links.topo"\nsystem s : Nope\x1b[2J\n'
    found = Analysis(text, "t.topo").diagnostics
    assert found and all(not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", f.message) for f in found)
    assert any("\\x1b" in f.message for f in found)
