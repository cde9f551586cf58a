"""docs/library.md is the library's own list: regenerating it gives the committed file, it
names every declaration of every library file, with the figures the declarations give."""

from __future__ import annotations

import re

import pytest

import topoc
from topoc.backends.library_doc import COMMAND, render
from topoc.cli import main
from topoc.compiler.lang.resolve import library_root

from ..conftest import ROOT

DOC = ROOT / "docs/library.md"


@pytest.fixture(scope="module")
def text() -> str:
    return render()


def test_committed_file_is_what_the_generator_writes(text):
    assert DOC.read_text(encoding="utf-8") == text, (
        f"docs/library.md is stale: the library changed; regenerate it with `{COMMAND}`")


def test_every_declaration_of_every_library_file_is_listed(text):
    """Read with a regular expression, not with the catalog the generator uses."""
    declared = re.compile(r"^(device|link|group|model)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)
    files = sorted(library_root().rglob("*.topo"))
    assert len(files) >= 30
    for path in files:
        rel = path.relative_to(library_root()).as_posix()
        assert f"\n## {rel}\n" in text, rel
        section = text.split(f"\n## {rel}\n", 1)[1].split("\n## ", 1)[0]
        for what, name in declared.findall(path.read_text(encoding="utf-8")):
            assert re.search(rf"^\| `{name}` \|", section, re.M), (rel, what, name)
            assert f"| `{name}` | {what} |" in text, (rel, name)   # the index


def row(text: str, name: str) -> str:
    return next(line for line in text.splitlines()
                if line.startswith(f"| `{name}` |") and "| device |" not in line
                and "| link |" not in line and "| group |" not in line
                and "| model |" not in line)


def test_key_figures_and_sources(text):
    assert "3.35 TB/s HBM bandwidth" in row(text, "H100")
    assert "dense TFLOPS 989 BF16, 1,979 FP8" in row(text, "H100")
    assert "800 Gb/s per port" in row(text, "QX800") and "infiniband 144" in row(text, "QX800")
    assert row(text, "ndr").startswith("| `ndr` | infiniband | 400 Gb/s (50 GB/s) | 300 ns |")
    assert "gpu (from `B300`)" in row(text, "B300_GB300")
    assert "G: gpu = H100" in row(text, "DGXH100")
    assert "8 H100, 4 NVSwitch3, 2 Xeon8480C, 8 CX7, 8 CX7Switch" in row(text, "DGXH100")
    assert "70.55 B" in row(text, "llama3_70b")
    assert "- `QX800` (line " in text and "Quantum-X800 Q3400" in text
    assert "System: `system dgx : DGXH100(G = H200)`" in text


def test_no_internal_paths(text):
    private = ("shared" + "/", "design" + ".md")       # spelled apart: the links test reads
    assert not any(word in text for word in private)   # every file for these words


def test_cli_and_api_give_the_same_text(text, tmp_path, capsys):
    assert main(["library"]) == 0
    assert capsys.readouterr().out == text
    out = tmp_path / "library.md"
    assert main(["library", "--format", "md", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == text
    assert topoc.library_reference() == text


def test_errors_point_at_the_file(text):
    from topoc.compiler.lang.closest import LIBRARY_DOC
    assert (ROOT / LIBRARY_DOC) == DOC
