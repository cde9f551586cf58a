"""Validate `topoc infer` against published serving measurements (tests/serving_runs.csv).

    .venv/bin/python benchmarks/infer_validation.py            # every row's error, medians
    .venv/bin/python benchmarks/infer_validation.py --fit      # refit the Settings on the
                                                               # fit rows (a third), then report
    .venv/bin/python benchmarks/infer_validation.py --markdown # the table in docs/infer.md
    ... --markdown --before OLD.txt    # with a column of the errors a previous plain run printed

Fit rows are every third usable row in file order (tests/serving_rows.py); the fit touches
only them, and the medians are reported for fit and validation rows apart.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import serving_openloop_rows as O  # noqa: E402
from tests import serving_rows as S  # noqa: E402
from topoc.compiler.analysis.infer import Settings  # noqa: E402

#: What the fit may move, and the multipliers it tries each round.
FREE = ("gemm_efficiency", "prefill_efficiency", "hbm_efficiency", "layer_overhead",
        "step_overhead", "fp4_efficiency", "expert_tile", "request_overhead", "gemm_width",
        "collective_overhead", "sequence_overhead")
LIMITS = {"gemm_efficiency": (0.05, 1.0), "prefill_efficiency": (0.05, 1.0),
          "hbm_efficiency": (0.3, 0.95), "fp4_efficiency": (0.2, 1.0),
          "expert_tile": (1.0, 4096.0), "gemm_width": (0.0, 20000.0),
          "layer_overhead": (0.0, 1e-3), "step_overhead": (0.0, 0.05),
          "request_overhead": (0.0, 0.2), "collective_overhead": (0.0, 1e-4),
          "sequence_overhead": (0.0, 1e-4)}
STEPS = (0.7, 0.85, 0.93, 1.07, 1.18, 1.4)


def loss(settings: Settings, checks) -> float:
    """Mean over metrics of the mean |log(predicted / measured)| of the fit checks."""
    per: dict[str, list[float]] = {}
    for c in checks:
        try:
            p = S.predict(c, settings)
        except Exception:       # noqa: BLE001 - a setting the layout cannot run with
            return math.inf
        per.setdefault(S.kind(c), []).append(abs(math.log(max(p, 1e-12) / c.measured)))
    return sum(sum(v) / len(v) for v in per.values()) / len(per)


def fit(start: Settings, rounds: int = 6) -> Settings:
    """Coordinate search on the fit rows."""
    checks = [c for c in S.checks() if c.fit]
    best, score = start, loss(start, checks)
    for _ in range(rounds):
        improved = False
        for name in FREE:
            lo, hi = LIMITS[name]
            for m in STEPS:
                v = getattr(best, name) * m
                if not lo <= v <= hi:
                    continue
                trial = attrs.evolve(best, **{name: v})
                sc = loss(trial, checks)
                if sc < score - 1e-9:
                    best, score, improved = trial, sc, True
        if not improved:
            break
    return best


def earlier(path: str | None) -> dict[tuple[str, str], str]:
    """(row, metric) -> error of a previous plain run's output (its per-check lines)."""
    out: dict[tuple[str, str], str] = {}
    if path:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            f = line.split()
            if len(f) > 3 and f[0].startswith("r") and f[2] in ("throughput", "tpot", "ttft"):
                out[(f[0], f[2])] = f[-1]
    return out


def report(settings: Settings, markdown: bool = False, before: str | None = None) -> dict:
    """Print every check's error; return the medians per (metric, fit)."""
    old = earlier(before)
    rows = []
    for c in S.checks():
        p = S.predict(c, settings)
        rows.append((c, p, p / c.measured - 1))
    if markdown:
        print("| row | set | metric | GPU | model | prec | tp | ep | isl/osl | conc | measured "
              "| topoc | error |" + (" before |" if old else ""))
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if old else ""))
    for c, p, e in rows:
        unit = "tok/s" if c.metric == "throughput" else "s"
        cells = [c.row, "fit" if c.fit else "val", c.metric, c.gpu, c.model, c.precision,
                 str(c.tp) + ("+adp" if c.attention_dp else ""), str(c.ep),
                 f"{c.isl}/{c.osl}", str(c.concurrency), f"{c.measured:.4g} {unit}",
                 f"{p:.4g}", f"{e:+.0%}"] + \
            ([old.get((c.row, c.metric), "new")] if old and markdown else [])
        print(("| " + " | ".join(cells) + " |") if markdown else "  ".join(cells))
    out: dict = {}
    for metric in ("throughput", "tpot", "ttft"):
        for is_fit in (True, False):
            errs = [e for c, _, e in rows if c.metric == metric and c.fit == is_fit]
            out[(metric, is_fit)] = (S.median_abs(errs), len(errs))
    print()
    for (metric, is_fit), (m, n) in out.items():
        print(f"{metric:10s} {'fit' if is_fit else 'validation':10s} rows {n:3d}  "
              f"median |error| {m:.1%}")
    for kind in ("ttft idle", "ttft loaded"):
        for is_fit in (True, False):
            errs = [e for c, _, e in rows if S.kind(c) == kind and c.fit == is_fit]
            print(f"{kind:21s} {'fit' if is_fit else 'validation':10s} rows {len(errs):3d}  "
                  f"median |error| {S.median_abs(errs):.1%}")
    for kind in ("dense", "moe"):
        for is_fit in (True, False):
            errs = [e for c, _, e in rows if c.metric == "throughput" and c.fit == is_fit
                    and bool(S.arch(c.model).experts) == (kind == "moe")]
            print(f"throughput {kind:5s} {'fit' if is_fit else 'validation':10s} rows "
                  f"{len(errs):3d}  median |error| {S.median_abs(errs):.1%}")
    for gpu in ("H100", "H200", "B200", "GB200"):
        errs = [e for c, _, e in rows if c.gpu == gpu and not c.fit]
        print(f"validation on {gpu:5s}: {len(errs):3d} checks, median |error| "
              f"{S.median_abs(errs):.1%}")
    waves(settings, markdown)
    closed_loop(settings, markdown)
    skipped = sorted(S.SKIP)
    print(f"not modelled: {len(skipped)} rows ({', '.join(skipped)})")
    open_loop(settings, markdown, rows)
    return out


#: The open-loop classes (tests/serving_openloop_rows.py), in print order.
CLASSES = ("poisson stable", "poisson over capacity", "burst", "a100")


def open_loop(settings: Settings, markdown: bool = False, closed=None) -> dict:
    """The runs with a documented arrival protocol (tests/serving_openloop.csv) against
    ``topoc infer --request-rate``: every check's error, medians per class for fit and
    validation rows apart, the known-protocol Hopper rows together, and with them the whole
    loaded-TTFT set (the closed-loop loaded checks above, NIM's among them, unchanged)."""
    errs = O.errors(settings)
    print()
    print("open-loop runs (tests/serving_openloop.csv, topoc infer --request-rate): row set "
          "class metric GPU model tp isl/osl rate requests stat measured topoc error")
    if markdown:
        print("\n| row | set | class | metric | GPU | model | prec | tp | isl/osl | rate | "
              "requests | stat | measured s | topoc | error |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for run, k, metric, p, e in errs:
        measured = run.ttft if metric == "ttft" else run.tpot
        stat = run.ttft_stat if metric == "ttft" else run.tpot_stat
        rate = "inf" if run.arrivals.burst else f"{run.arrivals.rate:g}"
        cells = [run.row, "fit" if run.fit else "val", k.replace(" ", "-"), metric, run.gpu,
                 run.model, run.precision, str(run.tp) + ("+adp" if run.attention_dp else ""),
                 f"{run.isl}/{run.osl}", rate, str(run.arrivals.requests), stat,
                 f"{measured:.4g}", f"{p:.4g}", f"{e:+.0%}"]
        print(("| " + " | ".join(cells) + " |") if markdown else "  ".join(cells))
    out: dict = {}
    print()
    for metric in ("ttft", "tpot"):
        for k in CLASSES:
            for is_fit in (True, False):
                sub = [e for run, c, m, _, e in errs if c == k and m == metric
                       and run.fit == is_fit]
                out[(k, metric, is_fit)] = (S.median_abs(sub), len(sub))
                print(f"open-loop {metric} {k:21s} {'fit' if is_fit else 'validation':10s} "
                      f"rows {len(sub):3d}  median |error| {S.median_abs(sub):.1%}")
        for is_fit in (True, False):
            sub = [e for run, c, m, _, e in errs if c != "a100" and m == metric
                   and run.fit == is_fit]
            out[("hopper", metric, is_fit)] = (S.median_abs(sub), len(sub))
            label = "fit" if is_fit else "validation"
            print(f"open-loop {metric} {'all H100/H200':21s} {label:10s} "
                  f"rows {len(sub):3d}  median |error| {S.median_abs(sub):.1%}")
    if closed is not None:
        loaded = [(c.fit, e) for c, _, e in closed if S.kind(c) == "ttft loaded"]
        known = [(run.fit, e) for run, c, m, _, e in errs if c != "a100" and m == "ttft"]
        for is_fit in (True, False):
            both = [e for f, e in loaded + known if f == is_fit]
            out[("loaded ttft, all", is_fit)] = (S.median_abs(both), len(both))
            print(f"loaded ttft, closed-loop checks and open-loop runs "
                  f"{'fit' if is_fit else 'validation':10s} rows {len(both):3d}  "
                  f"median |error| {S.median_abs(both):.1%}")
    return out


def waves(settings: Settings, markdown: bool = False) -> dict:
    """The synchronised-wave hypothesis on the loaded TTFT checks: the wave's TTFT (every
    request of the concurrency arriving at once, ``ttft_wave``) as a predictor, and where each
    measurement lies between topoc's steady-state TTFT (the lower figure) and the wave's."""
    rows = [(c, S.predict(c, settings), S.wave_ttft(c, settings)) for c in S.checks()
            if S.kind(c) == "ttft loaded"]
    print()
    if markdown:
        print("| row | set | model | tp | isl/osl | conc | measured s | steady | wave "
              "| position |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    else:
        print("synchronised waves (loaded TTFT): row set model tp isl/osl conc measured "
              "steady wave position")
    for c, lo, hi in rows:
        pos = (c.measured - lo) / (hi - lo) if hi > lo else math.nan
        cells = [c.row, "fit" if c.fit else "val", c.model, str(c.tp), f"{c.isl}/{c.osl}",
                 str(c.concurrency), f"{c.measured:.4g}", f"{lo:.4g}", f"{hi:.4g}",
                 f"{pos:.2f}"]
        print(("| " + " | ".join(cells) + " |") if markdown else "  ".join(cells))
    out = {}
    for is_fit in (True, False):
        sub = [(c, lo, hi) for c, lo, hi in rows if c.fit == is_fit]
        err = [hi / c.measured - 1 for c, _, hi in sub]
        within = sum(lo <= c.measured <= hi * 1.1 for c, lo, hi in sub)
        out[is_fit] = (S.median_abs(err), within, len(sub))
        print(f"wave as the TTFT {'fit' if is_fit else 'validation':10s} rows {len(sub):3d}  "
              f"median |error| {S.median_abs(err):.1%}; measured between steady and "
              f"1.1 x wave: {within}/{len(sub)}")
    return out


def fit_closed_loop(settings: Settings) -> Settings:
    """``closed_loop_share`` on the fit rows only: the exponent (0..1, steps of 0.01) that
    minimises the mean |log error| of ``ttft_closed_loop`` over the loaded-TTFT fit checks."""
    checks = [c for c in S.checks() if c.fit and S.kind(c) == "ttft loaded"]
    best, score = settings, math.inf
    for i in range(101):
        trial = attrs.evolve(settings, closed_loop_share=i / 100)
        sc = sum(abs(math.log(S.closed_loop_ttft(c, trial) / c.measured))
                 for c in checks) / len(checks)
        if sc < score - 1e-12:
            best, score = trial, sc
    return best


def closed_loop(settings: Settings, markdown: bool = False) -> dict:
    """The empirical closed-loop TTFT (``ttft_closed_loop``) on every loaded TTFT check, and
    TTFT medians with it in place of ``ttft`` for the loaded checks (idle checks unchanged)."""
    rows = [(c, S.closed_loop_ttft(c, settings)) for c in S.checks() if c.metric == "ttft"]
    steady = {c.row: S.predict(c, settings) for c, _ in rows}
    print()
    print(f"closed-loop TTFT (ttft_closed_loop, closed_loop_share = "
          f"{settings.closed_loop_share:.2f}): row set model tp isl/osl conc measured topoc "
          "error, and the error of ttft (independent arrivals) beside it")
    if markdown:
        print("\n| row | set | model | tp | isl/osl | conc | measured s | closed loop | error "
              "| ttft error |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for c, p in rows:
        if S.kind(c) != "ttft loaded":
            continue
        cells = [c.row, "fit" if c.fit else "val", c.model, str(c.tp), f"{c.isl}/{c.osl}",
                 str(c.concurrency), f"{c.measured:.4g}", f"{p:.4g}", f"{p / c.measured - 1:+.0%}",
                 f"{steady[c.row] / c.measured - 1:+.0%}"]
        print(("| " + " | ".join(cells) + " |") if markdown else "  ".join(cells))
    out = {}
    for label, pick in (("loaded", lambda c: S.kind(c) == "ttft loaded"),
                        ("idle + loaded", lambda c: True),
                        ("loaded, llama3_70b tp2", lambda c: S.kind(c) == "ttft loaded"
                         and c.model == "llama3_70b"),
                        ("loaded, llama3_8b tp1", lambda c: S.kind(c) == "ttft loaded"
                         and c.model == "llama3_8b"),
                        ("loaded, qwen3_8b", lambda c: S.kind(c) == "ttft loaded"
                         and c.model == "qwen3_8b")):
        for is_fit in (True, False):
            errs = [p / c.measured - 1 for c, p in rows if pick(c) and c.fit == is_fit]
            out[(label, is_fit)] = (S.median_abs(errs), len(errs))
            print(f"closed-loop ttft {label:22s} {'fit' if is_fit else 'validation':10s} "
                  f"rows {len(errs):3d}  median |error| {S.median_abs(errs):.1%}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="refit the settings on the fit rows")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--before", metavar="OLD.txt", help="a previous plain run's output")
    ap.add_argument("--fit-closed-loop", action="store_true",
                    help="refit closed_loop_share on the fit rows' loaded TTFT only")
    args = ap.parse_args()
    settings = Settings()
    if args.fit:
        t = time.perf_counter()
        settings = fit(settings)
        print(f"fitted in {time.perf_counter() - t:.1f} s:")
        for name in FREE:
            print(f"  {name} = {getattr(settings, name):.4g}")
    if args.fit_closed_loop:
        settings = fit_closed_loop(settings)
        print(f"closed_loop_share = {settings.closed_loop_share:.2f} (fit rows only)")
    report(settings, args.markdown, args.before)


if __name__ == "__main__":
    main()
