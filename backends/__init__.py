"""Backends: one module per output format, each with one entry taking the compiled System."""

from __future__ import annotations

from . import json_system, summary

#: Format name -> function(System) -> text. Backends read the IR; they never change it.
REGISTRY = {
    "summary": summary.render,
    "json": json_system.render,
}
