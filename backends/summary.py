"""``topoc compile`` (default): a short human summary of the compiled system."""

from __future__ import annotations

from ..compiler.ir.system import System
from ..compiler.ir.summary import summarize
from ..compiler.base.diagnostics import plural
from ..compiler.base.units import BYTES, RATE, human


def render(system: System) -> str:
    """Counts per kind, HBM, NVLink bandwidth, scale-out tiers and bisection, strategies."""
    s = summarize(system)
    kinds = ", ".join(f"{n} {k}" for k, n in s["devices"].items())
    lines = [f"system {system.name}"
             + (f" ({', '.join(f'{k}={v}' for k, v in system.params)})" if system.params else ""),
             f"  devices    {sum(s['devices'].values())}: {kinds}",
             f"  links      {s['links']} ({plural(s['lanes'], 'lane')})"]
    if s["gpus"]:
        per = s["scaleup_bandwidth_per_gpu"]
        lanes = s["nvlink_lanes_per_gpu"]
        per_txt = human(per["min"], RATE) if per["min"] == per["max"] else \
            f"{human(per['min'], RATE)}..{human(per['max'], RATE)}"
        lanes_txt = str(lanes["min"]) if lanes["min"] == lanes["max"] else \
            f"{lanes['min']}..{lanes['max']}"
        # the library's GPU memory is the driver's figure (nvidia-smi's memory.total), not
        # the marketed one: say so, as the totals differ by up to 7 %
        # a GPU that declares no hbm (an NCCL dump or nvidia-smi matrix imported without
        # --gpu) has unknown memory, which a sum would print as 0 B
        unknown = sum(1 for d in system.gpus if d.model.attr("hbm") is None)
        known = s["gpus"] - unknown
        if not known:
            lines.append("  HBM        unknown (the GPU models declare no hbm)")
        else:
            lines.append(f"  HBM        {human(s['hbm_bytes'], BYTES)} over {known} "
                         f"GPU{'s' if known != 1 else ''} (as the driver reports)"
                         + (f"; unknown on {unknown}" if unknown else ""))
        lines.append(f"  NVLink     {human(s['scaleup_bandwidth'], RATE)} both directions "
                     f"({per_txt} and {lanes_txt} lane{'' if lanes_txt == '1' else 's'} per "
                     "GPU)" if s["scaleup_bandwidth"]
                     else "  NVLink     none")
    if s["scaleout_tiers"]:
        tiers = ", ".join(f"tier {k} {human(v, RATE)}" for k, v in s["scaleout_tiers"].items())
        lines.append(f"  scale-out  {tiers} per direction; "
                     f"bisection {human(s['bisection_bandwidth'], RATE)}")
    for p in system.parallels:
        sizes = " ".join(f"{d}={n}" for d, n in p.sizes if n > 1) or "one GPU per group"
        lines.append(f"  parallel   {p.name}: {sizes} (order {'-'.join(p.order)}, "
                     f"{plural(p.microbatches, 'micro-batch')})")
    return "\n".join(lines) + "\n"
