"""The .topo grammar (``topo.lark``), shipped as package data and built into a parser once."""

from __future__ import annotations

import functools
from importlib import resources

import lark


def grammar_text() -> str:
    """The text of ``topo.lark`` as installed with the package."""
    return resources.files(__package__).joinpath("topo.lark").read_text(encoding="utf-8")


@functools.cache
def parser() -> lark.Lark:
    """The LALR parser for .topo files, positions propagated; built on first use and cached."""
    return lark.Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
    )
