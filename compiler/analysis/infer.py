"""``topoc infer``: a model served on the topology: memory, TTFT, TPOT, throughput, and the
layouts to choose.

The arithmetic of a step (weights, KV cache, FLOPs, bytes) is ``compiler.training.serving``;
this module puts it on the system. A replica is ``tp x pp`` consecutive GPUs in rank order
(tp fastest), ``--gpus G`` hold G / (tp x pp) replicas; the replica costed is the slowest
(``slowest_replica``: the one whose tensor groups span the most islands, a tp 16 replica
astride two NVL72 racks rather than one inside a rack). One step of a GPU costs, kernel by
kernel, the larger of its FLOPs at an efficiency of the precision's peak and its HBM bytes at
an efficiency of the bandwidth (a roofline), plus a launch and synchronisation cost per layer
and a fixed cost per engine step; then its communication, costed by the collective model
(``compiler.collectives.cost``) on the replica's real ranks at the real sizes: two tensor-
parallel all-reduces per layer of the step's tokens x hidden (a few kilobytes in decode: their
latency on the path they take is the point), two expert all-to-alls per MoE layer with
attention data parallelism, a send per pipeline boundary.

Continuous batching at C sequences per replica, each request ``isl`` tokens in and ``osl`` out:
in the steady state C requests finish and C prefills run for every ``osl`` decode steps, so

    cycle = osl x decode_step(C, context = isl + osl / 2) + C x prefill share(isl)
    throughput = C x osl / cycle,   TPOT = (cycle - one prefill share) / osl (the others'),
    TTFT = overhead + prefill(isl) [+ 1.5 decode steps and the wait for prefills ahead (M/D/1,
    load = C x prefill / cycle) when other requests are in flight].

Past what the KV cache holds the engine runs at its capacity and the other requests queue
(closed-loop clients: TTFT by Little's law).

Under an open-loop load (``--request-rate``: Poisson arrivals, or a burst) the concurrency is
not given but follows from the rate; ``evaluate_rate`` builds those rows from the queue of
``infer_rate``.

Disaggregated serving puts prefill and decode on separate replicas; TTFT gains the move of the
request's KV cache from a prefill to a decode replica (a send costed on the links between
them) and TPOT loses the prefill interference. The efficiencies are ``Settings``, fitted on a
third of the published measurements in benchmarks/infer_validation.py (docs/infer.md).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping

import attrs

from ..collectives.cost import CostError
from ..collectives.coster import CHOOSERS, Coster
from ..collectives.engines import ENGINES as ENGINE_ALLREDUCE
from ..collectives.engines import algorithm as engine_algorithm
from ..collectives.paths import NoRoute
from ..collectives.versions import UnknownVersion, nccl as nccl_profile
from ..collectives.tuning import arch_index
from ..ir.groups import RankGroup
from ..ir.locality import island_period
from ..ir.system import System, Transformer
from ..training.constants import value
from ..training import serving as sv
from ..training.params import moe_layers
from ..training.serving import Layout, LayoutError
from . import infer_rate, serve_sim
from .infer_rate import MAX_REQUESTS, Arrivals
from .serve_sim import Client, Scheduler

PEAK_KEYS = {"bf16": "tflops_bf16", "fp8": "tflops_fp8", "fp4": "tflops_fp4"}


#: The collective model's chooser infer prices its collectives with (coster.CHOOSERS):
#: ``fastest``, the least predicted time among the algorithms NCCL has for the group, which
#: ``topoc cost --algorithm fastest`` gives too. Not NCCL's own pick (``nccl``): serving
#: engines run their tensor-parallel all-reduces with kernels of their own, not through
#: NCCL's tuner, and NCCL's pick put the decode rows further off (docs/infer.md).
CHOOSER = "fastest"


@attrs.frozen
class Settings:
    """Efficiencies and engine limits (fitted defaults from ``training.constants``, which
    names the rows and sources; the engine limits documented in docs/infer.md)."""

    # fitted figures: their units and meanings are the registry's records (``infer.*``)
    gemm_efficiency: float = value("infer.gemm_efficiency")         # decode GEMMs
    prefill_efficiency: float = value("infer.prefill_efficiency")   # prefill GEMMs, attention
    hbm_efficiency: float = value("infer.hbm_efficiency")           # weights and KV streaming
    layer_overhead: float = value("infer.layer_overhead")           # s per layer and step
    step_overhead: float = value("infer.step_overhead")             # s per engine step
    expert_tile: float = value("infer.expert_tile")                 # grouped-GEMM tile rows
    fp4_efficiency: float = value("infer.fp4_efficiency")           # of the FP4 peak
    request_overhead: float = value("infer.request_overhead")       # s per request
    gemm_width: float = value("infer.gemm_width")                   # half-speed columns
    collective_overhead: float = value("infer.collective_overhead")  # s per tp collective
    max_batch: int = 2048               # sequences per replica an engine schedules at most
    max_tokens: int = 8192              # tokens per step: prefill runs in chunks of this
    kv_fraction: float = 0.9            # share of the memory left after weights given to KV
    runtime_reserve: float = value("memory.runtime_reserve")  # context, NCCL, graphs, workspaces
    sequence_overhead: float = value("infer.sequence_overhead")     # s per sequence and step
    overlap_scheduler: bool = True      # the engine prepares step n+1 while the GPU runs
    #                                     step n: host work hides up to the GPU's time
    closed_loop_share: float = value("infer.closed_loop_share")     # ``ttft_closed_loop``
    scheduler_steps: int = 1            # decode steps an engine schedules at once (vLLM 0.6's
    #                                     --num-scheduler-steps): a new request waits for them
    collectives: str = CHOOSER          # the collective model's chooser (coster.CHOOSERS), or
    #                                     an engine whose all-reduce rule picks the algorithm
    #                                     (collectives.engines: trtllm, vllm, sglang)
    nccl: str | None = None             # the NCCL release the engine's NCCL calls run on (the
    #                                     one its torch or container ships); None: the latest


class InferError(ValueError):
    """A request the system cannot serve; the message names the numbers."""


@attrs.frozen
class Gpu:
    """The figures of the slowest GPU of the replicas (bytes, FLOP/s, bytes/s)."""

    hbm: float
    bandwidth: float
    peaks: tuple[tuple[str, float], ...]

    def peak(self, precision: str) -> float:
        """Dense tensor peak at a precision; a GPU without FP4 runs FP4 weights at FP8."""
        d = dict(self.peaks)
        return d.get(precision) or d.get("fp8") or d["bf16"]


def gpu_of(system: System, gpus: int) -> Gpu:
    """The slowest figures among the first ``gpus`` GPUs; InferError when one is missing."""
    models = {g.model.name: g.model for g in system.gpus[:gpus]}.values()
    hbm = bw = None
    peaks: dict[str, float] = {}
    for m in models:
        for attr in ("hbm", "hbm_bandwidth", "tflops_bf16"):
            if m.attr(attr) is None:
                raise InferError(f"GPU model '{m.name}' declares no {attr}, which serving needs")
        hbm = min(hbm or math.inf, m.attr("hbm"))
        bw = min(bw or math.inf, m.attr("hbm_bandwidth"))
        for prec, attr in PEAK_KEYS.items():
            v = m.attr(attr)
            if v is not None:
                peaks[prec] = min(peaks.get(prec, math.inf), v * 1e12)
    return Gpu(float(hbm), float(bw), tuple(sorted(peaks.items())))


def default_precision(gpu: Gpu) -> str:
    """FP8 where the GPUs declare an FP8 peak (what serving engines run), else BF16."""
    return "fp8" if dict(gpu.peaks).get("fp8") else "bf16"


@attrs.frozen(order=True)
class Config:
    """One serving configuration: a layout, its replicas and the load."""

    tp: int
    pp: int
    ep: int
    attention_dp: bool
    replicas: int
    concurrency: int               # requests in flight over all replicas
    prefill_replicas: int = 0      # disaggregated: replicas that only prefill (0: aggregated)

    @property
    def layout(self) -> Layout:
        """The per-replica split."""
        return Layout(self.tp, self.pp, self.ep, self.attention_dp)


@attrs.frozen
class InferRow:
    """One costed configuration: the ``topoc.infer/1`` row."""

    config: Config
    gpus: int
    precision: str
    kv_precision: str
    ttft: float
    tpot: float
    throughput: float
    memory_per_gpu: float
    kv_capacity_tokens: int        # per replica
    fits: bool
    within_limits: bool = True
    pareto: bool = False
    parts: tuple[tuple[str, float], ...] = ()   # seconds: decode_step, prefill, comm per step
    #: open-loop rows (``--request-rate``): arrival, request_rate, requests, utilization, stable
    extra: tuple[tuple[str, object], ...] = ()

    @property
    def stable(self) -> bool:
        """The load has a steady state (always, at a fixed concurrency; under a rate below the
        layout's capacity)."""
        return bool(dict(self.extra).get("stable", True))

    @property
    def throughput_per_gpu(self) -> float:
        """Output tokens/s per GPU."""
        return self.throughput / self.gpus

    @property
    def tokens_per_s_per_user(self) -> float:
        """Output tokens/s one request sees: 1 / TPOT."""
        return 1.0 / self.tpot if self.tpot > 0 else 0.0

    def as_dict(self) -> dict:
        """The JSON row (contract fields first)."""
        c = self.config
        return {"tp": c.tp, "pp": c.pp, "ep": c.ep, "replicas": c.replicas, "gpus": self.gpus,
                "concurrency": c.concurrency, "precision": self.precision,
                "kv_precision": self.kv_precision, "ttft": self.ttft, "tpot": self.tpot,
                "throughput": self.throughput, "throughput_per_gpu": self.throughput_per_gpu,
                "tokens_per_s_per_user": self.tokens_per_s_per_user,
                "memory_per_gpu": round(self.memory_per_gpu),      # whole bytes
                "kv_capacity_tokens": self.kv_capacity_tokens, "fits": self.fits,
                "attention_dp": c.attention_dp, "prefill_replicas": c.prefill_replicas,
                "within_limits": self.within_limits, "pareto": self.pareto,
                **{k: v for k, v in self.parts}, **{k: v for k, v in self.extra}}


# ---- costs on the system ----------------------------------------------------------------------

class Comm:
    """Collective times on the system, through the collective model's one door
    (``collectives.coster``) with ``chooser`` (``CHOOSER`` unless named; a serving engine's
    name: its all-reduce rule, ``collectives.engines``, picks the algorithm by size and GPU
    count, and the coster prices that algorithm as ``topoc cost --algorithm NAME`` does). Each
    (collective, ranks, algorithm) is prepared once (``Coster``: routes and loads) and
    evaluated at every size; times are memoised by size. ``nccl``: the NCCL release the calls
    that go through NCCL run on (``versions.py``; None: the latest profile); an engine's own
    kernels do not run on NCCL and ignore it."""

    def __init__(self, system: System, chooser: str = CHOOSER, nccl: str | None = None):
        self.system = system
        self.chooser = chooser
        self.nccl = nccl
        self.memo: dict[tuple, float] = {}
        self.costers: dict[tuple, Coster] = {}
        #: (collective, ranks) -> the algorithms it was costed with, in order of first use
        self.used: dict[tuple[str, int], dict[str, None]] = {}

    def algorithm(self, collective: str, ranks: tuple[int, ...], size: float,
                  hidden: int | None = None) -> str:
        """The algorithm or chooser the call is costed with: ``chooser`` itself, or where it
        names a serving engine (``collectives.engines``) that engine's pick at this size on
        these GPUs' generation (``hidden``: the model's hidden size, which TensorRT-LLM's
        table is indexed by)."""
        if self.chooser not in ENGINE_ALLREDUCE:
            return self.chooser
        island = self.system.locality.island
        arch = arch_index(self.system.gpus[ranks[0]].model.attr("sm"))
        return engine_algorithm(self.chooser, collective, len(ranks), int(size),
                                len({island[r] for r in ranks}) == 1, arch, hidden)

    def _coster(self, collective: str, ranks: tuple[int, ...], chooser: str) -> Coster:
        key = (collective, ranks, chooser)
        if key not in self.costers:
            nccl = self.nccl if chooser in CHOOSERS else None
            try:
                self.costers[key] = Coster(self.system, RankGroup(collective, ranks),
                                           collective, chooser, nccl=nccl)
            except (CostError, NoRoute) as exc:
                raise InferError(f"{collective} on ranks {ranks[0]}..{ranks[-1]}: {exc}") \
                    from None
        return self.costers[key]

    def time(self, collective: str, ranks: tuple[int, ...], size: float,
             hidden: int | None = None) -> float:
        """Seconds for one collective of ``size`` bytes on ``ranks`` (``hidden``: the model's
        hidden size, for an engine's rule that looks at it); 0 for one rank."""
        if len(ranks) < 2 or size <= 0:
            return 0.0
        key = (collective, ranks, int(size), hidden)
        if key not in self.memo:
            chooser = self.algorithm(collective, ranks, size, hidden)
            self.used.setdefault((collective, len(ranks)), {})[chooser] = None
            at = self._coster(collective, ranks, chooser)
            if not at.profiles:
                raise InferError(f"no algorithm runs {collective} on ranks "
                                 f"{ranks[0]}..{ranks[-1]}")
            try:
                self.memo[key] = at(max(1, int(size))).time
            except CostError as exc:
                raise InferError(f"{collective} on ranks {ranks[0]}..{ranks[-1]}: {exc}") \
                    from None
        return self.memo[key]


def _rows(m: float, tile: float) -> float:
    """Efficiency of a GEMM by its row count (an expert's tokens): small-M grouped GEMMs pad
    their tiles and cannot fill the tensor cores, m / (m + tile) of the rate."""
    return m / (m + tile) if m > 0 else 1.0


def _kernel(flops: float, nbytes: float, peak: float, bw: float) -> float:
    return max(flops / peak, nbytes / bw)


class Engine:
    """One layout of one model on the system: step times, memory and KV capacity."""

    def __init__(self, system: System, model: Transformer, lay: Layout, precision: str,
                 kv_precision: str, gpu: Gpu, settings: Settings, comm: Comm, first: int = 0):
        sv.check(model, lay)
        self.a, self.lay, self.s, self.gpu, self.comm = model, lay, settings, gpu, comm
        self.prec, self.kvp = precision, kv_precision
        n = lay.tp * lay.pp
        self.ranks = tuple(range(first, first + n))
        # the stage whose tensor group, and the boundary whose send, spans the most islands:
        # a step waits for its slowest stage (``slowest_replica`` picks the replica)
        stages = [self.ranks[i * lay.tp:(i + 1) * lay.tp] for i in range(lay.pp)]
        island = system.locality.island
        self.tp_ranks = max(stages, key=lambda g: len({island[r] for r in g}))
        self.boundary = max(((g[0], h[0]) for g, h in zip(stages, stages[1:])),
                            key=lambda ab: island[ab[0]] != island[ab[1]], default=None)
        self.stage_layers = math.ceil(model.layers / lay.pp)
        s = settings
        self.weights = sv.weight_bytes_per_gpu(model, lay, precision)
        # efficiency by shape: a GEMM whose output is split thin over the tensor group
        # fills fewer tiles and waves; n / (n + gemm_width) of the rate, n its columns per GPU
        n = model.ffn / lay.tp if moe_layers(model) < model.layers else \
            model.expert_ffn / max(1, lay.tp // lay.ep)
        self.shape = n / (n + settings.gemm_width)
        # a routed expert's GEMM has its own width: expert_ffn over tp / ep GPUs (a model with
        # a few dense layers, DeepSeek-V3's 3 of 61, runs its 58 MoE layers' experts at it)
        e = model.expert_ffn / max(1, lay.tp // lay.ep) if model.experts else n
        self.expert_shape = e / (e + settings.gemm_width)
        self.act = sv.activation_bytes(model, lay, s.max_tokens)
        free = gpu.hbm - self.weights - self.act - s.runtime_reserve
        self.kv_per_token = sv.kv_bytes_per_token_per_gpu(model, lay, kv_precision)
        per_gpu_tokens = max(0.0, free * s.kv_fraction) / self.kv_per_token
        # tokens of sequences one replica holds: with attention DP each GPU keeps its own
        self.kv_capacity = int(per_gpu_tokens * (lay.tp if lay.attention_dp else 1))

    # -- one step of a GPU
    def _compute(self, w: sv.Work, gemm_eff: float) -> float:
        peak = self.gpu.peak(self.prec) * \
            (self.s.fp4_efficiency if self.prec == "fp4" else 1)
        attn_peak = self.gpu.peak("fp8" if self.kvp != "bf16" else "bf16")
        bw = self.gpu.bandwidth * self.s.hbm_efficiency
        return (_kernel(w.gemm_flops, w.weight_bytes, peak * self.shape * gemm_eff, bw)
                + _kernel(w.expert_flops, w.expert_bytes,
                          peak * self.expert_shape * gemm_eff
                          * _rows(w.expert_rows, self.s.expert_tile), bw)
                + _kernel(w.attn_flops, w.kv_bytes, attn_peak * gemm_eff, bw)
                + self.stage_layers * self.s.layer_overhead)

    def _comm(self, tokens: float) -> float:
        """Communication of one stage for ``tokens`` tokens of the replica."""
        a, lay = self.a, self.lay
        t = 0.0
        if lay.attention_dp:
            if moe_layers(a) and lay.tp > 1:
                size = tokens / lay.tp * a.top_k * a.hidden * sv.ACT_BYTES
                moe = math.ceil(moe_layers(a) / lay.pp)
                t += 2 * moe * (self.comm.time("alltoall", self.tp_ranks, size)
                                + self.s.collective_overhead)
        elif lay.tp > 1:
            size = tokens * a.hidden * sv.ACT_BYTES
            t += 2 * self.stage_layers * (self.comm.time("allreduce", self.tp_ranks, size,
                                                         a.hidden)
                                          + self.s.collective_overhead)
        return t

    def _send(self, tokens: float) -> float:
        if self.boundary is None:
            return 0.0
        return self.comm.time("sendrecv", self.boundary, tokens * self.a.hidden * sv.ACT_BYTES)

    def host_time(self, batch: int) -> float:
        """Seconds of host work per engine step that grow with the running sequences
        (scheduling, sampling, detokenisation, input preparation: ``sequence_overhead`` each)."""
        return self.s.sequence_overhead * batch

    def decode_step(self, batch: int, context: float) -> tuple[float, float]:
        """(seconds per decode step of ``batch`` sequences, of which communication); with pp
        the batch runs as pp micro-batches through the stages. The host work of the step
        (``host_time``) adds to the GPU's time, or with an overlap scheduler (the engine
        prepares step n + 1 while the GPU runs step n) hides behind it up to its length."""
        lay = self.lay
        micro = max(1.0, batch / lay.pp)
        w = sv.decode(self.a, lay, micro, context, self.prec, self.kvp)
        comm = self._comm(micro)
        stage = self._compute(w, self.s.gemm_efficiency) + comm
        gpu = lay.pp * stage + (lay.pp - 1) * self._send(micro)
        host = self.host_time(batch)
        step = (max(gpu, host) if self.s.overlap_scheduler else gpu + host) + \
            self.s.step_overhead
        return step, lay.pp * comm

    def prefill(self, tokens: int, batch: int = 1) -> float:
        """Seconds for one engine step that prefills ``batch`` requests of ``tokens`` tokens
        through every stage, in chunks of ``max_tokens`` (each chunk reads the weights
        again); pipeline stages overlap other requests, so a cycle pays one stage of it."""
        lay, s = self.lay, self.s
        chunks = max(1, math.ceil(tokens * batch / s.max_tokens))
        one = sv.prefill(self.a, lay, tokens, self.prec, self.kvp)
        w = sv.Work(one.gemm_flops * batch, one.attn_flops * batch,
                    one.weight_bytes * chunks, one.kv_bytes * batch,
                    one.expert_flops * batch, one.expert_bytes * chunks,
                    sv.expert_rows(self.a, min(tokens * batch, s.max_tokens)))
        per_chunk = min(tokens * batch, s.max_tokens)
        stage = self._compute(w, s.prefill_efficiency) + chunks * self._comm(per_chunk)
        return lay.pp * stage + (lay.pp - 1) * self._send(per_chunk) + chunks * s.step_overhead

    def prefill_share(self, tokens: int, concurrency: int) -> float:
        """The replica time one request's prefill takes out of a cycle: prefills of up to
        ``max_tokens`` tokens batch into one step, pipeline stages and attention-DP ranks
        work on different requests at once."""
        batch = max(1, min(concurrency, self.s.max_tokens // max(1, tokens)))
        per = self.prefill(tokens, batch) / batch
        return per / self.lay.pp / (self.lay.tp if self.lay.attention_dp else 1)

    def wave_ttft(self, isl: int, concurrency: int, t_dec: float) -> float:
        """Mean seconds from arrival to first token when ``concurrency`` requests of ``isl``
        tokens arrive together (a synchronised wave: the first wave of a fixed-concurrency
        benchmark, or a burst), before ``request_overhead``. The engine admits
        max(1, max_tokens // isl) prefills per step (TensorRT-LLM's max_num_tokens, vLLM's
        max_num_batched_tokens); a step also decodes the requests already prefilled. A request
        of the j-th step gets its first token at the end of step j, so the mean is the step
        time x the mean step index. One request: its prefill alone."""
        c = max(1, concurrency)
        n = min(c, max(1, self.s.max_tokens // max(1, isl)))
        if c == 1:
            return self.prefill(isl)
        step = self.prefill(isl, n) + t_dec
        full, rem = divmod(c, n)
        total = step * n * full * (full + 1) / 2
        if rem:
            total += rem * (full * step + self.prefill(isl, rem) + t_dec)
        return total / c

    def memory(self, sequences: float, tokens_each: float) -> float:
        """Bytes on the busiest GPU holding ``sequences`` of ``tokens_each`` tokens."""
        on_gpu = sequences / self.lay.tp if self.lay.attention_dp else sequences
        return self.weights + self.act + self.s.runtime_reserve + \
            on_gpu * tokens_each * self.kv_per_token


def kv_transfer(system: System, comm: Comm, eng: Engine, src: int, dst: int, isl: int) -> float:
    """Seconds to move one request's KV cache from a prefill replica starting at rank ``src``
    to a decode replica starting at ``dst``: each GPU sends its shard to its counterpart at
    once, costed as one send on the first pair's path."""
    nbytes = isl * eng.kv_per_token
    return comm.time("sendrecv", (src, dst), nbytes)


def evaluate(system: System, model: Transformer, cfg: Config, isl: int, osl: int, precision: str,
             kv_precision: str, gpu: Gpu, settings: Settings, comm: Comm,
             engine: Engine | None = None) -> InferRow:
    """One configuration's row (raises LayoutError when the model cannot be split so)."""
    eng = engine or Engine(system, model, cfg.layout, precision, kv_precision, gpu, settings,
                           comm)
    per = cfg.layout.gpus
    decoders = cfg.replicas - cfg.prefill_replicas
    asked = max(1, math.ceil(cfg.concurrency / decoders))
    # an engine admits what its KV cache holds; the other requests wait in its queue
    cap = max_concurrency(eng.kv_capacity, isl, osl, settings)
    c = min(asked, cap) if cap >= 1 else asked
    ctx = isl + osl / 2
    t_dec, comm_dec = eng.decode_step(c, ctx)
    t_pre = eng.prefill(isl)
    share = eng.prefill_share(isl, c)
    # the prefill step emits the first token. With other sequences in flight a request arrives
    # during a step (half of one waits) and its prefill rides a step that decodes them too
    busy = 1.5 * t_dec if c > 1 else 0.0
    if cfg.prefill_replicas:
        tpot = t_dec
        decode_rate = min(cfg.concurrency, decoders * c) / t_dec   # tokens/s
        prefill_rate = cfg.prefill_replicas / share * osl         # output tokens/s it feeds
        throughput = min(decode_rate, prefill_rate)
        load = min(0.99, throughput / (cfg.prefill_replicas / share * osl))
        move = kv_transfer(system, comm, eng, 0, cfg.prefill_replicas * per, isl)
        ttft = settings.request_overhead + t_pre + move + load * share / (2 * (1 - load))
    else:
        cycle = osl * t_dec + c * share
        # a request's tokens wait for the prefills of the other c - 1 requests of a cycle
        tpot = (osl * t_dec + (c - 1) * share) / osl
        # the busiest replica holds c; C requests over all replicas produce tokens
        throughput = min(cfg.concurrency, cfg.replicas * c) * osl / cycle
        load = min(0.99, c * share / cycle)
        ttft = settings.request_overhead + t_pre + busy + load * share / (2 * (1 - load))
    if asked > c:
        # closed loop (each client sends its next request when one ends): by Little's law the
        # clients' requests take concurrency / request rate each, of which osl x TPOT decode
        rate = throughput / osl
        ttft = max(ttft, cfg.concurrency / rate - (osl - 1) * tpot)
    mem = eng.memory(c, isl + osl)
    # fits: the engine runs the configuration. Past what its KV cache (or max_batch) holds an
    # engine does not refuse requests: its running batch is what fits (``running``) and the
    # others wait in its queue (``queued``), their wait in the TTFT above; only a layout whose
    # KV cache cannot hold one request does not run
    fits = mem <= gpu.hbm and cap >= 1
    # the TTFT of a synchronised wave (every request of a replica arriving at once): an upper
    # bound on the steady state, which NIM's fixed-concurrency sweeps lie between (docs/infer.md)
    if cfg.prefill_replicas:
        wave = eng.wave_ttft(isl, math.ceil(cfg.concurrency / cfg.prefill_replicas), 0.0) + move
    else:
        wave = eng.wave_ttft(isl, c, t_dec if c > 1 else 0.0)
    if asked > c:
        # past the KV cache the wave is the c admitted at once; the rest queue as above
        wave = max(wave, ttft - settings.request_overhead)
    wave += settings.request_overhead
    parts = (("decode_step", t_dec), ("decode_comm", comm_dec), ("decode_host", eng.host_time(c)),
             ("prefill_time", t_pre),
             ("running", float(c)), ("queued", float(asked - c)), ("ttft_wave", wave),
             ("ttft_closed_loop", closed_loop_ttft(ttft, wave, settings)))
    return InferRow(cfg, cfg.replicas * per, precision, kv_precision, ttft, tpot, throughput,
                    mem, eng.kv_capacity, bool(fits), parts=parts)


def evaluate_rate(system: System, model: Transformer, cfg: Config, isl: int, osl: int,
                  precision: str, kv_precision: str, gpu: Gpu, settings: Settings, comm: Comm,
                  arrivals: Arrivals, engine: Engine | None = None) -> InferRow:
    """One configuration's ``InferRow`` under open-loop ``arrivals``: ``concurrency`` is the
    requests in flight over all replicas (Little's law, rounded), ``throughput`` the offered
    load while stable (the sustained rate's otherwise), and the row adds ``request_rate``,
    ``requests``, ``arrival``, ``in_flight``, ``capacity_rate``, ``utilization``, ``stable`` and
    ``ttft_median``."""
    eng = engine or Engine(system, model, cfg.layout, precision, kv_precision, gpu, settings,
                           comm)
    per = cfg.layout.gpus
    cap = max(1, max_concurrency(eng.kv_capacity, isl, osl, settings))
    if cfg.prefill_replicas:
        decode = cfg.replicas - cfg.prefill_replicas
        move = kv_transfer(system, comm, eng, 0, cfg.prefill_replicas * per, isl)
        run = infer_rate.disaggregated(eng, isl, osl, arrivals, cfg.prefill_replicas, decode,
                                       cap, move)
        holders, total_rate = decode, run.capacity * decode
    else:
        holders = cfg.replicas
        run = infer_rate.open_loop(eng, isl, osl, arrivals, cfg.replicas, cap)
        total_rate = run.capacity * cfg.replicas
    flight = run.in_flight * holders
    mem = eng.memory(run.in_flight, isl + osl)
    fits = mem <= gpu.hbm and cap * (isl + osl) <= eng.kv_capacity
    shown = attrs.evolve(cfg, concurrency=max(1, round(flight)))
    parts = (("decode_step", run.decode_step), ("decode_host", eng.host_time(run.in_flight)),
             ("prefill_time", eng.prefill(isl)), ("ttft_median", run.ttft_median),
             ("in_flight", flight), ("capacity_rate", total_rate),
             ("prefill_load", run.prefill_load))
    extra = (("arrival", "burst" if arrivals.burst else "poisson"),
             ("request_rate", None if arrivals.burst else arrivals.rate),
             ("requests", arrivals.requests),
             ("utilization", None if math.isinf(run.utilization) else run.utilization),
             ("stable", run.stable))
    return InferRow(shown, cfg.replicas * per, precision, kv_precision, run.ttft, run.tpot,
                    run.throughput * holders, mem, eng.kv_capacity, bool(fits), parts=parts,
                    extra=extra)


def closed_loop_ttft(steady: float, wave: float, settings: Settings) -> float:
    """An empirical estimate of the mean TTFT fixed-concurrency (closed-loop) benchmarks
    report: steady^(1 - w) x wave^w, w = ``closed_loop_share``, between the TTFT of
    independent arrivals (``steady``, the row's ``ttft``) and of one synchronised wave
    (``wave``). Not a mechanism: the measured sweeps lie between the two bounds at a position
    per table that no engine setting topoc knows explains (docs/infer.md, "Loaded TTFT");
    fitted on the fit rows, it follows NIM's 70B TP2 tables and under-predicts its 8B TP1
    tables. With one request in flight the two bounds agree and so does this."""
    if wave <= steady:
        return steady
    w = settings.closed_loop_share
    return steady ** (1 - w) * wave ** w


# ---- the search -------------------------------------------------------------------------------

def slowest_replica(system: System, lay: Layout, replicas: int) -> int:
    """The first rank of the replica to cost: the one whose tensor groups span the most
    islands (machines or racks: ``Locality.island``), then whose stage boundaries cross the
    most, then whose GPUs lie on the most islands; the first such. Replicas are consecutive
    ranks, so with tp x pp not dividing an island's GPUs one of them straddles two islands
    and its every layer's all-reduce crosses the scale-out network: the TTFT and TPOT a
    request on it sees, and what a limit must hold for. The others cost as much or less.

    When every island holds the same number s of consecutive ranks (``island_period``), a
    replica's place among the islands repeats every s / gcd(n, s) replicas, so the first of
    the slowest lies among those and only they are ranked: the same answer as ranking every
    replica, at a cost that does not grow with the system."""
    import numpy as np

    n = lay.tp * lay.pp
    s = island_period(system)
    if s:
        replicas = min(replicas, s // math.gcd(n, s))
    island = np.asarray(system.locality.island[:replicas * n], dtype=np.int64)
    per = island.reshape(replicas, lay.pp, lay.tp)
    # islands a stage's tensor group spans: 1 + the changes along its sorted island numbers
    tp_span = (1 + (np.diff(np.sort(per, axis=2), axis=2) != 0).sum(axis=2)).max(axis=1) \
        if lay.tp > 1 else np.ones(replicas, np.int64)
    sends = (np.diff(per[:, :, 0], axis=1) != 0).sum(axis=1) if lay.pp > 1 \
        else np.zeros(replicas, np.int64)
    flat = np.sort(island.reshape(replicas, n), axis=1)
    span = 1 + (np.diff(flat, axis=1) != 0).sum(axis=1)
    key = (tp_span * (n + 1) + sends) * (n + 1) + span
    return int(np.argmax(key)) * n


#: The largest whole number a size or load takes: tokens, requests in flight, GPUs.
MAX_COUNT = 10**9


def _count(value) -> bool:
    """A whole number from 1 to MAX_COUNT (not a bool)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and \
        1 <= value <= MAX_COUNT


def shown_number(value) -> str:
    """A value as typed, or its digit count when it is too long to print."""
    text = repr(value)
    return text if len(text) <= 30 else f"{text[:12]}... ({len(text)} digits)"


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def max_concurrency(kv_tokens: int, isl: int, osl: int, settings: Settings) -> int:
    """Sequences one replica holds: its KV capacity in tokens over isl + osl, at most the
    engine's batch."""
    return min(settings.max_batch, kv_tokens // max(1, isl + osl))


def _loads(cap: int) -> list[int]:
    out, c = [], 1
    while c < cap:
        out.append(c)
        c *= 2
    return out + [cap] if cap >= 1 else []


@attrs.frozen
class InferResult:
    """Ranked rows and what the search did."""

    rows: tuple[InferRow, ...]
    considered: int
    rejected: tuple[str, ...]      # why layouts could not run (one message per reason)
    gpus: int
    #: (collective, ranks, algorithms) the rows' collectives were costed with, in order of
    #: first use: the chooser, or the algorithms an engine's rule picked (oneshot, twoshot)
    collectives: tuple[tuple[str, int, tuple[str, ...]], ...] = ()


def infer(system: System, model: Transformer, isl: int, osl: int, gpus: int | None = None,
          fixed: Mapping[str, object] | None = None, precision: str = "fp8",
          kv_precision: str | None = None, concurrency: int | str = "max",
          disaggregate: bool = False, ttft_limit: float | None = None,
          tpot_limit: float | None = None, settings: Settings | None = None,
          arrivals: Arrivals | None = None, client: Client | None = None,
          scheduler: Scheduler | None = None) -> InferResult:
    """Enumerate tp x pp x ep (x attention DP) x replicas x concurrency on the first ``gpus``
    GPUs, cost each, rank by output tokens/s per GPU (fitting and within the limits first) and
    mark the Pareto front of tokens/s per GPU against tokens/s per user.

    With ``arrivals`` (``infer_rate.Arrivals``: a request rate over all replicas, or a burst)
    the load is open-loop instead: one row per layout (and disaggregated split), its
    concurrency the requests in flight that the rate gives (``infer_rate``); stable rows within
    the limits rank first, then by a request's latency (TTFT + (osl - 1) x TPOT).

    With ``client`` (``serve_sim.Client``: a closed loop at each row's concurrency, or Poisson
    arrivals at its rate) every row's TTFT, TPOT and throughput come from a simulated benchmark
    against ``scheduler`` (an engine's, ``serve_sim.ENGINES``; TensorRT-LLM's by default)."""
    s = settings or Settings()
    if client is not None:
        scheduler = scheduler or serve_sim.ENGINES[serve_sim.DEFAULT_ENGINE]
        why = serve_sim.problem(client, disaggregate, arrivals is not None)
        if why:
            raise InferError(why)
        if client.kind == "poisson":
            arrivals = Arrivals(client.rate, client.requests)
    if arrivals is not None:
        if not (arrivals.rate > 0) or not 1 <= arrivals.requests <= MAX_REQUESTS:
            raise InferError(f"request rate {arrivals.rate} and {arrivals.requests} requests: "
                             "a positive rate (or inf) and 1 to "
                             f"{MAX_REQUESTS:,} requests")
    fixed = dict(fixed or {})
    world = len(system.gpus)
    gpus = world if gpus is None else gpus
    # what the CLI checks as usage errors, for the Python API too (never a silent search, nor
    # an OverflowError from a number past a float's range)
    for name, value in (("isl", isl), ("osl", osl), ("gpus", gpus)):
        if not _count(value):
            raise InferError(f"{name} {shown_number(value)}: a whole number from 1 to {MAX_COUNT:,}")
    if not 1 <= gpus <= world:
        raise InferError(f"--gpus {gpus}: the system has {world} GPUs")
    for dim in ("tp", "pp", "ep"):
        if fixed.get(dim) is not None and not _count(fixed[dim]):
            raise InferError(f"{dim} = {shown_number(fixed[dim])}: a whole number of at least 1 "
                             "(or None: searched)")
    if _count(concurrency):
        concurrency = int(concurrency)
    elif concurrency not in ("max", "sweep"):
        raise InferError(f"concurrency {concurrency!r}: a whole number of at least 1, "
                         "'max' or 'sweep'")
    for name, limit in (("ttft_limit", ttft_limit), ("tpot_limit", tpot_limit)):
        if limit is not None and not limit > 0:
            raise InferError(f"{name} {limit}: a positive number of seconds")
    for p in (precision, kv_precision or precision):
        if p not in sv.PRECISIONS:
            raise InferError(f"precision '{p}': one of {', '.join(sv.PRECISIONS)}")
    kvp = kv_precision or ("bf16" if precision == "bf16" else "fp8")
    gpu = gpu_of(system, gpus)
    if s.collectives not in CHOOSERS and s.collectives not in ENGINE_ALLREDUCE:
        raise InferError(f"collectives '{s.collectives}': one of "
                         f"{', '.join(CHOOSERS + tuple(ENGINE_ALLREDUCE))}")
    try:
        nccl_profile(s.nccl)
    except UnknownVersion as exc:
        raise InferError(f"nccl: {exc}") from None
    comm = Comm(system, s.collectives, s.nccl)
    rows: list[InferRow] = []
    rejected: dict[str, None] = {}
    considered = 0
    adp_choice = fixed.get("attention_dp")
    full = all(fixed.get(k) is not None for k in ("tp", "pp", "ep"))
    for tp in ([fixed["tp"]] if fixed.get("tp") else _divisors(gpus)):
        for pp in ([fixed["pp"]] if fixed.get("pp") else _divisors(gpus // tp or 1)):
            if gpus % (tp * pp):
                rejected.setdefault(f"tp x pp = {tp * pp} does not divide {gpus} GPUs")
                continue
            replicas = gpus // (tp * pp)
            eps = [fixed["ep"]] if fixed.get("ep") else \
                [e for e in _divisors(tp) if not model.experts and e == 1 or
                 model.experts and model.experts % e == 0]
            for ep in eps:
                adps = [adp_choice] if adp_choice is not None else \
                    [False] if full or not model.experts or tp == 1 else [False, True]
                for adp in adps:
                    considered += 1
                    lay = Layout(tp, pp, ep, adp)
                    try:
                        eng = Engine(system, model, lay, precision, kvp, gpu, s, comm,
                                     slowest_replica(system, lay, replicas))
                    except LayoutError as exc:
                        rejected.setdefault(str(exc))
                        continue
                    cap = max_concurrency(eng.kv_capacity, isl, osl, s)
                    splits = [0]
                    if disaggregate:
                        if replicas < 2:
                            rejected.setdefault(f"disaggregation needs 2 or more replicas "
                                                f"(tp x pp = {tp * pp} on {gpus} GPUs gives "
                                                f"{replicas})")
                            continue
                        splits = list(range(1, replicas))
                    if arrivals is not None:
                        loads = [None]
                    elif concurrency == "max":
                        loads = [max(1, cap)]
                    elif isinstance(concurrency, int):
                        loads = [concurrency]
                    else:
                        loads = _loads(max(1, cap))
                    # a layout whose collectives find no path on the system (GPUs that no link
                    # joins) is rejected with the reason; the other layouts are still costed
                    mine: list[InferRow] = []
                    try:
                        for split in splits:
                            for c in loads:
                                if c is None:
                                    cfg = Config(tp, pp, ep, adp, replicas, 1, split)
                                    mine.append(evaluate_rate(system, model, cfg, isl, osl,
                                                              precision, kvp, gpu, s, comm,
                                                              arrivals, eng))
                                    continue
                                per = c if concurrency in ("max", "sweep") else None
                                total = per * (replicas - split) if per else c
                                cfg = Config(tp, pp, ep, adp, replicas, total, split)
                                mine.append(evaluate(system, model, cfg, isl, osl, precision, kvp,
                                                     gpu, s, comm, eng))
                    except InferError as exc:
                        rejected.setdefault(f"tp {tp} x pp {pp} x ep {ep}: {exc}")
                        continue
                    if client is not None:
                        mine = [serve_sim.simulated(r, eng, isl, osl, client, scheduler)
                                if r.fits else r for r in mine]
                    rows.extend(mine)
    if not rows:
        raise InferError("no layout of " + model.name + f" runs on {gpus} GPUs: "
                         + "; ".join(rejected))
    rows = [_limit(r, ttft_limit, tpot_limit) for r in rows]
    rows = _pareto(rows)
    if arrivals is not None:
        rows.sort(key=lambda r: (not r.fits, not r.stable, not r.within_limits,
                                 r.ttft + (osl - 1) * r.tpot, r.config))
    else:
        rows.sort(key=lambda r: (not r.fits, not r.within_limits, -r.throughput_per_gpu,
                                 r.config))
    return InferResult(tuple(rows), considered, tuple(rejected), gpus,
                       tuple((c, n, tuple(a)) for (c, n), a in comm.used.items()))


def _limit(r: InferRow, ttft: float | None, tpot: float | None) -> InferRow:
    ok = (ttft is None or r.ttft <= ttft) and (tpot is None or r.tpot <= tpot)
    return attrs.evolve(r, within_limits=ok)


def _pareto(rows: list[InferRow]) -> list[InferRow]:
    """Mark the fitting rows within the limits that no other such row beats on both tokens/s
    per GPU and tokens/s per user."""
    good = sorted((r for r in rows if r.fits and r.within_limits and r.stable),
                  key=lambda r: (-r.throughput_per_gpu, -r.tokens_per_s_per_user, r.config))
    front, best_user = set(), -1.0
    for r in good:
        if r.tokens_per_s_per_user > best_user:
            front.add(id(r))
            best_user = r.tokens_per_s_per_user
    return [attrs.evolve(r, pareto=True) if id(r) in front else r for r in rows]


def too_big(system: System, model: Transformer, result: InferResult, isl: int, osl: int,
            settings: Settings | None = None) -> str:
    """Why no row fits: the weights of the smallest layout are more than the HBM, or (when some
    layout's weights leave room for a KV cache) one request is more than the largest KV cache
    holds. A concurrency past the KV cache is no reason: the engine queues what it cannot run."""
    s = settings or Settings()
    gpu = gpu_of(system, result.gpus)
    held = [r for r in result.rows if r.kv_capacity_tokens > 0]
    if held:
        # a layout whose memory holds its weights runs any concurrency (the rest queue) unless
        # its KV cache cannot hold a single request: say so with the layout holding the most
        best = max(held, key=lambda r: (r.kv_capacity_tokens, -r.config.concurrency))
        c = best.config
        kind = "decode replica" if c.prefill_replicas else "replica"
        return (f"{model.name} does not fit: one request of {isl}+{osl} tokens needs "
                f"{isl + osl:,} tokens of KV cache; the layout that holds the most "
                f"(tp={c.tp}, pp={c.pp}, ep={c.ep}) holds {best.kv_capacity_tokens:,} tokens "
                f"per {kind} ({gpu.hbm / 1e9:.1f} GB per GPU)")
    best = min(result.rows, key=lambda r: r.memory_per_gpu)
    c = best.config
    return (f"{model.name} does not fit: the smallest layout (tp={c.tp}, pp={c.pp}, ep={c.ep}) "
            f"needs {best.memory_per_gpu / 1e9:.1f} GB per GPU at concurrency "
            f"{c.concurrency} with {isl}+{osl} tokens, of {gpu.hbm / 1e9:.1f} GB "
            f"(KV capacity {best.kv_capacity_tokens:,} tokens per replica; runtime reserve "
            f"{s.runtime_reserve / 2**30:.0f} GiB)")


Progress = Callable[[int, int], None]


#: The request shape the report's serving section uses: 1,000 tokens in and out (the middle of
#: TensorRT-LLM's published performance tables); ``topoc infer`` takes any.
REPORT_ISL = REPORT_OSL = 1000


@attrs.frozen
class ServingView:
    """``topoc infer``'s search for the report's serving section: the result, or why not."""

    model: str
    gpus: int
    isl: int
    osl: int
    precision: str | None
    result: InferResult | None
    error: str | None = None


def serving_view(system: System, model, gpus: int) -> ServingView | None:
    """The search the HTML report shows for a strategy's model on its GPUs (None without a
    model); computed here so that the page only formats it."""
    if model is None:
        return None
    try:
        precision = default_precision(gpu_of(system, gpus))
        result = infer(system, model, REPORT_ISL, REPORT_OSL, gpus,
                       precision=precision, concurrency="sweep")
    except InferError as exc:
        return ServingView(model.name, gpus, REPORT_ISL, REPORT_OSL, None, None, str(exc))
    return ServingView(model.name, gpus, REPORT_ISL, REPORT_OSL, precision, result)
