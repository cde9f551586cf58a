"""The bundled library of real systems (.topo files), shipped as package data."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent


def files() -> list[Path]:
    """Every bundled .topo file, sorted by path."""
    return sorted(ROOT.rglob("*.topo"))


def find(basename: str) -> Path:
    """The bundled file with this basename (e.g. ``gb200_nvl72.topo``)."""
    for path in files():
        if path.name == basename:
            return path
    raise FileNotFoundError(basename)
