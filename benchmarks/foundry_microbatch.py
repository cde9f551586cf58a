"""Why llm-foundry's checkpointed rows are predicted slow and its no-checkpoint rows fast: the
candidate mechanisms of issue 23's llm-foundry miss, each tested on every llm-foundry bf16 row
(docs/plan.md, "llm-foundry: the micro-batch, not the recompute"). Prints figures; changes
nothing in the model.

    .venv/bin/python benchmarks/foundry_microbatch.py

- Breakdown: each row's micro-batch, recompute, step (compute, exposed communication),
  measured step and error, and topoc's hardware FLOPs over the model FLOPs.
- (a) Recompute hiding communication: each row's error with no communication exposed at all,
  the most any overlap of the re-forward with the gathers and reduce-scatters could take off.
- (b) GEMM shape: the wave efficiency of the rows' forward GEMMs (128 x 256 output tiles over
  the tile slots of the waves they need on the GPU's SMs: 132 on the H100 SXM5, 108 on the
  A100, NVIDIA's H100 and A100 whitepapers),
  and the best fit of a plateau falling with the rows' M as M / (M + c_M).
- (c) Charged twice: the FSDP flows of each checkpointed row against the same row without
  recompute (one backward gather a layer either way) and its hardware FLOPs share.
- (d) Per micro-batch: the best fit of the plateau plus a fixed cost per layer and
  micro-batch (or per layer parameter), what the Hopper plateau refitted on the fit rows
  becomes with that cost on Composer's rows, and the pairs of checkpointed rows of one model
  that differ in micro-batch, measured against predicted.

The fits here run on validation rows, as a diagnosis: none of their constants enters the model
(docs/plan.md says why).
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.training_rows import (CSV, _costs, _model_cached, candidate, predict, rows,  # noqa: E402
                                 system, system_of, training)
from topoc.compiler.analysis.plan import strategy_for  # noqa: E402
from topoc.compiler.analysis.strategy import placement, step  # noqa: E402
from topoc.compiler.ir.gpus import gpu_figures  # noqa: E402
from topoc.compiler.training import gemm  # noqa: E402
from topoc.compiler.training.model import model_flops  # noqa: E402
from topoc.compiler.training.params import attention_matrices, layer_parameters  # noqa: E402

#: Streaming multiprocessors (NVIDIA H100 whitepaper: 132 on the SXM5 part; A100 whitepaper:
#: 108) and a large bf16 output tile of cuBLAS/CUTLASS kernels.
SMS = {"hopper": 132, "ampere": 108}
TILE = (128, 256)


def foundry():
    """The llm-foundry bf16 rows."""
    return [r for r in rows() if r.id.startswith("llmfoundry") and not r.fp8]


def microbatches(r) -> int:
    return r.batch // (r.shape.dp * r.microbatch)


def detail(r):
    """(Derived, StepReport) of the row's published strategy."""
    where = system_of(r)
    sys_ = system(where[0], tuple(sorted(where[1].items())))
    t = training(r, r.recompute or "none")
    p = strategy_for(t, candidate(r, r.recompute or "none"), gpu_figures(sys_))
    return p.derived, step(sys_, p, _costs(where), where=placement(sys_, r.gpus))


def waves(r) -> float:
    """The worst wave efficiency of the row's forward layer GEMMs: output tiles over the tile
    slots (SMs x waves) they occupy."""
    m = _model_cached(r.id)
    tokens = r.microbatch * m.seq
    shapes = [(tokens, b) for _, b, _ in attention_matrices(m)] + \
        [(tokens, m.ffn), (tokens, m.hidden)]
    worst = 1.0
    for rows_, cols in shapes:
        tiles = math.ceil(rows_ / TILE[0]) * math.ceil(cols / TILE[1])
        sms = SMS[r.generation]
        worst = min(worst, tiles / (math.ceil(tiles / sms) * sms))
    return worst


def rms(errs) -> float:
    return math.sqrt(sum(math.log(1 + e) ** 2 for e in errs) / len(errs))


def fit(rs, extra, grid_e, grid_x):
    """Least squares in log error of (plateau e, parameter x) where ``extra(r, e, x)`` is the
    row's (predicted, measured) under them."""
    best = None
    for e in grid_e:
        for x in grid_x:
            errs = [p / m - 1 for p, m in (extra(r, e, x) for r in rs)]
            loss = rms(errs)
            if best is None or loss < best[0]:
                best = (loss, e, x, errs)
    return best


#: Bytes a layer parameter's unsharded gradient moves in FSDP1's backward each micro-batch
#: (torch 2.1 ``_runtime_utils``: the flat gradient assembled from its views' gradients, read
#: and written in bf16; cast to the fp32 reduce dtype under Composer's DEFAULT mixed precision;
#: ``_div_if_needed`` by the predivide factor in place before ``reduce_scatter_tensor``):
#: 2 + 2 + 2 + 4 + 4 + 4 with DEFAULT, 2 + 2 + 2 + 2 with PURE (bf16 reduce).
GRAD_BYTES = {"DEFAULT": 18.0, "PURE": 8.0}


def refit(rs) -> None:
    """(d) as a model term would have to be fitted: a cost per layer and micro-batch on
    Composer's FSDP rows (5 ms, or FSDP1's gradient bytes at ``hbm_efficiency``), the Hopper
    bf16 plateau refitted (as ``plan_calibration.py --fit`` does) on the Hopper fit rows."""
    fit_rows = [r for r in rows() if r.fit and r.generation == "hopper"]
    h100 = [r for r in rs if r.generation == "hopper"]
    original = gemm.CURVES["hopper"]
    with CSV.open(encoding="utf-8") as f:
        precision = {row["id"]: row["precision"] for row in csv.DictReader(f)}

    def grad_bytes(r):
        m = _model_cached(r.id)
        t = training(r, r.recompute or "none")
        mode = "PURE" if "PURE" in precision[r.id] else "DEFAULT"
        return layer_parameters(m)[0] * GRAD_BYTES[mode] / (3.35e12 * t.hbm_efficiency)

    terms = (("nothing", lambda r: 0.0), ("5.0 ms", lambda r: 5e-3),
             ("FSDP1's gradient bytes", grad_bytes))

    def err(r, per_layer):
        p = predict(r)
        add = per_layer(r) * microbatches(r) * _model_cached(r.id).layers \
            if r.id.startswith("llmfoundry") else 0.0
        return (p.predicted + add) / p.measured - 1

    try:
        for name, per_layer in terms:
            best = None
            for i in range(26):
                e = round(0.46 + 0.01 * i, 2)
                gemm.CURVES["hopper"] = attrs.evolve(original, e_max=e)
                loss = rms([err(r, per_layer) for r in fit_rows])
                if best is None or loss < best[0]:
                    best = (loss, e)
            gemm.CURVES["hopper"] = attrs.evolve(original, e_max=best[1])
            errs = [err(r, per_layer) for r in h100]
            print(f"  fit rows refitted with {name} per layer and micro-batch on Composer's "
                  f"rows: Hopper plateau {best[1]:.2f} (RMS {best[0]:.3f} on {len(fit_rows)} "
                  f"fit rows); H100 llm-foundry rows {min(errs):+.1%} to {max(errs):+.1%}, "
                  f"RMS {rms(errs):.3f}")
    finally:
        gemm.CURVES["hopper"] = original


def main() -> None:
    rs = foundry()
    base = {r.id: predict(r) for r in rs}
    print("| row | mb | recompute | micro-batches | predicted s | compute s | exposed comm s "
          "| measured s | error | HW/model FLOPs | worst GEMM waves | (a) comm hidden |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rs:
        d, rep = detail(r)
        p = base[r.id]
        m = _model_cached(r.id)
        ratio = d.compute.hardware_flops / model_flops(m, r.batch * m.seq / r.gpus)
        hidden = (p.predicted - rep.comm) / p.measured - 1
        print(f"| {r.id[11:]} | {r.microbatch} | {r.recompute} | {microbatches(r)} | "
              f"{p.predicted:.2f} | {d.compute.time:.2f} | {rep.comm:.2f} | {p.measured:.2f} | "
              f"{p.error:+.1%} | {ratio:.2f} | {waves(r):.0%} | {hidden:+.1%} |")
    print()
    # (c): the checkpointed rows' FSDP flows are those of the same row without recompute
    same = all(detail(r)[0].flows == detail(attrs.evolve(r, recompute="none"))[0].flows
               for r in rs if r.recompute == "full")
    print(f"(c) checkpointed rows' flows equal to the same rows without recompute: {same}")
    for gen, lo in (("hopper", 0.45), ("ampere", 0.70)):
        sub = [r for r in rs if r.generation == gen and not r.id.startswith(
            "llmfoundry-a100-40gb")] if gen == "ampere" else [r for r in rs if r.generation == gen]
        cache: dict = {}

        def at(r, e):
            if (r.id, e) not in cache:
                p = predict(r, gemm_efficiency=e)
                cache[r.id, e] = (p.predicted, p.measured)
            return cache[r.id, e]

        def shape(r, e, c):
            tokens = r.microbatch * _model_cached(r.id).seq
            eff = round(e * tokens / (tokens + c), 3)
            if (r.id, eff) not in cache:
                p = predict(r, gemm_efficiency=eff)
                cache[r.id, eff] = (p.predicted, p.measured)
            return cache[r.id, eff]

        def per_mb(r, e, x):
            p, m = at(r, e)
            return p + x * microbatches(r) * _model_cached(r.id).layers, m

        def per_param(r, e, x):
            p, m = at(r, e)
            return p + x * microbatches(r) * layer_parameters(_model_cached(r.id))[0] * \
                _model_cached(r.id).layers / 1e9, m

        grid_e = [round(lo + 0.01 * i, 2) for i in range(30)]
        name = "H100" if gen == "hopper" else "A100 80 GB"
        one = fit(sub, lambda r, e, _: at(r, e), grid_e, [0.0])
        b = fit(sub, shape, grid_e, [0, 256, 512, 1024, 2048, 4096])
        dd = fit(sub, per_mb, grid_e, [i * 0.25e-3 for i in range(49)])
        print(f"{name} ({len(sub)} rows): today RMS log {rms([base[r.id].error for r in sub]):.3f}"
              f" worst {max(abs(base[r.id].error) for r in sub):.1%}; plateau alone: e "
              f"{one[1]:.2f}, RMS {one[0]:.3f}, worst {max(map(abs, one[3])):.1%}")
        print(f"  (b) plateau x M/(M + c_M): e {b[1]:.2f}, c_M {b[2]:.0f}, RMS {b[0]:.3f}, "
              f"worst {max(map(abs, b[3])):.1%}")
        dp = fit(sub, per_param, grid_e, [i * 1e-3 for i in range(61)])
        print(f"  (d) plateau + x per layer and micro-batch: e {dd[1]:.2f}, x "
              f"{dd[2] * 1e3:.2f} ms, RMS {dd[0]:.3f}, worst {max(map(abs, dd[3])):.1%}")
        print(f"      or + x per 1e9 layer parameters and micro-batch: e {dp[1]:.2f}, x "
              f"{dp[2] * 1e3:.1f} ms, RMS {dp[0]:.3f}, worst {max(map(abs, dp[3])):.1%}")
        for r, err in zip(sub, dd[3]):
            print(f"      {r.id[11:]:58s} mb {r.microbatch:>2} {r.recompute:4s} "
                  f"{base[r.id].error:+6.1%} -> {err:+6.1%}")
    refit(rs)
    print()
    print("(d) checkpointed pairs, one model and GPU, micro-batch apart: measured and predicted "
          "tokens per second of the larger micro-batch over the smaller")
    by = {}
    for r in rs:
        if r.recompute == "full":
            m = _model_cached(r.id)
            by.setdefault((r.gpu, r.model, m.seq), []).append(r)
    for key, group in sorted(by.items()):
        group.sort(key=lambda r: r.microbatch)
        for a, b in zip(group, group[1:]):
            if a.microbatch == b.microbatch:
                continue
            pa, pb = base[a.id], base[b.id]
            tok = (lambda r, t: r.batch / (t * r.gpus))
            meas = tok(b, pb.measured) / tok(a, pa.measured)
            pred = tok(b, pb.predicted) / tok(a, pa.predicted)
            print(f"  {key[0]} {key[1]} s{key[2]}: mb {a.microbatch} ({a.gpus} GPUs) -> mb "
                  f"{b.microbatch} ({b.gpus} GPUs): measured {meas:.3f}, predicted {pred:.3f}")


if __name__ == "__main__":
    main()
