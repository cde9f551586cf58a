"""The Python API's schedule and cost refuse sizes and arguments they cannot serve before any
work (issue 44: inf or nan sizes never returned; a wrong argument type raised AttributeError
from deep inside)."""

from __future__ import annotations

import math

import pytest

import topoc
from topoc.compiler.base.units import MAX_MESSAGE, byte_count
from topoc.compiler.collectives.coster import sweep
from topoc.compiler.ir.groups import select_group

from ...conftest import deadline


@pytest.fixture(scope="module")
def dgx():
    return topoc.load("library/nvidia/dgx_h100.topo")


@pytest.mark.parametrize("size,error", [(math.inf, ValueError), (math.nan, ValueError),
                                        (-math.inf, ValueError), (0, ValueError),
                                        (-8, ValueError), (1.5, ValueError),
                                        (MAX_MESSAGE + 1, ValueError), ("1GB", TypeError),
                                        (None, TypeError), (True, TypeError)])
def test_schedule_and_cost_refuse_a_size_at_once(dgx, size, error):
    with deadline(20):
        with pytest.raises(error, match="nbytes|size"):
            topoc.schedule(dgx, "allreduce", "world", nbytes=size)
        with pytest.raises(error, match="size"):
            sweep(dgx, select_group(dgx, "world", None, None), "allreduce", [1024, size])


def test_wrong_argument_types_say_which(dgx):
    with pytest.raises(TypeError, match="System"):
        topoc.schedule("library/nvidia/dgx_h100.topo", "allreduce", "world")
    with pytest.raises(TypeError, match="RankGroup"):
        topoc.schedule(dgx, "allreduce", 3)
    with pytest.raises(TypeError, match="channels"):
        topoc.schedule(dgx, "allreduce", "world", channels="2")


def test_a_whole_float_size_is_that_many_bytes(dgx):
    assert byte_count(4096.0) == 4096
    assert topoc.schedule(dgx, "allreduce", "world", nbytes=2.0**20).bytes == 2**20


def test_a_ring_past_the_chunk_bound_is_refused_before_any_order(dgx, monkeypatch):
    """A ring's chunks are a rank and channel each, known from the group's size: past the
    bound the schedule is refused before its orders are laid out (589,824 NVL72 ranks were
    refused after their ring orders), with the message the layout's count gave; a count the
    caller gives still goes the whole way."""
    from topoc.compiler.collectives import orders, schedule as schedule_module
    from topoc.compiler.collectives.schedule import ScheduleError, schedule

    group = select_group(dgx, "world", None, None)      # 8 ranks, 2 channels: 16 chunks
    assert schedule(dgx, group, "allreduce", "ring", 1 << 20).chunks == 16
    monkeypatch.setattr(schedule_module, "MAX_CHUNKS", 15)

    def refuse(*_a, **_k):
        raise AssertionError("laid out")
    monkeypatch.setattr(orders, "ring_orders", refuse)
    with pytest.raises(ScheduleError, match="more than 15 chunks"):
        schedule(dgx, group, "allreduce", "ring", 1 << 20)
    with pytest.raises(AssertionError, match="laid out"):
        schedule(dgx, group, "allreduce", "ring", 1 << 20, chunks=16)
