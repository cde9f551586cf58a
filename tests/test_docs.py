"""The docs stay true: every code the compiler emits is documented, and examples compile."""

from __future__ import annotations

import re

import pytest

import topoc
from topoc.compiler.lang.parse import parse

from .conftest import ROOT


def test_every_emitted_code_is_documented():
    source = "\n".join(p.read_text() for p in (ROOT / "compiler").rglob("*.py"))
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


def test_heterogeneous_array_example_compiles_and_per_element_arguments_are_guided():
    from topoc.compiler.base.diagnostics import CompileError
    block = next(b for b in _blocks(ROOT / "docs/language.md") if "group Mixed" in b)
    system = topoc.loads(block)
    assert len(system.gpus) == 2 * 8 + 2 * 4
    assert [g.id for g in system.gpus][16] == "mixed.small0.gpu0"
    wrong = block.replace("  big[2] : Node(gpus = 8)\n  small[2] : Node(gpus = 4)\n",
                          "  big[2] : Node(gpus = 4 + 4 * i)\n").replace(
                              "  small[*].nic <-> leaf : ndr\n", "")
    with pytest.raises(CompileError) as exc:
        topoc.loads(wrong)
    message = exc.value.diagnostics[0].render()
    assert "E114" in message and "one member per variant" in message


def test_training_example_compiles_and_costs():
    from topoc.compiler.analysis.strategy import analyse
    block = next(b for b in _blocks(ROOT / "docs/language.md") if "model tiny_moe" in b)
    system = topoc.loads(block)
    report = analyse(system, "train")
    assert report.strategy.microbatches == 512 and report.fits and report.total > 0


def test_plan_flags_docs_and_readme_agree():
    """Every flag of ``topoc plan`` (and ``report --scaling``) is in docs/plan.md and in the
    README's row for the verb, and every ``--flag`` docs/plan.md names exists."""
    import argparse

    from topoc.cli import plan as plan_cli
    from topoc.cli import report as report_cli
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    plan_cli.add_parser(sub)
    report_cli.add_parser(sub)
    common = {"--help", "--define", "--import-root", "--output", "--fail", "--degrade",
              "--faults"}  # docs/failures.md
    flags = {name: {o for a in p._actions for o in a.option_strings if o.startswith("--")} - common
             for name, p in sub.choices.items()}
    docs = (ROOT / "docs/plan.md").read_text()
    readme = (ROOT / "README.md").read_text()
    rows = {name: next(line for line in readme.splitlines()
                       if line.startswith(f"| `topoc {name} FILE")) for name in flags}
    for flag in sorted(flags["plan"]):
        assert flag in docs, flag
    assert "--scaling" in docs and "report" in docs
    for name, row in rows.items():
        wanted = flags[name] - {"--parallel", "--jobs", "--ray", "--no-cache", "--gpus"}
        missing = {f for f in wanted if f not in row}
        # the README row lists the choices by their flags; fixed dimensions are listed once
        missing -= {"--cp", "--ep", "--dp", "--pp", "--microbatch", "--interleave",
                    "--no-sequence-parallel", "--imbalance", "--gemm-efficiency"}
        assert not missing, (name, missing)
    named = set(re.findall(r"(--[a-z][a-z0-9-]+)", docs))
    known = flags["plan"] | flags["report"] | common | {"--no-sequence-parallel"}
    assert named <= known | {"--ranks", "--fit", "--orderings", "--terms", "--decoder-first",
                             "--account-for-embedding",
                             "--overlap-grad-reduce", "--overlap-param-gather"}, named - known
