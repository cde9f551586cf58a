"""``topoc plan FILE --model NAME --batch B [fixed dimensions]``: the strategy search."""

from __future__ import annotations

import os
import sys

from ..backends import plan_table
from ..compiler.analysis import comparison, scaling
from ..compiler.analysis.goodput import rank_by_goodput, scaling_goodput
from ..compiler.analysis.reliability import DEFAULT_RATES, ReliabilityError, rate_sets
from .reliability import add_rate_options
from ..compiler.analysis.plan import (PlanUsageError, cache_dir, first_refusal,
                                      first_rejection, plan, smallest_over, tp_within_domains)
from ..compiler.ir.gpus import gpu_figures, hbm_of, no_fp8
from ..compiler.lang.derive import find_model
from ..compiler.training.fp8 import FP8_RECIPES, RECIPES
from ..compiler.training.gemm import generation
from ..compiler.training.memory import MEMORY_MARGIN, sharding_conflict, zero_stage
from ..compiler.base.diagnostics import suggest
from ..compiler.base.limits import LIMITS
from ..compiler.base.text import visible
from ..compiler.training.model import (ATTENTION_KERNELS, CROSS_ENTROPY, EXPERT_EPILOGUES, FSDP_PREFETCH,
                                       GRAD_ACCUMULATION,
                                       RECOMPUTE, RECOMPUTE_MODULES, ZERO, ZERO3_IMPLS, Training)
from ..lsp_help import SETTING_DOCS as DOCS
from .common import (add_failure_options, EXIT_INPUT, EXIT_OK, UsageError, add_common, count, load, number, parse_size,
                     parse_defines, scaling_range, write_output)


def add_parser(sub) -> None:
    """The plan verb's flags. A flag that sets what a parallel block's setting sets takes its
    help from the language server's text for that setting (``SETTING_DOCS``: one text for
    both), with what only the flag has (its default) after it."""
    p = sub.add_parser("plan", help="search the parallel strategies of a model on the topology")
    p.add_argument("file")
    p.add_argument("--model", required=True, help="a model declared in the file or bundled "
                   "(library/models): llama3-70b, gpt3-175b, mixtral-8x7b, ...")
    p.add_argument("--batch", type=count(1, 10**9), required=True, help=DOCS["batch"])
    p.add_argument("--gpus", type=count(1, 10**7), help="use the first N GPUs (default: all)")
    p.add_argument("--hbm", metavar="SIZE", help="memory per GPU, as in 40GB, replacing the "
                   "file's (the same GPU in another memory size: A100 40 GB, H200 on an H100 "
                   "fabric)")
    p.add_argument("--memory-margin", type=number(0, 0.99), default=MEMORY_MARGIN,
                   metavar="FRACTION", help="the memory model's uncertainty: candidates "
                   "predicted above (1 - FRACTION) x HBM and up to HBM / (1 - FRACTION) are "
                   "'tight' and answered (those under HBM may not fit, ranked by step time "
                   "among the rest and marked; those over it may fit, ranked after every "
                   "candidate that fits); only a candidate over by more is refused (default "
                   f"{MEMORY_MARGIN:g}, from benchmarks/memory_validation.py; 0 turns it off)")
    for dim in ("tp", "cp", "ep", "dp", "pp"):
        p.add_argument(f"--{dim}", type=count(1, 10**7), metavar="N", help=f"fix {dim}" + (
            " (any size; unfixed, the search keeps tp groups inside one NVLink domain, as "
            "lint's W501 asks)" if dim == "tp" else ""))
    p.add_argument("--microbatch", type=count(1, 10**6), metavar="N", help="fix the micro-batch size")
    p.add_argument("--recompute", choices=RECOMPUTE, help="fix activation recomputation")
    p.add_argument("--interleave", type=count(1, 1024), metavar="N", help="fix the model chunks per stage")
    sp = p.add_mutually_exclusive_group()
    sp.add_argument("--sequence-parallel", dest="sequence_parallel", action="store_const",
                    const=True, help="only with sequence parallelism (default: both)")
    sp.add_argument("--no-sequence-parallel", dest="sequence_parallel", action="store_const",
                    const=False, help="only without it")
    p.add_argument("--distributed-optimizer", action="store_true",
                   help=DOCS["distributed_optimizer"] + "; the same as --zero 1")
    p.add_argument("--zero", type=int, choices=ZERO, help="fix the ZeRO stage: 0 replicated, "
                   "1 optimizer, 2 and gradients, 3 and weights (default: search 1 and 3)")
    p.add_argument("--fsdp", action="store_true",
                   help=DOCS["fsdp"] + " (PyTorch FSDP, fp32 master weights)")
    p.add_argument("--pure-bf16", action="store_true", help=DOCS["pure_bf16"])
    p.add_argument("--first-stage-layers", type=int, default=0,
                   help=DOCS["first_stage_layers"] + "; default: even split")
    p.add_argument("--last-stage-layers", type=int, default=0, help=DOCS["last_stage_layers"])
    p.add_argument("--deepep", action="store_true", help=DOCS["deepep"])
    p.add_argument("--ep-overlap", choices=["on", "off"], default="off",
                   help=DOCS["ep_overlap"] + "; --overlap-moe-expert-parallel-comm, default "
                   "off as in Megatron-Core")
    p.add_argument("--fsdp-prefetch", choices=FSDP_PREFETCH, default="pre",
                   help=DOCS["fsdp_prefetch"] + "; default pre")
    p.add_argument("--route-nodes", type=int, default=0, help=DOCS["route_nodes"])
    for setting in ("dualpipe", "recompute_norms", "fp8_activations", "bf16_moments"):
        p.add_argument("--" + setting.replace("_", "-"), action="store_true",
                       help=DOCS[setting])
    p.add_argument("--recompute-modules", default="", metavar="LIST",
                   help=DOCS["recompute_modules"] + "; comma separated")
    p.add_argument("--bf16-grads", action="store_true",
                   help=DOCS["bf16_grads"] + "; default fp32")
    p.add_argument("--fp8", action="store_true", help=DOCS["fp8"] + " (the GPU's tflops_fp8)")
    p.add_argument("--flash-attention", choices=["on", "off"], default="on",
                   help=DOCS["flash_attention"] + "; default on, off for runs before 2022")
    p.add_argument("--attention-kernel", choices=ATTENTION_KERNELS, default="fused",
                   help=DOCS["attention_kernel"])
    p.add_argument("--expert-epilogue", choices=EXPERT_EPILOGUES, default="megatron",
                   help=DOCS["expert_epilogue"])
    p.add_argument("--cross-entropy", choices=CROSS_ENTROPY, default="auto",
                   help=DOCS["cross_entropy"])
    p.add_argument("--grad-accumulation", choices=tuple(GRAD_ACCUMULATION), default="fused",
                   help=DOCS["grad_accumulation"])
    p.add_argument("--launch-blocking", action="store_true", help=DOCS["launch_blocking"])
    p.add_argument("--zero3-impl", choices=tuple(ZERO3_IMPLS), default="flat",
                   help=DOCS["zero3_impl"])
    p.add_argument("--scatter-gather", action="store_true", help=DOCS["scatter_gather"])
    p.add_argument("--async-tp", action="store_true", help=DOCS["async_tp"])
    p.add_argument("--token-drop", action="store_true", help=DOCS["token_drop"])
    p.add_argument("--fp8-recipe", choices=FP8_RECIPES, default="tensorwise",
                   help=DOCS["fp8_recipe"] + "; default tensorwise")
    p.add_argument("--offload-layers", type=count(0, 10**6), default=0, metavar="N",
                   help=DOCS["offload_layers"])
    p.add_argument("--compare", metavar="SIZES", help="where a strategy ranks and which terms "
                   "separate it from #1, e.g. tp=8,pp=4,dp=2[,cp=1,ep=1,microbatch=1,"
                   "recompute=selective,interleave=1,sequence_parallel=1,zero=1]")
    p.add_argument("--scaling", metavar="LO..HI", help="the best strategy at each GPU count "
                   "LO, 2 LO, 4 LO, ... and HI, strong (fixed batch) and weak (fixed batch "
                   "per GPU) scaling")
    p.add_argument("--overlap", action="store_true", help=DOCS["overlap"])
    p.add_argument("--imbalance", type=number(1, 1e6), default=1.0,
                   help=DOCS["imbalance"] + " (default 1)")
    # no smaller than a .topo file's smallest number (E297): 1e-320 overflowed every time to inf
    p.add_argument("--gemm-efficiency", type=number(10.0 ** -LIMITS.number_fraction, 1),
                   help=DOCS["gemm_efficiency"])
    p.add_argument("--goodput", action="store_true", help="rank by goodput tokens/s: "
                   "tokens/s times the expected useful share of wall time of a job on the "
                   "strategy's GPUs, from published failure rates and Daly's checkpoint "
                   "interval (docs/reliability.md); needs --checkpoint-cost")
    add_rate_options(p, "with --goodput: ")
    p.add_argument("--top", type=count(0, 10**6), default=20, metavar="K", help="rows to show (0: all)")
    p.add_argument("--format", choices=["text", "json", "csv"], default="text")
    p.add_argument("--jobs", type=count(1, 1024), default=os.cpu_count() or 1,
                   help="local worker processes (default: one per core; never more than "
                   "the cores)")
    p.add_argument("--ray", metavar="ADDRESS", help="run on the Ray cluster at ADDRESS "
                   "(host:port, or 'auto'); needs pip install 'topoc[ray]'")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not write the row "
                   "cache nor the compiled-system cache ($TOPOC_CACHE or ~/.cache/topoc)")
    add_common(p)
    add_failure_options(p)
    p.set_defaults(func=run)


def _progress(unit: str = "candidates"):
    if not sys.stderr.isatty():
        return None
    last = [-1]

    def show(done: int, total: int) -> None:
        pct = done * 100 // max(1, total)
        if pct != last[0] or done == total:
            last[0] = pct
            bar = "#" * (pct // 4)
            sys.stderr.write(f"\rplan: [{bar:<25}] {done:,}/{total:,} {unit}")
            if done == total:
                sys.stderr.write("\n")
            sys.stderr.flush()
    return show


def run(args) -> int:
    """Enumerate, cost and rank; exit 1 when nothing can run or nothing fits."""
    system = load(args)
    try:
        model = find_model(system, args.model)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    # whole numbers, --imbalance and --gemm-efficiency are checked by their argparse types
    if args.route_nodes < 0:
        raise UsageError("--route-nodes counts nodes from 0 (0: no limit)")
    if args.first_stage_layers < 0 or args.last_stage_layers < 0:
        raise UsageError("--first-stage-layers and --last-stage-layers count layers from 0")
    if args.pp == 1 and (args.first_stage_layers or args.last_stage_layers):
        raise UsageError("--first-stage-layers and --last-stage-layers shape a pipeline's end "
                         "stages: --pp 1 has none (give --pp 2 or more, or leave pp searched)")
    if args.first_stage_layers + args.last_stage_layers > model.layers:
        raise UsageError(f"--first-stage-layers {args.first_stage_layers} and "
                         f"--last-stage-layers {args.last_stage_layers} ask for more layers "
                         f"than {model.name} has ({model.layers})")
    gpu = gpu_figures(system)
    if args.fp8 and gpu is not None and no_fp8(gpu):
        raise UsageError(f"--fp8: {no_fp8(gpu)}")
    recipe = RECIPES[args.fp8_recipe]
    fp8_model = model.dtype == "fp8"
    if args.fp8_recipe != "tensorwise" and not (args.fp8 or fp8_model):
        raise UsageError(f"--fp8-recipe {args.fp8_recipe} scales fp8 GEMM inputs: give --fp8 "
                         f"too ({model.name} trains in {model.dtype})")
    if recipe.blackwell and gpu is not None and generation(gpu.name) != "blackwell":
        raise UsageError(f"--fp8-recipe {args.fp8_recipe}: block-scaled fp8 needs Blackwell's "
                         f"tensor cores; {gpu.name} has none (use tensorwise or rowwise)")
    # contradictions that one flag used to settle silently (FSDP is ZeRO-3, the distributed
    # optimizer at least ZeRO-1; --scaling sets the GPU counts itself)
    conflict = sharding_conflict(args.zero, args.fsdp, args.distributed_optimizer)
    if conflict:
        raise UsageError(f"--{conflict[0].replace('_', '-')} and --zero {args.zero}: "
                         f"{conflict[1]}; give one")
    _check_goodput(args)
    if args.scaling is not None and args.gpus is not None:
        raise UsageError("--gpus and --scaling: --scaling LO..HI sets the GPU counts; give one")
    modules = tuple(x.strip() for x in args.recompute_modules.split(",") if x.strip())
    bad = [x for x in modules if x not in RECOMPUTE_MODULES]
    if bad:
        raise UsageError(f"--recompute-modules: unknown module '{bad[0]}'"
                         + (suggest(bad[0], RECOMPUTE_MODULES) or
                            f"; one of {', '.join(RECOMPUTE_MODULES)}"))
    base = Training(model, args.batch, distributed_optimizer=args.distributed_optimizer,
                    overlap=args.overlap, imbalance=args.imbalance,
                    gemm_efficiency=args.gemm_efficiency, fsdp=args.fsdp, fp8=args.fp8,
                    pure_bf16=args.pure_bf16, dualpipe=args.dualpipe,
                    recompute_norms=args.recompute_norms, deepep=args.deepep,
                    ep_overlap=args.ep_overlap == "on", fsdp_prefetch=args.fsdp_prefetch,
                    route_nodes=args.route_nodes,
                    first_stage_layers=args.first_stage_layers,
                    last_stage_layers=args.last_stage_layers,
                    fp8_activations=args.fp8_activations, bf16_moments=args.bf16_moments,
                    bf16_grads=args.bf16_grads, recompute_modules=modules,
                    flash_attention=args.flash_attention == "on",
                    attention_kernel=args.attention_kernel,
                    expert_epilogue=args.expert_epilogue,
                    cross_entropy=args.cross_entropy,
                    grad_accumulation=args.grad_accumulation,
                    launch_blocking=args.launch_blocking, zero3_impl=args.zero3_impl,
                    scatter_gather=args.scatter_gather, async_tp=args.async_tp,
                    fp8_recipe=args.fp8_recipe,
                    offload_layers=args.offload_layers, token_drop=args.token_drop)
    fixed = {k: getattr(args, k) for k in ("tp", "cp", "ep", "dp", "pp", "microbatch",
                                             "recompute", "interleave", "sequence_parallel",
                                             "zero")}
    fixed["zero"] = zero_stage(args.zero, args.fsdp, args.distributed_optimizer)
    try:
        hbm = parse_size(args.hbm) if args.hbm is not None else None  # refuses sizes below 1
    except UsageError as exc:
        raise UsageError(f"--hbm: {exc}") from None
    if args.scaling is not None and args.compare is not None:
        raise UsageError("--compare and --scaling: give one (a strategy's rank at the file's "
                         "GPU count, or the best strategy per GPU count)")
    if args.gpus and args.gpus > len(system.gpus):      # before a --compare check counts them
        raise UsageError(f"--gpus {args.gpus}: the system has {len(system.gpus)} GPUs")
    wanted = None
    if args.compare is not None:
        if args.format == "csv":
            raise UsageError("--compare has no CSV form (it printed the plain table): use "
                             "--format text or json")
        try:            # before the search: a request that cannot be found fails at once
            wanted = comparison.parse_sizes(args.compare)
        except ValueError as exc:
            raise UsageError(f"--compare: {exc}") from None
        why = comparison.check_sizes(wanted, args.gpus or len(system.gpus), model.seq, fixed)
        tp = wanted.get("tp")
        if not why and tp and fixed.get("tp") is None and \
                not tp_within_domains(system, args.gpus or len(system.gpus))(tp):
            why = (f"tp={tp} is not searched: its groups leave one NVLink domain (lint's "
                   f"W501); --tp {tp} searches tp = {tp} only (#1 is then the best with it)")
        if why:
            raise UsageError(f"--compare {args.compare}: {why}")
    if args.scaling is not None:
        return _scaling(args, system, model, base, fixed, hbm)
    source = {"path": os.path.abspath(args.file), "defines": parse_defines(args.define),
              "import_roots": [os.path.abspath(r) for r in args.import_root or ()],
              "fail": list(args.fail or ()), "degrade": list(args.degrade or ()),
              "faults": os.path.abspath(args.faults) if args.faults else None}
    try:
        result = plan(system, model, base, args.gpus, fixed, jobs=args.jobs, ray=args.ray,
                      source=source, use_cache=not args.no_cache, progress=_progress(),
                      hbm=hbm, margin=args.memory_margin)
    except PlanUsageError as exc:
        raise UsageError(str(exc)) from None
    if result.cache_note:
        print(f"plan: note: {visible(result.cache_note)}", file=sys.stderr)
    if result.cached:
        # stderr, so that a cached rerun writes the same bytes as the first run
        print(f"plan: {result.cached:,} of {result.considered:,} candidates from the cache "
              f"({cache_dir()}; --no-cache to recompute)", file=sys.stderr)
    head = {"system": system.name, "model": model.name, "batch": args.batch,
            "seq": model.seq, "gpus": result.gpus,
            "hbm_per_gpu": hbm or hbm_of(system, result.gpus)}
    if not result.rows and result.over_memory:
        size, key = result.smallest
        cap = head["hbm_per_gpu"] or 0
        key, terms = _terms(system, base, result, fixed, key)
        within = f", even within the memory model's {result.margin:.0%} uncertainty" \
            if result.margin else ""
        print(f"{args.file}: error: no mapping fits in GPU memory{within}: "
              f"{result.over_memory:,} of {result.considered:,} candidates are over; the "
              f"smallest needs {size / 1e9:.1f} GB per GPU, {(size - cap) / 1e9:.1f} GB over "
              f"({key}){terms}{_refusal(system, base, result, fixed)}", file=sys.stderr)
        return EXIT_INPUT
    if not result.considered:
        given = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in fixed.items()
                         if v is not None and k != "sequence_parallel")
        print(f"{args.file}: error: no mapping of {model.name} runs on {result.gpus} GPUs with "
              f"the fixed sizes ({given or 'none fixed'}): tp x cp x dp x pp must be "
              f"{result.gpus}, with tp dividing the {model.heads} heads, dp the batch "
              f"{args.batch} and pp at most the {model.layers} layers; try --gpus or other "
              "fixed sizes", file=sys.stderr)
        return EXIT_INPUT
    if not result.rows:
        print(f"{args.file}: error: no mapping of {model.name} runs on {result.gpus} GPUs with "
              f"batch {args.batch}: all {result.considered:,} candidates were rejected (layers, "
              "heads, batch or experts do not divide, fewer micro-batches than an interleaved "
              f"pipeline needs, or a group's GPUs not linked"
              f"{_first_reason(base, result.gpus, fixed)}){_refusal(system, base, result, fixed)}"
              "; try --gpus or another --batch", file=sys.stderr)
        return EXIT_INPUT
    if args.goodput:
        try:
            ranking = rank_by_goodput(system, result, args.checkpoint_cost, args.restart,
                                      args.rates)
        except ReliabilityError as exc:
            raise UsageError(f"--goodput: {exc}") from None
        text = plan_table.render_goodput(result, ranking, head, args.format, args.top,
                                         args.checkpoint_cost, args.restart)
    else:
        text = plan_table.render(result, head, args.format, args.top)
    if wanted is not None:
        text = plan_table.render_comparison(
            comparison.detail(comparison.compare(result, wanted), base, gpu_figures(system)),
            head, args.format)
    write_output(text, args.output)
    return EXIT_OK


def _check_goodput(args) -> None:
    """--goodput's flags: a checkpoint cost with it, its own flags only with it, and not with
    --compare (which ranks by step time)."""
    given = [f for f, v in (("--checkpoint-cost", args.checkpoint_cost is not None),
                            ("--restart", args.restart != 0.0),
                            ("--rates", args.rates != DEFAULT_RATES)) if v]
    if not args.goodput:
        if given:
            raise UsageError(f"{given[0]} is for --goodput (or topoc reliability): give "
                             "--goodput too")
        return
    if args.checkpoint_cost is None:
        raise UsageError("--goodput needs --checkpoint-cost S: the seconds a checkpoint stops "
                         "the job")
    if args.rates not in rate_sets():
        raise UsageError(f"--rates: no failure rates for '{args.rates}'; there are: "
                         f"{', '.join(rate_sets())}")
    if args.compare is not None:
        raise UsageError("--goodput and --compare: --compare ranks by step time; give one")


def _refusal(system, base, result, fixed) -> str:
    """'; 676 rejected, e.g. tp1-..., whose dp allreduce cannot run: no path ...': the
    rejected candidates whose traffic the cost model refuses ('' when the first is costed)."""
    found = first_refusal(system, base, result.gpus, fixed) if result.invalid else None
    return (f"; {result.invalid:,} rejected, e.g. {found[0]}, whose {found[1]}") if found \
        else ""


def _first_reason(base, gpus, fixed) -> str:
    """'; tp1-...: an interleaved schedule needs pp >= 2': why the first candidate cannot
    run ('' when it can)."""
    found = first_rejection(base, gpus, fixed)
    return f"; {found[0]}: {found[1]}" if found else ""


def _terms(system, base, result, fixed, key) -> tuple[str, str]:
    """The smallest over-memory candidate's key and memory terms with the largest named (what
    to shrink first): '; weights 50.6 + ... GB, optimizer the largest'; ``key`` and '' when
    they cannot be found again (``plan.smallest_over``)."""
    gpu = gpu_figures(system)
    found = smallest_over(base, result, gpu, fixed) if gpu is not None else None
    if found is None:
        return key, ""
    c, p = found
    mem = p.derived.memory
    name, _ = mem.largest
    parts = " + ".join(f"{n} {getattr(mem, n) / 1e9:.1f}" for n in ("weights", "gradients",
                                                                   "optimizer", "activations"))
    return c.key, f"; {parts} + runtime {mem.reserve / 1e9:.1f} GB, {name} the largest"


def _scaling(args, system, model, base, fixed, hbm=None) -> int:
    """``--scaling LO..HI``: the best strategy at LO, 2 LO, 4 LO, ... and HI GPUs."""
    lo_n, hi_n = scaling_range(args.scaling, len(system.gpus))
    try:
        curve = scaling.scaling(system, model, base, lo_n, hi_n, fixed, jobs=args.jobs,
                                use_cache=not args.no_cache, hbm=hbm,
                                margin=args.memory_margin,
                                progress=_progress("searches (strong and weak per count)"))
    except PlanUsageError as exc:
        raise UsageError(str(exc)) from None
    if not any(p.strong or p.weak for p in curve.points):
        # an error writes nothing: -o keeps what it had (as a single count's "no mapping")
        print(f"{args.file}: error: no mapping of {model.name} runs and fits at any GPU count "
              f"of --scaling {args.scaling} (batch {args.batch}, strong and weak): layers, "
              "heads, batch or experts do not divide, or GPU memory is too small",
              file=sys.stderr)
        return EXIT_INPUT
    good = None
    if args.goodput:
        try:
            good = scaling_goodput(system, curve, args.checkpoint_cost, args.restart, args.rates)
        except ReliabilityError as exc:
            raise UsageError(f"--goodput: {exc}") from None
    write_output(plan_table.render_scaling(curve, args.format, good), args.output)
    return EXIT_OK
