"""The collector pause: off inside, restored after, even when the stage raises."""

import gc

import pytest

from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.lang.elaborate import elaborate
from topoc.compiler.base.gcpause import gc_paused
from topoc.compiler.lang.parse import parse
from topoc.compiler.lang.resolve import resolve


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_inside_and_restored_after(collector_on):
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()      # the inner pause leaves the outer one in charge
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled(collector_on):
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_a_failing_stage_restores_the_collector(collector_on, tmp_path):
    path = tmp_path / "bad.topo"
    path.write_text("group G { }\nsystem s : Missing\n")
    program = resolve(parse(path.read_text(), str(path)), path)
    with pytest.raises(CompileError):
        elaborate(program)
    assert gc.isenabled()
