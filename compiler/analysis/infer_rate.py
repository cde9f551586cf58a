"""Open-loop arrivals for ``topoc infer --request-rate R``: requests that arrive at a rate
(Poisson, independent of the engine) or all at once (``R = inf``, a burst of ``--requests N``),
as `vllm bench serve --request-rate` and `sglang.bench_serving` send them.

The engine is ``infer.Engine`` (the same step costs as the closed-loop rows; this module takes
it as an argument and imports nothing of ``infer``, whose ``evaluate_rate`` turns the result
into a row); what changes is who sets the load. A fixed concurrency fixes the requests in flight; a rate fixes the arrivals,
and the requests in flight follow from Little's law: ``B = R x cycle(B)``, where
``cycle(B) = osl x decode_step(B) + B x prefill_share`` is a request's time in the engine at B
in flight (the closed-loop rows' cycle), solved for B by bisection (the request rate B / cycle(B)
a concurrency sustains grows with B). The largest rate the replica sustains is that at the
concurrency its KV cache holds (``capacity``); a rate at or above it has no steady state.

Stable (rate below capacity): an analytic queue, a mean and a median.

- A request that arrives while sequences decode (probability 1 - e^-B: B in flight are a
  Poisson number, M/G/infinity) waits for the step in progress: half of it, or half of the
  ``scheduler_steps`` steps an engine schedules at once (vLLM 0.6's ``--num-scheduler-steps``),
  then its prefill runs in a step that also decodes the others (one decode step more).
- Prefills queue behind each other: M/D/1 at the prefill load rate x prefill_share.
- TTFT = request_overhead + prefill(isl) + (1 - e^-B) x (steps / 2 + 1) x decode_step + the
  queue's wait; at one request in flight the idle TTFT, and at a concurrency's B the closed-loop
  rows' ``ttft`` formula (which is this queue).
- TPOT = decode_step(B) + (B - 1) x prefill_share / osl (the others' prefills interleave).
- Throughput = the offered load, rate x osl.
- The median: the queue's wait is 0 with probability 1 - load and otherwise about exponential
  with mean wait / load (M/G/1's tail), so its median is (wait / load) ln(2 load) above load
  1/2 and 0 below; the rest is deterministic at the means.

Unstable, or a burst: a deterministic fluid recursion over the run's requests (no random
numbers: arrivals at j / R, per replica). Request j's prefill ends at
``p_j = max(t_j, p_(j-1), e_(j-c)) + sigma``: after it arrives, after the prefill before it,
and once the request whose KV slot it takes (c = what the KV cache holds) has finished,
``e_i = p_i + (osl - 1) x TPOT(c)``; ``sigma`` is one request's share of a step that prefills
max_tokens // isl prompts and decodes the full batch. The prompts of one such step share its
end (half a step more on average, in a burst): TTFT = request_overhead + p_j - t_j + that half
step. Under a rate a request joins a running batch one by one, so its TTFT is the steady one's
(overhead, its prefill, the step in progress and the step it rides, at the full batch) plus the
run's queue p_j - t_j - sigma. Mean and median over the run; they grow with the run's length,
which the row says (``stable: false``).

Variable-length datasets (ShareGPT) are taken at their mean input and output lengths.
"""

from __future__ import annotations

import math

import attrs

#: Requests of a run when ``--requests`` is not given: `vllm bench serve`'s and
#: `sglang.bench_serving`'s default ``--num-prompts``.
DEFAULT_REQUESTS = 1000

#: The most requests of a run: the fluid recursion keeps one prefill end per request of a
#: replica and runs once per layout, so a run is linear in time and memory: 100,000 (a
#: hundred benchmark runs) takes seconds on 576 GPUs, a million a minute there, a billion
#: gigabytes on one node.
MAX_REQUESTS = 10**5


@attrs.frozen
class Arrivals:
    """Requests per second over all replicas (``math.inf``: all at once) and the run's
    requests (a burst's size; how long an unstable rate lasts)."""

    rate: float
    requests: int = DEFAULT_REQUESTS

    @property
    def burst(self) -> bool:
        """All requests at once."""
        return math.isinf(self.rate)


@attrs.frozen
class OpenLoop:
    """One replica under open-loop arrivals (seconds, requests, tokens/s per replica)."""

    in_flight: float          # requests in flight (Little's law; the KV limit when unstable)
    ttft: float               # mean
    ttft_median: float
    tpot: float
    throughput: float         # output tokens/s: the offered load, or the capacity's
    capacity: float           # requests/s the replica sustains at most
    utilization: float        # offered / capacity (inf for a burst)
    stable: bool
    decode_step: float
    prefill_load: float       # share of the replica's time spent prefilling


def _cycle(eng, isl: int, osl: int, b: float) -> tuple[float, float, float]:
    """(a request's seconds in the engine at b in flight, decode step, prefill share)."""
    t, _ = eng.decode_step(max(1.0, b), isl + osl / 2)
    share = eng.prefill_share(isl, max(1, round(b)))
    return osl * t + b * share, t, share


def capacity(eng, isl: int, osl: int, cap: int) -> float:
    """Requests/s one replica sustains: the rate at the concurrency its KV cache holds."""
    cyc, _, _ = _cycle(eng, isl, osl, cap)
    return cap / cyc


def in_flight(rate: float, cycle, cap: int) -> float:
    """Requests in flight at ``rate`` requests/s (one replica, below capacity): the B with
    B / cycle(B) = rate, by bisection on a log scale (deterministic, 48 halvings)."""
    lo, hi = 1e-6, float(cap)
    for _ in range(48):
        mid = math.sqrt(lo * hi)
        if mid / cycle(mid) < rate:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def _median_wait(wait: float, load: float) -> float:
    """Median of an M/G/1 wait with mean ``wait`` at utilisation ``load``: zero with
    probability 1 - load, else about exponential with mean wait / load."""
    if load <= 0.5 or wait <= 0:
        return 0.0
    return wait / load * math.log(2 * load)


def stable(eng, isl: int, osl: int, rate: float, cap: int) -> OpenLoop:
    """The steady state of one replica at ``rate`` requests/s below its capacity."""
    s = eng.s
    b = in_flight(rate, lambda x: _cycle(eng, isl, osl, x)[0], cap)
    _, t_dec, share = _cycle(eng, isl, osl, b)
    load = min(0.99, rate * share)
    wait = load * share / (2 * (1 - load))
    busy = 1 - math.exp(-b)
    fixed = s.request_overhead + eng.prefill(isl) + busy * t_dec
    step_wait = busy * s.scheduler_steps * t_dec / 2
    tpot = t_dec + max(0.0, b - 1) * share / osl
    cap_rate = capacity(eng, isl, osl, cap)
    return OpenLoop(b, fixed + step_wait + wait, fixed + step_wait + _median_wait(wait, load),
                    tpot, rate * osl, cap_rate, rate / cap_rate, True, t_dec, load)


def finite_run(eng, isl: int, osl: int, arrivals: Arrivals, replicas: int,
               cap: int) -> OpenLoop:
    """A run of ``arrivals.requests`` over ``replicas`` that has no steady state (a rate at
    or above capacity, or a burst): the fluid recursion of the module docstring."""
    s = eng.s
    c = max(1, cap)
    n_req = max(1, math.ceil(arrivals.requests / replicas))
    rate = arrivals.rate / replicas
    cyc, t_full, share = _cycle(eng, isl, osl, min(c, n_req))
    group = max(1, min(c, s.max_tokens // max(1, isl)))
    sigma = (eng.prefill(isl, group) + t_full) / group
    if n_req > c:
        # requests take freed KV slots all run long: the others' prefills interleave as in the
        # steady state at the full batch
        tpot = t_full + (c - 1) * share / osl
    else:
        # every request admitted by the first wave: a token waits on average for half of the
        # wave's prefills that follow its own, then decode steps alone
        tpot = t_full + n_req * share / (2 * osl)
    stay = (osl - 1) * tpot
    starts = [0.0] * n_req           # prefill ends
    ttfts = [0.0] * n_req
    last = 0.0
    for j in range(n_req):
        arrive = 0.0 if arrivals.burst else j / rate
        slot = starts[j - c] + stay if j >= c else 0.0
        last = max(arrive, last, slot) + sigma
        starts[j] = last
        ttfts[j] = last - arrive
    if arrivals.burst:
        # the prompts of one step share its end: half a step more on average
        base = s.request_overhead + (group - 1) * sigma / 2
    else:
        # arrivals one by one into a running batch, as in the steady state (its step in
        # progress and the step its prefill rides), then the run's queue in front of them
        base = s.request_overhead + eng.prefill(isl) + (s.scheduler_steps / 2 + 1) * t_full \
            - sigma
    mean = base + sum(ttfts) / n_req
    ordered = sorted(ttfts)
    mid = (ordered[(n_req - 1) // 2] + ordered[n_req // 2]) / 2
    cap_rate = capacity(eng, isl, osl, c)
    offered = math.inf if arrivals.burst else rate / cap_rate
    return OpenLoop(float(min(c, n_req)), mean, base + mid, tpot,
                    cap_rate * osl, cap_rate, offered, False, t_full, min(1.0, share * cap_rate))


def open_loop(eng, isl: int, osl: int, arrivals: Arrivals, replicas: int, cap: int) -> OpenLoop:
    """One replica of ``replicas`` under ``arrivals`` (the rate is over all replicas)."""
    rate = arrivals.rate / replicas
    if not arrivals.burst and rate < capacity(eng, isl, osl, max(1, cap)):
        return stable(eng, isl, osl, rate, max(1, cap))
    return finite_run(eng, isl, osl, arrivals, replicas, cap)


def disaggregated(eng, isl: int, osl: int, arrivals: Arrivals, prefill: int, decode: int,
                  cap: int, move: float) -> OpenLoop:
    """Separate prefill and decode replicas under ``arrivals``: the prefill replicas are an
    M/D/1 queue of prompts (batched up to max_tokens per step), the decode replicas hold B in
    flight with B = rate x osl x decode_step(B); TTFT adds the KV cache's move. Without a
    steady state the run's requests queue at the smaller of the two pools' rates (a fluid
    queue: request j waits j x (1 / sustained - 1 / offered))."""
    s = eng.s
    share = eng.prefill_share(isl, max(1, s.max_tokens // max(1, isl)))
    ctx = isl + osl / 2

    def cycle(b: float) -> float:
        return osl * eng.decode_step(max(1.0, b), ctx)[0]

    pools = min(prefill / share, decode * cap / cycle(cap))     # requests/s sustained
    rate = arrivals.rate
    base = s.request_overhead + eng.prefill(isl) + move
    if not arrivals.burst and rate < pools:
        b = in_flight(rate / decode, cycle, cap)
        t_dec = eng.decode_step(max(1.0, b), ctx)[0]
        load = min(0.99, rate / prefill * share)
        wait = load * share / (2 * (1 - load))
        return OpenLoop(b, base + wait, base + _median_wait(wait, load), t_dec, rate * osl / decode,
                        pools / decode, rate / pools, True, t_dec, load)
    t_dec = eng.decode_step(float(cap), ctx)[0]
    n = max(1, arrivals.requests)
    late = 1 / pools - (0.0 if arrivals.burst else 1 / rate)
    queue = (n - 1) / 2 * max(0.0, late)
    return OpenLoop(float(cap), base + queue, base + queue, t_dec, pools * osl / decode,
                    pools / decode, math.inf if arrivals.burst else rate / pools, False, t_dec,
                    1.0)

