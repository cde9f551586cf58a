"""Published serving runs with a documented arrival protocol (tests/serving_openloop.csv):
Poisson arrivals at a stated request rate, or every request at once (rate inf) with a stated
request count, and how topoc's open-loop model (``topoc infer --request-rate``) predicts each.
Shared by tests/compiler/analysis/test_infer_rate.py and benchmarks/infer_validation.py.

The file is a sibling of tests/serving_runs.csv because its shape differs (arrival, rate,
request count, the statistic each figure is, the engine limits the run's command implies).
Each row gives a TTFT check and a TPOT check, compared like with like: a median TTFT with
topoc's median (``ttft_median``), a mean with its mean; TPOT with topoc's TPOT (the sources
give a median or mean TPOT, or only a median inter-token latency, ``tpot_stat``). Fit rows are
every third row in file order, as in serving_runs.csv; nothing is fitted on them (the settings
are the closed-loop fit's), the split is kept so that a later fit has held-out rows.

Classes: ``poisson`` rows topoc finds below the layout's capacity (``stable``), ``poisson``
rows at or above it (``over capacity``: a figure for the run's requests), ``burst`` (rate inf),
and the A100 rows apart from the Hopper ones (``a100``).
"""

from __future__ import annotations

import csv
import functools
import math
from pathlib import Path

import attrs

from topoc.compiler.analysis.infer import Config, Engine, Settings, evaluate_rate, gpu_of
from topoc.compiler.analysis.infer_rate import Arrivals
from topoc.compiler.training.serving import Layout
from tests import serving_rows as S

CSV = Path(__file__).parent / "serving_openloop.csv"
SYSTEMS = {**S.SYSTEMS, "A100": "library/nvidia/dgx_a100.topo"}
MODELS = {"deepseek": "deepseek_v3", "qwen3-32b": "qwen3_32b", "405b": "llama3_405b",
          "70b": "llama3_70b", "8b": "llama3_8b"}


@attrs.frozen
class Run:
    """One row of serving_openloop.csv, parsed."""

    row: str
    engine: str
    gpu: str
    gpus: int
    model: str
    precision: str
    kv_precision: str
    tp: int
    ep: int
    attention_dp: bool
    isl: int
    osl: int
    arrivals: Arrivals
    scheduler_steps: int
    max_tokens: int | None
    max_batch: int | None
    ttft_stat: str
    ttft: float
    tpot_stat: str
    tpot: float
    fit: bool


def _model(text: str) -> str:
    t = text.lower()
    for key, name in MODELS.items():
        if key in t:
            return name
    raise KeyError(text)


@functools.lru_cache(maxsize=None)
def runs() -> tuple[Run, ...]:
    """Every row, fit rows marked (every third in file order)."""
    with open(CSV, encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    out = []
    for i, r in enumerate(table):
        rate = math.inf if r["request_rate"] == "inf" else float(r["request_rate"])
        out.append(Run(r["id"], r["engine"], r["gpu"], int(r["gpus"]), _model(r["model"]),
                       r["precision"].lower(), r["kv_precision"].lower(), int(r["tp"]),
                       int(r["ep"] or 1), r["attention_dp"] == "1", round(float(r["isl"])),
                       round(float(r["osl"])), Arrivals(rate, int(r["requests"])),
                       int(r["scheduler_steps"] or 1),
                       int(r["max_tokens"]) if r["max_tokens"] else None,
                       int(r["max_batch"]) if r["max_batch"] else None,
                       r["ttft_stat"], float(r["ttft_s"]), r["tpot_stat"], float(r["tpot_s"]),
                       i % 3 == 0))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def system(gpu: str):
    """The compiled system of a GPU kind and its memoised collective costs."""
    if gpu in S.SYSTEMS:
        return S.system(gpu)
    import topoc
    from topoc.compiler.analysis.infer import Comm
    s = topoc.load(S.ROOT / SYSTEMS[gpu])
    return s, Comm(s)


def settings(run: Run, base: Settings | None = None) -> Settings:
    """The row's engine: its host-work overlap (serving_rows.overlap), the schedule steps and
    the engine limits its command implies (documented defaults, not fitted)."""
    s = attrs.evolve(base or Settings(), overlap_scheduler=S.overlap(run.engine),
                     scheduler_steps=run.scheduler_steps)
    if run.max_tokens:
        s = attrs.evolve(s, max_tokens=run.max_tokens)
    if run.max_batch:
        s = attrs.evolve(s, max_batch=run.max_batch)
    return s


def predicted_row(run: Run, base: Settings | None = None):
    """topoc's ``InferRow`` for the run's configuration and arrivals."""
    s = settings(run, base)
    sysm, comm = system(run.gpu)
    lay = Layout(run.tp, 1, run.ep, run.attention_dp)
    model = S.arch(run.model)
    eng = Engine(sysm, model, lay, run.precision, run.kv_precision, gpu_of(sysm, run.gpus), s,
                 comm)
    replicas = max(1, run.gpus // lay.gpus)
    cfg = Config(run.tp, 1, run.ep, run.attention_dp, replicas, 1)
    return evaluate_rate(sysm, model, cfg, run.isl, run.osl, run.precision, run.kv_precision,
                         eng.gpu, s, comm, run.arrivals, eng)


def predict(run: Run, metric: str, base: Settings | None = None) -> float:
    """topoc's figure for the run's measured ``metric`` ("ttft" or "tpot"), the same
    statistic as the measurement (median or mean TTFT)."""
    row = predicted_row(run, base)
    if metric == "tpot":
        return row.tpot
    return dict(row.parts)["ttft_median"] if run.ttft_stat == "median" else row.ttft


def kind(run: Run, base: Settings | None = None) -> str:
    """The run's class: "a100", "burst", "poisson stable" or "poisson over capacity"."""
    if run.gpu == "A100":
        return "a100"
    if run.arrivals.burst:
        return "burst"
    return "poisson stable" if predicted_row(run, base).stable else "poisson over capacity"


def errors(base: Settings | None = None) -> list[tuple[Run, str, str, float, float]]:
    """(run, class, metric, predicted, relative error) for every check."""
    out = []
    for run in runs():
        k = kind(run, base)
        for metric, measured in (("ttft", run.ttft), ("tpot", run.tpot)):
            p = predict(run, metric, base)
            out.append((run, k, metric, p, p / measured - 1))
    return out
