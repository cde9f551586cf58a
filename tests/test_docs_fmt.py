"""Every ``topo`` code block in the README and docs/ is a whole file in ``topoc fmt``'s layout:
``fmt --check`` (the README's CI step) passes on what the docs teach, so users who copy the
docs' style are not told to reformat it."""

from __future__ import annotations

import re

import pytest

from topoc.cli import main
from topoc.compiler.lang.fmt import fmt

from .conftest import ROOT

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```", re.S | re.M)


def _blocks():
    """(path:line, info string, text) of every fenced code block of the README and docs/."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        for m in _FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            yield f"{path.relative_to(ROOT)}:{line}", m.group(1).strip(), m.group(2)


TOPO = [(where, body) for where, info, body in _blocks() if info.split()[:1] == ["topo"]]


def test_the_docs_have_topo_blocks_and_label_them_plainly():
    assert len(TOPO) >= 20
    # a block is a whole file: no fragment or other qualifier that the check would skip
    assert [w for w, info, _ in _blocks() if info.startswith("topo") and info != "topo"] == []


@pytest.mark.parametrize("where,body", TOPO, ids=[w for w, _ in TOPO])
def test_every_topo_block_passes_fmt_check(where, body):
    assert fmt(body, where) == body


def test_fmt_check_from_the_command_line_on_the_docs_blocks(tmp_path, capsys):
    """The CLI's ``--check``, as the README's CI step runs it, on every block at once."""
    paths = []
    for i, (_, body) in enumerate(TOPO):
        path = tmp_path / f"block{i}.topo"
        path.write_text(body)
        paths.append(str(path))
    assert main(["fmt", "--check", *paths]) == 0, capsys.readouterr()
