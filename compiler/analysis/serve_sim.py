"""A benchmark client against an engine's scheduler, simulated event by event: the TTFT, TPOT
and throughput a closed loop (``--client closed``: C clients, each sending its next request
when the last one ends, as `vllm bench serve --max-concurrency`, genai-perf and AIPerf do) or
an open one (``--client poisson``: requests at a rate, `vllm bench serve --request-rate`)
measures, with the statistics those clients report (mean, median, p90).

The step costs are ``infer.Engine``'s (taken as an argument; nothing of ``infer`` is imported,
whose ``infer`` calls ``simulated`` on each row). What the simulation adds is the scheduler
that decides, step by step, which requests run:

- A step decodes every running sequence (one token each) and, within ``max_tokens`` tokens
  less those decodes, prefills waiting prompts in arrival order (in-flight batching); with
  ``chunked_prefill`` a prompt longer than the budget left runs in chunks, without it a prompt
  waits for a step with room for all of it (one alone when it is longer than the budget).
  An engine that does not mix (``mixed`` off: SGLang without --enable-mixed-chunk) runs a
  prefill step, which decodes nothing, whenever a prompt can be admitted (``prefill_first``).
- Admission (``reserve``): a waiting request joins the running batch when the KV cache has
  room for its prompt and ``reserve`` x osl of its output on top of what the running
  sequences hold and still reserve, and the batch is under ``max_batch``. TensorRT-LLM's
  default GUARANTEED_NO_EVICT reserves the whole output (1); vLLM the prompt only (0), and
  when a decode step finds the cache full it preempts the newest running request, which
  recomputes its prompt and the tokens it had made (vLLM's recompute preemption); SGLang
  reserves ``new_token_ratio`` of it (0.7 at start) and retracts the same way.
- A step's time: the engine's decode step of its running batch plus the prefill tokens at the
  per-token cost of a full prefill step; a step that only prefills costs the engine's prefill
  of those prompts (the idle TTFT of one request is its prefill).
- The serving frontend (HTTP, tokenizer) takes each request in turn, ``request_overhead``
  each, before the engine sees it: a wave of simultaneous sends reaches the engine spread out
  (an assumption: the fitted per-request overhead read as serial work; docs/infer.md gives
  its effect on the validation).
- A request's first token is at the end of the step that finishes its prefill; TTFT is that
  less its send time. TPOT per request is (end - first token) / (its output tokens - 1),
  as `vllm bench serve` computes it; throughput is the measured requests' output tokens over
  the time from the first measured request's send to the last one's end. The first
  ``warmup`` requests are not measured (the clients' default is none: the synchronised first
  wave of a closed loop is in the figures).

Every request has the same prompt and output lengths unless the client spreads them
(``Client.spread``, `vllm bench serve --random-range-ratio`): with lengths all the same, the
requests a step admits together end together and are sent again together, so a closed loop
keeps the cohorts its first wave forms; any spread of the output lengths breaks them up
(docs/infer.md, "Why the simulated cohorts stay together").

Events, not steps: between two events (a finish, an arrival, a cache that fills) every step is
the same decode step, so the loop jumps over them; the work is linear in the requests (a few
events each, plus the steps that prefill), not in their tokens. Poisson arrivals come from a
fixed seed: the same input gives the same figures. One replica is simulated (the busiest: the
concurrency, rate and requests divided over the replicas, rounded up); throughput is scaled
to the replicas that share the load.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable

import attrs

#: The clients' defaults: `vllm bench serve`'s --num-prompts 1,000 and --num-warmups 0
#: (genai-perf's and AIPerf's --warmup-request-count is 0 too).
DEFAULT_REQUESTS = 1000
DEFAULT_WARMUP = 0
#: The most requests a simulated run takes (it is linear in them: 100,000 takes seconds).
MAX_REQUESTS = 10**5
CLIENTS = ("closed", "poisson")    # and the named protocols of ``PROTOCOLS``


@attrs.frozen
class Scheduler:
    """An engine's scheduler with the defaults of its source (docs/infer.md, "Engines")."""

    name: str
    max_batch: int          # running sequences at most
    max_tokens: int         # tokens per step: decodes and prefill chunks
    chunked_prefill: bool   # a prompt runs in chunks of what the step's budget leaves
    mixed: bool             # prefills share a step with the running decodes
    prefill_first: bool     # a step that can admit a prompt prefills before decoding
    reserve: float          # share of the output reserved in the KV cache at admission
    overlap: bool           # host work of a step hidden behind the GPU's next step


#: ``--engine``: TensorRT-LLM's LLM API / trtllm-serve (max_batch_size 2048, max_num_tokens
#: 8192, enable_chunked_prefill off, capacity scheduler GUARANTEED_NO_EVICT, overlap scheduler
#: on); vLLM's V1 engine as `vllm serve` sets it on GPUs of 70 GB or more (max_num_seqs 1024,
#: max_num_batched_tokens 8192, chunked prefill always on, running requests scheduled before
#: waiting ones, recompute preemption, async scheduling off); SGLang (chunked_prefill_size
#: 8192, prefill and decode in separate batches with new prompts first, new_token_ratio 0.7 at
#: start, max_running_requests from its request pool: 4,096 at most, overlap scheduler on).
ENGINES = {
    "trtllm": Scheduler("trtllm", 2048, 8192, False, True, False, 1.0, True),
    "vllm": Scheduler("vllm", 1024, 8192, True, True, False, 0.0, False),
    "sglang": Scheduler("sglang", 4096, 8192, True, False, True, 0.7, True),
}
DEFAULT_ENGINE = "trtllm"


def small_gpu(sched: Scheduler, hbm: float) -> Scheduler:
    """vLLM's defaults below 70 GiB of HBM: max_num_seqs 256, max_num_batched_tokens 2048."""
    if sched.name == "vllm" and hbm < 70 * 2**30:
        return attrs.evolve(sched, max_batch=256, max_tokens=2048)
    return sched


@attrs.frozen
class Client:
    """A benchmark client's protocol: ``closed`` (``concurrency`` clients) or ``poisson``
    (``rate`` requests/s, ``math.inf``: all at once); ``requests`` sent, the first ``warmup``
    not measured; ``spread``: each request's prompt and output lengths drawn from the
    integers of [L (1 - spread), L (1 + spread)] around the given ones (``lengths``)."""

    kind: str = "closed"
    concurrency: int = 1
    rate: float = math.inf
    requests: int = DEFAULT_REQUESTS
    warmup: int = DEFAULT_WARMUP
    per_client: int = 0     # a closed loop measures max(requests, per_client x concurrency)
    spread: float = 0.0     # vllm bench serve's --random-range-ratio (0: every length the same)
    # the engine the client launches itself (trtllm-bench): its chunking of long prompts
    # (None: the scheduler's) and its token budget tuned to the run's lengths (``bench_tokens``)
    chunked: bool | None = None
    tuned: bool = False

    def resolved(self) -> Client:
        """The run at its concurrency: the measured ``requests`` raised to ``per_client`` x
        concurrency (genai-perf's and AIPerf's count) and the ``warmup`` requests sent before
        them (their --warmup-request-count), at most ``MAX_REQUESTS`` in all."""
        if not self.per_client:
            return self
        n = max(self.requests, self.per_client * self.concurrency) + self.warmup
        return attrs.evolve(self, requests=min(MAX_REQUESTS, n), per_client=0)

    def per_replica(self, replicas: int) -> Client:
        """The busiest replica's share of the load (round-robin over ``replicas``)."""
        return attrs.evolve(self, concurrency=max(1, math.ceil(self.concurrency / replicas)),
                            rate=self.rate / replicas,
                            requests=max(1, math.ceil(self.requests / replicas)),
                            warmup=math.ceil(self.warmup / replicas))


@attrs.frozen
class Protocol:
    """A benchmark client's default closed-loop protocol, read from its source: how many
    requests it measures at concurrency C (max(``least``, ``per_client`` x C), or
    ``requests`` when that is fixed), how many it sends first unmeasured (``warmup``), and
    where its TTFT starts and ends (``ttft``)."""

    name: str
    per_client: int          # measured requests per client (0: a fixed count)
    least: int               # fewest measured requests
    requests: int            # the fixed count when per_client is 0
    warmup: int              # requests sent first and not measured
    ttft: str                # what its TTFT spans
    source: str              # where the defaults are read
    chunked: bool | None = None   # the engine it launches chunks long prompts (None: --engine's)
    tuned: bool = False           # ... with its token budget tuned to the lengths

    def client(self, concurrency: int = 1, requests: int | None = None) -> Client:
        """The closed loop this client runs at ``concurrency`` (``requests`` when the run
        states its count; otherwise its default, resolved per row's concurrency)."""
        engine = {"chunked": self.chunked, "tuned": self.tuned}
        if requests:
            return Client("closed", concurrency, requests=requests, warmup=self.warmup,
                          **engine)
        if self.per_client:
            return Client("closed", concurrency, requests=self.least, warmup=self.warmup,
                          per_client=self.per_client, **engine)
        return Client("closed", concurrency, requests=self.requests, warmup=self.warmup,
                      **engine)


#: The benchmark clients of the validation rows (docs/infer.md, "Where the TTFT error is").
PROTOCOLS = {
    "genai-perf": Protocol(
        "genai-perf", 2, 10, 0, 0,
        "the request's send (perf_analyzer InferContext::SendRequest, before the HTTP client) "
        "to its first non-empty streamed response: client queueing, frontend, tokenizer, "
        "engine queue and prefill",
        "triton-inference-server/perf_analyzer genai-perf/genai_perf/config/input/"
        "config_defaults.py (PerfAnalyzerMeasurementDefaults MODE = REQUEST_COUNT, "
        "REQUEST_COUNT = 10; PerfAnalyzerDefaults WARMUP_REQUEST_COUNT = 0) and "
        "config/generate/perf_analyzer_config.py (_calculate_request_count: max(10, 2 x "
        "concurrency) passed as perf_analyzer --request-count, 'a total number of requests "
        "to use for measurement')"),
    "aiperf": Protocol(
        "aiperf", 2, 10, 0, 0,
        "the request's send to its first streamed response (its credit issued at once to "
        "every client: arrival pattern concurrency_burst)",
        "ai-dynamo/aiperf src/aiperf/common/config/user_config.py (validate_timing_mode: "
        "without --request-rate, --request-count = max(MIN_REQUEST_COUNT, concurrency x "
        "REQUEST_COUNT_MULTIPLIER), arrival pattern CONCURRENCY_BURST) and config_defaults.py "
        "(LoadGeneratorDefaults MIN_REQUEST_COUNT = 10, REQUEST_COUNT_MULTIPLIER = 2; "
        "--warmup-request-count 0)"),
    "vllm-bench-serve": Protocol(
        "vllm-bench-serve", 0, 1, DEFAULT_REQUESTS, 0,
        "the request's send (time.perf_counter() before the aiohttp POST) to its first "
        "streamed chunk: frontend, tokenizer, engine queue and prefill",
        "vllm-project/vllm benchmarks/backend_request_func.py (async_request_openai_"
        "completions: ttft = timestamp of the first chunk - st) and vllm/benchmarks/serve.py "
        "(--num-prompts 1000, --num-warmups 0; --max-concurrency gates the sends with a "
        "semaphore)"),
    # trtllm-bench throughput --concurrency C --streaming: its --warmup requests (2) run to
    # the end in a run of their own before the measured one, so the measured run starts on an
    # idle engine with all C requests at once and nothing of it is left out; it measures its
    # whole dataset (--num_requests 0: no count of its own; 1,000 here, as vllm bench serve)
    "trtllm-bench": Protocol(
        "trtllm-bench", 0, 1, DEFAULT_REQUESTS, 0,
        "the request's submission to the LLM API once the concurrency semaphore is held "
        "(request_start_timestamp inside semaphore_guard) to its first streamed output: the "
        "engine's queue and prefill, no HTTP server (the dataset is tokenized beforehand)",
        "NVIDIA/TensorRT-LLM tensorrt_llm/bench/benchmark/throughput.py (--warmup 2 run "
        "through async_benchmark before the measured run; --num_requests 0, the dataset's "
        "length; --concurrency; --enable_chunked_context default True; --scheduler_policy "
        "guaranteed_no_evict) and utils/asynchronous.py (LlmManager._process_single_request: "
        "request_start_timestamp after semaphore_guard, time_on_first_token at the first "
        "streamed output); the engine's max_num_tokens from tensorrt_llm/bench/build/"
        "tuning.py finetune_setting unless given (bench_tokens)",
        chunked=True, tuned=True),
}


def bench_tokens(kv_tokens: float, isl: int, osl: int) -> int:
    """The token budget trtllm-bench builds its engine with when none is given
    (NVIDIA/TensorRT-LLM tensorrt_llm/bench/build/tuning.py, ``finetune_setting``): the
    requests the KV cache holds at these lengths, at most 4,096, times 1 + isl / osl, at most
    32,768, rounded up to 256 tokens below 4,096 ("Set min to 2048 to ensure Ctx/Gen overlap
    efficiency"), to 512 below 8,192 and to 1,024 above. ``kv_tokens`` is the engine's KV
    capacity in tokens (trtllm-bench estimates it from the free memory and 0.95 of it; topoc's
    is the engine's)."""
    raw_bs = min(kv_tokens / max(1, isl + osl), 4096)
    raw = min(raw_bs * (1 + isl / max(1, osl)), 32768)
    if raw < 4096:
        return max(2048, 256 * math.ceil(raw / 256))
    if raw < 8192:
        return 512 * math.ceil(raw / 512)
    return 1024 * math.ceil(raw / 1024)


#: What ``--client`` takes: the two loops, and the named benchmark clients' closed loops.
CLIENT_NAMES = CLIENTS + tuple(PROTOCOLS)


def lengths(isl: int, osl: int, n: int, spread: float) -> tuple[list[int], list[int]]:
    """The prompt and output lengths of ``n`` requests: all ``isl`` and ``osl`` without a
    ``spread``; with one, each drawn uniformly from the integers of [floor(L (1 - spread)),
    ceil(L (1 + spread))] as `vllm bench serve --dataset-name random --random-range-ratio`
    draws them (vllm-project/vllm vllm/benchmarks/datasets.py, ``RandomDataset``: "Sample
    input/output token lengths per request from integer-uniform ranges around configured
    means", ``get_sampling_params``; its default ratio is 0.0), outputs at least 2 tokens
    (a TPOT needs two), from a fixed seed: the same run gives the same lengths."""
    if not spread:
        return [isl] * n, [osl] * n
    rng = random.Random(43)

    def draw(length: int, least: int) -> list[int]:
        lo = max(least, math.floor(length * (1 - spread)))
        hi = max(lo, math.ceil(length * (1 + spread)))
        return [rng.randint(lo, hi) for _ in range(n)]
    return draw(isl, 1), draw(osl, 2)


def client_for(name: str, rate: float = math.inf, requests: int | None = None,
               warmup: int | None = None, spread: float = 0.0) -> Client:
    """``--client NAME``'s run: ``closed`` or ``poisson`` with ``requests`` (default 1,000)
    of which the first ``warmup`` (default 0) are not measured, or a named client's closed
    loop with its defaults (``PROTOCOLS``): ``requests`` then replaces its measured count and
    ``warmup`` requests are sent before them, as those clients' own warm-up options do."""
    proto = PROTOCOLS.get(name)
    if proto is None:
        return Client(name, 1, rate, DEFAULT_REQUESTS if requests is None else requests,
                      DEFAULT_WARMUP if warmup is None else warmup, spread=spread)
    c = attrs.evolve(proto.client(1, requests), spread=spread)
    w = proto.warmup if warmup is None else warmup
    if c.per_client:
        return attrs.evolve(c, warmup=w)
    return attrs.evolve(c, requests=c.requests + w, warmup=w)


def problem(client: Client, disaggregate: bool = False, rate: bool = False) -> str | None:
    """Why ``client`` cannot run (with disaggregated replicas, or a closed loop beside a
    request rate ``rate``), or None."""
    if client.kind not in CLIENTS:
        return f"client '{client.kind}': one of {', '.join(CLIENTS)}"
    # a named client's warm-up comes on top of its measured count (``Client.resolved``)
    room = client.requests + (client.warmup if client.per_client else 0)
    if not 1 <= client.requests <= MAX_REQUESTS or not 0 <= client.warmup < room:
        return (f"{client.requests} requests with {client.warmup} warm-up: 1 to "
                f"{MAX_REQUESTS:,} requests, fewer warm-up than that")
    if not 0 <= client.spread < 1:
        return f"length spread {client.spread:g}: from 0 up to (not including) 1"
    if disaggregate:
        return ("a simulated client (--client) runs aggregated replicas; --disaggregate is "
                "costed without it")
    if client.kind == "closed" and rate:
        return "a closed-loop client and a request rate: give one load"
    return None


@attrs.frozen
class Stats:
    """Mean, median and p90 of one metric over the measured requests (seconds)."""

    mean: float
    median: float
    p90: float


def stats(values: list[float]) -> Stats:
    """The clients' statistics: mean, median (numpy's linear interpolation) and p90."""
    v = sorted(values)
    if not v:
        return Stats(0.0, 0.0, 0.0)

    def pct(q: float) -> float:
        x = q * (len(v) - 1)
        lo = int(x)
        hi = min(lo + 1, len(v) - 1)
        return v[lo] + (v[hi] - v[lo]) * (x - lo)
    return Stats(sum(v) / len(v), pct(0.5), pct(0.9))


def weighted(counts: dict[float, int]) -> Stats:
    """Mean, median and p90 of values with counts (the lower value where a quantile falls
    between two: the values are many, so interpolation would change nothing measurable)."""
    total = sum(counts.values())
    if not total:
        return Stats(0.0, 0.0, 0.0)
    items = sorted(counts.items())
    mean = sum(v * c for v, c in items) / total

    def pct(q: float) -> float:
        need, seen = q * (total - 1), 0
        for v, c in items:
            seen += c
            if seen > need:
                return v
        return items[-1][0]
    return Stats(mean, pct(0.5), pct(0.9))


@attrs.frozen
class Run:
    """One replica's simulated benchmark."""

    ttft: Stats
    tpot: Stats
    throughput: float        # output tokens/s of the replica over the measured window
    running: float           # mean decoding batch (time-weighted; prefill-only steps: 0)
    queued: int              # most requests waiting at once
    preempted: int           # preemptions (vLLM, SGLang) over the run
    measured: int            # requests in the statistics
    duration: float          # seconds of the measured window
    itl: Stats = Stats(0.0, 0.0, 0.0)   # inter-token latency over every decoded token
    # mean prompts whose prefill ended in the same step as a measured request's (1: it got
    # its first token alone; the closed loop's cohorts make it larger)
    cohort: float = 0.0


@attrs.frozen
class Step:
    """One record of a simulated run's trace (``simulate(trace=...)``): ``steps`` engine steps
    from ``t`` of ``dt`` seconds each (decode-only steps between two events come as one record),
    the ``running`` sequences they decode, the prompts whose prefill they ``admitted`` (taken
    from the queue) and ``finished`` (first token at the step's end), the ``prefill_tokens`` they
    run, the requests ``waiting`` in the engine's queue and ``pending`` in the frontend after
    the step's admissions, and the KV tokens the admitted sequences hold and reserve
    (``held``) of the ``capacity``: what a reader needs to see why a request waits."""

    t: float
    dt: float
    steps: int
    running: int
    admitted: int
    finished: int
    prefill_tokens: int
    waiting: int
    pending: int
    held: float
    capacity: int


def _arrivals(client: Client) -> list[float] | None:
    """Send times of an open loop's requests (seeded: deterministic), or None (closed)."""
    if client.kind == "closed":
        return None
    if math.isinf(client.rate):
        return [0.0] * client.requests
    rng = random.Random(43)
    t, out = 0.0, []
    for _ in range(client.requests):
        t += rng.expovariate(client.rate)
        out.append(t)
    return out


def simulate(eng, isl: int, osl: int, client: Client, sched: Scheduler,
             trace: Callable[[Step], None] | None = None) -> Run:
    """One replica (``eng``: an ``infer.Engine`` whose settings carry the scheduler's
    max_batch, max_tokens and overlap) under ``client``'s load (already per replica).
    ``trace``, when given, is called with each step's ``Step`` record in time order."""
    client = client.resolved()
    s = eng.s
    cap = eng.kv_capacity
    # a client that launches its own engine (trtllm-bench) brings that engine's limits
    if client.chunked is not None:
        sched = attrs.evolve(sched, chunked_prefill=client.chunked)
    if client.tuned:
        sched = attrs.evolve(sched, max_tokens=bench_tokens(cap, isl, osl))
    ctx = isl + osl / 2
    budget_max = sched.max_tokens
    n_full = max(1, budget_max // max(1, isl))
    chunks = max(1, math.ceil(isl * n_full / s.max_tokens))
    # a prefill token's cost in a step that also decodes (its step overhead is the decode's)
    slope = (eng.prefill(isl, n_full) - chunks * s.step_overhead) / (n_full * isl)
    # step times memoised on the engine: the search simulates one layout at many loads
    memo = eng.__dict__.setdefault("_sim_steps", {})

    def t_dec(b: int) -> float:
        key = ("d", b, ctx)
        if key not in memo:
            memo[key] = eng.decode_step(b, ctx)[0]
        return memo[key]

    def t_pre(p: int) -> float:
        # a step that only prefills p tokens: the engine's prefill of the prompts they make
        key = ("p", p, isl)
        if key not in memo:
            k = max(1, math.ceil(p / isl))
            memo[key] = eng.prefill(isl, k) * p / (k * isl)
        return memo[key]

    n = client.requests
    arrive = _arrivals(client)
    # each request's prompt and output tokens (all isl and osl unless the client spreads them)
    ins, outs = lengths(isl, osl, n, client.spread)
    send = [0.0] * n
    first = [math.nan] * n
    end = [0.0] * n
    cohort = [0] * n
    # a request: [rid, prompt tokens left to prefill, output tokens left, prompt tokens]
    waiting: deque[list] = deque()
    prefilling: list[list] = []           # admitted, prompt partly done
    running: dict[int, list] = {}         # decoding: rid -> [k at start, out at start, prompt]
    heap: list[tuple[int, int]] = []      # (decode count at which it ends, rid)
    k = 0                                 # decode steps so far
    t = 0.0
    next_id = 0
    ai = 0                                # next open-loop arrival
    done = 0
    sum_prompt = sum_kstart = sum_out = 0     # over running; prefilling apart below
    pre_prompt = pre_out = 0
    area = busy = 0.0
    most_queued = preempted = 0
    # inter-token gaps: (seconds, tokens that waited that long); a prefill step that decodes
    # nothing (SGLang) lengthens the running sequences' next gap
    gaps: dict[float, int] = {}
    pause = 0.0
    # an engine that overlaps its host work plans step n + 1 when it launches step n, so a
    # request it sees during step n joins step n + 2: what it sees by the start of the step
    # before (``planned``) is what the next step takes; an idle engine takes it at once
    lag = 1 if sched.overlap else 0
    planned = 0.0

    # the serving frontend (HTTP, tokenizer) takes each request in turn, request_overhead
    # each, before the engine sees it: a wave of simultaneous sends reaches the engine spread
    pending: deque[tuple[float, int]] = deque()
    front = 0.0

    def send_one(at: float) -> None:
        nonlocal next_id, front
        send[next_id] = at
        front = max(front, at) + s.request_overhead
        pending.append((front, next_id))
        next_id += 1

    if arrive is None:
        for _ in range(min(client.concurrency, n)):
            send_one(0.0)

    def finish(rid: int) -> None:
        nonlocal done, sum_prompt, sum_kstart, sum_out
        ks, out, prompt = running.pop(rid)
        sum_prompt -= prompt
        sum_kstart -= ks
        sum_out -= out
        end[rid] = t
        done += 1
        if arrive is None and next_id < n:
            send_one(t)

    while done < n:
        if arrive is not None:
            while ai < n and arrive[ai] <= t + s.request_overhead:
                send_one(arrive[ai])
                ai += 1
        while pending and pending[0][0] <= (planned if lag else t):
            rid = pending.popleft()[1]
            waiting.append([rid, ins[rid], outs[rid], ins[rid]])
        most_queued = max(most_queued, len(waiting))
        b = len(running)
        gen = b * k - sum_kstart
        used = sum_prompt + gen + pre_prompt
        held = used + sched.reserve * (sum_out - gen + pre_out)
        # prefills of this step: those under way, then admissions in arrival order
        admissible = bool(prefilling) or bool(waiting) and (
            b == 0 or b < sched.max_batch and
            held + waiting[0][3] + sched.reserve * waiting[0][2] <= cap)
        if sched.mixed:
            budget = budget_max - b
        else:
            budget = budget_max if admissible and sched.prefill_first else 0
        step_tokens = 0
        completed: list[list] = []
        taken = len(waiting)
        if budget > 0 and admissible:
            for q in list(prefilling):
                take = min(q[1], budget - step_tokens)
                if take <= 0:
                    break
                q[1] -= take
                step_tokens += take
                if q[1] == 0:
                    prefilling.remove(q)
                    completed.append(q)
            while waiting and step_tokens < budget and \
                    b + len(prefilling) + len(completed) < sched.max_batch:
                q = waiting[0]
                if held + q[3] + sched.reserve * q[2] > cap and (b or prefilling or completed):
                    break
                room = budget - step_tokens
                if not sched.chunked_prefill and q[1] > room and \
                        not (step_tokens == 0 and q[1] > budget_max):
                    break       # waits for a step with room for the whole prompt
                waiting.popleft()
                held += q[3] + sched.reserve * q[2]
                take = q[1] if not sched.chunked_prefill else min(q[1], room)
                q[1] -= take
                step_tokens += take
                pre_prompt += q[3]
                pre_out += q[2]
                if q[1] == 0:
                    completed.append(q)
                else:
                    prefilling.append(q)
        decode = b > 0 and (sched.mixed or step_tokens == 0)
        if step_tokens == 0 and not decode:
            nxt = [pending[0][0]] if pending else []
            if arrive is not None and ai < n:
                nxt.append(arrive[ai] + s.request_overhead)
            if nxt:
                t = max(t, min(nxt))            # idle until the next request arrives
                planned = t
                continue
            raise RuntimeError("serve_sim: no request can run")   # a caller's bug
        if step_tokens == 0:
            # decode steps only until the next event: a finish, an arrival, a full cache
            events = [heap[0][0] - k] if heap else []
            if pending:
                events.append(math.ceil((pending[0][0] - t) / t_dec(b)) + lag)
            if arrive is not None and ai < n:
                events.append(math.ceil((arrive[ai] + s.request_overhead - t) / t_dec(b))
                              + lag)
            if sched.reserve < 1:
                events.append(int((cap - used) // b))
            steps = max(1, min(events)) if events else 1
            if sched.reserve < 1 and used + b > cap and b > 1:
                # the cache is full: preempt the newest running request, which recomputes
                rid = next(reversed(running))
                ks, out, prompt = running.pop(rid)
                made = k - ks
                sum_prompt -= prompt
                sum_kstart -= ks
                sum_out -= out
                waiting.appendleft([rid, prompt + made, out - made, prompt + made])
                preempted += 1
                continue
            dt = t_dec(b)
            if trace is not None:
                trace(Step(t, dt, steps, b, 0, 0, 0, len(waiting), len(pending), held, cap))
            t += steps * dt
            planned = t - dt
            k += steps
            area += b * steps * dt
            busy += steps * dt
            gaps[dt + pause] = gaps.get(dt + pause, 0) + b
            if steps > 1:
                gaps[dt] = gaps.get(dt, 0) + b * (steps - 1)
            pause = 0.0
        else:
            dt = (t_dec(b) + step_tokens * slope) if decode else t_pre(step_tokens)
            if trace is not None:
                trace(Step(t, dt, 1, b if decode else 0, taken - len(waiting), len(completed),
                           step_tokens, len(waiting), len(pending), held, cap))
            planned = t
            t += dt
            area += (b if decode else 0) * dt
            busy += dt
            if decode:
                k += 1
                if b:
                    gaps[dt + pause] = gaps.get(dt + pause, 0) + b
                pause = 0.0
            elif b:
                pause += dt
            for q in completed:
                rid, _, out, prompt = q
                pre_prompt -= prompt
                pre_out -= out
                if math.isnan(first[rid]):
                    first[rid] = t
                    cohort[rid] = len(completed)
                out -= 1                        # the prefill step emits a token
                running[rid] = [k, out, prompt]
                sum_prompt += prompt
                sum_kstart += k
                sum_out += out
                heapq.heappush(heap, (k + out, rid))
        while heap and heap[0][0] <= k:
            fk, rid = heapq.heappop(heap)
            r = running.get(rid)
            if r is not None and r[0] + r[1] == fk:
                finish(rid)
    measured = range(min(client.warmup, n - 1), n)
    ttft = [first[i] - send[i] for i in measured]
    tpot = [(end[i] - first[i]) / (outs[i] - 1) for i in measured] if osl > 1 else [0.0]
    start = min(send[i] for i in measured)
    stop = max(end[i] for i in measured)
    window = max(stop - start, 1e-12)
    return Run(stats(ttft), stats(tpot), sum(outs[i] for i in measured) / window,
               area / busy if busy else 0.0, most_queued, preempted, len(measured), window,
               weighted(gaps), sum(cohort[i] for i in measured) / len(measured))


def settings_for(settings, sched: Scheduler):
    """``settings`` (an ``infer.Settings``) with the engine's batch, token budget and host-work
    overlap."""
    return attrs.evolve(settings, max_batch=sched.max_batch, max_tokens=sched.max_tokens,
                        overlap_scheduler=sched.overlap)


def simulated(row, eng, isl: int, osl: int, client: Client, sched: Scheduler):
    """``row`` (an ``infer.InferRow``) with TTFT (mean), TPOT (mean) and throughput from the
    simulated benchmark, and its statistics in ``parts``: ``ttft_median``, ``ttft_p90``,
    ``tpot_median``, ``tpot_p90``, ``sim_running`` (mean running batch per replica),
    ``sim_queued`` (most requests waiting at once), ``sim_preempted`` and ``sim_requests``
    (measured, per replica). A closed loop's clients are the row's concurrency."""
    replicas = row.config.replicas
    if client.kind == "closed":
        client = attrs.evolve(client, concurrency=row.config.concurrency)
    client = client.resolved()
    one = client.per_replica(replicas)
    run = simulate(eng, isl, osl, one, sched)
    # the busiest replica's rate, over the replicas that carry the load
    share = client.concurrency / one.concurrency if client.kind == "closed" else replicas
    keep = tuple((k, v) for k, v in row.parts if k not in ("ttft_median",))
    parts = keep + (("ttft_median", run.ttft.median), ("ttft_p90", run.ttft.p90),
                    ("tpot_median", run.tpot.median), ("tpot_p90", run.tpot.p90),
                    ("itl_median", run.itl.median), ("itl_p90", run.itl.p90),
                    ("sim_running", run.running), ("sim_queued", float(run.queued)),
                    ("sim_preempted", float(run.preempted)),
                    ("sim_requests", float(run.measured)))
    return attrs.evolve(row, ttft=run.ttft.mean, tpot=run.tpot.mean,
                        throughput=run.throughput * min(share, replicas), parts=parts)
