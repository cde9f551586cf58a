"""``topoc report``: a strategy's training step analysed (``compiler.strategy``), as text or
Markdown."""

from __future__ import annotations

from ..compiler.analysis.strategy import StepReport, efficiency, speedup
from ..compiler.training.memory import MEMORY_MARGIN, OVER, TIGHT, fit
from ..compiler.training.model import parameters
from ..compiler.base.diagnostics import plural
from ..compiler.base.units import human_size


def seconds(t: float | None) -> str:
    """A duration with a readable unit: '227.5 us', '36.4 ms', '25.00 s'."""
    if t is None:
        return "-"
    if t == 0:
        return "0 s"
    if t < 0:                   # a difference (--compare): the unit of its size
        return "-" + seconds(-t)
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    if t < 1:
        return f"{t * 1e3:.1f} ms"
    return f"{t:.2f} s"


def _rows(r: StepReport) -> list[list[str]]:
    rows = []
    for f in r.flows:
        c = f.cost
        rows.append([f.dim, f.collective, human_size(f.bytes), str(f.count),
                     f"{f.groups} x {f.group_size}", ", ".join(f.classes) or "-",
                     f"{c.algorithm}/{c.protocol}" if c else "-",
                     seconds(c.time) if c else "-", seconds(f.per_step) if c else "-",
                     f.overlap + (f" ({f.note})" if f.note else "")])
    return rows


HEAD = ["group", "collective", "bytes/call", "calls/step", "groups x ranks", "links crossed",
        "algorithm", "time/call", "time/step", "overlaps compute"]


def _training(r: StepReport) -> list[str]:
    """The model's lines: what is trained, the compute split, memory per GPU, MFU."""
    t = r.strategy.training
    if t is None:
        return []
    m = t.model
    opts = [f"recompute {t.recompute}"]
    opts += [name for name, on in (("sequence parallel", t.sequence_parallel),
                                   ("distributed optimizer", t.distributed_optimizer),
                                   ("overlapped gradient reduction", t.overlap),
                                   ("flash attention", t.flash_attention)) if on]
    if t.interleave > 1:
        opts.append(f"{t.interleave} model chunks per stage")
    params = parameters(m)
    out = [f"model {m.name}: {params['total'] / 1e9:.1f} B parameters "
           f"({params['active'] / 1e9:.1f} B active), batch {t.batch} x {m.seq} tokens, "
           f"micro-batch {t.microbatch}; " + ", ".join(opts)]
    d = r.detail
    if d is not None:
        # every term of the time (Compute's "of time" fields), so the sum is the total; the
        # efficiency is over the GEMMs' and attention's time together, as the model counts it
        kernels = f"GEMMs {seconds(d.gemm_time)}" + (
            f" + attention {seconds(d.attention_time)}" if d.attention_time else "")
        rest = "".join(f" + {name} {seconds(t)}" for name, t in (
            ("launches", d.launch_time), ("CPU offload", d.offload_time),
            ("per layer and micro-batch", d.layer_time)) if t)
        out.append(f"compute per step and GPU: {seconds(d.time)} = {kernels} "
                   f"({d.hardware_flops / 1e15:.1f} PFLOP, recompute included, at "
                   f"{d.efficiency:.0%} of "
                   f"{r.peak / 1e12:.0f} TFLOP/s) + element-wise {seconds(d.memory_time)}{rest}")
    mem = r.memory
    gb = 1e9
    line = (f"memory per GPU ({mem.stage} pipeline stage): weights {mem.weights / gb:.1f} GB + "
            f"gradients {mem.gradients / gb:.1f} GB + optimizer {mem.optimizer / gb:.1f} GB + "
            f"activations {mem.activations / gb:.1f} GB + runtime {mem.reserve / gb:.1f} GB = "
            f"{mem.total / gb:.1f} GB")
    if r.hbm:
        line += f" of {r.hbm / gb:.0f} GB: " + memory_verdict(mem.total, r.hbm)
    out.append(line)
    if r.mfu is not None:
        out.append(f"MFU {r.mfu:.1%}, {r.tokens_per_s:,.0f} tokens/s "
                   f"({r.tokens_per_s / r.gpus:,.0f} per GPU)")
    return out


def _summary(r: StepReport) -> list[str]:
    p = r.strategy
    stages, micro = p.size("pp"), p.microbatches
    chunks = p.training.interleave if p.training else 1
    if chunks > 1:
        head = (f"pipeline bubble: (P-1)/(V*M+P-1) = {stages - 1}/{chunks * micro + stages - 1} = "
                f"{r.bubble:.1%} (P = {plural(stages, 'stage')}, M = "
                f"{plural(micro, 'micro-batch')}, V = {chunks} model chunks per stage)")
    else:
        head = (f"pipeline bubble: (P-1)/(M+P-1) = {stages - 1}/{micro + stages - 1} = "
                f"{r.bubble:.1%} (P = {plural(stages, 'stage')}, M = "
                f"{plural(micro, 'micro-batch')})")
    out = _training(r) + [head,
           f"communication per step: {seconds(r.comm_total)} in all, {seconds(r.comm)} exposed"]
    if r.compute is None:
        hideable = sum(f.per_step for f in r.flows if f.hidden)
        if hideable:
            out[-1] += (f" until a compute time is given; {seconds(hideable)} of it can overlap "
                        "the backward pass")
        out.append("no 'compute' time in the parallel block: add 'compute = 25 s' (per step, "
                   "per GPU) for T_total, speedup and efficiency")
        return out
    total = r.total
    out.append(f"T_total = T_compute + T_comm + T_idle = {seconds(r.compute)} + "
               f"{seconds(r.comm)} + {seconds(r.idle)} = {seconds(total)}")
    source = "baseline" if r.baseline is not None else "compute x N, a perfect split"
    s, e = speedup(r.t1, total), efficiency(r.t1, total, r.gpus)
    out.append(f"speedup S = T1 / T_total = {seconds(r.t1)} / {seconds(total)} = {s:.2f} "
               f"(T1 from {source}); efficiency E = S / N = {s:.2f} / {r.gpus} = {e:.1%}")
    return out


def _title(r: StepReport, system_name: str) -> str:
    p = r.strategy
    sizes = " ".join(f"{d}={n}" for d, n in p.sizes if n > 1) or "one GPU per group"
    return (f"strategy '{p.name}' on {system_name}: {r.gpus} GPUs, {sizes}, order "
            f"{', '.join(d for d in p.order if p.size(d) > 1) or '-'}")


def text(r: StepReport, system_name: str) -> str:
    """Plain text: a header, the traffic table, the step figures and the warnings."""
    rows = [HEAD] + _rows(r)
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEAD))]
    lines = [_title(r, system_name), "", "traffic per training step (one group of every distinct "
             "kind costed, the slowest shown):"]
    for row in rows:
        lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    lines.append("")
    lines += _summary(r)
    lines.append("")
    lines.append("warnings:" if r.warnings else "warnings: none")
    lines += [f"  - {w}" for w in r.warnings]
    return "\n".join(lines) + "\n"


def markdown(r: StepReport, system_name: str) -> str:
    """GitHub-flavoured Markdown: the same content with a table."""
    lines = [f"## {_title(r, system_name)}", "",
             "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(r)]
    lines.append("")
    lines += [f"- {line}" for line in _summary(r)]
    lines += ["", "### Warnings", ""]
    lines += [f"- {w}" for w in r.warnings] or ["none"]
    return "\n".join(lines) + "\n"


def render(r: StepReport, system_name: str, fmt: str = "text") -> str:
    """The report in ``fmt`` (text or markdown)."""
    return markdown(r, system_name) if fmt == "markdown" else text(r, system_name)


def memory_verdict(total: float, hbm: float) -> str:
    """'fits (62%)'; 'fits (94%), tight: ...' or 'tight: 2.7 GB over HBM, ...' inside the memory
    model's uncertainty either side of HBM (``memory.band``); 'does NOT fit, 40.1 GB over'
    only beyond it."""
    kind = fit(total, hbm, MEMORY_MARGIN)
    within = f"within the memory model's {MEMORY_MARGIN:.0%} uncertainty"
    if kind == OVER:
        return (f"does NOT fit, {(total - hbm) / 1e9:.1f} GB over (more than the memory "
                f"model's {MEMORY_MARGIN:.0%} uncertainty)")
    if kind == TIGHT and total > hbm:
        return f"tight: {(total - hbm) / 1e9:.1f} GB over HBM, {within}, so it may run"
    return f"fits ({total / hbm:.0%})" + (f", tight: {within}" if kind == TIGHT else "")
