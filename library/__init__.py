"""The bundled library of real systems (.topo files), shipped as package data."""

from __future__ import annotations

import csv
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


def calibration() -> list[dict]:
    """The published nccl-tests rows of calibration.csv (comments skipped), as dicts of text."""
    text = (ROOT / "calibration.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


def reliability() -> list[dict]:
    """The published failure counts of reliability.csv (comments skipped), as dicts of text."""
    text = (ROOT / "reliability.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


def size_bytes(text: str) -> int:
    """A calibration row's size ('64MiB', '8GiB', '1KiB') in bytes."""
    from ..compiler.base.units import Quantity
    number = text.rstrip("KMGiB")
    return int(Quantity.parse(number, text[len(number):] or None).value)
