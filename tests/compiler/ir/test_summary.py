"""compile's summary from the compact links' arrays equals the pass over Link objects."""

from __future__ import annotations

import json

import pytest

import topoc
from topoc.compiler.ir import summary

from ...conftest import LIBRARY

FILES = sorted(p for p in LIBRARY.rglob("*.topo") if "\nsystem " in p.read_text())


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_summary_from_arrays_equals_the_pass_over_links(path, monkeypatch):
    """Same figures, same JSON text (floats to the last bit), and no Link object made."""
    system = topoc.load(path)
    fast = summary.summarize(system)
    assert system.links._all is None and not system.links._made
    assert summary._scaleup_arrays(system) is not None
    monkeypatch.setattr(summary, "_scaleup_arrays", lambda s: None)
    slow = summary.summarize(topoc.load(path))
    assert json.dumps(fast) == json.dumps(slow)
