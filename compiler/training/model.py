"""A model's training step derived from its shape: the options (``Training``) and everything
derived from them once (``derive``): micro-batches, the stage layout, compute time, memory and
traffic. The parts live in their own modules:

- ``mapping``: the parallel sizes (``Shape``), the pipeline's stage layout and bubble, checks;
- ``params``: weights and model FLOPs by part;
- ``gemm`` and ``compute``: compute time GEMM by GEMM, by shape, GPU generation and precision;
- ``memory``: bytes per GPU with ZeRO, FSDP, the distributed optimizer and FP8;
- ``traffic``: the collectives per step, with the compute window each can hide behind.
"""

from __future__ import annotations

import attrs

from ..ir.gpus import GPUFigures
from ..ir.system import Transformer, TrafficFlow
from .constants import value
from .compute import Compute, compute
from .compute import GRAD_ACCUMULATION
from .mapping import Layout, MappingError, Shape, bubble, check, idle_time, layout, shape_of
from .epilogue import EXPERT_EPILOGUES
from .fp8 import RECIPES
from .gemm import generation
from .memory import Memory, activation_per_layer, bytes_per_param, memory, sharding
from .params import model_flops, moe_layers, parameters, stage_parameters
from .traffic import traffic
from .zero3 import ZERO3_IMPLS

__all__ = ["RECOMPUTE", "RECOMPUTE_MODULES", "ATTENTION_KERNELS", "EXPERT_EPILOGUES", "FSDP_PREFETCH",
           "CROSS_ENTROPY", "GRAD_ACCUMULATION", "ZERO3_IMPLS",
           "ZERO", "Training",
           "Derived",
           "derive", "Compute", "Memory", "Shape",
           "Layout", "MappingError", "stage_layout", "bubble", "check", "idle_time", "layout", "shape_of",
           "activation_per_layer", "bytes_per_param", "memory", "compute", "traffic",
           "model_flops", "moe_layers", "parameters", "stage_parameters", "sharding"]

RECOMPUTE = ("none", "selective", "full")
#: Megatron-Core's selective recompute by module (``recompute_modules``, with
#: ``recompute_granularity = "selective"``): the attention core (its default), the layernorms,
#: the MoE experts' activation function, MLA's up-projections and the dense MLP.
RECOMPUTE_MODULES = ("core_attn", "layernorm", "moe_act", "mla_up_proj", "mlp")
#: Flash-attention kernels: fused (cuDNN / Transformer Engine, FlashAttention-3) or fa2
#: (FlashAttention-2, PyTorch SDPA's flash backend), slower on Hopper (``gemm.Curve``).
ATTENTION_KERNELS = ("fused", "fa2")
#: When FSDP (ZeRO-3) issues a layer's backward all-gather (``traffic``): "pre", before the
#: previous layer's gradient computation (FSDP2's explicit prefetch, FSDP1's BACKWARD_PRE,
#: DeepSpeed's prefetch), so it hides behind it; "post", after it (FSDP1's BACKWARD_POST,
#: Composer's default), so the gradient computation waits for it.
FSDP_PREFETCH = ("pre", "post")
#: The cross-entropy kernel, for the logits' memory (``memory.LOGIT_BYTES``): auto (the
#: framework's: Megatron's vocabulary-parallel one, PyTorch's eager one with FSDP, a bf16 one
#: with ``pure_bf16``), megatron (Megatron-Core's vocabulary-parallel one, also under
#: Megatron-FSDP), eager (PyTorch's fp32 upcast), compiled (torch.compile'd), fused
#: (flash-attn's in-place kernel).
CROSS_ENTROPY = ("auto", "megatron", "eager", "compiled", "fused")
#: ZeRO stages: 0 (replicated), 1 (optimizer sharded, Megatron's distributed optimizer), 2
#: (and gradients), 3 (and weights).
ZERO = (0, 1, 2, 3)
#: The element-wise kernels reach this fraction of the HBM bandwidth: a round figure, not a fit.
HBM_EFFICIENCY = value("compute.hbm_efficiency")


@attrs.frozen
class Training:
    """How a model is trained: the batch and the framework's memory, overlap and precision
    options. ``zero``/``fsdp`` shard the replicas' state (``distributed_optimizer`` is ZeRO-1);
    ``attention_kernel`` "fa2" runs FlashAttention-2 (PyTorch SDPA) rather than a fused kernel;
    ``pure_bf16`` keeps no fp32 master copy (weights, gradients, Adam moments and the loss in
    bf16, as NeMo AutoModel's recipes run); ``fp8`` runs the layers' GEMMs in fp8;
    ``ep_overlap`` hides the expert all-to-all behind another micro-batch's compute where
    Megatron-Core runs it (``ep_overlap``'s docstring); ``fsdp_prefetch`` "post" puts FSDP's
    backward all-gathers on the critical path (FSDP1's BACKWARD_POST, ``FSDP_PREFETCH``); ``dualpipe``, ``recompute_norms``, ``fp8_activations`` and ``bf16_moments`` are
    DeepSeek-V3's memory savings (``memory``'s docstring); ``recompute_modules`` names what a
    "selective" recompute redoes (Megatron-Core's modules; ``memory.modules``); ``bf16_grads``
    keeps and reduces the gradients in bf16 (Megatron-Core's ``grad_reduce_in_fp32=False``, NeMo's
    ``grad_sync_dtype: bf16``); ``first_stage_layers``/``last_stage_layers`` fix the
    end stages of the pipeline and ``pipeline_slots`` counts embedding and loss as layer slots
    (None: when the layers need it to split evenly); ``bucket`` is the parameters a gradient
    bucket holds (None: Megatron-Core's default, ``traffic.bucket_params``);
    ``expert_epilogue`` names how the framework runs a GPT-OSS-style expert's clamp and biases
    (``epilogue``'s docstring: Megatron-Core's eager clamp and fc2 bias by default);
    ``cross_entropy`` names the loss kernel, whose buffers decide the last stage's memory
    (``CROSS_ENTROPY``, ``memory.LOGIT_BYTES``); ``grad_accumulation`` names how each
    micro-batch's weight gradients reach the gradient buffer (``compute.GRAD_ACCUMULATION``:
    fused into the weight-gradient GEMM, or an element-wise pass over the stage's weights per
    micro-batch); ``launch_blocking`` runs every kernel launch synchronously
    (``CUDA_LAUNCH_BLOCKING=1``, ``compute.blocking``); ``scatter_gather`` sends each
    tensor-parallel rank's 1/tp of a pipeline boundary's activation (or its gradient) and
    all-gathers it over the tensor-parallel group on arrival (Megatron-LM's scatter/gather
    optimisation, DeepSpeed's pipeline engine's partitioned buffers: ``traffic``); ``async_tp``
    runs each layer's tensor-parallel all-gathers and reduce-scatters in pieces beside the
    GEMMs that consume or produce them (torchtitan's ``enable_async_tensor_parallel``, Megatron's
    ``tp_comm_overlap``: ``traffic``); ``fp8_recipe`` names how an fp8 run scales its GEMM
    inputs (``fp8.RECIPES``: tensorwise, rowwise, mxfp8), which sets the fp8 GEMMs' rate and
    the casts' bytes; ``offload_layers`` keeps the activations
    of that many layers in CPU memory between their forward and backward (Megatron-Core's
    ``cpu_offloading_num_layers``: ``memory`` and ``compute.offload``); ``token_drop`` drops
    and pads each expert's tokens to its capacity (Megatron-Core's ``moe_expert_capacity_factor``
    with ``moe_pad_expert_input_to_capacity``, Megatron-Bridge's ``--use_tokendrop``), so the
    token dispatcher never waits on the host for the token counts (``compute.fixed_per_layer``,
    ``compute.host_bound``)."""

    model: Transformer
    batch: int                          # global batch, in sequences
    microbatch: int = 1
    recompute: str = "none"
    sequence_parallel: bool = False
    interleave: int = 1                 # model chunks per pipeline stage (virtual stages)
    distributed_optimizer: bool = False
    overlap: bool = False               # grad reduce / param gather overlap (Megatron flags)
    flash_attention: bool = True
    bucket: int | None = None           # parameters a gradient bucket (None: Megatron-Core's)
    imbalance: float = 1.0              # expert load: the busiest expert's share over the mean
    gemm_efficiency: float | None = None  # None: the GPU's declared figure or its curve
    hbm_efficiency: float = HBM_EFFICIENCY
    zero: int = 0
    fsdp: bool = False
    fp8: bool = False
    pure_bf16: bool = False             # bf16 weights, gradients, Adam moments and loss
    # DeepSeek-V3's memory savings (technical report, arXiv:2412.19437, sec. 3.2.3 and 3.3):
    dualpipe: bool = False              # bidirectional pipeline: two stages per rank, P + 1 in flight
    recompute_norms: bool = False       # RMSNorm outputs and MLA up-projections recomputed
    fp8_activations: bool = False       # activations cached in fp8, SwiGLU output recomputed
    bf16_moments: bool = False          # AdamW moments in bf16 (fp32 master weights kept)
    bf16_grads: bool = False            # gradients kept and reduced in bf16 (``memory``)
    # Megatron-Core's modules a "selective" recompute redoes (``RECOMPUTE_MODULES``; empty: the
    # attention core alone, Megatron's default)
    recompute_modules: tuple[str, ...] = ()
    deepep: bool = False                # expert dispatch sends a token once per node (DeepEP)
    route_nodes: int = 0                # node-limited routing: a token's experts on <= N nodes
    ep_overlap: bool = False            # Megatron-Core's EP A2A overlap (``ep_overlap``)
    fsdp_prefetch: str = "pre"          # ZeRO-3/FSDP backward all-gather: "pre" or "post"
    attention_kernel: str = "fused"     # "fused" (cuDNN, FlashAttention-3) or "fa2"
    expert_epilogue: str = "megatron"   # clamp and expert biases: ``epilogue.EXPERT_EPILOGUES``
    cross_entropy: str = "auto"         # the loss kernel: ``CROSS_ENTROPY``
    grad_accumulation: str = "fused"    # ``compute.GRAD_ACCUMULATION``
    launch_blocking: bool = False       # CUDA_LAUNCH_BLOCKING=1: ``compute.blocking``
    scatter_gather: bool = False        # a pipeline sends 1/tp of its boundary (``traffic``)
    async_tp: bool = False              # TP collectives overlap the GEMMs (``traffic``)
    fp8_recipe: str = "tensorwise"      # how fp8 GEMM inputs are scaled: ``fp8.RECIPES``
    offload_layers: int = 0             # layers whose activations go to CPU memory (``compute``)
    token_drop: bool = False            # experts padded to capacity: no host sync (``compute``)
    zero3_impl: str = "flat"            # how ZeRO-3 hands PyTorch its collectives: ``zero3``
    first_stage_layers: int = 0
    last_stage_layers: int = 0
    pipeline_slots: bool | None = None


@attrs.frozen
class Derived:
    """Everything one mapping's training step derives, computed once and carried on the
    strategy (``ParallelStrategy.derived``): the report, plan and lint read it."""

    shape: Shape
    microbatches: int
    layout: Layout
    compute: Compute
    memory: Memory
    flows: tuple[TrafficFlow, ...]
    interleave: int = 1

    @property
    def bubble(self) -> float:
        """The pipeline bubble's share of the step."""
        return bubble(self.shape.pp, self.microbatches, self.interleave)

    @property
    def idle(self) -> float:
        """Seconds the pipeline idles per step."""
        return idle_time(self.compute.time, self.shape.pp, self.microbatches, self.interleave)


def stage_layout(t: Training, sh: Shape) -> Layout:
    """The layers per pipeline stage ``t`` runs on ``sh``, its model chunks included."""
    return layout(t.model, sh, t.first_stage_layers, t.last_stage_layers,
                  t.pipeline_slots).chunked(t.interleave)


def derive(t: Training, sh: Shape, gpu: GPUFigures) -> Derived:
    """Check the mapping and derive its step; MappingError when the model cannot run it."""
    if t.recompute not in RECOMPUTE:
        raise MappingError(f"recompute '{t.recompute}': one of {', '.join(RECOMPUTE)}")
    bad = [x for x in t.recompute_modules if x not in RECOMPUTE_MODULES]
    if bad:
        raise MappingError(f"recompute module '{bad[0]}': one of {', '.join(RECOMPUTE_MODULES)}")
    if t.attention_kernel not in ATTENTION_KERNELS:
        raise MappingError(f"attention kernel '{t.attention_kernel}': one of "
                           f"{', '.join(ATTENTION_KERNELS)}")
    if t.expert_epilogue not in EXPERT_EPILOGUES:
        raise MappingError(f"expert epilogue '{t.expert_epilogue}': one of "
                           f"{', '.join(EXPERT_EPILOGUES)}")
    if t.cross_entropy not in CROSS_ENTROPY:
        raise MappingError(f"cross entropy '{t.cross_entropy}': one of "
                           f"{', '.join(CROSS_ENTROPY)}")
    if t.fsdp_prefetch not in FSDP_PREFETCH:
        raise MappingError(f"fsdp prefetch '{t.fsdp_prefetch}': one of "
                           f"{', '.join(FSDP_PREFETCH)}")
    if t.grad_accumulation not in GRAD_ACCUMULATION:
        raise MappingError(f"grad accumulation '{t.grad_accumulation}': one of "
                           f"{', '.join(GRAD_ACCUMULATION)}")
    if t.offload_layers:
        # Megatron-Core's TransformerConfig refuses these (megatron/core/transformer/
        # transformer_config.py, __post_init__)
        if not 0 < t.offload_layers < t.model.layers:
            raise MappingError(f"offload layers {t.offload_layers}: CPU offloading can be done "
                               f"only for layers less than {t.model.layers}")
        if sh.pp > 1:
            raise MappingError("offload layers: there is no support for pipeline parallelism "
                               "with CPU offloading (pp must be 1)")
        if t.recompute != "none":
            raise MappingError("offload layers: CPU offloading does not work when activation "
                               "recomputation is enabled (recompute must be none)")
    if t.fp8_recipe not in RECIPES:
        raise MappingError(f"fp8 recipe '{t.fp8_recipe}': one of {', '.join(RECIPES)}")
    if RECIPES[t.fp8_recipe].blackwell and (t.fp8 or t.model.dtype == "fp8") and \
            generation(gpu.name) != "blackwell":
        raise MappingError(f"fp8 recipe '{t.fp8_recipe}': block-scaled fp8 needs Blackwell's "
                           f"tensor cores; {gpu.name} has none (use tensorwise or rowwise)")
    if t.zero not in ZERO:
        raise MappingError(f"zero {t.zero}: one of 0, 1, 2, 3")
    if t.zero3_impl not in ZERO3_IMPLS:
        raise MappingError(f"zero3 impl '{t.zero3_impl}': one of {', '.join(ZERO3_IMPLS)}")
    m = t.model
    if m.dtype == "fp8" and not t.fp8:
        t = attrs.evolve(t, fp8=True)
    micro = check(t, sh)
    lay = stage_layout(t, sh)
    return Derived(sh, micro, lay, compute(m, t, sh, lay, gpu, micro),
                   memory(m, t, sh, lay, micro), traffic(m, t, sh, lay, micro), t.interleave)
