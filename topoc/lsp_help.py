"""What the language server says about words: a declaration's resolved figures (``describe``),
the settings of a ``parallel`` block, the collectives of a ``traffic`` line, and the lane count
of a connection; and how it reads a file that does not parse yet (a half-typed line, a block
not closed yet)."""

from __future__ import annotations

import re
from pathlib import Path

from .compiler.base.diagnostics import CompileError
from .compiler.base.units import BYTES, RATE, SECONDS, human
from .compiler.ir.system import COLLECTIVES, DeviceModel, LinkType, Transformer
from .compiler.lang import syntax as s
from .compiler.lang.ranks import SETTINGS

#: One line per setting of a parallel block (every name of ``compiler.lang.ranks.SETTINGS``):
#: the language server's hover and completions, and the help of ``topoc plan``'s flags that
#: set the same things (one text for both).
SETTING_DOCS = {
    "tp": "tensor parallel size: GPUs that split every layer's matrices (all-reduce or "
          "all-gather/reduce-scatter per layer)",
    "cp": "context parallel size: GPUs that split the sequence (ring attention exchanges "
          "key/value blocks)",
    "ep": "expert parallel size: GPUs that hold different experts (all-to-all per MoE layer)",
    "dp": "data parallel size: model replicas (gradient all-reduce or reduce-scatter per step); "
          "'auto' takes what the other sizes leave",
    "pp": "pipeline parallel size: stages of consecutive layers (send/receive of activations "
          "between stages)",
    "etp": "expert tensor parallel size: GPUs that split each expert's matrices",
    "order": "rank order, innermost (fastest varying) first, as Megatron's 'tp-cp-ep-dp-pp'",
    "microbatches": "micro-batches per step and pipeline: the bubble is (P-1)/(M+P-1)",
    "compute": "compute time per training step on each GPU (for T_total, speedup, efficiency)",
    "baseline": "one training step on a single GPU (T1, for speedup and efficiency)",
    "model": "the transformer trained (a bundled preset or a model declared in the file): "
             "derives traffic, compute and memory",
    "batch": "global batch in sequences",
    "microbatch": "sequences per micro-batch",
    "interleave": "model chunks per pipeline stage (virtual stages): a smaller bubble for more "
                  "pipeline traffic",
    "recompute": "activation recomputation: none, selective (attention) or full",
    "sequence_parallel": "Megatron sequence parallelism: layer norms and dropout split over tp",
    "distributed_optimizer": "optimizer state sharded over the data-parallel group (ZeRO-1)",
    "overlap": "overlap the gradient reduce-scatter and parameter all-gather with compute",
    "flash_attention": "attention without materialising the score matrix (less activation "
                       "memory)",
    "bucket": "parameters a gradient bucket holds (Megatron-Core's --ddp-bucket-size)",
    "imbalance": "expert load: the busiest expert's share over the mean",
    "gemm_efficiency": "fraction of the dense peak the GEMMs reach (default: fitted per GPU)",
    "hbm_efficiency": "fraction of HBM bandwidth element-wise kernels reach",
    "first_stage_layers": "transformer layers on the first pipeline stage (uneven stages)",
    "last_stage_layers": "transformer layers on the last pipeline stage (uneven stages)",
    "fp8": "FP8 GEMMs at the FP8 peak, the parts that stay BF16 at BF16, FP8 weight savings",
    "fsdp": "fully sharded data parallelism: weights, gradients and optimizer sharded",
    "expert_epilogue": "how a GPT-OSS-style expert's clamp and biases run: megatron "
                       "(Megatron-Core's eager clamp and per-expert fc2 bias; default), "
                       "eager_bias (NeMo AutoModel's: clamp fused, both biases eager) or fused",
    "offload_layers": "layers whose activations wait in CPU memory between forward and "
                      "backward (Megatron-Core's cpu_offloading_num_layers; pp 1 and no "
                      "recompute only)",
    "launch_blocking": "every kernel launch waits for the one before (CUDA_LAUNCH_BLOCKING=1): "
                       "the host's issue time per kernel is paid on the GPU, per layer and "
                       "micro-batch",
    "token_drop": "experts' inputs dropped and padded to capacity (Megatron-Core's "
                  "moe_pad_expert_input_to_capacity): the token dispatcher never waits on the "
                  "host for the token counts, so MoE layers pay no cost per layer and "
                  "micro-batch for it",
    "fp8_recipe": "how an fp8 run scales its GEMM inputs: tensorwise (one scale a tensor; "
                  "default), rowwise (one a row: a slower forward GEMM, rescaled backward "
                  "GEMMs, costlier casts) or mxfp8 (one a 32-element block, Blackwell only)",
    "async_tp": "tensor-parallel collectives run in pieces beside the GEMMs that consume or "
                "produce them (torchtitan's async TP, Megatron's tp_comm_overlap): the "
                "forward's hide in the forward pass, the backward's in the backward",
    "scatter_gather": "a pipeline stage sends each tensor-parallel rank's 1/tp of the "
                      "boundary activation and gradient and the next all-gathers it over "
                      "NVLink (Megatron-LM's scatter/gather optimisation, DeepSpeed's "
                      "partitioned pipeline buffers; sequence parallelism does it anyway)",
    "zero3_impl": "how ZeRO-3 hands PyTorch its gathers and reduce-scatters: flat (one flat "
                  "buffer a call: PyTorch FSDP, Megatron-FSDP, DeepSpeed from v0.6.0; default) "
                  "or deepspeed-0.3 (DeepSpeed v0.3.12 to v0.5.4: a list of per-rank views "
                  "that PyTorch copies one by one, a host copy per data-parallel rank and "
                  "call on the critical path)",
    "grad_accumulation": "how each micro-batch's weight gradients reach the gradient buffer: "
                         "fused (into the weight-gradient GEMM: Megatron-Core's "
                         "gradient_accumulation_fusion, FSDP; default), autograd (param.grad "
                         "+= in 16 bits after each micro-batch: 6 bytes a weight) or fp32_copy "
                         "(DeepSpeed's BF16 optimizer: an fp32 copy added each micro-batch, 18 "
                         "bytes a weight)",
    "cross_entropy": "the loss kernel, for the logits' memory: auto (the framework's; "
                     "default), megatron (Megatron-Core's vocabulary-parallel one, 6 bytes a logit), eager (PyTorch's fp32 upcast, 12 bytes a logit at its "
                     "backward peak), compiled (torch.compile'd, 4) or fused (flash-attn's "
                     "in-place kernel, 2)",
    "attention_kernel": "fused (cuDNN, FlashAttention-3; default) or fa2 (FlashAttention-2, "
                        "PyTorch SDPA: slower on Hopper)",
    "pure_bf16": "bf16 weights, gradients, Adam moments and loss, no fp32 master copy (NeMo "
                 "AutoModel's recipes)",
    "dualpipe": "DeepSeek's bidirectional pipeline: each rank holds stages i and P-1-i (two "
                "copies of the parameters) and P+1 micro-batches of activations",
    "recompute_norms": "recompute RMSNorm outputs and MLA up-projections in backward "
                       "(DeepSeek-V3 sec. 3.2.3)",
    "fp8_activations": "cache activations in fp8 and recompute the SwiGLU output "
                       "(DeepSeek-V3 sec. 3.3)",
    "deepep": "expert dispatch sends each token over the network once per destination node "
              "and forwards it over NVLink there, inside one node once per destination GPU "
              "(DeepEP)",
    "ep_overlap": "Megatron-Core's EP A2A overlap: the expert all-to-all hides behind another "
                  "micro-batch's compute (no pipeline or an interleaved one; not with full "
                  "recompute)",
    "fsdp_prefetch": "when ZeRO-3/FSDP issues a layer's backward all-gather: pre (hidden behind "
                     "the previous layer's gradients: FSDP2, BACKWARD_PRE) or post (on the "
                     "critical path: FSDP1's BACKWARD_POST, Composer's default)",
    "route_nodes": "node-limited routing: a token's experts lie on at most this many nodes "
                   "(DeepSeek-V3: 4; 0 for no limit)",
    "bf16_moments": "AdamW moments in bf16 next to fp32 master weights (DeepSeek-V3 sec. 3.3)",
    "recompute_modules": "what a selective recompute redoes, Megatron-Core's modules: "
                         "core_attn (default), layernorm, moe_act, mla_up_proj, mlp",
    "bf16_grads": "gradients kept and reduced in bf16, 2 bytes a parameter (Megatron-Core's "
                  "grad_reduce_in_fp32 off, as Megatron-Bridge's performance recipes run)",
    "zero": "ZeRO stage 0-3: what the data-parallel group shards",
    "pipeline_slots": "count the embedding and the output layer as layer slots of the first and "
                      "last pipeline stage",
}

#: What each collective does and how nccl-tests' busbw is derived from its algbw.
COLLECTIVE_DOCS = {
    "allreduce": "every rank ends with the sum of all ranks' buffers; busbw = algbw x 2(n-1)/n",
    "reducescatter": "every rank ends with its 1/n share of the sum; busbw = algbw x (n-1)/n",
    "allgather": "every rank ends with every rank's share; busbw = algbw x (n-1)/n",
    "broadcast": "the root's buffer copied to every rank; busbw = algbw",
    "reduce": "the sum of all ranks' buffers at the root; busbw = algbw",
    "alltoall": "block j of rank i goes to rank j; busbw = algbw x (n-1)/n",
    "sendrecv": "each rank sends its buffer to the next (pipeline stages); busbw = algbw",
}

assert set(SETTING_DOCS) >= set(SETTINGS), sorted(set(SETTINGS) - set(SETTING_DOCS))
assert set(COLLECTIVE_DOCS) == set(COLLECTIVES)

LANES = re.compile(r":\s*([A-Za-z_]\w*)\s+x\s+(\d+)")


def lanes_at(line: str, character: int) -> tuple[str, int] | None:
    """(link type, lanes) when the cursor is on a connection's lane count ('... : nvlink4 x 4')
    or on its 'x'."""
    for m in LANES.finditer(line):
        if m.start(2) - 2 <= character <= m.end(2):
            return m.group(1), int(m.group(2))
    return None


def blocks_at(lines: list[str], line: int, character: int) -> list[str]:
    """The keywords of the blocks open at a 0-based position, outermost first: ['parallel',
    'traffic'] inside a traffic block."""
    stack: list[str] = []
    for i in range(min(line, len(lines) - 1) + 1):
        text = lines[i].split("#", 1)[0]
        if i == line:
            text = text[:character]
        head = re.match(r"\s*([A-Za-z_]\w*)", text)
        for c in text:
            if c == "{":
                stack.append(head.group(1) if head else "")
            elif c == "}" and stack:
                stack.pop()
    return stack


def _q(value, dim) -> str:
    return human(value, dim) if isinstance(value, (int, float)) else str(value)


def describe(decl) -> str:
    """A declaration's resolved figures as Markdown (hover; its first line is a completion's
    detail)."""
    if isinstance(decl, LinkType):
        lines = [f"**link {decl.name}** : {decl.cls}, {human(decl.bandwidth, RATE)} per lane per "
                 f"direction, latency {human(decl.latency, SECONDS)}"]
        lines += [f"- {k} = {v}" for k, v in decl.attrs]
        return "\n".join(lines)
    if isinstance(decl, DeviceModel):
        dims = {"hbm": BYTES, "memory": BYTES, "hbm_bandwidth": RATE, "memory_bandwidth": RATE,
                "rate": RATE}
        lines = [f"**device {decl.name}** : {decl.kind}"]
        lines += [f"- {k} = {_q(v, dims[k]) if k in dims else v}" for k, v in decl.attrs]
        lines += [f"- ports.{c} = {n}" for c, n in decl.ports]
        return "\n".join(lines)
    if isinstance(decl, Transformer):
        from .compiler.training.model import parameters
        p = parameters(decl)
        return (f"**model {decl.name}**: {p['total'] / 1e9:.2f} B parameters "
                f"({p['active'] / 1e9:.2f} B active), {decl.layers} layers, hidden {decl.hidden},"
                f" {decl.heads} heads ({decl.kv_heads} key/value), seq {decl.seq}, vocab "
                f"{decl.vocab}" + (f", {decl.experts} experts, top-{decl.top_k}"
                                   if decl.experts else ""))
    if isinstance(decl, s.GroupDecl):
        params = ", ".join(f"{q.name}: {q.type}" for q in decl.params)
        members = [st for st in decl.body if isinstance(st, s.Instance)]
        lines = [f"**group {decl.name}**" + (f"({params})" if params else "")]
        lines += [f"- {m.name}: {m.target}" for m in members[:12]]
        return "\n".join(lines)
    return str(decl)


#: A string (also one not closed yet) or a comment: text whose braces are not the syntax's.
HIDDEN = re.compile(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*')


def unclosed(text: str) -> int:
    """How many blocks are open at the end of ``text`` (braces in strings and comments not
    counted; a '}' with nothing open is ignored)."""
    depth = 0
    for c in re.sub(r"[^{}]", "", HIDDEN.sub("", text)):
        depth = depth + 1 if c == "{" else max(0, depth - 1)
    return depth


def recover(text: str, path: str, cursor_line: int | None = None):
    """The resolved program of ``text`` as far as it goes: the cursor's line left out first (a
    half-typed line) and the blocks still open closed at the end (a '}' not typed yet), then
    each line an error points at, up to eight rounds; None when nothing resolves."""
    from .compiler.lang import pipeline
    lines = text.split("\n")
    if cursor_line is not None and 0 <= cursor_line < len(lines):
        lines[cursor_line] = " " * len(lines[cursor_line])
    lines.append("}" * unclosed("\n".join(lines)))
    here = Path(path).resolve()
    for _ in range(8):
        try:
            return pipeline.front_end("\n".join(lines), path)
        except CompileError as exc:
            bad = set()
            for d in exc.diagnostics:
                i = d.span.line - 1
                if not d.span.line or Path(d.span.path).resolve() != here:
                    continue
                # an error found at a brace (or a blank line) comes from the text before it
                while 0 <= i < len(lines) and not lines[i].strip(" {}\t"):
                    i -= 1
                if 0 <= i < len(lines):
                    bad.add(i)
            if not bad:
                return None
            for i in bad:
                kept = lines[i]
                # keep braces so the blocks around stay balanced
                lines[i] = "".join(c if c in "{}" else " " for c in kept)
        except RecursionError:
            return None
    return None
