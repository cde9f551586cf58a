"""Properties of elaboration over random programs: counts follow the selector semantics,
every link joins real devices, and compiling twice gives the same system."""

from __future__ import annotations

from hypothesis import given

import topoc
from topoc.backends.json_system import render
from topoc.compiler.base.diagnostics import CompileError

from ...strategies import node_programs


@given(node_programs())
def test_counts_match_selector_semantics(program):
    text, devices, links, nodes = program
    try:
        system = topoc.loads(text)
    except CompileError as exc:
        # One node rings to itself: exactly the self-connection error, nothing else.
        assert nodes == 1 and [d.code for d in exc.diagnostics] == ["E215"]
        return
    assert len(system.devices) == devices
    assert len(system.links) == links
    ids = {d.id for d in system.devices}
    assert all(link.src in ids and link.dst in ids and link.src != link.dst
               for link in system.links)
    assert render(system) == render(topoc.loads(text))
