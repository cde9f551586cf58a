"""Closed-loop clients on a token-budget engine, simulated step by step: does a fixed-
concurrency benchmark with fixed lengths settle into synchronised waves?

    .venv/bin/python benchmarks/infer_wave_sim.py      # every NIM loaded-TTFT row (r159-r229)
    ... --max-tokens 2048 --max-batch 128              # other engine limits (candidates tested
                                                       # in docs/infer.md, "Closed-loop TTFT")

C clients start together; each sends its next request the moment the last one ends. Each
engine step decodes every running sequence (one token each) and admits waiting prefills in
arrival order up to ``max_tokens`` tokens less the decodes (TensorRT-LLM's max_num_tokens,
chunked when a prompt does not fit); the step takes topoc's decode step of the running batch
plus the admitted prefill tokens at topoc's batched per-token prefill cost. A request's first
token comes at the end of the step that finishes its prefill. Printed per row: the measured
TTFT, the first wave's mean TTFT (topoc's ``ttft_wave``) and the steady state's (requests after
the first two waves, over six): the hypothesis "NIM's sweeps run in synchronised waves" in its
mechanistic form, with the documented settings and nothing fitted (docs/infer.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import serving_rows as S  # noqa: E402
from topoc.compiler.analysis.infer import Engine, Settings, max_concurrency  # noqa: E402


def engine(c: S.Check, max_tokens: int | None = None) -> Engine:
    """topoc's engine for a check (``serving_rows.engine``), optionally with another token
    budget per step."""
    return S.engine(c, Settings(max_tokens=max_tokens) if max_tokens else None)


def simulate(c: S.Check, waves: int = 6, prefill_first: bool = False,
             max_tokens: int | None = None, max_batch: int | None = None) -> tuple[float, float]:
    """(first wave's mean TTFT, steady state's mean TTFT) for one check, seconds; the
    arguments as ``ttfts`` takes them."""
    ttft, overhead, clients = ttfts(c, waves, prefill_first, max_tokens, max_batch)
    first, steady = ttft[:clients], ttft[2 * clients:]
    return overhead + sum(first) / len(first), overhead + sum(steady) / len(steady)


def first_requests(c: S.Check, n: int) -> float:
    """Mean TTFT of the first ``n`` requests the clients send (seconds): what a benchmark that
    measures n requests from the start without a warm-up reports (genai-perf's default is
    max(10, 2 x concurrency), benchmarks/infer_frontend.py)."""
    ttft, overhead, _ = ttfts(c, waves=max(2, -(-n // c.concurrency)))
    return overhead + sum(ttft[:n]) / len(ttft[:n])


def ttfts(c: S.Check, waves: int = 6, prefill_first: bool = False,
          max_tokens: int | None = None, max_batch: int | None = None
          ) -> tuple[list[float], float, int]:
    """Every request's TTFT in the order of their first tokens (before ``request_overhead``),
    the overhead, and the clients. With
    ``prefill_first`` a step that admits prefills decodes nothing (vLLM's V0 scheduler without
    chunked prefill: waiting prefills go first, the running sequences pause). ``max_tokens``
    and ``max_batch`` replace the engine's token budget per step and its cap on running
    sequences (requests past the cap wait until one ends); the row's engine sets whether host
    work overlaps the GPU (``serving_rows.overlap``)."""
    eng = engine(c, max_tokens)
    s = eng.s
    clients = min(c.concurrency, max_concurrency(eng.kv_capacity, c.isl, c.osl, s))
    slots = max_batch or clients
    n = max(1, min(clients, s.max_tokens // c.isl))
    per_token = eng.prefill(c.isl, n) / (n * c.isl)
    step_of: dict[int, float] = {}

    def decode(b: int) -> float:
        if b not in step_of:
            step_of[b] = eng.decode_step(b, c.isl + c.osl / 2)[0] if b else s.step_overhead
        return step_of[b]

    now = 0.0
    waiting = [[0.0, c.isl] for _ in range(clients)]     # arrival, prompt tokens left
    running: list[int] = []                              # tokens left to decode
    ttft: list[float] = []
    while len(ttft) <= waves * clients:
        budget = s.max_tokens - (0 if prefill_first else len(running))
        tokens, prefilled = 0, []
        for q in waiting:
            if q[0] > now or budget <= 0 or len(running) + len(prefilled) >= slots:
                break
            take = min(q[1], budget)
            q[1] -= take
            budget -= take
            tokens += take
            if q[1] == 0:
                prefilled.append(q)
        paused = prefill_first and tokens > 0
        now += (s.step_overhead if paused else decode(len(running))) + tokens * per_token
        left = running if paused else [r - 1 for r in running]
        ended = sum(1 for r in left if r <= 0)
        running = [r for r in left if r > 0]
        for q in prefilled:
            waiting.remove(q)
            ttft.append(now - q[0])
            running.append(c.osl - 1)
        waiting += [[now, c.isl] for _ in range(ended)]
        if not running and not tokens and waiting and waiting[0][0] > now:
            now = waiting[0][0]
    return ttft, s.request_overhead, clients


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-tokens", type=int, help="token budget per step (default 8,192)")
    ap.add_argument("--max-batch", type=int, help="running sequences at most (default: none)")
    args = ap.parse_args()
    lim = dict(max_tokens=args.max_tokens, max_batch=args.max_batch)
    print("row   model        isl/osl     conc  measured  first-wave  steady  steady/measured"
          "   prefill-first steady  /measured")
    errs: dict[str, list[float]] = {}
    for c in S.checks():
        if S.kind(c) != "ttft loaded" or int(c.row[1:]) < 159:
            continue
        first, steady = simulate(c, **lim)
        _, pf = simulate(c, prefill_first=True, **lim)
        errs.setdefault(c.model, []).append(steady / c.measured - 1)
        print(f"{c.row}  {c.model:11s}  {c.isl:>5}/{c.osl:<5}  {c.concurrency:>4}  "
              f"{c.measured:8.3f}  {first:10.3f}  {steady:6.3f}  {steady / c.measured - 1:+.0%}"
              f"   {pf:20.3f}  {pf / c.measured - 1:+.0%}")
    for model, e in errs.items():
        e = sorted(e)
        print(f"steady state, {model:10s} rows {len(e):2d}  median |error| "
              f"{S.median_abs(e):.0%}  median error {e[len(e) // 2]:+.0%}")


if __name__ == "__main__":
    main()
