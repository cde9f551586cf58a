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


def test_bf16_grads_is_a_block_setting():
    """``bf16_grads`` (Megatron-Core's grad_reduce_in_fp32 off) halves the gradient buffer of
    a block with the distributed optimizer."""
    source = SOURCE.replace("fsdp = true", "distributed_optimizer = true")
    plain = topoc.loads(source.format(extra="")).parallel("p")
    bf16 = topoc.loads(source.format(extra="bf16_grads = true")).parallel("p")
    assert bf16.training.bf16_grads and not plain.training.bf16_grads
    assert bf16.derived.memory.gradients == plain.derived.memory.gradients / 2


def test_recompute_modules_is_a_block_setting():
    """``recompute_modules = layernorm, mlp`` names what a selective recompute redoes (a dense
    model: the norms' outputs and the MLP's activations are dropped); an unknown module is an
    error with a suggestion."""
    import pytest
    source = SOURCE.replace("fsdp = true", "distributed_optimizer = true")
    plain = topoc.loads(source.format(extra="recompute = selective")).parallel("p")
    mods = topoc.loads(source.format(
        extra="recompute = selective  recompute_modules = layernorm, mlp")).parallel("p")
    assert mods.training.recompute_modules == ("layernorm", "mlp")
    assert mods.derived.memory.activations < plain.derived.memory.activations
    with pytest.raises(topoc.CompileError) as err:
        topoc.loads(source.format(extra="recompute = selective  recompute_modules = layernrom"))
    assert "did you mean 'layernorm'" in str(err.value)


def test_fsdp_prefetch_is_a_block_setting_and_only_moves_the_backward_gathers():
    pre = topoc.loads(SOURCE.format(extra="")).parallel("p")
    post = topoc.loads(SOURCE.format(extra="fsdp_prefetch = post")).parallel("p")
    assert pre.training.fsdp_prefetch == "pre" and post.training.fsdp_prefetch == "post"
    critical = [sum(f.bytes * f.count for f in p.flows if f.overlap == "none")
                for p in (pre, post)]
    assert critical[1] > critical[0]
    assert post.derived.compute.time == pre.derived.compute.time
    assert post.derived.memory.total == pre.derived.memory.total


def test_bucket_is_parameters_a_bucket_as_megatron_core_counts_them():
    """``bucket = 40000000`` holds 40 M parameters' gradients (Megatron-Core's
    --ddp-bucket-size); a size in bytes is refused with the form to write."""
    import pytest
    source = SOURCE.replace("fsdp = true", "distributed_optimizer = true  overlap = true")
    small = topoc.loads(source.format(extra="bucket = 10000000")).parallel("p")
    plain = topoc.loads(source.format(extra="")).parallel("p")
    assert small.training.bucket == 10_000_000 and plain.training.bucket is None

    def calls(p):
        return sum(f.count for f in p.flows if f.dim == "dp")
    assert calls(small) > 3 * calls(plain)
    with pytest.raises(topoc.CompileError) as err:
        topoc.loads(source.format(extra="bucket = 160 MB"))
    assert "E201" in str(err.value) and "bucket = 40000000" in str(err.value)


def test_scatter_gather_is_a_block_setting():
    """``scatter_gather = true`` (Megatron-LM's scatter/gather of pipeline boundaries) sends
    each tensor-parallel rank's 1/tp of a boundary: the block's pipeline traffic shrinks by tp
    where sequence parallelism does not split the boundary already."""
    source = SOURCE.replace("tp = 1  dp = 8", "tp = 4  pp = 2  dp = 1").replace(
        "fsdp = true", "distributed_optimizer = true")
    plain = topoc.loads(source.format(extra="")).parallel("p")
    split = topoc.loads(source.format(extra="scatter_gather = true")).parallel("p")
    assert split.training.scatter_gather and not plain.training.scatter_gather

    def pp_bytes(p):
        return sum(f.bytes * f.count for f in p.derived.flows if f.dim == "pp")
    assert pp_bytes(split) == pp_bytes(plain) // 4


def test_async_tp_is_a_block_setting():
    """``async_tp = true`` moves a block's tensor-parallel collectives into the passes' windows."""
    source = SOURCE.replace("tp = 1  dp = 8", "tp = 8  dp = 1  sequence_parallel = true")
    source = source.replace("fsdp = true", "distributed_optimizer = true")
    plain = topoc.loads(source.format(extra="")).parallel("p")
    fast = topoc.loads(source.format(extra="async_tp = true")).parallel("p")
    assert fast.training.async_tp and not plain.training.async_tp
    assert {f.overlap for f in fast.derived.flows if f.dim == "tp"} == {"forward", "backward"}


def test_token_drop_is_a_block_setting():
    """``token_drop = true`` (experts padded to capacity) takes the dispatcher's wait on the host
    off a Megatron-Core MoE block's MoE layers."""
    source = SOURCE.replace("models/llama3.topo", "models/frontier.topo")
    source = source.replace("tp = 1  dp = 8  model = llama3_8b", "ep = 8  dp = 8  "
                            "model = qwen3_30b_a3b").replace("fsdp = true",
                                                             "distributed_optimizer = true")
    plain = topoc.loads(source.format(extra="")).parallel("p")
    dropped = topoc.loads(source.format(extra="token_drop = true")).parallel("p")
    assert dropped.training.token_drop and not plain.training.token_drop
    assert plain.derived.compute.layer_time > 0 and dropped.derived.compute.layer_time == 0
