"""The pipeline's layering: the IR imports no later stage, and the cost model takes its orders
from compiler.orders, not from the schedule stage above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

COMPILER = Path(__file__).resolve().parents[2] / "compiler"


def relative_imports(name: str) -> set[str]:
    """Modules of the compiler package that ``name`` imports when it runs, at any depth of its
    code (imports under ``if TYPE_CHECKING:`` are for annotations only)."""
    tree = ast.parse((COMPILER / f"{name}.py").read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and getattr(block.test, "id", "") == "TYPE_CHECKING"
                   for n in ast.walk(block)}
    return {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
            and n.level == 1 and id(n) not in typing_only}


def test_ir_imports_no_later_stage():
    assert relative_imports("ir") <= {"diagnostics"}


@pytest.mark.parametrize("name", ["cost", "loads", "orders", "route"])
def test_cost_side_does_not_reach_into_schedule(name):
    assert "schedule" not in relative_imports(name)


def test_views_are_registered():
    import topoc
    system = topoc.loads("device G : gpu { }\ngroup N { g[2] : G }\nsystem n : N\n")
    assert system.graph.number_of_nodes() == 2 and system.locality.island == [0, 1]
