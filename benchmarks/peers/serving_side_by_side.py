"""topoc infer and a public serving estimator on the same published rows, side by side.

    bash benchmarks/peers/aiconfigurator/setup.sh          # once: AIConfigurator in its venv
    .venv/bin/python benchmarks/infer_validation.py --loso > /tmp/loso.txt
    .venv/bin/python benchmarks/peers/serving_side_by_side.py --topoc /tmp/loso.txt [--markdown]

The rows are the checks of tests/serving_runs.csv (tests/serving_rows.py). topoc's figure for
each is its leave-one-source-out prediction (the ``--loso`` output's per-check lines: the
analytic figure, and the simulated closed loop: for TTFT as the row's client runs it, the
headline). The medians are printed over every check of a kind and over the
protocol-consistent TTFT checks (benchmarks/infer_validation.py ``consistent``: issue 43's
alternative TTFT target, docs/infer.md). The peer is NVIDIA's
AIConfigurator (`aiconfigurator cli estimate --estimate-mode agg`, run by
aiconfigurator/run_rows.py in its own venv; nothing of it is fitted here): the row's model,
GPU, engine (TensorRT-LLM for TensorRT-LLM's and NIM's rows, vLLM's, SGLang's), precision, TP /
EP / attention DP and lengths, at the row's concurrency per replica (for offline
max-throughput rows the concurrency topoc's KV-cache cap gives, since AIConfigurator takes a
batch, not "max"). Errors are predicted / measured - 1; medians of |error| over the checks
both answer.

``--why`` adds, for every loaded TTFT check, how AIConfigurator's figure is made: its agg TTFT
is its per-request prefill step (one prompt beside the batch's other decodes, from its kernel
tables) times a queueing factor of the batch (aiconfigurator/run_rows.py ``--factors``; for
TensorRT-LLM and SGLang min(2 + (b - 3) / 20, 4), a heuristic of its source), so the row
prints the factor it used beside the factor the measurement needs (measured / its prefill
step), and topoc's three errors; then the medians by table (docs/infer.md, "Side by side").
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from tests import serving_rows as S  # noqa: E402

sys.path.insert(0, str(HERE.parent))
import infer_validation as V  # noqa: E402

PEER = HERE / "aiconfigurator"
MODELS = {"llama3_8b": "meta-llama/Meta-Llama-3.1-8B", "llama3_70b": "meta-llama/Meta-Llama-3.1-70B",
          "llama3_405b": "meta-llama/Meta-Llama-3.1-405B", "qwen3_8b": "Qwen/Qwen3-8B",
          "qwen3_235b": "Qwen/Qwen3-235B-A22B", "deepseek_v3": "deepseek-ai/DeepSeek-R1",
          "gpt_oss_120b": "openai/gpt-oss-120b",
          "llama4_maverick": "meta-llama/Llama-4-Maverick-17B-128E-Instruct"}
SYSTEMS = {"H100": "h100_sxm", "H200": "h200_sxm", "B200": "b200_sxm", "GB200": "gb200"}
QUANT = {"bf16": "bfloat16", "fp8": "fp8", "fp4": "nvfp4"}
#: DeepSeek's FP8 checkpoints are block-scaled (AIConfigurator's fp8_block); gpt-oss ships
#: its experts in MXFP4 with BF16 activations (w4a16_mxfp4), whatever the rest runs at
MOE_QUANT = {("deepseek_v3", "fp8"): "fp8_block", ("gpt_oss_120b", "fp8"): "w4a16_mxfp4",
             ("gpt_oss_120b", "fp4"): "w4a16_mxfp4", ("gpt_oss_120b", "bf16"): "w4a16_mxfp4"}


def peer_input(c: S.Check) -> dict:
    """AIConfigurator's arguments for a check's row (one replica)."""
    replicas = max(1, c.gpus // (c.tp * c.pp))
    conc = c.concurrency if isinstance(c.concurrency, int) else \
        S.predicted_row(c).config.concurrency
    kv = c.kv_precision or ("bf16" if c.precision == "bf16" else "fp8")
    out = {"row": c.row, "model": MODELS[c.model], "system": SYSTEMS[c.gpu],
           "backend": S.engine_name(c.engine), "tp": c.tp,
           "ep": c.ep if S.arch(c.model).experts else 0, "adp": c.attention_dp,
           "batch": max(1, math.ceil(conc / replicas)), "isl": c.isl, "osl": c.osl,
           "gemm": QUANT[c.precision], "kv": "bfloat16" if kv == "bf16" else "fp8"}
    if S.arch(c.model).experts:
        # the experts at the weights' precision too (AIConfigurator's default is BF16)
        out["moe"] = MOE_QUANT.get((c.model, c.precision), QUANT[c.precision])
    return out


def run_peer(rows: list[dict], cache: str | None = None) -> dict[str, dict]:
    """The peer's answer for every row: from ``cache`` (JSON lines of a previous run, with the
    inputs they answered) where its inputs are the same, the rest run now and added to it."""
    done: dict[str, dict] = {}
    if cache and Path(cache).exists():
        for line in Path(cache).read_text(encoding="utf-8").splitlines():
            d = json.loads(line)
            done[json.dumps(d["input"], sort_keys=True)] = d
    todo = [r for r in rows if json.dumps(r, sort_keys=True) not in done]
    if todo:
        py = PEER / ".venv" / "bin" / "python"
        if not py.exists():
            sys.exit(f"{py}: run bash {PEER / 'setup.sh'} first")
        text = "".join(json.dumps(r) + "\n" for r in todo)
        out = subprocess.run([str(py), str(PEER / "run_rows.py")], input=text, text=True,
                             capture_output=True, check=True).stdout
        answers = {d["row"]: d for d in map(json.loads, out.splitlines()) if d}
        for r in todo:
            done[json.dumps(r, sort_keys=True)] = {"input": r, **answers[r["row"]]}
        if cache:
            Path(cache).write_text("".join(json.dumps(d, sort_keys=True) + "\n"
                                           for _, d in sorted(done.items())), encoding="utf-8")
    return {r["row"]: done[json.dumps(r, sort_keys=True)] for r in rows}


def topoc_loso(path: str) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(row, metric) -> (analytic error, simulated error, 1,000-request error) from a
    ``--loso`` output (its every-held-out-check lines: 7 fields, or 8 with the simulated loop
    run as the row's client runs it last). The simulated error is the loop as the row's client
    runs it (the 8th field, `--loso`'s headline TTFT) where the line has it, else the
    1,000-request loop's (the 7th)."""
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        f = line.split()
        if len(f) in (7, 8) and f[0].startswith("r") and \
                f[2] in ("throughput", "tpot", "ttft"):
            out[(f[0], f[2])] = (float(f[4].rstrip("%")) / 100,
                                 float(f[-1].rstrip("%")) / 100,
                                 float(f[6].rstrip("%")) / 100)
    return out


def peer_factors(rows: list[dict]) -> dict[str, float]:
    """The queueing factor AIConfigurator's agg TTFT applies to each row (run_rows.py
    ``--factors``: its backend's hook, no kernel table loaded)."""
    py = PEER / ".venv" / "bin" / "python"
    if not py.exists():
        sys.exit(f"{py}: run bash {PEER / 'setup.sh'} first")
    text = "".join(json.dumps(r) + "\n" for r in rows)
    out = subprocess.run([str(py), str(PEER / "run_rows.py"), "--factors"], input=text,
                         text=True, capture_output=True, check=True).stdout
    return {d["row"]: d["queuing_factor"] for d in map(json.loads, out.splitlines()) if d}


def why(table: list, peer: dict[str, dict], factors: dict[str, float]) -> None:
    """Every loaded TTFT check: the factor AIConfigurator used and the one the row needs (see
    the module's docstring), topoc's errors beside its; then the medians by table."""
    print("why: row  table  conc  measured  AIConfigurator prefill step  factor used  "
          "factor needed  | errors: topoc analytic  simulated 1,000 requests  as its client  "
          "AIConfigurator")
    groups: dict[str, list] = {}
    for c, a, sim, thousand, e, _ in table:
        if c.metric != "ttft" or S.kind(c) != "ttft loaded" or e is None:
            continue
        qf = factors[c.row]
        step = peer[c.row]["ttft_s"] / qf
        need = c.measured / step
        name = f"{c.model} TP{c.tp}"
        groups.setdefault(name, []).append((qf, need, a, thousand, sim, e))
        print(f"why: {c.row}  {name} {c.isl}/{c.osl}  {c.concurrency}  {c.measured:.4g} s  "
              f"{step * 1e3:.1f} ms  {qf:.2f}  {need:.2f}  |  {a:+.0%}  {thousand:+.0%}  "
              f"{sim:+.0%}  {e:+.0%}")
    print()

    def med(xs: list[float]) -> float:
        xs = sorted(xs)
        n = len(xs)
        return (xs[n // 2] + xs[(n - 1) // 2]) / 2
    for name, g in sorted(groups.items()):
        print(f"why by table {name:16s} checks {len(g):2d}  factor used "
              f"{med([x[0] for x in g]):.2f}  needed {med([x[1] for x in g]):.2f} (range {min(x[1] for x in g):.2f}-"
              f"{max(x[1] for x in g):.2f})  median |error| topoc analytic "
              f"{S.median_abs([x[2] for x in g]):.1%}  simulated 1,000 requests "
              f"{S.median_abs([x[3] for x in g]):.1%}  as its client "
              f"{S.median_abs([x[4] for x in g]):.1%}  AIConfigurator "
              f"{S.median_abs([x[5] for x in g]):.1%}")
    print()


def peer_value(c: S.Check, d: dict) -> float | None:
    if "error" in d:
        return None
    replicas = max(1, c.gpus // (c.tp * c.pp))
    if c.metric == "throughput":
        total = d["tok_s"] * replicas
        return total / c.gpus if c.per_gpu else total
    return d["tpot_s"] if c.metric == "tpot" else d["ttft_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topoc", required=True, help="benchmarks/infer_validation.py --loso output")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--peer-cache", metavar="FILE", help="JSON lines of the peer's answers, "
                    "read and extended (AIConfigurator takes minutes for every row)")
    ap.add_argument("--why", action="store_true", help="for every loaded TTFT check, the "
                    "queueing factor AIConfigurator applied and the one the row needs")
    args = ap.parse_args()
    checks = S.checks()
    first = {}
    for c in checks:
        first.setdefault(c.row, c)
    rows = [peer_input(c) for c in first.values() if c.model in MODELS]
    peer = run_peer(rows, args.peer_cache)
    ours = topoc_loso(args.topoc)
    table = []
    for c in checks:
        d = peer.get(c.row)
        p = peer_value(c, d) if d else None
        mine = ours.get((c.row, c.metric))
        if mine is None:
            continue
        table.append((c, mine[0], mine[1], mine[2], None if p is None else p / c.measured - 1,
                      (d or {}).get("error", "")))
    if args.markdown:
        print("| row | metric | GPU | model | tp | isl/osl | conc | topoc (LOSO) | "
              "topoc simulated | AIConfigurator |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for c, a, sim, _, e, reason in table:
        peer_cell = f"{e:+.0%}" if e is not None else f"n/a ({reason})"
        cells = [c.row, c.metric, c.gpu, c.model, str(c.tp), f"{c.isl}/{c.osl}",
                 str(c.concurrency), f"{a:+.0%}", f"{sim:+.0%}", peer_cell]
        print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(cells))
    print()
    if args.why:
        why(table, peer, peer_factors([r for r in rows if r["row"] in peer]))

    def kind(c: S.Check, metric: str) -> bool:
        # "ttft loaded, consistent": the protocol-consistent checks of that kind (issue 43's
        # alternative TTFT target, benchmarks/infer_validation.py ``consistent``); "either":
        # consistent with the client's request count or with its 10 s time windows
        name, _, only = metric.partition(", ")
        return (S.kind(c) if " " in name else c.metric) == name and \
            (not only or V.consistent(c, only == "either"))
    for metric in ("throughput", "tpot", "ttft", "ttft idle", "ttft loaded",
                   "ttft, consistent", "ttft loaded, consistent", "ttft, either",
                   "ttft loaded, either"):
        both = [(a, sim, e) for c, a, sim, _, e, _ in table if e is not None and kind(c, metric)]
        alone = sum(1 for c, *_ in table if kind(c, metric))
        print(f"side by side {metric:23s} checks {len(both):3d} of {alone:3d}  median |error| "
              f"topoc {S.median_abs([x[0] for x in both]):.1%}  topoc simulated "
              f"{S.median_abs([x[1] for x in both]):.1%}  AIConfigurator "
              f"{S.median_abs([x[2] for x in both]):.1%}")
    missing = sorted({reason for *_, e, reason in table if e is None})
    for reason in missing:
        print(f"AIConfigurator has no answer: {reason}")


if __name__ == "__main__":
    main()
