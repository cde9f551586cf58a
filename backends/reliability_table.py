"""``topoc reliability`` output: the rates used with their source, each component's share of
the interruptions, the MTBF, the checkpoint interval and the goodput, as text or JSON."""

from __future__ import annotations

import json

from ..compiler.analysis.reliability import KINDS, Estimate

FORMATS = ("text", "json")
SCHEMA = "topoc.reliability/1"


def _duration(seconds: float) -> str:
    """A time in the unit that reads best: 45 s, 39.8 min, 3.09 h, 2.4 days."""
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} days"


def _n(count: int, noun: str) -> str:
    """``1 host``, ``2,048 hosts``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _sig(x: float) -> str:
    """Three significant digits, trailing zeros kept (6.00, 0.121, 233)."""
    return f"{x:#.3g}".rstrip(".")


def text(est: Estimate, title: str) -> str:
    """The human-readable report."""
    job, first = est.exposure, est.rates.first
    fleet = first.fleet
    lines = [title]
    scope = (f"more GPUs than the file's {est.file_gpus:,}: counted at its ratios"
             if job.extrapolated else f"the file's first {_n(job.gpus, 'GPU')}")
    switches = (f", {job.switches:,} fabric switch{'' if job.switches == 1 else 'es'} next to "
                "its NICs") if job.switches else ""
    lines.append(f"job: {_n(job.gpus, 'GPU')}, {_n(job.nics, 'compute NIC')}, "
                 f"{_n(job.hosts, 'host')} ({scope}{switches})")
    lines.append(f"rates: {est.rates.study}: {first.source}, {first.where}, {first.url}")
    lines.append(f"  measured on {fleet.gpus:,} {first.gpu_model} GPUs ({fleet.hosts:,} hosts) "
                 f"over {first.days:g} days; {est.rates.count():g} failures counted")
    missing = [KINDS[k].what for k in KINDS if KINDS[k].hardware and k != "node"
               and k not in est.rates.kinds]
    if "node" not in est.rates.kinds and missing:
        lines.append(f"  not counted by this study, so not charged: {'; '.join(missing)}")
    lines.append("")
    width = max(len(KINDS[t.kind].what) for t in est.terms) if est.terms else 10
    lines.append(f"{'component':<{width}}  {'devices':>9}  {'per device-day':>14}  "
                 f"{'per day':>9}")
    for t in est.terms:
        lines.append(f"{KINDS[t.kind].what:<{width}}  {t.devices:>9,}  {t.rate:>14.3e}  "
                     f"{t.per_day:>9.4f}")
    lines.append(f"{'total':<{width}}  {'':>9}  {'':>14}  {est.per_day:>9.4f}")
    lines.append("")
    lines.append(f"expected interruptions: {_sig(est.per_day)} a day "
                 f"({_sig(est.hardware_per_day)} hardware), {_sig(est.per_day * 30)} in 30 days")
    lines.append(f"MTBF: {_duration(est.mtbf)}" if est.per_day else
                 "MTBF: no failure rate applies to this job")
    if est.checkpoint is None:
        lines.append("checkpoint interval and goodput: give --checkpoint-cost SECONDS "
                     "(and --restart SECONDS)")
    else:
        lines.append(f"checkpoint {est.checkpoint:g} s, restart {est.restart:g} s:")
        if est.daly is not None:
            lines.append(f"  checkpoint every {_duration(est.daly)} of work (Daly 2006; "
                         f"Young 1974: {_duration(est.young)})")
        lines.append(f"  goodput: {100 * est.goodput:.1f} % of wall time is useful work")
    return "\n".join(lines) + "\n"


def render(est: Estimate, fmt: str, title: str) -> str:
    """``fmt`` is one of FORMATS."""
    if fmt == "json":
        doc = {"schema": SCHEMA, "format": SCHEMA, **est.to_json()}
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    return text(est, title)
