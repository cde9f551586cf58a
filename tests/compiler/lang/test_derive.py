"""A parallel block that names a model carries its training settings into the derived step."""

from __future__ import annotations

import topoc

SOURCE = """use "nvidia/dgx_h100.topo"
use "models/llama3.topo"
system s : DGXH100
parallel p on s {{ tp = 1  dp = 8  model = llama3_8b  batch = 64  fsdp = true  {extra} }}
"""


def test_pure_bf16_and_the_attention_kernel_are_block_settings():
    plain = topoc.loads(SOURCE.format(extra="")).parallel("p")
    bf16 = topoc.loads(SOURCE.format(extra="pure_bf16 = true  attention_kernel = fa2"))
    t = bf16.parallel("p").training
    assert t.pure_bf16 and t.attention_kernel == "fa2"
    assert bf16.parallel("p").derived.memory.total < plain.derived.memory.total
    assert bf16.parallel("p").derived.compute.attention_time > \
        plain.derived.compute.attention_time


def test_fsdp_prefetch_is_a_block_setting_and_only_moves_the_backward_gathers():
    pre = topoc.loads(SOURCE.format(extra="")).parallel("p")
    post = topoc.loads(SOURCE.format(extra="fsdp_prefetch = post")).parallel("p")
    assert pre.training.fsdp_prefetch == "pre" and post.training.fsdp_prefetch == "post"
    critical = [sum(f.bytes * f.count for f in p.flows if f.overlap == "none")
                for p in (pre, post)]
    assert critical[1] > critical[0]
    assert post.derived.compute.time == pre.derived.compute.time
    assert post.derived.memory.total == pre.derived.memory.total
