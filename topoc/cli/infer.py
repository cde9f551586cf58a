"""``topoc infer FILE --model NAME --isl N --osl N [layout] [load] [limits]``: a model served
on the topology (docs/infer.md)."""

from __future__ import annotations

from ..backends import infer_table
import math
import sys

import attrs

from ..compiler.analysis.infer import (CHOOSER, MAX_COUNT, InferError, Settings, default_precision,
                                       gpu_of, infer, shown_number, too_big)
from ..compiler.analysis import serve_sim
from ..compiler.analysis.infer_rate import DEFAULT_REQUESTS, MAX_REQUESTS, Arrivals
from ..compiler.collectives.coster import CHOOSERS
from ..compiler.collectives.versions import UnknownVersion, nccl as nccl_profile
from ..compiler.lang.derive import find_model
from ..compiler.training.serving import PRECISIONS
from .common import add_failure_options, EXIT_OK, UsageError, add_common, fail, load, write_output


def add_parser(sub) -> None:
    p = sub.add_parser("infer", help="serve a model on the topology: memory, TTFT, TPOT, "
                       "throughput and the layouts to choose")
    p.add_argument("file")
    p.add_argument("--model", required=True, help="a model declared in the file or bundled "
                   "(library/models): llama3-70b, mixtral-8x7b, ...")
    p.add_argument("--isl", type=int, required=True, metavar="TOKENS",
                   help="input (prompt) tokens per request")
    p.add_argument("--osl", type=int, required=True, metavar="TOKENS",
                   help="output tokens per request")
    p.add_argument("--gpus", type=int, metavar="G", help="use the first G GPUs in rank order "
                   "(default: all); replicas = G / (tp x pp)")
    for dim in ("tp", "pp", "ep"):
        p.add_argument(f"--{dim}", type=int, metavar="N", help=f"fix {dim} (default: search)")
    p.add_argument("--attention-dp", choices=("on", "off", "auto"), default="auto",
                   help="attention data parallelism over the tensor group for MoE models "
                   "(auto: searched unless tp, pp and ep are all fixed)")
    p.add_argument("--precision", choices=PRECISIONS, help="weights (default: fp8 where the "
                   "GPUs declare an FP8 peak, else bf16)")
    p.add_argument("--kv-precision", choices=PRECISIONS,
                   help="KV cache (default: bf16 for bf16 weights, else fp8)")
    p.add_argument("--concurrency", metavar="C|max", help="requests in flight over all "
                   "replicas, or max: the saturated engine (default: a sweep 1, 2, 4, ... max)")
    p.add_argument("--request-rate", metavar="R|inf", help="open-loop load instead of a "
                   "concurrency: R requests/s over all replicas arriving as a Poisson process "
                   "(the concurrency follows from Little's law; a rate past a layout's "
                   "capacity is marked over capacity), or inf: --requests arriving at once")
    p.add_argument("--requests", type=int, metavar="N", help="requests of the open-loop run "
                   f"or of the simulated client (default {DEFAULT_REQUESTS}, vllm bench serve's "
                   f"--num-prompts; at most {MAX_REQUESTS:,}): a burst's size, and how long a "
                   "rate past capacity lasts")
    p.add_argument("--client", choices=serve_sim.CLIENT_NAMES,
                   help="simulate a benchmark client against the engine's scheduler: closed "
                        "(--concurrency clients, each sending its next request when one ends) "
                        "or poisson (--request-rate); or a named client's closed loop with "
                        "its defaults: genai-perf and aiperf (max(10, 2 x concurrency) "
                        "requests, no warm-up), vllm-bench-serve (1,000 prompts), "
                        "trtllm-bench (1,000 requests on the engine it launches: chunked "
                        "context, max_num_tokens tuned to the lengths); TTFT, TPOT "
                        "and throughput "
                        "are then the run's means, with median and p90 (default: the analytic "
                        "steady state)")
    p.add_argument("--warmup", type=int, metavar="N", help="requests of the simulated run "
                   f"left out of its figures (default {serve_sim.DEFAULT_WARMUP}, as vllm bench "
                   "serve and genai-perf)")
    p.add_argument("--length-spread", type=float, metavar="R", help="with --client: each "
                   "request's prompt and output lengths drawn from the integers within "
                   "--isl and --osl x (1 +- R), as vllm bench serve --random-range-ratio R "
                   "does (default 0: every request the same lengths); 0 <= R < 1")
    p.add_argument("--engine", choices=tuple(serve_sim.ENGINES),
                   default=serve_sim.DEFAULT_ENGINE,
                   help="the serving engine whose scheduler defaults apply (max batch, tokens "
                        "per step, chunked prefill, admission, host-work overlap; default "
                        f"{serve_sim.DEFAULT_ENGINE})")
    p.add_argument("--scheduler-steps", type=int, default=1, metavar="K",
                   help="decode steps the engine schedules at once (vLLM 0.6's "
                        "--num-scheduler-steps; default 1): a new request waits for them")
    p.add_argument("--disaggregate", action="store_true", help="separate prefill and decode "
                   "replicas; the KV cache moves between them")
    p.add_argument("--overlap-scheduler", choices=("on", "off"),
                   help="the engine hides its per-step host work behind the GPU's next step "
                        "(TensorRT-LLM's PyTorch backend, SGLang: on; NIM's TensorRT engines, "
                        "vLLM without --async-scheduling: off; default: the --engine's)")
    p.add_argument("--max-num-tokens", type=int, metavar="N",
                   help="the engine's token budget per step, decodes and prefill together "
                        "(TensorRT-LLM's max_num_tokens, vLLM's max_num_batched_tokens, "
                        "SGLang's chunked_prefill_size; default: the --engine's, 8192): what "
                        "a prebuilt engine was built with")
    p.add_argument("--chunked-prefill", choices=("on", "off"),
                   help="whether a prompt longer than the step's budget left runs in chunks "
                        "(TensorRT-LLM's enable_chunked_prefill, off by default; vLLM and "
                        "SGLang: on; default: the --engine's)")
    p.add_argument("--collectives", choices=CHOOSERS + ("engine",), default=CHOOSER,
                   help=f"how collectives are costed (docs/cost.md, 'One coster'): fastest, "
                   f"the least predicted time among NCCL's algorithms; nccl, what NCCL's tuner "
                   f"would run; engine, the --engine's own all-reduce kernels (one-shot, "
                   f"two-shot, multimem) where its rule picks them by size, GPU count and "
                   f"generation, NCCL's fastest "
                   f"elsewhere (docs/infer.md, 'Engines' all-reduce'; default {CHOOSER})")
    p.add_argument("--nccl", metavar="VERSION",
                   help="the NCCL release the engine's NCCL calls run on (the one its torch or "
                        "container ships, e.g. 2.20 for torch 2.4; default: the latest profile, "
                        "as `topoc cost --nccl`)")
    p.add_argument("--ttft-limit", type=float, metavar="S", help="rank rows over this TTFT last")
    p.add_argument("--tpot-limit", type=float, metavar="S", help="rank rows over this TPOT last")
    p.add_argument("--top", type=int, default=20, metavar="K", help="rows to show (0: all)")
    p.add_argument("--format", choices=["text", "json", "csv"], default="text")
    add_common(p)
    add_failure_options(p)
    p.set_defaults(func=run)


def _concurrency(text: str | None):
    if text is None:
        return "sweep"
    if text.strip().lower() == "max":
        return "max"
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--concurrency {text}: a whole number or 'max'") from None
    if value < 1:
        raise UsageError(f"--concurrency {value}: must be at least 1")
    if value > MAX_COUNT:
        raise UsageError(f"--concurrency {shown_number(value)}: must be at most {MAX_COUNT:,} (or max)")
    return value


def _client(args, arrivals: Arrivals | None) -> serve_sim.Client | None:
    """The simulated client of --client (its load: --concurrency or --request-rate)."""
    if args.client is None:
        if args.warmup is not None:
            raise UsageError("--warmup needs --client (the simulated run's warm-up)")
        if args.length_spread is not None:
            raise UsageError("--length-spread needs --client (the simulated run's lengths)")
        return None
    if args.disaggregate:
        raise UsageError("--client simulates aggregated replicas; not with --disaggregate")
    if args.client == "poisson" and arrivals is None:
        raise UsageError("--client poisson needs --request-rate R (requests/s, or inf)")
    if args.client != "poisson" and arrivals is not None:
        raise UsageError(f"--client {args.client} takes --concurrency, not --request-rate")
    if args.requests is not None and not 1 <= args.requests <= serve_sim.MAX_REQUESTS:
        raise UsageError(f"--requests {args.requests}: give 1 to {serve_sim.MAX_REQUESTS:,}")
    rate = arrivals.rate if arrivals is not None else math.inf
    spread = 0.0 if args.length_spread is None else args.length_spread
    if not 0 <= spread < 1:
        raise UsageError(f"--length-spread {spread:g}: from 0 up to (not including) 1")
    client = serve_sim.client_for(args.client, rate, args.requests, args.warmup, spread)
    if client.warmup < 0 or not client.per_client and client.warmup >= client.requests:
        raise UsageError(f"--warmup {client.warmup}: 0 to {client.requests - 1:,} (fewer than "
                         "--requests)")
    return client


def _arrivals(args) -> Arrivals | None:
    """The open-loop arrivals of --request-rate / --requests, or None (a concurrency)."""
    if args.request_rate is None:
        if args.requests is not None and args.client is None:
            raise UsageError("--requests needs --request-rate (the run's requests)")
        return None
    if args.concurrency is not None:
        raise UsageError("--concurrency and --request-rate: give one load, not both")
    text = args.request_rate.strip().lower()
    try:
        rate = math.inf if text == "inf" else float(text)
    except ValueError:
        raise UsageError(f"--request-rate {args.request_rate}: requests per second, "
                         "or inf") from None
    if not rate > 0 or math.isnan(rate):
        raise UsageError(f"--request-rate {args.request_rate}: must be above 0 (or inf)")
    requests = DEFAULT_REQUESTS if args.requests is None else args.requests
    if not 1 <= requests <= MAX_REQUESTS:
        raise UsageError(f"--requests {requests}: give 1 to {MAX_REQUESTS:,} (the run's time "
                         "and memory grow with it)")
    return Arrivals(rate, requests)


def run(args) -> int:
    """Cost and rank; exit 1 when the model cannot be laid out or nothing fits."""
    if args.nccl is not None:
        try:
            note = nccl_profile(args.nccl).note
        except UnknownVersion as exc:
            raise UsageError(f"--nccl: {exc}") from None
        if note:        # a release the model has no tables of, priced as the nearest one
            print(f"topoc infer: note: {note}", file=sys.stderr)
    for name in ("isl", "osl", "gpus", "tp", "pp", "ep", "top", "scheduler_steps"):
        value = getattr(args, name)
        if value is not None and value < (0 if name == "top" else 1):
            raise UsageError(f"--{name.replace('_', '-')} {value}: must be at least "
                             f"{0 if name == 'top' else 1}")
        # a number past a float's range raised OverflowError tracebacks in the model
        if value is not None and value > MAX_COUNT:
            raise UsageError(f"--{name.replace('_', '-')} {shown_number(value)}: must be at most "
                             f"{MAX_COUNT:,}")
    for name in ("ttft_limit", "tpot_limit"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise UsageError(f"--{name.replace('_', '-')} {value}: a positive number of seconds")
    concurrency = _concurrency(args.concurrency)
    arrivals = _arrivals(args)
    client = _client(args, arrivals)
    system = load(args)
    try:
        model = find_model(system, args.model)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    if args.gpus is not None and args.gpus > len(system.gpus):
        raise UsageError(f"--gpus {args.gpus}: {system.name} has {len(system.gpus)} GPUs")
    fixed = {"tp": args.tp, "pp": args.pp, "ep": args.ep,
             "attention_dp": {"on": True, "off": False}.get(args.attention_dp)}
    try:
        gpus = args.gpus or len(system.gpus)
        precision = args.precision or default_precision(gpu_of(system, gpus))
        sched = serve_sim.small_gpu(serve_sim.ENGINES[args.engine], gpu_of(system, gpus).hbm)
        if args.overlap_scheduler is not None:
            sched = attrs.evolve(sched, overlap=args.overlap_scheduler == "on")
        if args.max_num_tokens is not None:
            if not 1 <= args.max_num_tokens <= MAX_COUNT:
                raise UsageError(f"--max-num-tokens {shown_number(args.max_num_tokens)}: 1 to "
                                 f"{MAX_COUNT:,}")
            sched = attrs.evolve(sched, max_tokens=args.max_num_tokens)
        if args.chunked_prefill is not None:
            sched = attrs.evolve(sched, chunked_prefill=args.chunked_prefill == "on")
        if client is not None:
            # the limits given win over those of an engine the client launches (trtllm-bench)
            if args.max_num_tokens is not None:
                client = attrs.evolve(client, tuned=False)
            if args.chunked_prefill is not None:
                client = attrs.evolve(client, chunked=None)
        chooser = args.engine if args.collectives == "engine" else args.collectives
        settings = serve_sim.settings_for(Settings(scheduler_steps=args.scheduler_steps,
                                                   collectives=chooser, nccl=args.nccl),
                                          sched)
        result = infer(system, model, args.isl, args.osl, gpus, fixed, precision,
                       args.kv_precision, concurrency, args.disaggregate, args.ttft_limit,
                       args.tpot_limit, settings, arrivals, client, sched)
    except InferError as exc:
        return fail(args.file, exc)
    head = {"system": system.name, "model": model.name, "isl": args.isl, "osl": args.osl,
            "gpus": result.gpus, "precision": precision,
            "kv_precision": result.rows[0].kv_precision}
    head["engine"] = args.engine
    if client is not None:
        head.update(client=args.client, requests=client.requests, warmup=client.warmup)
        if client.spread:
            head.update(length_spread=client.spread)
        if client.tuned or client.chunked is not None:
            # the client launches its own engine (trtllm-bench) with its own limits
            head.update(engine_by_client=True)
        if client.per_client:
            # a named client's count follows each row's concurrency (its rows' sim_requests)
            head.update(requests_per_client=client.per_client)
    if arrivals is not None:
        head.update(arrival="burst" if arrivals.burst else "poisson",
                    request_rate=None if arrivals.burst else arrivals.rate,
                    requests=arrivals.requests)
    if not any(r.fits for r in result.rows):
        # an error writes nothing: -o keeps what it had (as plan's "no mapping fits")
        return fail(args.file, too_big(system, model, result, args.isl, args.osl))
    write_output(infer_table.render(result, head, args.format, args.top), args.output)
    return EXIT_OK


