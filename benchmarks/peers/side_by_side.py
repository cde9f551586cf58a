"""topoc beside two peers on the same published runs (issue 42): the rows
benchmarks/plan_validation.py scores (tests/training_rows.py), each predicted by

- topoc, left one source out (``plan_validation.held_out``: the GEMM curves refitted without
  the row's source; nothing is refitted here);
- llm-analysis (cli99/llm-analysis), its roofline with one constant, the FLOP efficiency
  (``latency_per_iter_using_flops``): at the 50 % its README gives for large-scale training
  ("literature reports up to 0.5"), and with that one constant fitted the way topoc's are, on
  the same fit rows, leaving the row's source out (the efficiency minimising the RMS log
  error of the other sources' fit rows); its fuller ``latency_per_iter`` (communication and
  HBM traffic at peak, nothing overlapped) at 50 % in the summaries too;
- Calculon (Isaev et al., SC'23) with its memory check off, on its own A100 and H100 system
  files.

Each peer runs in its own environment (benchmarks/peers/setup.sh), fed the rows as JSON
(llm_analysis_runner.py, calculon_runner.py beside this file); a row a peer cannot model says
why. Every peer gets the row's published strategy, and the recompute mode topoc ran where the
source does not publish one (the lightest that fits, tests/training_rows.predict).

    benchmarks/peers/setup.sh
    .venv/bin/python benchmarks/peers/side_by_side.py

Prints every row (each tool's error, and what a peer could not model), then the medians and
90th percentiles of |error| per GPU generation (each tool on the rows it models, then on the
rows all three model) and which is closest row by row.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from memory_validation import quantile  # noqa: E402
from plan_validation import GENERATIONS, held_out, source_of  # noqa: E402
from tests.training_rows import (FIT, _model_cached, measured_time, predict, system,  # noqa: E402
                                 system_of)
from topoc.compiler.ir.gpus import gpu_figures  # noqa: E402

#: llm-analysis's FLOP efficiency as its README states it for large-scale training.
DOCUMENTED = 0.5
#: The efficiencies the one-constant fit chooses among (0.20 to 0.90 by 0.01).
GRID = tuple(round(0.2 + 0.01 * i, 2) for i in range(71))
PEERS = {"llm-analysis": "llm_analysis_runner.py", "calculon": "calculon_runner.py"}


def spec(row) -> dict:
    """The row as the runners read it: its model's shape and its published strategy."""
    m = _model_cached(row.id)
    sh = row.shape
    recompute = row.recompute
    if not recompute:
        # the mode topoc ran (the lightest that fits), so every tool prices the same work
        found = re.search(r"recompute (\w+) \(not published\)", predict(row).note)
        recompute = found.group(1) if found else "none"
    return {"id": row.id, "gpu": row.gpu, "gpus": row.gpus, "layers": m.layers,
            "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads,
            "head_dim": m.dhead, "ffn": m.ffn, "gated": m.gated, "vocab": m.vocab,
            "seq": m.seq, "experts": m.experts, "top_k": m.top_k, "expert_ffn": m.expert_ffn,
            "shared_experts": m.shared_experts, "dense_layers": m.dense_layers,
            "mla": bool(m.kv_lora_rank), "tp": sh.tp, "pp": sh.pp, "cp": sh.cp, "ep": sh.ep,
            "dp": sh.dp, "microbatch": row.microbatch, "batch": row.batch,
            "interleave": row.interleave, "recompute": recompute,
            "sp": row.sequence_parallel, "fp8": row.fp8, "zero": row.zero, "fsdp": row.fsdp,
            "flash": row.flash, "overlap": row.family != "narayanan"}


def run_peer(name: str, request: dict) -> dict:
    """A peer's answers for every row, from its own environment."""
    python = HERE / name / ".venv" / "bin" / "python"
    if not python.exists():
        sys.exit(f"side_by_side: {name} is not installed; run benchmarks/peers/setup.sh")
    out = subprocess.run([str(python), str(HERE / PEERS[name])], input=json.dumps(request),
                         capture_output=True, text=True, check=False)
    if out.returncode:
        sys.exit(f"side_by_side: {name} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def measured(row) -> float:
    where = system_of(row)
    return measured_time(row, gpu_figures(system(where[0], tuple(sorted(where[1].items())))).bf16)


def fit_efficiency(seconds: dict, truth: dict, rows) -> float | None:
    """The grid efficiency minimising the RMS log error of ``rows`` (None: no row)."""
    rows = [r for r in rows if "seconds" in seconds.get(r, {})]
    if not rows:
        return None
    return min(GRID, key=lambda e: sum(
        math.log(seconds[r]["seconds"][str(e)] / truth[r]) ** 2 for r in rows))


def gather():
    """Per scored row: (row, source, kind, topoc's held-out error, llm-analysis at 50 %,
    llm-analysis fitted without the source, the efficiency that fit chose, Calculon, notes)."""
    results, _ = held_out()
    specs = [spec(x[0]) for x in results]
    lla = run_peer("llm-analysis", {"rows": specs,
                                    "efficiencies": sorted(set(GRID) | {DOCUMENTED})})
    src = Path(os.environ.get("CALCULON_SRC", HERE / "calculon" / "src"))
    cal = run_peer("calculon", {"rows": specs, "systems": str(src / "systems")})
    truth = {x[0].id: measured(x[0]) for x in results}
    out = []
    for r, source, kind, topoc_err, _inn, _curve in results:
        a, c = lla[r.id], cal[r.id]
        fit_rows = [x[0].id for x in results if x[0].id in FIT and source_of(x[0]) != source]
        e = fit_efficiency(lla, truth, fit_rows)
        la50 = a["seconds"][str(DOCUMENTED)] / truth[r.id] - 1 if "seconds" in a else None
        lafit = a["seconds"][str(e)] / truth[r.id] - 1 if "seconds" in a and e else None
        cerr = c["seconds"] / truth[r.id] - 1 if "seconds" in c else None
        lafull = a["full"][str(DOCUMENTED)] / truth[r.id] - 1 if "full" in a else None
        notes = {"llm-analysis": a.get("error") or "; ".join(a.get("notes", ())),
                 "calculon": c.get("error") or "; ".join(c.get("notes", ()))}
        out.append((r, source, kind, topoc_err, la50, lafit, e, cerr, notes, lafull))
    return out


TOOLS = (("topoc (held out)", 3), ("llm-analysis 50 %", 4), ("llm-analysis fitted (held out)", 5),
         ("Calculon", 7))
#: Summarised, not compared row by row: llm-analysis's fuller latency at 50 %.
EXTRA = (("llm-analysis latency_per_iter 50 %", 9),)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def summary(out, label: str, picked) -> list[str]:
    """One line per tool: n, median and 90th percentile of |error| on the rows it models."""
    lines = []
    for name, i in TOOLS + EXTRA:
        errs = [abs(x[i]) for x in picked if x[i] is not None]
        if errs:
            lines.append(f"| {label} | {name} | {len(errs)} | {statistics.median(errs):.1%} | "
                         f"{quantile(errs, 0.9):.1%} |")
        else:
            lines.append(f"| {label} | {name} | 0 | - | - |")
    return lines


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    out = gather()
    print("| run | generation | kind | topoc held out | llm-analysis 50 % | "
          "llm-analysis fitted (e) | Calculon | what a peer could not model |")
    print("|---|---|---|---|---|---|---|---|")
    for r, _src, kind, t, la50, lafit, e, c, notes, _full in out:
        why = "; ".join(f"{k}: {v}" for k, v in notes.items() if v)
        fitted = f"{pct(lafit)} ({e:.2f})" if lafit is not None else "-"
        print(f"| {r.id} | {r.generation} | {kind} | {pct(t)} | {pct(la50)} | {fitted} | "
              f"{pct(c)} | {why} |")
    print()
    print("| rows | tool | n | median abs error | 90th pct |")
    print("|---|---|---|---|---|")
    groups = [("all", lambda x: True)] + \
        [(g, lambda x, g=g: x[0].generation == g) for g in GENERATIONS] + \
        [(k, lambda x, k=k: x[2] == k) for k in ("dense", "MoE")] + \
        [(p, lambda x, p=p: ("fp8" if x[0].fp8 else "bf16") == p) for p in ("bf16", "fp8")]
    for label, sel in groups:
        for line in summary(out, label, [x for x in out if sel(x)]):
            print(line)
    common = [x for x in out if all(x[i] is not None for _n, i in TOOLS)]
    print()
    print(f"On the {len(common)} rows every tool models:")
    print()
    print("| rows | tool | n | median abs error | 90th pct |")
    print("|---|---|---|---|---|")
    for label, sel in groups:
        picked = [x for x in common if sel(x)]
        if picked:
            for line in summary(out, label, picked):
                print(line)
    print()
    print("Closest to the measurement, row by row, on those rows:")
    for name, i in TOOLS:
        wins = sum(1 for x in common
                   if abs(x[i]) == min(abs(x[j]) for _n, j in TOOLS))
        print(f"- {name}: {wins}")
    fitted = sorted({x[6] for x in out if x[6] is not None})
    print()
    print(f"llm-analysis's efficiency fitted with each source left out: "
          f"{fitted[0]:.2f} to {fitted[-1]:.2f}")


if __name__ == "__main__":
    main()
