"""The blast radius as a heat map on the diagram (``topoc render --heat blast``, the HTML
report's diagram with ``--blast``): each drawn box filled by what the worst single failure in it
costs, against the worst of the system, on the blast table's heat scale.

A failure domain is drawn in the box that shows it: a device in its own box or the box that
holds it (a folded machine, a rack), an instance (host, NVSwitch tray, rack) in its own box or
the nearest drawn box above it. An instance whose devices are drawn one by one (a host in the
physical view) has no box of its own; its devices carry their own failures' colours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..compiler.analysis.blast import Domain
from .blast_table import HEAT, heat as heat_step, short_cost

#: What the legend calls the scale's steps.
STEPS = ("up to 25 %", "to 50 %", "to 75 %", "to 100 %")


def heat_map(found: Sequence[Domain]) -> tuple[tuple[str, float, str], ...]:
    """Every failure domain's (id, cost of one failure, tag): the cost is the class's impact
    for one member (the share of the reference all-reduce's throughput it takes, plus the
    share of GPUs lost), the tag what the box says ('x1.969', '-8 GPUs')."""
    out = []
    for d in found:
        one = d.impact / d.members if d.members else 0.0
        tag = short_cost(d)
        out += [(i, one, tag) for i in (d.ids or (d.example,))]
    return tuple(sorted(out))


def heat_colors(box: Callable[[str], str | None], heat: Sequence[tuple[str, float, str]]
                ) -> dict[str, tuple[str, str]]:
    """Drawn box -> (fill, tag) for the worst single failure it shows, ``box`` being the view's
    ``render.box_finder`` (boxes where no failure costs anything are left as drawn)."""
    worst_in: dict[str, tuple[float, str]] = {}
    for ident, cost, tag in heat:
        # box_finder gives a device the box that holds it and an instance its own box or a
        # drawn one above it, never a part of it: every box shows the whole failure
        b = box(ident)
        if b is None:
            continue
        if b not in worst_in or cost > worst_in[b][0]:
            worst_in[b] = (cost, tag)
    worst = max((c for c, _ in worst_in.values()), default=0.0)
    out = {}
    for b, (cost, tag) in worst_in.items():
        step = heat_step(cost, worst)
        if step:
            out[b] = (HEAT[step], tag)
    return out


def legend_rows() -> list[str]:
    """The legend's rows for the heat fill (HTML-like table rows for Graphviz)."""
    cells = "".join(f'<TD BGCOLOR="{c}">{s}</TD>' for c, s in zip(HEAT[1:], STEPS))
    return ['<TR><TD COLSPAN="2" ALIGN="LEFT">fill: the worst single failure in the box '
            '(topoc blast), against the worst;</TD></TR>',
            '<TR><TD COLSPAN="2" ALIGN="LEFT">the kind\'s colour: no measurable cost</TD></TR>',
            f'<TR><TD COLSPAN="2"><TABLE BORDER="0" CELLSPACING="0"><TR>{cells}</TR></TABLE>'
            '</TD></TR>']
