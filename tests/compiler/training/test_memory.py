"""The ZeRO stage rule shared by ``plan``'s flags, a parallel block's options (``report
--scaling``) and the memory model (``sharding``)."""

from __future__ import annotations

import pytest

from topoc.compiler.ir.system import Transformer
from topoc.compiler.training.memory import sharding, zero_stage
from topoc.compiler.training.model import Training


@pytest.mark.parametrize("zero, fsdp, dist, stage", [
    (None, False, False, None),     # nothing fixed: plan searches
    (None, False, True, 1),         # the distributed optimizer is ZeRO-1
    (None, True, False, 3),         # FSDP shards everything
    (2, False, True, 2),
    (0, False, True, 1),            # ZeRO-1 at least: asking for the optimizer shards it
    (0, True, True, 3),
    (0, False, False, 0),
])
def test_zero_stage(zero, fsdp, dist, stage):
    assert zero_stage(zero, fsdp, dist) == stage


def test_sharding_is_the_same_rule():
    model = Transformer("m", layers=2, hidden=64, heads=4, seq=16, vocab=100, ffn=256,
                        kv_heads=4)
    for zero in (0, 1, 2, 3):
        for fsdp in (False, True):
            for dist in (False, True):
                t = Training(model, 8, zero=zero, fsdp=fsdp, distributed_optimizer=dist)
                assert sharding(t) == zero_stage(zero, fsdp, dist)
