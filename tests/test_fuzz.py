"""Robustness: whatever a file holds, topoc answers with diagnostics inside the input, in
bounded time and memory, never another exception. The CI profile runs a few hundred cases;
``pytest -m fuzz`` runs thousands (HYPOTHESIS_PROFILE=thorough raises them further)."""

from __future__ import annotations


import pytest
from hypothesis import given, settings

import topoc
from topoc.backends import REGISTRY
from topoc.compiler.base.diagnostics import CompileError

from .conftest import deadline
from .strategies import grammar_programs, mutated_library_files

SECONDS = 20     # a generous bound: a hang, not a slow case, is what this catches




def answers(text: str, path) -> None:
    """Compile ``text``; it either works (and every backend renders it) or every diagnostic
    points inside a file that was read."""
    with deadline(SECONDS):
        try:
            system = topoc.compile(text, path)
        except CompileError as exc:
            assert exc.diagnostics
            for d in exc.diagnostics:
                source = d.span.source
                assert d.span.line >= 1 and d.span.col >= 1, d.render()
                assert d.span.line <= max(1, len(source.lines)) + 1, d.render()
                assert d.span.col <= len(source.line(d.span.line)) + 2, d.render()
                assert d.render().startswith(f"{d.span.path}:{d.span.line}:{d.span.col}: ")
            return
        for backend in REGISTRY.values():
            backend(system)


@given(grammar_programs())
def test_programs_from_the_grammar(text):
    answers(text, None)


@given(mutated_library_files())
def test_mutated_library_files(case):
    path, text = case
    answers(text, path)


@pytest.mark.fuzz
@settings(max_examples=3000)
@given(mutated_library_files())
def test_mutated_library_files_long(case):
    path, text = case
    answers(text, path)


@pytest.mark.fuzz
@settings(max_examples=2000)
@given(grammar_programs())
def test_programs_from_the_grammar_long(text):
    answers(text, None)
