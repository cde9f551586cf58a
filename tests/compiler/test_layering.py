"""The layering (docs/contracts.md): every import, at any depth of a module's code and
type-only ones included, goes to its own layer or a lower one; training and collectives never
import each other; and the project's module graph has no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Where each package of the distribution lives in the checkout (pyproject's package-dir).
PACKAGES = {"topoc": "topoc", "topoc.compiler": "compiler", "topoc.backends": "backends",
            "topoc.grammar": "grammar", "topoc.library": "library"}
#: Layers from the bottom; a module may import its own layer and the layers below it.
LAYERS = [
    ("topoc.grammar", 0), ("topoc.compiler.base", 0), ("topoc.library", 1),
    ("topoc.compiler.ir", 2), ("topoc.compiler.training", 3), ("topoc.compiler.collectives", 3),
    ("topoc.compiler.lang", 4), ("topoc.compiler.lint", 5), ("topoc.compiler.analysis", 6),
    ("topoc.compiler", 6),           # the package front: registers the IR's views
    ("topoc.backends", 7), ("topoc.importers", 7), ("topoc", 8),
]
#: Layers of the same height that must not see each other.
APART = {("topoc.compiler.training", "topoc.compiler.collectives"),
         ("topoc.compiler.collectives", "topoc.compiler.training")}


def modules() -> dict[str, Path]:
    """Every module of the distribution, by dotted name."""
    out = {}
    for package, folder in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            if name.startswith("topoc.compiler") and package == "topoc":
                continue
            out[name] = path
    return out


MODULES = modules()


def imports(name: str) -> set[str]:
    """The project modules ``name`` imports anywhere in its code, as dotted names (a name
    imported from a package is its submodule when one of that name exists)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
    return {m for m in found if m in MODULES}


def layer(name: str) -> tuple[str, int]:
    """The deepest layer prefix that holds ``name``."""
    best = max((p for p, _ in LAYERS if name == p or name.startswith(p + ".")), key=len)
    return best, dict(LAYERS)[best]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_point_down(name):
    mine, height = layer(name)
    wrong = []
    for target in sorted(imports(name)):
        theirs, h = layer(target)
        if h > height or (mine, theirs) in APART:
            wrong.append(f"{target} (layer {theirs})")
    assert not wrong, f"{name} (layer {mine}) imports upward or sideways: {', '.join(wrong)}"


def test_no_import_cycle():
    graph = nx.DiGraph((m, t) for m in MODULES for t in imports(m) if t != m)
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles[:5])


def test_every_module_is_in_a_layer():
    assert len(MODULES) > 60
    for name in MODULES:
        layer(name)


def test_views_are_registered():
    import topoc
    system = topoc.loads("device G : gpu { }\ngroup N { g[2] : G }\nsystem n : N\n")
    assert system.graph.number_of_nodes() == 2 and system.locality.island == [0, 1]
