"""Loaded TTFT against concurrency, table by table: each measured closed-loop sweep of
tests/serving_runs.csv beside what topoc predicts for it in four regimes of the simulated
closed loop, so that one can see which regime the measurement is in.

    .venv/bin/python benchmarks/infer_curves.py             # the fitted defaults (in-sample)
    .venv/bin/python benchmarks/infer_curves.py --held-out  # each source's rows with the
                                     # settings its leave-one-source-out fold fits without it
                                     # from the neutral start (what --loso --start neutral uses)
    ... --model llama3_70b --max-num-tokens 1024 --chunked-prefill on   # one model's tables
                                     # with an engine build's token budget and chunking

Columns, for every loaded TTFT check (one request in flight is the table's idle row):
- ``wait``: the measured TTFT beyond the table's idle one, in the row's own measured TPOTs
  (decode steps a request waited);
- ``analytic``: ``topoc infer``'s row (independent arrivals in the steady state);
- ``client``: the simulated loop as the row's stated client runs it by its defaults
  (``serve_sim.PROTOCOLS``: AIPerf's max(10, 2C) requests, all C clients starting together,
  no warm-up), the headline of ``infer_validation.py --loso``;
- ``steady``: the same engine and lengths in the steady state (3C requests of warm-up, then
  10C measured): every length the same, so the cohorts the first wave formed persist;
- ``spread``: that steady state with each request's lengths drawn within 5 % of the table's
  (``serve_sim.Client.spread`` 0.05, `vllm bench serve --random-range-ratio 0.05`): the cohorts
  break up;
- ``bound``: the least mean the row's client's default run can measure, first wave counted
  (``infer_validation.first_wave_bound``: prefill at the dense peak, nothing fitted);
- ``cohort``: prompts whose first token came in the same step as a measured request's, in the
  ``client``, ``steady`` and ``spread`` runs.
Then the median |error| of each column by table and over every loaded check.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import infer_validation as V  # noqa: E402
from tests import serving_rows as S  # noqa: E402
from topoc.compiler.analysis import serve_sim as M  # noqa: E402
from topoc.compiler.analysis.infer import Settings  # noqa: E402

#: The steady state's warm-up and measured requests, in multiples of the concurrency, and the
#: length spread that breaks the cohorts up.
WARMUP_WAVES, MEASURED_WAVES, SPREAD = 3, 10, 0.05
COLUMNS = ("analytic", "client", "steady", "spread")


def fold_settings(start: Settings) -> dict[str, Settings]:
    """Each source's settings as ``infer_validation.loso(start="neutral")`` fits them without
    its rows."""
    src = V.source_of()
    every = S.checks()
    neutral = attrs.evolve(start, **V.NEUTRAL)
    out = {}
    for name in dict.fromkeys(n for _, n in V.SOURCES):
        others = [c for c in every if c.fit and src[c.row] != name]
        out[name] = V.fit_closed_loop_on(V.fit_on(neutral, others, 12), others)
    return out


#: ``--max-num-tokens`` and ``--chunked-prefill``: the engine build's limits in place of the
#: row's engine's defaults (None: the defaults, as the validation runs every row).
BUILD: dict = {}


def run(c: S.Check, settings: Settings, client: M.Client) -> M.Run:
    """One replica's simulated run of the check's row under ``client`` at its concurrency,
    on its engine's scheduler with ``BUILD``'s limits."""
    sched = attrs.evolve(V.scheduler_of(c), **BUILD)
    eng = S.engine(c, attrs.evolve(settings, max_tokens=sched.max_tokens))
    row = S.predicted_row(c, settings)
    one = attrs.evolve(client, concurrency=c.concurrency).resolved()
    return M.simulate(eng, c.isl, c.osl, one.per_replica(row.config.replicas), sched)


def figures(c: S.Check, settings: Settings) -> dict:
    """The check's predictions in the four regimes, its bound and the simulated cohorts."""
    cl = V.protocol_client(c)
    steady = M.Client("closed", c.concurrency,
                      requests=(WARMUP_WAVES + MEASURED_WAVES) * c.concurrency,
                      warmup=WARMUP_WAVES * c.concurrency)
    client, still = run(c, settings, cl), run(c, settings, steady)
    mixed = run(c, settings, attrs.evolve(steady, spread=SPREAD))
    built = attrs.evolve(settings, max_tokens=BUILD.get("max_tokens", settings.max_tokens))
    return {"analytic": S.predict(c, built), "client": client.ttft.mean,
            "steady": still.ttft.mean, "spread": mixed.ttft.mean,
            "bound": V.first_wave_bound(c, settings),
            "cohorts": (client.cohort, still.cohort, mixed.cohort)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--held-out", action="store_true",
                    help="each source's rows with its leave-one-source-out fold's settings "
                         "(neutral start)")
    ap.add_argument("--model", help="only this model's tables (llama3_8b, llama3_70b, ...)")
    ap.add_argument("--max-num-tokens", type=int, metavar="N",
                    help="the engines' token budget per step (default: each row's engine's)")
    ap.add_argument("--chunked-prefill", choices=("on", "off"),
                    help="whether long prompts run in chunks (default: each row's engine's)")
    args = ap.parse_args()
    if args.max_num_tokens is not None:
        BUILD["max_tokens"] = args.max_num_tokens
    if args.chunked_prefill is not None:
        BUILD["chunked_prefill"] = args.chunked_prefill == "on"
    base = Settings(collectives=S.ROW_ENGINE)
    src = V.source_of()
    folds = fold_settings(base) if args.held_out else {}
    every = S.checks()
    tables: dict[tuple, list[S.Check]] = {}
    for c in every:
        if c.metric == "ttft" and isinstance(c.concurrency, int) and \
                args.model in (None, c.model):
            tables.setdefault((src[c.row], c.model, c.tp, c.isl, c.osl, c.engine),
                              []).append(c)
    errors: dict[str, list[float]] = {k: [] for k in COLUMNS}
    print("settings: " + ("each source's leave-one-source-out fold (neutral start)"
                          if args.held_out else "the fitted defaults (in-sample)")
          + "".join(f"; {k} {v}" for k, v in BUILD.items()))
    for key, checks in tables.items():
        name, model, tp, isl, osl, _ = key
        settings = folds.get(name, base)
        idle = next((x for x in checks if x.concurrency == 1), None)
        loaded = sorted((x for x in checks if x.concurrency > 1),
                        key=lambda x: (x.concurrency, x.row))
        if not loaded:
            continue
        head = f"{name}  {model}  tp{tp}  {isl}/{osl}"
        if idle is not None:
            head += (f"  (idle: measured {idle.measured:.4g} s, predicted "
                     f"{S.predict(idle, settings):.4g} s)")
        print()
        print(head)
        print("  row   conc  measured  wait  " + "  ".join(f"{k:>8s}" for k in COLUMNS)
              + "     bound  cohort client/steady/spread")
        mine: dict[str, list[float]] = {k: [] for k in COLUMNS}
        for c in loaded:
            f = figures(c, settings)
            tpot = V._measured_tpot().get(c.row, math.nan)
            wait = (c.measured - idle.measured) / tpot if idle is not None else math.nan
            cells = []
            for k in COLUMNS:
                e = f[k] / c.measured - 1
                mine[k].append(e)
                errors[k].append(e)
                cells.append(f"{e:+8.0%}")
            b = f["bound"]
            print(f"  {c.row}  {c.concurrency:4d}  {c.measured:8.4g}  {wait:4.1f}  "
                  + "  ".join(cells)
                  + (f"  {b:8.4g}" if b is not None else "         -")
                  + ("*" if b is not None and c.measured < b else " ")
                  + "  " + "/".join(f"{x:.1f}" for x in f["cohorts"]))
        print("  median |error|          " + "  ".join(
            f"{S.median_abs(mine[k]):8.1%}" for k in COLUMNS))
    print()
    print(f"every loaded check shown ({len(errors['client'])}): median |error| " + ", ".join(
        f"{k} {S.median_abs(v):.1%}" for k, v in errors.items()))
    print("(* measured below the bound: the client's default run cannot give it)")


if __name__ == "__main__":
    main()
