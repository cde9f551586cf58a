"""The docs stay true: every code the compiler emits is documented, and examples compile."""

from __future__ import annotations

import re

import topoc
from topoc.compiler.parse import parse

from .conftest import ROOT


def test_every_emitted_code_is_documented():
    source = "\n".join(p.read_text() for p in (ROOT / "compiler").glob("*.py"))
    emitted = set(re.findall(r'"(E\d{3})"', source))
    documented = set(re.findall(r"^\| (E\d{3}) \|", (ROOT / "docs/errors.md").read_text(), re.M))
    assert emitted and emitted <= documented, emitted - documented


def _blocks(path):
    return re.findall(r"```topo\n(.*?)```", path.read_text(), re.S)


def test_readme_example_compiles():
    (block,) = _blocks(ROOT / "README.md")
    system = topoc.loads(block)
    assert len(system.gpus) == 72
    assert topoc.summary(system)["scaleup_bandwidth"] == 129.6e12


def test_language_reference_examples_parse():
    blocks = _blocks(ROOT / "docs/language.md")
    assert len(blocks) >= 6
    for block in blocks:
        parse(block, "doc.topo")
