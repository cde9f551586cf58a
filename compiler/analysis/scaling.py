"""``topoc plan --scaling LO..HI``: the best strategy at each GPU count (seed sections 35, 36
and 46). Strong scaling keeps the global batch; weak scaling keeps the batch per GPU (the
global batch grows with the GPUs, from ``batch`` at LO). Speedup S = T_LO / T_N x (work at N
over work at LO) and efficiency E = S / (N / LO); adding GPUs stops paying where the efficiency
falls under ``KNEE`` or the step no longer shortens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from ..ir.system import System, Transformer
from ..training.memory import MEMORY_MARGIN
from ..training.model import Training
from .plan import PlanRow, PlanUsageError, plan, why_empty

#: Parallel efficiency under which more GPUs are reported as no longer paying.
KNEE = 0.5


@attrs.frozen
class Point:
    """One GPU count: the best fitting row of each scaling mode (None: nothing fits or runs)."""

    gpus: int
    strong: PlanRow | None
    weak: PlanRow | None
    weak_batch: int
    strong_why: str | None = None       # why ``strong`` is None (``plan.why_empty``)
    weak_why: str | None = None

    def why(self, mode: str) -> str | None:
        """Why the mode has no row at this count; None when it has one."""
        return self.strong_why if mode == "strong" else self.weak_why


@attrs.frozen
class Curve:
    """The points, ascending, and where strong and weak scaling stop paying."""

    model: str
    batch: int
    points: tuple[Point, ...]

    def speedup(self, mode: str, p: Point) -> float | None:
        """Throughput at ``p`` over throughput at the first point with a row."""
        first = next((q for q in self.points if getattr(q, mode)), None)
        row = getattr(p, mode)
        if first is None or row is None:
            return None
        return row.tokens_per_s / getattr(first, mode).tokens_per_s

    def efficiency(self, mode: str, p: Point) -> float | None:
        """Speedup over the GPU ratio."""
        first = next((q for q in self.points if getattr(q, mode)), None)
        s = self.speedup(mode, p)
        return None if s is None else s / (p.gpus / first.gpus)

    def knee(self, mode: str) -> int | None:
        """The first GPU count whose efficiency is under KNEE or whose throughput does not
        grow; None when scaling pays all the way."""
        prev = None
        for p in self.points:
            e, row = self.efficiency(mode, p), getattr(p, mode)
            if row is None:
                continue
            if e is not None and e < KNEE or prev is not None and \
                    row.tokens_per_s <= prev.tokens_per_s:
                return p.gpus
            prev = row
        return None


def counts(lo: int, hi: int) -> list[int]:
    """LO, 2 LO, 4 LO, ... up to HI (HI itself last when it is not on the ladder)."""
    out, n = [], lo
    while n <= hi:
        out.append(n)
        n *= 2
    if out[-1] != hi:
        out.append(hi)
    return out


def scaling(system: System, model: Transformer, base: Training, lo: int, hi: int,
            fixed: Mapping[str, object] | None = None, jobs: int = 1,
            use_cache: bool = True, hbm: float | None = None,
            margin: float = MEMORY_MARGIN,
            progress: Callable[[int, int], None] | None = None) -> Curve:
    """The best strategy per GPU count for strong and weak scaling (``hbm``: memory per GPU in
    place of the file's, and ``margin``, the memory margin, as ``plan``'s: the best is the
    fastest candidate that fits, tight or not, else the fastest tight one over HBM). ``progress(done, total)`` is called
    with the searches done (two per GPU count) before each and after the last."""
    points = []
    ladder = counts(lo, hi)
    tick = progress or (lambda done, total: None)
    for i, n in enumerate(ladder):
        weak_batch = max(1, base.batch * n // lo)
        rows, why = [], []
        for j, batch in enumerate((base.batch, weak_batch)):
            tick(2 * i + j, 2 * len(ladder))
            try:
                result = plan(system, model, attrs.evolve(base, batch=batch), gpus=n,
                              fixed=fixed, jobs=jobs, use_cache=use_cache, hbm=hbm,
                              margin=margin)
            except PlanUsageError:
                raise
            rows.append(result.rows[0] if result.rows else None)
            why.append(None if result.rows else
                       why_empty(attrs.evolve(base, batch=batch), result, fixed))
        points.append(Point(n, rows[0], rows[1], weak_batch, why[0], why[1]))
    tick(2 * len(ladder), 2 * len(ladder))
    return Curve(model.name, base.batch, tuple(points))
