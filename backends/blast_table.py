"""``topoc blast``'s outputs: the ranked table (text) and the ``topoc.blast/1`` document."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

from ..compiler.analysis.blast import Domain
from ..compiler.base.diagnostics import plural
from ..compiler.base.units import BYTES, RATE, human

SCHEMA = "topoc.blast/1"


def rows(found: Sequence[Domain]) -> list[dict]:
    """One JSON row per class of failure domains, in rank order."""
    return [{"domain": d.what, "example": d.example, "members": d.members,
             "gpus_lost": d.gpus_lost, "bandwidth_lost": dict(d.bandwidth_lost),
             "connected": d.connected, "allreduce_before": d.time_before,
             "allreduce_after": d.time_after, "slowdown": d.slowdown,
             "step_before": d.step_before, "step_after": d.step_after, "replan": d.replan,
             "impact": round(d.impact, 6)} for d in found]


def document(system_name: str, gpus: int, size: int, parallel: str | None,
             found: Sequence[Domain]) -> str:
    """The JSON document (docs/contracts.md)."""
    doc = {"schema": SCHEMA, "system": system_name, "gpus": gpus, "size": size,
           "parallel": parallel, "domains": rows(found)}
    if _parts(found) > 1:       # the healthy system is already split (docs/contracts.md)
        doc["parts"] = _parts(found)
    return json.dumps(doc, indent=1) + "\n"


def _parts(found: Sequence[Domain]) -> int:
    """The healthy system's parts (GPUs no link joins): 1 when it is connected."""
    return found[0].parts_before if found else 1


def _allreduce(d: Domain) -> str:
    """The reference all-reduce after the failure: 'x1.042', 'partitioned', 'no GPU left'."""
    if d.gpus_total and d.gpus_lost == d.gpus_total:
        return "no GPU left"
    if not d.connected:
        return "partitioned"
    return "-" if d.slowdown is None else f"x{d.slowdown:.3f}"


def short_cost(d: Domain) -> str:
    """What one failure of the class costs, in a few characters for a box of the diagram:
    the GPUs it takes ('-8 GPUs'), else the all-reduce after it ('x1.969', 'partitioned')."""
    if d.gpus_lost and d.connected:
        return f"-{d.gpus_lost:,} GPU{'s' if d.gpus_lost != 1 else ''}"
    return _allreduce(d)


def _step(d: Domain) -> str:
    """The strategy's step before and after, or 'replan' when it lost GPUs."""
    if d.replan:
        return "replan"
    if d.step_after is not None and d.step_before is not None:
        return f"{d.step_before:.3f}->{d.step_after:.3f} s"
    return "-"


def _lost(d: Domain) -> str:
    return ", ".join(f"{cls} {human(v, RATE)}" for cls, v in d.bandwidth_lost) or "none"


#: The heat scale: a class's impact as a share of the largest, in five steps from none to the
#: worst (light to dark red; text dark enough to read on each).
HEAT = ("", "#fde0dd", "#fcbba1", "#fb6a4a", "#cb181d")


def heat(impact: float, worst: float) -> int:
    """The step of ``HEAT`` for an impact against the worst class's: 0 for none, 4 for the
    worst quarter."""
    if impact <= 0 or worst <= 0:
        return 0
    return min(4, 1 + int(4 * impact / worst - 1e-9))


def html_section(found: Sequence[Domain], size: int, parallel: str | None) -> str:
    """The HTML report's blast radius section (``topoc report --format html --blast``): the
    ranked classes as ``topoc blast`` prints them, each row coloured by its impact against the
    worst class's (the heat scale), with a legend."""
    worst = max((d.impact for d in found), default=0.0)
    head = ("#", "domain", "members", "example", "GPUs lost", "all-reduce", "step",
            "bandwidth lost", "impact")
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = []
    for i, d in enumerate(found, 1):
        step = heat(d.impact, worst)
        tone = f' style="background:{HEAT[step]}{";color:#fff" if step == 4 else ""}"' \
            if step else ""
        row = (str(i), d.what, f"{d.members:,}", d.example, f"{d.gpus_lost:,}", _allreduce(d),
               _step(d), _lost(d), f"{d.impact:.3f}")
        body.append(f'<tr class="heat{step}"{tone}>'
                    + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
    legend = " ".join(f'<span style="background:{c}{";color:#fff" if n == 4 else ""};'
                      f'padding:0 .5em">{label}</span>' for n, (c, label) in enumerate(zip(
                          HEAT[1:], ("up to 25 %", "to 50 %", "to 75 %", "to 100 %")), 1))
    what = f"; step time of '{html.escape(parallel)}' before and after" if parallel else ""
    return (f"<p>Every class of failure domains the file implies (alike domains evaluated once), "
            f"ranked by impact: the share of a world all-reduce of "
            f"{html.escape(human(size, BYTES, binary=True))} one failure takes away (1 when the "
            f"survivors are partitioned) plus the share of GPUs lost, times the members{what}. "
            f"Colour: impact against the worst class's. {legend}</p>"
            f'<div class="scroll"><table><tr>{cells}</tr>{"".join(body)}</table></div>')


def table(system_name: str, gpus: int, size: int, parallel: str | None,
          found: Sequence[Domain]) -> str:
    """The ranked text table."""
    lines = [f"blast radius of {system_name}: {plural(gpus, 'GPU')}; reference: world "
             f"all-reduce of {human(size, BYTES, binary=True)}"
             + (f"; strategy '{parallel}' (step time, or exposed communication per step)"
                if parallel else ""),
             "each row: a class of alike domains, x N members (the members column), costed on "
             "one (the example)",
             *([f"the healthy system is already split into {_parts(found)} parts that no link "
                "joins: no world all-reduce runs on it, and a row says partitioned only when "
                "the failure splits a part"] if _parts(found) > 1 else []),
             f"{'#':<3} {'domain':<14} {'members':>7}  {'example':<34} {'GPUs lost':>9}  "
             f"{'all-reduce':>12}  {'step':>16}  bandwidth lost"]
    for i, d in enumerate(found, 1):
        lines.append(f"{i:<3} {d.what:<14} {d.members:>7}  {d.example:<34} {d.gpus_lost:>9}  "
                     f"{_allreduce(d):>12}  {_step(d):>16}  {_lost(d)}")
    return "\n".join(lines) + "\n"
