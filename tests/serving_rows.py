"""Published LLM serving measurements (tests/serving_runs.csv, 158 rows with their sources,
collected for `topoc infer`; docs/infer.md lists the sources S1-S12) and how topoc predicts
each. Shared by tests/compiler/test_infer.py and benchmarks/infer_validation.py so both predict
every row the same way.

Each usable row gives one to three checks: saturated throughput (offline / max-throughput
runs, and fixed-concurrency runs past saturation), TPOT and TTFT (steady-state latency runs).
Rows topoc does not model are kept with the reason (``SKIP``). Fit rows are every third usable
row in file order (``fit``); the rest validate.
"""

from __future__ import annotations

import csv
import functools
import math
from pathlib import Path

import attrs

import topoc
from topoc.compiler.analysis.infer import Comm, Engine, Settings, evaluate, gpu_of, Config
from topoc.compiler.analysis.infer import max_concurrency
from topoc.compiler.lang.derive import find_model
from topoc.compiler.ir.system import Transformer
from topoc.compiler.training.serving import Layout

HERE = Path(__file__).parent
ROOT = HERE.parent
CSV = HERE / "serving_runs.csv"

SYSTEMS = {"H100": "library/nvidia/dgx_h100.topo", "H200": "library/nvidia/hgx_h200.topo",
           "B200": "library/nvidia/hgx_b200.topo", "GB200": "library/nvidia/gb200_nvl72.topo"}

#: Models the presets do not have, from their released configs (Hugging Face config.json), as
#: the IR's ``Transformer`` (the one model description). Llama 4 Maverick alternates dense and
#: MoE layers: drawn as 24 dense then 24 MoE layers.
EXTRA = {
    "qwen3_8b": Transformer("qwen3_8b", 36, 4096, 32, 4096, 151936, 12288, 8, head_dim=128,
                            gated=True, tied=False),
    "llama4_maverick": Transformer("llama4_maverick", 48, 5120, 40, 4096, 202048, 16384, 8,
                                   head_dim=128, experts=128, top_k=1, expert_ffn=8192,
                                   shared_experts=1, dense_layers=24, gated=True, tied=False),
}
#: Row model names that are bundled presets under another name.
PRESET = {"qwen3_235b": "qwen3_235b_a22b"}

#: GPUStack's DeepSeek-R1 ShareGPT bursts on H200 (r153-r156: `vllm bench serve
#: --num-prompts 1000` at request rate inf, all 1,000 requests sent at once). The CSV's
#: throughput is the benchmark's "Output token throughput": total output tokens over the
#: benchmark duration, which holds the admission of 1,000 prefills (mean TTFT 6-20 s) and the
#: tail of ShareGPT's longest outputs at a shrinking batch (mean output 201 tokens, lengths up
#: to ~2,000); that is one burst's average, not an engine's rate. The same result block's "Peak
#: output token throughput" (the largest one-second count, with ~1,000 sequences decoding) is
#: the engine's rate at that concurrency, the figure topoc's continuous batching predicts; the
#: throughput check compares with it. Source: the rows' page (gpustack/gpustack
#: docs/performance-lab/deepseek-r1/h200.md @a5c9faf, each engine's "Benchmark result" block).
BURST_PEAK = {"r153": 7451.0, "r154": 9699.0, "r155": 7636.0, "r156": 9601.0}

#: Rows topoc does not predict, and why.
SKIP = {
    **{f"r{i:03d}": "phase-isolated SGLang run (prefill-only or decode-only pool, large EP "
                    "over nodes); not a served request" for i in range(127, 137)},
    **{f"r{i:03d}": "MLPerf: variable lengths, TP and precision not in the logs"
       for i in range(137, 146)},
    "r114": "MTP speculative decoding (not a plain decode step)",
    "r117": "MTP speculative decoding (not a plain decode step)",
    "r148": "MTP speculative decoding (not a plain decode step)",
    "r147": "an early software baseline the same source supersedes (r146)",
}


@attrs.frozen
class Check:
    """One measured figure of one row and how to predict it."""

    row: str
    metric: str            # "throughput", "tpot" or "ttft"
    measured: float
    gpu: str
    model: str
    precision: str
    kv_precision: str
    tp: int
    pp: int
    ep: int
    attention_dp: bool
    gpus: int
    isl: int
    osl: int
    concurrency: object    # "max" or an int
    per_gpu: bool          # throughput measured per GPU
    fit: bool = False
    engine: str = ""


def _prec(text: str) -> str:
    t = text.upper()
    if "FP4" in t:
        return "fp4"
    if "FP8" in t:
        return "fp8"
    return "bf16"


def _kv(text: str, precision: str) -> str | None:
    t = text.upper()
    if "FP8" in t:
        return "fp8"
    if "BF16" in t or "FP16" in t:
        return "bf16"
    return None


def _model(text: str) -> str:
    t = text.lower()
    for key, name in (("deepseek", "deepseek_v3"), ("qwen3-235b", "qwen3_235b"),
                      ("qwen3-8b", "qwen3_8b"), ("maverick", "llama4_maverick"),
                      ("gpt-oss", "gpt_oss_120b"), ("405b", "llama3_405b"),
                      ("70b", "llama3_70b"), ("8b", "llama3_8b")):
        if key in t:
            return name
    raise KeyError(text)


def _gpu(text: str) -> str:
    return "GB200" if text.startswith("GB200") else text.split("-")[0]


def _series(r: dict) -> tuple:
    return (r["engine"], r["gpu"], r["model"], r["precision"], r["tp"], r["isl"], r["osl"])


def saturated(rows: list[dict]) -> set[str]:
    """Fixed-concurrency rows past the knee of their sweep (same engine, GPU, model, precision,
    tp and lengths; three or more concurrencies): throughput within 5 % of the sweep's largest
    and not its lowest concurrency. Their throughput is the saturated engine's and their TTFT
    is mostly the client's queue, not a served request's prefill."""
    sweeps: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["concurrency"].isdigit() and r["throughput_tok_s"] and r["ttft_s"]:
            sweeps.setdefault(_series(r), []).append(r)
    out = set()
    for sweep in sweeps.values():
        if len(sweep) < 3:
            continue
        top = max(float(r["throughput_tok_s"]) for r in sweep)
        low = min(int(r["concurrency"]) for r in sweep)
        out |= {r["id"] for r in sweep if int(r["concurrency"]) > low
                and float(r["throughput_tok_s"]) >= 0.95 * top}
    return out


def checks() -> list[Check]:
    """Every usable measured figure, fit rows marked."""
    out: list[Check] = []
    usable = 0
    with open(CSV, encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    past_knee = saturated(table)
    if True:
        for r in table:
            if r["id"] in SKIP:
                continue
            gpus = int(r["gpus"])
            tp, ep = int(r["tp"] or 1), int(r["ep"] or 1)
            model = _model(r["model"])
            experts = arch(model).experts
            adp = bool(experts) and tp == 1 and ep > 1        # "DEPn": attention DP + EP
            if adp:
                tp = ep
            elif experts and tp > 1 and not r["ep"]:
                ep = tp if model != "deepseek_v3" else 1
            conc = r["concurrency"]
            c: object = int(conc) if conc.isdigit() else "max"
            burst = r["id"] in ("r153", "r154", "r155", "r156", "r157", "r158")
            prec = _prec(r["precision"])
            kvp = _kv(r["kv_precision"], prec)
            if kvp is None and "gpustack" in r["source"]:
                # GPUStack launches each engine with its defaults (the page's serving
                # commands pass no KV dtype): vLLM's and SGLang's --kv-cache-dtype and
                # TensorRT-LLM's KvCacheConfig.dtype are "auto", the model's activation dtype
                # (BF16; the Hugging Face checkpoints carry no KV-cache quantisation), not FP8
                kvp = "bf16"
            base = dict(row=r["id"], gpu=_gpu(r["gpu"]), model=model, precision=prec,
                        kv_precision=kvp, tp=tp, pp=int(r["pp"] or 1),
                        ep=ep, attention_dp=adp, gpus=gpus, isl=int(r["isl"]),
                        osl=int(r["osl"]), concurrency=c,
                        per_gpu=r["throughput_scope"] == "per_gpu", fit=usable % 3 == 0,
                        engine=r["engine"])
            usable += 1
            queued = r["id"] in past_knee
            if r["throughput_tok_s"] and r["throughput_scope"] != "per_user" and \
                    (c == "max" or queued or burst):
                measured = BURST_PEAK.get(r["id"], float(r["throughput_tok_s"]))
                out.append(Check(metric="throughput", measured=measured, **base))
            if r["tpot_s"] and not burst:
                out.append(Check(metric="tpot", measured=float(r["tpot_s"]), **base))
            if r["ttft_s"] and not burst and not queued:
                out.append(Check(metric="ttft", measured=float(r["ttft_s"]), **base))
    return out


@functools.lru_cache(maxsize=None)
def system(gpu: str):
    """The compiled system of a GPU kind and its memoised collective costs."""
    s = topoc.load(ROOT / SYSTEMS[gpu])
    return s, Comm(s)


@functools.lru_cache(maxsize=None)
def arch(name: str) -> Transformer:
    """A bundled preset, or one of EXTRA."""
    if name in EXTRA:
        return EXTRA[name]
    return find_model(system("H100")[0], PRESET.get(name, name))


def kind(c: Check) -> str:
    """The metric, TTFT split by load: "ttft idle" (one request in flight: overhead and prefill
    alone) and "ttft loaded" (other requests' prefills and decode steps in the way)."""
    if c.metric != "ttft":
        return c.metric
    return "ttft idle" if c.concurrency == 1 else "ttft loaded"


def predict(c: Check, settings: Settings | None = None) -> float:
    """topoc's figure for one check."""
    row = predicted_row(c, settings)
    if c.metric == "throughput":
        return row.throughput_per_gpu if c.per_gpu else row.throughput
    return row.tpot if c.metric == "tpot" else row.ttft


def wave_ttft(c: Check, settings: Settings | None = None) -> float:
    """topoc's TTFT for the check's concurrency arriving as one synchronised wave (the
    ``ttft_wave`` part: every request of a replica at once; an upper bound on the steady state)."""
    return dict(predicted_row(c, settings).parts)["ttft_wave"]


def closed_loop_ttft(c: Check, settings: Settings | None = None) -> float:
    """topoc's empirical closed-loop TTFT for the check (the ``ttft_closed_loop`` part)."""
    return dict(predicted_row(c, settings).parts)["ttft_closed_loop"]


def engine_name(engine: str) -> str:
    """The row's engine as ``--engine`` names it: vLLM's, SGLang's, or TensorRT-LLM's (NIM's
    LLM containers run TensorRT-LLM engines)."""
    e = engine.lower()
    return "vllm" if e.startswith("vllm") else "sglang" if e.startswith("sglang") \
        else "trtllm"


@functools.lru_cache(maxsize=None)
def comm_for(gpu: str, chooser: str) -> Comm:
    """The memoised collective costs of a GPU kind's system with ``chooser``."""
    return Comm(system(gpu)[0], chooser)


def allreduce_rule(engine: str) -> str:
    """The all-reduce rule (``collectives.engines``) of the row's engine at its release:
    TensorRT-LLM up to 1.0 and NIM's TensorRT engines ``trtllm-1.0`` (the plugin's rule; the
    blogs' rows of early 2025 too), its 1.x releases the current table (``trtllm``); vLLM's
    rows (0.6, 0.11) ``vllm-0.11`` (the custom all-reduce under 8 MiB); SGLang ``sglang``."""
    e = engine.lower()
    if e.startswith("vllm"):
        return "vllm-0.11"
    if e.startswith("sglang"):
        return "sglang"
    if "1.x" in e or "v1.2" in e or "v1.1" in e:
        return "trtllm"
    return "trtllm-1.0"


#: ``Settings.collectives`` for the rows: each row's all-reduce as its engine runs it
#: (``collectives.engines``: the engine's own one-shot / two-shot kernels by size and GPU
#: count, NCCL past them).
ROW_ENGINE = "engine"


def engine(c: Check, settings: Settings | None = None) -> Engine:
    """topoc's engine (one replica) for a check's layout, with the row's engine's host-work
    overlap (``overlap``) and, unless the settings name another chooser, its all-reduce."""
    s = settings or Settings(collectives=ROW_ENGINE)
    chooser = allreduce_rule(c.engine) if s.collectives == ROW_ENGINE else s.collectives
    s = attrs.evolve(s, overlap_scheduler=overlap(c.engine), collectives=chooser)
    sysm, comm = system(c.gpu)[0], comm_for(c.gpu, chooser)
    return Engine(sysm, arch(c.model), Layout(c.tp, c.pp, c.ep, c.attention_dp), c.precision,
                  c.kv_precision or ("bf16" if c.precision == "bf16" else "fp8"),
                  gpu_of(sysm, c.gpus), s, comm)


def predicted_row(c: Check, settings: Settings | None = None):
    """topoc's whole row (``InferRow``) for one check's configuration."""
    eng = engine(c, settings)
    s, sysm, comm = eng.s, system(c.gpu)[0], eng.comm
    replicas = max(1, c.gpus // eng.lay.gpus)
    conc = max(1, max_concurrency(eng.kv_capacity, c.isl, c.osl, s)) * replicas \
        if c.concurrency == "max" else c.concurrency
    return evaluate(sysm, eng.a, Config(c.tp, c.pp, c.ep, c.attention_dp, replicas, conc),
                    c.isl, c.osl, c.precision, eng.kvp, eng.gpu, s, comm, eng)


def overlap(engine: str) -> bool:
    """Whether the row's engine hides its host work behind the GPU's next step."""
    return not engine.startswith(("NIM", "vLLM"))


def error(c: Check, settings: Settings | None = None) -> float:
    """Relative error, predicted / measured - 1."""
    return predict(c, settings) / c.measured - 1


def median_abs(values) -> float:
    """Median of absolute values (nan for none)."""
    v = sorted(abs(x) for x in values)
    if not v:
        return math.nan
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def summary(settings: Settings | None = None) -> dict[tuple[str, bool], float]:
    """Median |error| per (metric, fit?)."""
    errs: dict[tuple[str, bool], list[float]] = {}
    for c in checks():
        errs.setdefault((c.metric, c.fit), []).append(error(c, settings))
    return {k: median_abs(v) for k, v in errs.items()}


