"""The impact of drift on a job (``impact``): a design's parallel strategy costed on the
design and on what the machines report, traffic line by traffic line.

``topoc diff DESIGN LIVE --parallel P --impact`` answers what an operator asks after a diff
found differences: does the mapping still hold (as many GPUs, every TP and EP group still inside
one NVLink domain), how much longer does each traffic line take and over which link, and what
does the step cost. LIVE is any system ``diff`` reads (a ``.topo``, an hwloc or ibnetdiscover
dump, or the design with ``--fail``/``--degrade``); ranks follow each system's GPU order, as a
job launched on it numbers them.
"""

from __future__ import annotations

import attrs

from ..collectives.cost import CostError
from ..ir.groups import rank_groups
from ..ir.system import ParallelStrategy, System
from .strategy import step

#: Group kinds that must stay inside one NVLink domain for a mapping to hold.
NVLINK_BOUND = ("tp", "ep")


@attrs.frozen
class LineImpact:
    """One traffic line before and after: seconds per step and the limiting link."""

    dim: str
    collective: str
    bytes: int
    before: float
    after: float
    link_before: str
    link_after: str

    @property
    def change(self) -> float:
        """after / before (1.0 when the line costs nothing on either)."""
        return self.after / self.before if self.before else 1.0


@attrs.frozen
class Impact:
    """A strategy on the design and on the live system."""

    strategy: str
    valid: bool
    why: str                                  # what breaks the mapping ('' when it holds)
    lines: tuple[LineImpact, ...] = ()
    step_before: float | None = None          # step time, or exposed communication per step
    step_after: float | None = None
    tokens_before: float | None = None        # tokens/s, for a block that names a model
    tokens_after: float | None = None


def _broken(system: System, p: ParallelStrategy) -> str:
    """Why ``p`` cannot run as mapped on ``system`` ('' when it can)."""
    if len(system.gpus) != p.world:
        return (f"it maps {p.world} GPUs and the live system has {len(system.gpus)}: plan "
                "again on what is there (topoc plan)")
    loc = system.locality
    for dim in NVLINK_BOUND:
        for i, ranks in enumerate(rank_groups(p, dim)):
            places = {loc.domain_root[r] or ("island", loc.island[r]) for r in ranks}
            if len(ranks) > 1 and len(places) > 1:
                return (f"{dim}:{i} (ranks {ranks[0]}..{ranks[-1]}) no longer sits in one "
                        "NVLink domain")
    return ""


def _link(flow) -> str:
    return flow.cost.bottleneck_link if flow.cost is not None else "-"


def impact(design: System, live: System, name: str) -> Impact:
    """Strategy ``name`` of ``design`` costed on both systems (KeyError: no such block)."""
    p = design.parallel(name)
    why = _broken(live, p)
    if why:
        return Impact(name, False, why)
    try:
        before, after = step(design, p), step(live, p)
    except CostError as exc:
        return Impact(name, False, f"the live system cannot carry it: {exc}")
    lines = tuple(LineImpact(a.dim, a.collective, a.bytes, a.per_step, b.per_step, _link(a),
                             _link(b)) for a, b in zip(before.flows, after.flows))
    return Impact(name, True, "", lines, before.per_step, after.per_step,
                  before.tokens_per_s, after.tokens_per_s)
