"""Measured alternatives of the same training work (issue 42): groups of runs of one model on
one GPU type and count at one global batch (or, where marked, one per-token workload), where
the source changed only the mapping (TP/PP/DP, micro-batch, interleaving), the recompute, the
precision or the sharding, each with its measured figure. ``benchmarks/plan_validation.py
--orderings`` asks whether topoc orders them as they were measured.

Every alternative is a ``tests.training_rows.Row`` (the published-run format, predicted by the
same ``predict``), so a runs.csv row that is one of a group's alternatives is used as it is.
Rows that are not in runs.csv carry their model in ``training_rows.MODELS``. The group's
``source`` is the document it comes from (the leave-one-source-out key, as ``source_of`` reads
a row's), ``where`` the table or section, and each alternative's ``label`` its mapping.

Sources (each group says which table):

- BLOOM: bigscience-workshop/bigscience ``train/tr11-176B-ml/chronicles-prequel.md`` (Feb.
  2022, "Choosing the fastest 3D Topology" to "Rebalancing layers"): 176-206B GPT models
  (vocabulary 250k, 2,048 tokens) on 40-48 nodes of 8 A100 80 GB (Jean Zay), Megatron-DeepSpeed
  with ZeRO-1, no flash attention, every layer checkpointed (the 176B run's
  ``--checkpoint-activations``), seconds per iteration at iteration 2. A table's runs are
  grouped only when they share the model (hidden, layers, heads) and the day (the page warns
  that a PCIe/NUMA fix on 02-25 and the bf16 optimizer from 02-28 move every figure). The page
  names the heads of its first tables "all NHEADS=64 (above too)"; the 02-20 tables name the
  size, not the layers: 80 layers where the page states it, else the count whose parameters
  (with the 250k embedding) give the size printed (183B: 72 layers of 14,400; 195B: 77; 194B:
  78, which gives 194B without the embedding: an assumption). The runs' framework and cluster
  as their sources state them: Jean Zay's four 100 Gb/s Omni-Path ports a node (``JEAN_ZAY``),
  ``CUDA_LAUNCH_BLOCKING=1`` (``launch_blocking``), gradients accumulated by autograd in fp16
  and reduced in fp16 until 02-27, by DeepSpeed's BF16 optimizer in fp32 from 02-28.
- FOUNDRY: MosaicML llm-foundry ``scripts/train/benchmarking/README.md``, tables "H100 80GB
  BF16" and "H100 80GB FP8": the same MPT model, sequence, GPUs and micro-batch in both
  precisions (Composer FSDP FULL_SHARD, flash-attn).
- MBRIDGE: NVIDIA Megatron-Bridge ``docs/performance-summary-archive.md``: within one release's
  table, one model on one system at one GBS run two ways (25.09's figures in parentheses ran
  the FP8-MX recipe on the mapping in parentheses; 25.11's and 26.02's rows of one model in two
  precisions).
- NARAYANAN: Narayanan et al. 2021 (SC'21), Table 2: PTD-P against ZeRO-3 for the 174.6B model
  at 384 and 768 A100s (runs.csv rows).
- TORCHTITAN: ``benchmarks/llama3_h100_202412_torchtitan.md`` Tables 1, 3 and 5: bf16 FSDP
  against float8 with torch.compile (8 and 128 GPUs), 1F1B against interleaved 1F1B for 405B on
  512 GPUs (runs.csv rows).
- TORCHAO: pytorch/ao ``torchao/float8/README.md`` ("Training benchmarks", NVIDIA H100) and
  the torchao README's "Training e2e benchmarks on NVIDIA B200" (power-limited B200s): Llama 3
  8B on 8 GPUs with torchtitan (FSDP2, per-op SAC, torch.compile, batch 1 of 8,192 tokens per
  GPU) in bf16 and float8 recipes, each run with its recipe (``Training.fp8_recipe``:
  tensorwise, rowwise, mxfp8 for both MX rows; the recipes' costs come from torchao's roofline
  code and PyTorch's kernel benchmarks, not from these runs). The two MX rows differ only in
  the scales' rounding (floor against rceil), which topoc does not tell apart.
- ASYNCTP: torchtitan ``benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md`` (June 2025,
  500 W H100 96 GB): the bf16 rows of its results table, vanilla against async TP, Llama 3.1
  8B on 64 GPUs and 70B on 256 (the vanilla runs are runs.csv rows; both 9-10 % apart, so
  they add winners, not pairs over 10 %).
- FLAGPERF: BAAI's FlagPerf (github FlagOpen/FlagPerf, ``training/nvidia/<case>/README.md``,
  each case's scripts and configs beside it, commit 1b5a030): every NVIDIA LLM case whose table
  measures one model on one GPU set at one global batch in more than one way, with a framework
  topoc models (Megatron-Core, FlagScale's Megatron-LM fork). ``llama3_8B-megatron``: the
  8-GPU "A100" ablation table (the case's hardware is a DGX A800: the A100 with NVLink cut to
  400 GB/s, ``training_rows.NVLINK_SHARE``), PP/DP/TP searched at micro-batch 1 and GBS 512 of
  8,192 tokens, one mapping out of memory; the same case's H100 rows in bf16 and in fp8
  (``training_adapter_H100_fp8.sh``: Transformer Engine's hybrid delayed scaling) on 8 and 16
  GPUs; ``llama2_70B-megatron``: TP8 PP4 against TP4 PP8 on 32 H800 at GAS 44 (its fp32 row and
  its GAS 1,024 row are another precision and another batch); ``aquila2_7b-flagscale``: three
  mappings of Aquila2-7B at GBS 72 on 8 A800 (its TP1 PP8 row runs LBS 4 at GBS 36 by the
  case's ``run_pretraining.py``, another batch). Left out: the PaddlePaddle cases (a framework
  topoc does not model; ``llama1_13B-paddle`` also repeats the 7B 40 GB table's figures), and
  the cases whose rows change the sequence, the batch or the GPU count together with the
  mapping; ``qwen1.5_MoE-megatron``'s bf16 and fp16 runs of one MoE on 8 A800 are kept (1.2 %
  apart, no pair; topoc predicts a tie, so its winner counts wrong). None of these scripts passes ``--overlap-grad-reduce`` (Megatron-Core 0.6 and
  FlagScale then overlap nothing by default; the Aquila case's README: FlagScale ed55532 "has
  not implemented compute-communication overlap").
- DLPERF: OneFlow's DLPerf (github Oneflow-Inc/DLPerf), its reproductions of other
  frameworks on one DGX-1-like node of 8 V100-SXM2-16GB (NVLink hybrid cube mesh, the
  README's ``nvidia-smi topo -m``): ``Megatron-LM/README.md``'s "2D" table (Megatron-LM at
  8aa4619, Dec. 2020, ``scripts/mutil_perf_pretrain_gpt_dp_mp_pp_1536_16_16.sh``: GPT of 16
  layers of 1,536, 16 heads, 2,048 tokens, --fp16, --checkpoint-activations, GBS 16), four
  DP x TP mappings of one node, its latency column the iteration time (its "DP" and "MP"
  tables repeat two of them, 480.96 and 692.44 ms, within 4 %); ``DeepSpeed/Megatron-LM/
  README.md``'s one-node table: DeepSpeedExamples' GPT-2 small (12 layers of 768, 1,024
  tokens) at 4 sequences a GPU, ZeRO stage 0 against 1 (198.6 and 195.8 samples/s). Left
  out: the 32-GPU pipeline table (four DGX-1-like nodes over one 100 Gb/s EDR port each: no
  library fabric) and OneFlow's own runs (a framework topoc does not model). V100s take
  Hopper's GEMM curve (``gemm.generation``'s default; no Volta curve is fitted).
- PAI: alibaba/Pai-Megatron-Patch issue 658 (2025-09-02): Qwen3-235B-A22B on 256 H800, the
  same recipe at tp 1 and tp 2 (ep 8, pp 32, vpp 3, four sequences a micro-batch, full
  recompute).
"""

from __future__ import annotations

import functools

import attrs

from tests.training_rows import DEGRADE, MODELS, OPTIONS, Row, rows
from topoc.compiler.ir.system import Transformer
from topoc.compiler.lang.derive import bundled_models
from topoc.compiler.training.model import Shape

BLOOM = "bigscience-workshop/bigscience train/tr11-176B-ml/chronicles-prequel.md"
BLOOM_URL = ("https://github.com/bigscience-workshop/bigscience/blob/master/train/"
             "tr11-176B-ml/chronicles-prequel.md")
FOUNDRY = "MosaicML llm-foundry scripts/train/benchmarking/README.md"
FOUNDRY_URL = ("https://github.com/mosaicml/llm-foundry/blob/main/scripts/train/benchmarking/"
               "README.md")
MBRIDGE = "NVIDIA Megatron-Bridge performance summary archive"
MBRIDGE_URL = ("https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/main/docs/"
               "performance-summary-archive.md")
PAI = "alibaba/Pai-Megatron-Patch issue 658"
PAI_URL = "https://github.com/alibaba/Pai-Megatron-Patch/issues/658"


@attrs.frozen
class Alternative:
    """One measured way of running a group's work: its row and a short label of its mapping;
    ``oom``: the source reports it out of memory (its row's ``value`` is None: no figure, not
    in any pair; benchmarks/plan_validation.py ranks it against the group's measured winner
    as ``topoc plan`` would)."""

    row: Row
    label: str
    oom: bool = False


@attrs.frozen
class Group:
    """Measured alternatives of one training work."""

    id: str
    source: str          # the document (the leave-one-source-out key)
    url: str
    where: str           # table or section
    alternatives: tuple[Alternative, ...]
    note: str = ""


#: Jean Zay's A100 nodes: "8 GPUs per node Using NVLink 4 inter-gpu connects, 4 OmniPath
#: links", "Inter-node connect: Omni-Path Architecture (OPA)" (the BLOOM model card,
#: huggingface.co/bigscience/bloom, Hardware): four 100 Gb/s OPA ports a node where the
#: library's A100 cluster (DGX A100 SuperPOD) has eight 200 Gb/s HDR rails. What NCCL moves
#: over one of those ports was measured on the same nodes: bigscience-workshop/bigscience
#: ``experiments/bandwidth/n4_a100_all_reduce_bench.txt`` at commit 74c6c3d (the file was
#: replaced on 2022-01-28 by ``all_reduce_bench-a100-n4.txt``, whose runs range 14.7-40.8 Gb/s
#: of bus bandwidth, the same ceiling) (NCCL 2.10.3 over the hfi1 ports,
#: a 4 GB all-reduce on 4 jean-zay-iam nodes, 4 GPUs each, whose ring sent both its channels
#: through one port, "via NET/IB/1"): 39.9 Gb/s bus bandwidth, 40 % of the port's line rate
#: (the directory's README: "an issue with nccl that doesn't fully utilize Intel OPA full
#: bandwidth"). Four ports at 40 Gb/s are 160 Gb/s a node, 20 Gb/s a GPU: each library rail
#: at a tenth of its rate (a quarter, the line rate, before that measurement was read).
JEAN_ZAY = ("cluster.node*.nic*<->cluster.leaf*=10%",)


def _bloom_model(hidden: int, layers: int, heads: int) -> Transformer:
    return Transformer(f"bloom_h{hidden}_l{layers}_a{heads}", layers, hidden, heads, 2048,
                       250880, 4 * hidden, heads, tied=True, dropout=False, dtype="bf16")


def _bloom(gid: str, day: str, hidden: int, layers: int, heads: int, gpus: int, runs,
           where: str) -> Group:
    """A BLOOM prequel table's runs of one model: (tp, pp, dp, mb, gbs, seconds or None)."""
    m = _bloom_model(hidden, layers, heads)
    alts = []
    for tp, pp, dp, mb, gbs, sec in runs:
        label = f"tp{tp} pp{pp} dp{dp} mb{mb}" + (f" gbs{gbs}" if gbs != 2048 else "")
        assert tp * pp * dp == gpus, (gid, label)
        rid = f"bloom-{gid}-tp{tp}-pp{pp}-mb{mb}-gbs{gbs}"
        MODELS[rid] = m
        # the page: fp16 until 02-27 (gradients accumulated in fp16 by autograd: the fork's
        # layers call plain F.linear), DeepSpeed's BF16 optimizer from 02-28 ("accumulate
        # gradients in fp32")
        # and reduced as kept: fp16 by DeepSpeed's ZeRO-1 until 02-27, the BF16 optimizer's
        # fp32 buffer (``get_grads_for_reduction``) from 02-28
        bf16 = day >= "02-28"
        # and every launch synchronous: "do not remove or the training will hang"
        # (tr11-176B-ml.slurm's CUDA_LAUNCH_BLOCKING=1; the page: at 320 GPUs without it
        # "always hangs")
        OPTIONS[rid] = dict(grad_accumulation="fp32_copy" if bf16 else "autograd",
                            bf16_grads=not bf16, launch_blocking=True)
        DEGRADE[rid] = JEAN_ZAY
        alts.append(Alternative(Row(
            rid, BLOOM, "A100-80GB", gpus, m.name, gbs, Shape(tp, 1, 1, dp, pp), mb, 1, "full",
            False, False, False, 1, False, False, "iter_time_s", sec, None, "narayanan"),
            label, oom=sec is None))
    return Group(f"bloom-{gid}", BLOOM, BLOOM_URL,
                 f"{where} ({day}; hidden {hidden}, {layers} layers, {heads} heads)",
                 tuple(alts))


def _bloom_groups() -> list[Group]:
    g = []
    g.append(_bloom("200b-0220", "02-20", 14400, 80, 64, 320, (
        (8, 10, 4, 1, 2048, 221.21), (8, 10, 4, 2, 2048, 207.92), (8, 10, 4, 4, 2048, 208.18),
        (8, 10, 4, 8, 2048, 229.69)), "Choosing the fastest 3D Topology, MBS tables"))
    g.append(_bloom("195b-0220", "02-20", 14400, 77, 64, 352, (
        (8, 11, 4, 1, 2048, 197.15), (8, 11, 4, 2, 2048, 186.65), (8, 11, 4, 4, 2048, 185.79),
        (8, 11, 4, 8, 2048, 206.62)), "Choosing the fastest 3D Topology, MBS tables"))
    g.append(_bloom("194b-0220", "02-20", 14400, 78, 64, 384, (
        (8, 6, 8, 1, 2048, 183.64), (8, 6, 8, 2, 2048, 172.36), (8, 6, 8, 4, 2048, 173.92),
        (8, 6, 8, 8, 2048, 192.42)), "Choosing the fastest 3D Topology, MBS tables"))
    g.append(_bloom("183b-0220", "02-20", 14400, 72, 64, 384, (
        (8, 12, 4, 1, 2048, 172.40), (8, 12, 4, 2, 2048, 161.96), (8, 12, 4, 4, 2048, 163.32)),
        "Choosing the fastest 3D Topology, MBS tables"))
    g.append(_bloom("187b-0220", "02-20", 13824, 80, 64, 320, (
        (8, 10, 4, 1, 2048, 160.29), (8, 10, 4, 2, 2048, 151.07), (8, 10, 4, 4, 2048, 147.43),
        (8, 10, 4, 8, 2048, 152.51)), "tile and wave quantization"))
    g.append(_bloom("181b-0221", "02-21", 14336, 72, 64, 384, (
        (8, 12, 4, 1, 2048, 143.31), (8, 12, 4, 2, 2048, 134.02), (8, 12, 4, 4, 2048, 123.69),
        (8, 12, 4, 8, 2048, 129.26), (8, 6, 8, 1, 2048, 139.82), (8, 6, 8, 2, 2048, 131.02),
        (8, 6, 8, 4, 2048, 121.48)), "48 node contenders"))
    g.append(_bloom("196b-0221", "02-21", 13824, 84, 64, 384, (
        (8, 12, 4, 2, 2048, 143.89), (8, 12, 4, 4, 2048, 133.12), (8, 6, 8, 2, 2048, 141.41),
        (8, 6, 8, 4, 2048, 130.31)), "48 node contenders"))
    g.append(_bloom("177b-0223", "02-23", 12288, 96, 64, 384, (
        (8, 6, 8, 2, 2048, 136.73), (8, 6, 8, 4, 2048, 122.96)), "Final round comparison"))
    g.append(_bloom("182b-l84-0223", "02-23", 13312, 84, 64, 384, (
        (8, 12, 4, 4, 2048, 125.52), (8, 6, 8, 2, 2048, 135.55), (8, 6, 8, 4, 2048, 122.93)),
        "Final round comparison"))
    g.append(_bloom("181b-0223", "02-23", 14336, 72, 64, 384, (
        (8, 12, 4, 4, 2048, 123.79), (8, 6, 8, 4, 2048, 120.85)), "Final round comparison"))
    g.append(_bloom("181b-0225", "02-25", 14336, 72, 64, 384, (
        (8, 6, 8, 4, 2048, 114.11), (8, 6, 8, 6, 2016, 123.57), (8, 12, 4, 4, 2048, 117.07),
        (8, 12, 4, 2, 2048, 128.82), (8, 8, 6, 4, 2016, 113.16), (8, 4, 12, 2, 2016, 125.52),
        (8, 4, 12, 4, 2016, 114.81), (8, 2, 24, 1, 2016, 145.45), (8, 2, 24, 2, 2016, 136.13),
        (8, 1, 48, 1, 2016, None), (4, 12, 8, 4, 2048, 111.89), (4, 12, 8, 2, 2048, 110.48),
        (4, 6, 16, 4, 2048, 117.11), (4, 6, 16, 2, 2048, 111.71), (2, 12, 16, 2, 2048, 112.50),
        (2, 6, 32, 2, 2048, None), (2, 6, 32, 1, 2048, None), (2, 24, 8, 1, 2048, 119.53),
        (2, 24, 8, 2, 2048, 122.75), (4, 24, 4, 1, 2048, 130.60)),
        "GBS Variations (GBS 2,016 and 2,048 rows; the GBS 1,568 rows left out; the second "
        "tp4 pp12 mb2 run, 113.54 s at 38 GB, left out as a repeat)"))
    g.append(_bloom("181b-0225-gbs1568", "02-25", 14336, 72, 64, 384, (
        (8, 6, 8, 4, 1568, 113.01), (8, 12, 4, 4, 1568, 92.75), (8, 12, 4, 2, 1568, 99.93)),
        "GBS Variations (the GBS 1,568 rows)"))
    g.append(_bloom("182b-a64-0226", "02-26", 13824, 78, 64, 384, (
        (4, 12, 8, 1, 2048, 148.24), (4, 12, 8, 2, 2048, 103.51), (4, 12, 8, 4, 2048, 106.72)),
        "Another round of NHEADS"))
    g.append(_bloom("182b-a96-0226", "02-26", 13824, 78, 96, 384, (
        (4, 12, 8, 2, 2048, 107.12), (4, 12, 8, 4, 2048, 110.31), (8, 6, 8, 4, 2048, 118.12)),
        "Another round of NHEADS"))
    g.append(_bloom("181b-0226", "02-26", 14336, 72, 64, 384, (
        (4, 12, 8, 2, 2048, 110.42), (8, 6, 8, 4, 2048, 113.95)), "Another round of NHEADS"))
    g.append(_bloom("182b-l84-0226", "02-26", 13312, 84, 64, 384, (
        (4, 12, 8, 2, 2048, 103.82), (4, 12, 8, 4, 2048, 113.21), (8, 6, 8, 2, 2048, 129.61)),
        "Another round of NHEADS"))
    g.append(_bloom("182b-0227", "02-27", 13824, 78, 96, 384, (
        (8, 6, 8, 2, 2048, 133.57), (8, 6, 8, 4, 2048, 118.24), (4, 6, 16, 4, 2048, 115.55)),
        "Re-do"))
    g.append(_bloom("195b-0228", "02-28", 12288, 106, 96, 384, (
        (4, 12, 8, 2, 2048, 118.79), (4, 12, 8, 4, 2048, 120.34)), "Rebalancing layers"))
    g.append(_bloom("184b-0228", "02-28", 12288, 100, 64, 384, (
        (4, 6, 16, 2, 2048, None), (4, 6, 16, 1, 2048, None), (8, 6, 8, 2, 2048, 139.72),
        (8, 6, 8, 4, 2048, 120.96)), "Rebalancing layers"))
    g.append(_bloom("178b-0228", "02-28", 13312, 82, 64, 384, (
        (8, 12, 4, 4, 2048, 111.79), (4, 12, 8, 2, 2048, 104.45), (4, 12, 8, 4, 2048, 104.82)),
        "Rebalancing layers"))
    g.append(_bloom("176b-0228", "02-28", 14336, 70, 64, 384, (
        (8, 12, 4, 2, 2048, 121.63), (4, 12, 8, 2, 2048, 102.03), (4, 12, 8, 4, 2048, 102.27)),
        "Rebalancing layers"))
    return g


#: MPT shapes (llm-foundry scripts/train/yamls/pretrain/mpt-1b.yaml, mpt-3b.yaml): hidden,
#: layers, heads; vocabulary 50,368, ffn 4 x hidden.
_MPT = {"1b": (2048, 24, 16), "3b": (2560, 32, 20)}


def _foundry_groups() -> list[Group]:
    """Same model, sequence, GPUs and micro-batch in the BF16 and FP8 tables (8 H100s)."""
    out = []
    for size, seq, mb, gbs, ckpt, bf16, fp8, mb8 in (
            ("3b", 8192, 3, 144, False, 16578, 19146, 3),
            ("3b", 32768, 3, 144, True, 5873, 5856, 3),
            ("3b", 512, 40, 1920, False, 27965, 36527, 40),
            ("1b", 32768, 1, 32, False, 12025, 12580, 1),
            ("1b", 512, 56, 1792, False, 52275, 70315, 56)):
        h, layers, heads = _MPT[size]
        m = Transformer(f"mpt_{size}", layers, h, heads, seq, 50368, 4 * h, heads, tied=True,
                        dropout=False)
        alts = []
        for prec, value in (("bf16", bf16), ("fp8", fp8)):
            rid = f"llmfoundry-ord-h100-mpt-{size}-s{seq}-8gpu-{prec}"
            MODELS[rid] = m
            alts.append(Alternative(Row(
                rid, FOUNDRY, "H100-SXM", 8, m.name, gbs, Shape(1, 1, 1, 8, 1), mb, 1,
                "full" if ckpt else "none", False, prec == "fp8", True, 1, True, True,
                "tokens_per_s_per_gpu", float(value), None, "fsdp"), prec))
        out.append(Group(f"foundry-mpt{size}-s{seq}", FOUNDRY, FOUNDRY_URL,
                         "tables 'H100 80GB BF16' and 'H100 80GB FP8' (micro-batch "
                         f"{mb}, GBS {gbs}, activation checkpointing {ckpt})", tuple(alts)))
    return out


def _mbridge_row(rid: str, gpu: str, gpus: int, model: str, gbs: int, mb: int, tp: int,
                 pp: int, cp: int, vp: int, ep: int, fsdp: bool, fp8: bool, value: float,
                 seq: int) -> Row:
    m = attrs.evolve(bundled_models()[model], seq=seq)
    MODELS[rid] = m
    dp = gpus // (tp * pp * cp)
    return Row(rid, MBRIDGE, gpu, gpus, model, gbs, Shape(tp, cp, ep, dp, pp), mb, vp, "",
               tp > 1, fp8, fsdp, 1, True, False, "tokens_per_s_per_gpu", value, None,
               "megatron")


def _by_id() -> dict[str, Row]:
    return {r.id: r for r in rows()}


def _mbridge_groups() -> list[Group]:
    have = _by_id()
    # the GB200 FP8 Megatron-FSDP recipe offloads 40 layers' activations (training_rows'
    # _MBRIDGE_OFFLOAD)
    for rid in ("mbridge-2509-gb200-l70-fsdp", "mbridge-2602-gb200-l70-fsdp-fp8"):
        OPTIONS[rid] = dict(offload_layers=40)
    # 25.09's DeepSeek-V3 runs are labelled "(tokendrop)" (25.11's and 26.02's MoE rows are
    # "token-dropless", the archive's notes): Megatron-Bridge's --use_tokendrop
    # (scripts/performance/utils/helpers.py -> training/utils/moe_token_drop.py
    # apply_moe_token_drop: capacity factor 1.0, moe_pad_expert_input_to_capacity=True), so
    # the dispatcher never waits on the host for the token counts (``Training.token_drop``)
    for rid in ("mbridge-2509-gb200-dsv3-pp4", "mbridge-2509-gb200-dsv3-pp8"):
        OPTIONS[rid] = dict(token_drop=True)
    g = []
    r = _mbridge_row
    g.append(Group("mbridge-2509-gb200-llama370b-64", MBRIDGE, MBRIDGE_URL,
                   "25.09 DGX-GB200: LLAMA3_70B, the FP8-CS figure and the FP8-MX one in "
                   "parentheses on its own mapping (GA 16 gives micro-batch 1)", (
        Alternative(r("mbridge-2509-gb200-l70-fsdp", "GB200", 64, "llama3_70b", 128, 2, 1, 1,
                      1, 1, 1, True, True, 3986.0, 8192), "fsdp64 mb2 (fp8-cs)"),
        Alternative(r("mbridge-2509-gb200-l70-tp2pp4", "GB200", 64, "llama3_70b", 128, 1, 2,
                      4, 1, 5, 1, False, True, 3546.0, 8192), "tp2 pp4 vp5 mb1 (fp8-mx)"))))
    g.append(Group("mbridge-2509-gb200-llama405b-128", MBRIDGE, MBRIDGE_URL,
                   "25.09 DGX-GB200: LLAMA3.1_405B, FP8-CS and FP8-MX (parentheses)", (
        Alternative(r("mbridge-2509-gb200-l405-fsdp", "GB200", 128, "llama31_405b", 64, 1, 2,
                      1, 1, 1, 1, True, True, 729.0, 8192), "fsdp64 tp2 (fp8-cs)"),
        Alternative(r("mbridge-2509-gb200-l405-tp4pp8cp2", "GB200", 128, "llama31_405b", 64, 1,
                      4, 8, 2, 8, 1, False, True, 578.0, 8192), "tp4 pp8 cp2 vp8 (fp8-mx)"))))
    g.append(Group("mbridge-2509-gb200-dsv3-256", MBRIDGE, MBRIDGE_URL,
                   "25.09 DGX-GB200: DeepSeekV3 (tokendrop), the figure and the one in "
                   "parentheses on its own mapping; the table has no precision column, its "
                   "note puts the parentheses at the MX granularity, so both are taken as fp8",
                   (
        Alternative(r("mbridge-2509-gb200-dsv3-pp4", "GB200", 256, "deepseek_v3", 2048, 1, 1, 4,
                      1, 4, 64, False, True, 3454.0, 4096), "pp4 vp4 ep64"),
        # the table's EP column says 64 for both runs, but with PP 8 a stage holds 32 GPUs and
        # Megatron-Core's expert mesh (etp x ep x edp = tp x cp x dp on each stage) cannot
        # hold 64: the parenthesised run is taken at EP 32, as 25.11's FP8-MX run on PP 8 is
        # published (runs.csv mbridge-2511-gb200-dsv3-256-fp8-mx: PP 8, VP 4, EP 32)
        Alternative(r("mbridge-2509-gb200-dsv3-pp8", "GB200", 256, "deepseek_v3", 2048, 1, 1, 8,
                      1, 2, 32, False, True, 2835.0, 4096), "pp8 vp2 ep32"))))
    g.append(Group("mbridge-2511-gb200-dsv3-256", MBRIDGE, MBRIDGE_URL,
                   "25.11 DGX-GB200: DeepSeekV3 (w/o MTP) BF16 and FP8-MX rows (runs.csv)", (
        Alternative(have["mbridge-2511-gb200-dsv3-256-bf16"], "bf16 pp4 ep64"),
        Alternative(have["mbridge-2511-gb200-dsv3-256-fp8-mx"], "fp8 pp8 ep32"))))
    g.append(Group("mbridge-2602-gb200-llama370b-64", MBRIDGE, MBRIDGE_URL,
                   "26.02 LLAMA3_70B on DGX-GB200: MXFP8 (runs.csv) and FP8 rows", (
        Alternative(have["mbridge-2602-gb200-llama370b-64-mxfp8"], "tp2 pp4 vp5 mb1 (mxfp8)"),
        Alternative(r("mbridge-2602-gb200-l70-fsdp-fp8", "GB200", 64, "llama3_70b", 256, 2, 1,
                      1, 1, 1, 1, True, True, 4040.0, 8192), "fsdp64 mb2 (fp8)"))))
    g.append(Group("mbridge-2602-gb200-llama405b-256", MBRIDGE, MBRIDGE_URL,
                   "26.02 LLAMA3.1_405B on DGX-GB200: MXFP8 and FP8 rows", (
        Alternative(r("mbridge-2602-gb200-l405-vp8", "GB200", 256, "llama31_405b", 1536, 1, 4,
                      16, 1, 8, 1, False, True, 786.0, 8192), "tp4 pp16 vp8 (mxfp8)"),
        Alternative(r("mbridge-2602-gb200-l405-vp4", "GB200", 256, "llama31_405b", 1536, 1, 4,
                      16, 1, 4, 1, False, True, 793.0, 8192), "tp4 pp16 vp4 (fp8)"))))
    return g


def _runs_groups() -> list[Group]:
    """Groups whose alternatives are all runs.csv rows."""
    have = _by_id()
    nar = "Narayanan et al., SC'21, arXiv:2104.04473"
    nar_url = "https://arxiv.org/abs/2104.04473"
    tt = "torchtitan benchmarks/llama3_h100_202412_torchtitan.md"
    tt_url = ("https://github.com/pytorch/torchtitan/blob/main/benchmarks/"
              "llama3_h100_202412_torchtitan.md")
    out = []
    for n in (384, 768):
        out.append(Group(f"narayanan21-t2-174.6b-{n}", nar, nar_url,
                         f"Table 2, 174.6B on {n} GPUs", (
            Alternative(have[f"narayanan21-t2-ptdp-174.6b-{n}gpu"], "PTD-P tp8 pp12"),
            Alternative(have[f"narayanan21-t2-zero3-174.6b-{n}gpu"], "ZeRO-3"))))
    out.append(Group("tt24-t1-8b-8", tt, tt_url, "Table 1, Llama 3 8B on 8 GPUs", (
        Alternative(have["tt24-t1-8b-8gpu-fsdp-bf16"], "fsdp bf16"),
        Alternative(have["tt24-t1-8b-8gpu-fsdp-compile-fp8"], "fsdp compile fp8"))))
    out.append(Group("tt24-t3-8b-128", tt, tt_url, "Table 3, Llama 3 8B on 128 GPUs", (
        Alternative(have["tt24-t3-8b-128gpu-fsdp-bf16"], "fsdp bf16"),
        Alternative(have["tt24-t3-8b-128gpu-fsdp-compile-fp8"], "fsdp compile fp8"))))
    out.append(Group("tt24-t5-405b-512", tt, tt_url, "Table 5, Llama 3.1 405B on 512 GPUs", (
        Alternative(have["tt24-t5-405b-512gpu-3d-1f1b-fp8"], "1f1b"),
        Alternative(have["tt24-t5-405b-512gpu-3d-interleaved-fp8"], "interleaved 1f1b"))))
    return out


TORCHAO = "pytorch/ao torchao float8 training benchmarks"
TORCHAO_URL = "https://github.com/pytorch/ao/blob/main/torchao/float8/README.md"


def _torchao_groups() -> list[Group]:
    """torchao's float8 recipes against bf16 on torchtitan's Llama 3 8B (8 GPUs, batch 1)."""
    base = _by_id()["tt24-t1-8b-8gpu-fsdp-bf16"]
    out = []
    for gpu, where, runs in (
            ("H100-SXM", "torchao/float8/README.md, Training benchmarks, NVIDIA H100 (torchao "
             "0.10, torch 2.7)", (("bf16", False, 6150.0), ("tensorwise", True, 7689.5),
                                  ("rowwise", True, 6768.0))),
            ("B200", "README.md, Training e2e benchmarks on NVIDIA B200 (power limited; torchao "
             "0.13, torch 2.9)", (("bf16", False, 8307.5), ("tensorwise", True, 10417.0),
                                  ("mxfp8_cublas", True, 9969.0),
                                  ("mxfp8_cublas_rceil", True, 9642.0),
                                  ("rowwise", True, 8640.5)))):
        alts = []
        for label, fp8, value in runs:
            rid = f"torchao-{gpu.lower()}-llama3-8b-8gpu-{label}"
            MODELS[rid] = MODELS.get(base.id) or _model_of(base.id)
            OPTIONS[rid] = dict(cross_entropy="compiled")      # torch.compile, as tt25 rows
            if fp8:     # the recipe the row names (mxfp8_cublas and its rceil variant: MX)
                OPTIONS[rid]["fp8_recipe"] = "mxfp8" if label.startswith("mx") else label
            alts.append(Alternative(attrs.evolve(
                base, id=rid, source=TORCHAO, gpu=gpu, batch=8, microbatch=1, fp8=fp8,
                value=value, memory_gb=None), label))
        out.append(Group(f"torchao-{gpu.lower()}-llama3-8b-8", TORCHAO, TORCHAO_URL, where,
                         tuple(alts)))
    return out


def _model_of(rid: str):
    from tests.training_rows import _model_cached
    return _model_cached(rid)


ASYNCTP = "torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md"
ASYNCTP_URL = ("https://github.com/pytorch/torchtitan/blob/main/benchmarks/"
               "asyncTP_llama3_h100_2025-06_torchtitan.md")


def _asynctp_groups() -> list[Group]:
    """Vanilla against async tensor parallelism (``--parallelism.enable_async_tensor_parallel``)
    on the same bf16 runs: the runs.csv rows (vanilla TP) and the async TP figure of the same
    row of the benchmark's table (assets/images/async-tp-perf-06-14-2025.png, tokens/s per
    GPU; runs.csv's notes: "AsyncTP: 652.4", "AsyncTP: 4809.4")."""
    have = _by_id()
    out = []
    for rid, value, what in (
            ("tt25-asynctp-70b-256gpu-bf16-vanillaTP", 652.4,
             "Llama 3.1 70B, bf16, full AC, local batch 16, FSDP 32 x TP 8"),
            ("tt25-asynctp-8b-64gpu-bf16-vanillaTP", 4809.4,
             "Llama 3.1 8B, bf16, per-op SAC, local batch 12, FSDP 8 x TP 8")):
        base = have[rid]
        async_id = rid.replace("vanillaTP", "asyncTP")
        MODELS[async_id] = _model_of(rid)
        OPTIONS[async_id] = dict(OPTIONS.get(rid, {}), async_tp=True)
        alts = (Alternative(base, "vanilla TP"),
                Alternative(attrs.evolve(base, id=async_id, value=value), "async TP"))
        out.append(Group(f"tt25-asynctp-{rid.split('-')[2]}", ASYNCTP, ASYNCTP_URL,
                         f"the results table: {what}, vanilla against async TP", alts))
    return out


def _pai_groups() -> list[Group]:
    m = attrs.evolve(bundled_models()["qwen3_235b_a22b"], seq=4096)
    alts = []
    for tp, sec in ((1, 42.537), (2, 43.495)):
        rid = f"pai658-h800-q235-256-tp{tp}"
        MODELS[rid] = m
        alts.append(Alternative(Row(
            rid, PAI, "H800", 256, "qwen3_235b_a22b", 4096, Shape(tp, 1, 8, 256 // (tp * 32), 32),
            4, 3, "full", tp > 1, False, False, 1, True, False, "iter_time_s", sec, None,
            "megatron"), f"tp{tp} ep8 pp32 vpp3 mb4 full"))
    return [Group("pai658-q235-256", PAI, PAI_URL,
                  "the issue's table, GBS 4,096 rows (bf16, force-balanced routing)", tuple(alts))]


FLAGPERF = "FlagOpen/FlagPerf training/nvidia case READMEs"
FLAGPERF_URL = "https://github.com/FlagOpen/FlagPerf/tree/main/training/nvidia"


def _flagperf_row(rid: str, gpu: str, gpus: int, model: Transformer, gbs: int, mb: int,
                  tp: int, pp: int, recompute: str, fp8: bool, fa2: bool, sp: bool,
                  value: float | None) -> Row:
    """One FlagPerf table row (tokens per GPU per second; None: out of memory): Megatron's
    distributed optimizer, sequence parallelism where the case's script passes it, no overlap
    of the gradient reduction (no script passes ``--overlap-grad-reduce``)."""
    MODELS[rid] = model
    OPTIONS[rid] = dict(overlap=False)
    dp = gpus // (tp * pp)
    return Row(rid, FLAGPERF, gpu, gpus, model.name, gbs, Shape(tp, 1, 1, dp, pp), mb, 1,
               recompute, sp and tp > 1, fp8, False, 1, True, fa2,
               "tokens_per_s_per_gpu", value, None, "megatron")


def _flagperf_groups() -> list[Group]:
    """FlagPerf's NVIDIA LLM cases with more than one run of one training work (module
    docstring, FLAGPERF)."""
    out = []
    l8 = attrs.evolve(bundled_models()["llama3_8b"], seq=8192)

    def group(gid, where, runs):
        alts = []
        for rid, label, row_args in runs:
            row = _flagperf_row(rid, *row_args)
            alts.append(Alternative(row, label, oom=row.value is None))
        out.append(Group(gid, FLAGPERF, FLAGPERF_URL, where, tuple(alts)))

    # llama3_8B-megatron/README.md, "A100单机8卡 消融实验" (A100 single node, ablations) and the
    # baseline row above it; pretrain_llama3.sh: Megatron-Core 0.6 with Transformer Engine,
    # --sequence-parallel, --use-distributed-optimizer, --use-flash-attn, micro-batch 1, GBS
    # 512. The README lists "recompute-activations" among its optimisations but the script
    # passes no recompute flag: the recompute is taken as unpublished (the lightest that fits).
    group("flagperf-llama3-8b-a800-8",
          "llama3_8B-megatron: the A100 ablation table (DGX A800 80 GB), bf16, PPxDPyTPz",
          [(f"flagperf-a800-l3-8b-pp{pp}dp{dp}tp{tp}", f"pp{pp} dp{dp} tp{tp}",
            ("A800", 8, l8, 512, 1, tp, pp, "", False, False, True, v))
           for pp, dp, tp, v in ((2, 4, 1, 3698.7), (4, 2, 1, 3306.5), (1, 8, 1, None),
                                 (2, 2, 2, 3409.2), (2, 1, 4, 3006.1), (8, 1, 1, 2690.3),
                                 (1, 1, 8, 2451.2), (4, 1, 2, 3042.7))])
    for gpus, dp, bf16, fp8 in ((8, 4, 8103.0, 10486.0), (16, 8, 7914.0, 10280.0)):
        group(f"flagperf-llama3-8b-h100-{gpus}",
              f"llama3_8B-megatron: H100 x {gpus}, PP1 DP{dp} TP2, bf16 and bf16+fp8 (TE "
              "hybrid delayed scaling)",
              [(f"flagperf-h100-l3-8b-{gpus}-{prec}", prec,
                ("H100-SXM", gpus, l8, 512, 1, 2, 1, "", prec == "fp8", False, True, v))
               for prec, v in (("bf16", bf16), ("fp8", fp8))])
    # llama2_70B-megatron: FlagScale @6fc099c (megatron_main.sh: --sequence-parallel,
    # --use-distributed-optimizer, --use-flash-attn, --bf16; config_H800x4x8.py: seq 4096,
    # micro-batch 1, accumulate_steps 44, recompute False); the "amp" rows
    l70 = attrs.evolve(bundled_models()["llama2_70b"], seq=4096)
    group("flagperf-llama2-70b-h800-32",
          "llama2_70B-megatron: H800 x 32 (4 x 8), amp rows at GAS 44 (GBS 44)",
          [(f"flagperf-h800-l2-70b-tp{tp}pp{pp}", f"tp{tp} pp{pp}",
            ("H800", 32, l70, 44, 1, tp, pp, "none", False, True, True, v))
           for tp, pp, v in ((8, 4, 641.93), (4, 8, 791.37))])
    # aquila2_7b-flagscale: FlagScale @ed55532 (flagscale_main.sh: 32 layers of 4,096, 32
    # heads, SwiGLU at multiple-of 256 -> ffn 11,008, vocabulary 100,008 untied, seq 2048,
    # --use-distributed-optimizer, --use-flash-attn, no --sequence-parallel, no recompute);
    # run_pretraining.py: GBS = LBS x 8 x 9 / (tp x pp) = 72 for these three rows
    aq = Transformer("aquila2_7b", 32, 4096, 32, 2048, 100008, 11008, 32, gated=True,
                     tied=False, dropout=False)
    group("flagperf-aquila2-7b-a800-8",
          "aquila2_7b-flagscale: A800 x 8, GBS 72 (TP1 PP8 at LBS 4 is GBS 36: left out)",
          [(f"flagperf-a800-aquila2-7b-tp{tp}pp{pp}", f"tp{tp} pp{pp} dp{8 // (tp * pp)} mb{mb}",
            ("A800", 8, aq, 72, mb, tp, pp, "none", False, True, False, v))
           for tp, pp, mb, v in ((1, 1, 1, 3936.8), (8, 1, 8, 2866.3), (2, 2, 4, 3468.3))])
    # qwen1.5_MoE-megatron: Pai-Megatron-Patch on Megatron-LM-240405 (megatron_pai_main.sh: a
    # Megatron-Core MoE of 24 layers of 2,048, 16 heads, 8 experts of 5,504 top-2, EP 1, the
    # Qwen2 tokenizer's 151,646 + 293 extra tokens untied, seq 8192, --sequence-parallel,
    # --use-distributed-optimizer, --recompute-activations (selective), Transformer Engine;
    # config_A800x1x8.py: micro-batch 1, GBS 512, TP1 PP2); the same run in bf16 and fp16,
    # which topoc does not tell apart (a predicted tie: no winner)
    qw = {dt: Transformer(f"flagperf_qwen15_moe_{dt}", 24, 2048, 16, 8192, 151939, 5504, 16,
                          experts=8, top_k=2, expert_ffn=5504, gated=True, tied=False,
                          dropout=False, dtype=dt) for dt in ("bf16", "fp16")}
    group("flagperf-qwen15-moe-a800-8",
          "qwen1.5_MoE-megatron: A800 x 8, TP1 PP2 DP4, bf16 and fp16",
          [(f"flagperf-a800-qwen15-moe-{dt}", dt,
            ("A800", 8, qw[dt], 512, 1, 1, 2, "selective", False, True, True, v))
           for dt, v in (("bf16", 7450.7), ("fp16", 7537.7))])
    return out


DLPERF = "Oneflow-Inc/DLPerf Megatron-LM and DeepSpeed reproductions"
DLPERF_URL = "https://github.com/Oneflow-Inc/DLPerf/tree/master/Megatron-LM"


def _dlperf_groups() -> list[Group]:
    """DLPerf's one-node V100 tables of other frameworks (module docstring, DLPERF)."""
    gpt = Transformer("dlperf_gpt_1536x16", 16, 1536, 16, 2048, 50257, 4 * 1536, 16,
                      tied=True, dropout=True, dtype="fp16")
    alts = []
    for dp, tp, mb, ms in ((8, 1, 2, 480.22), (1, 8, 16, 664.64), (2, 4, 8, 576.48),
                           (4, 2, 4, 593.68)):
        rid = f"dlperf-v100-megatron-gpt1536-dp{dp}tp{tp}"
        MODELS[rid] = gpt
        alts.append(Alternative(Row(
            rid, DLPERF, "V100-SXM2-16GB", 8, gpt.name, 16, Shape(tp, 1, 1, dp, 1), mb, 1,
            "full", False, False, False, 1, False, False, "iter_time_s", ms / 1e3, None,
            "narayanan"), f"dp{dp} tp{tp} mb{mb}"))
    out = [Group("dlperf-megatron-gpt1536-v100-8", DLPERF, DLPERF_URL,
                 "Megatron-LM/README.md, the 2D table's one-node rows (GBS 16)", tuple(alts))]
    gpt2 = Transformer("dlperf_gpt2_small", 12, 768, 12, 1024, 50257, 4 * 768, 12, tied=True,
                       dropout=True, dtype="fp16")
    alts = []
    for zero, sps in ((0, 198.6), (1, 195.8)):
        rid = f"dlperf-v100-deepspeed-gpt2small-zero{zero}"
        MODELS[rid] = gpt2
        alts.append(Alternative(Row(
            rid, DLPERF, "V100-SXM2-16GB", 8, gpt2.name, 32, Shape(1, 1, 1, 8, 1), 4, 1,
            "none", False, False, False, zero, False, False, "iter_time_s", 32 / sps, None,
            "narayanan"), f"zero-stage-{zero}"))
    out.append(Group("dlperf-deepspeed-gpt2small-v100-8", DLPERF,
                     "https://github.com/Oneflow-Inc/DLPerf/tree/master/DeepSpeed/Megatron-LM",
                     "DeepSpeed/Megatron-LM/README.md, 1n_8g_dp_4bs, ZeRO stage 0 and 1",
                     tuple(alts)))
    return out


@functools.lru_cache(maxsize=1)
def groups() -> tuple[Group, ...]:
    """Every group, in a fixed order."""
    return tuple(_bloom_groups() + _foundry_groups() + _mbridge_groups() + _runs_groups() +
                 _torchao_groups() + _asynctp_groups() + _pai_groups() +
                 _flagperf_groups() + _dlperf_groups())
