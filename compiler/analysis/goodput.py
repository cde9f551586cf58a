"""``topoc plan --goodput``: strategies ranked by the tokens a second they deliver once
interruptions, checkpoints and restarts are paid for (docs/reliability.md, docs/plan.md).

A row's goodput tokens/s is its tokens/s times the expected goodput fraction of a job on its
GPU count (``reliability.estimate``: the published failure rates, Daly's checkpoint interval
for the stated checkpoint cost, the restart time). The fraction depends on what the job runs
on (GPUs, hosts, compute NICs), so every candidate of one search, which all use the same GPUs,
shares it: the ranking by goodput then keeps the step-time order and says what each row is
worth after failures. Rows keep ``plan``'s bands (rows over HBM after those that fit). Across GPU counts
(``plan --scaling``) the fraction falls as the job grows, so speedup, efficiency and where
adding GPUs stops paying change (``GoodputCurve``).
"""

from __future__ import annotations

import attrs

from ..ir.system import System
from .plan import PlanResult, PlanRow
from .reliability import DEFAULT_RATES, Estimate, estimate
from .scaling import KNEE, Curve, Point


@attrs.frozen
class GoodputRow:
    """One plan row with the goodput fraction of a job on its GPUs."""

    row: PlanRow
    fraction: float

    @property
    def tokens_per_s(self) -> float:
        """Tokens a second of useful work: the row's tokens/s times the goodput fraction."""
        return self.row.tokens_per_s * self.fraction

    @property
    def rank_key(self) -> tuple:
        """The plan's bands (``PlanRow.rank_key``: the rows that fit, tight or not, then the
        tight ones over HBM), each by goodput tokens/s, highest first, then by the mapping
        (deterministic)."""
        r = self.row
        return (not r.fits, -self.tokens_per_s, r.candidate)

    def as_dict(self) -> dict:
        """The plan row with ``goodput`` (the fraction) and ``goodput_tokens_per_s``."""
        return {**self.row.as_dict(), "goodput": self.fraction,
                "goodput_tokens_per_s": self.tokens_per_s}


@attrs.frozen
class GoodputRanking:
    """The rows by goodput tokens/s and the estimates behind them, one per GPU count."""

    rows: tuple[GoodputRow, ...]
    estimates: tuple[tuple[int, Estimate], ...]


def gpus_of(row: PlanRow) -> int:
    """The GPUs a strategy runs on (its shape's world: experts share the dp x cp ranks)."""
    return row.candidate.shape.world


def rank_by_goodput(system: System, result: PlanResult, checkpoint: float,
                    restart: float = 0.0, rates: str = DEFAULT_RATES) -> GoodputRanking:
    """``result``'s rows ranked by goodput tokens/s: each row's tokens/s times the expected
    goodput of a job on its GPU count, checkpointing every ``checkpoint`` seconds of cost at
    Daly's interval and restarting in ``restart`` seconds under the named study's rates
    (``ReliabilityError`` for a study that is not there or negative times)."""
    if checkpoint is None or not checkpoint > 0:
        raise ValueError("a goodput ranking needs a checkpoint cost above 0 seconds")
    found: dict[int, Estimate] = {}
    for r in result.rows:
        n = gpus_of(r)
        if n not in found:
            found[n] = estimate(system, n, checkpoint, restart, rates)
    rows = sorted((GoodputRow(r, found[gpus_of(r)].goodput) for r in result.rows),
                  key=lambda g: g.rank_key)
    return GoodputRanking(tuple(rows), tuple(sorted(found.items())))


@attrs.frozen
class GoodputCurve:
    """A scaling curve with the goodput of a job at each of its GPU counts: throughput,
    efficiency and the knee in goodput tokens/s."""

    curve: Curve
    estimates: tuple[tuple[int, Estimate], ...]

    def fraction(self, gpus: int) -> float:
        """The goodput fraction of a job on ``gpus`` GPUs."""
        return dict(self.estimates)[gpus].goodput

    def tokens_per_s(self, mode: str, p: Point) -> float | None:
        """The mode's best row's goodput tokens/s at ``p`` (None when nothing runs there)."""
        row = getattr(p, mode)
        return None if row is None else row.tokens_per_s * self.fraction(p.gpus)

    def efficiency(self, mode: str, p: Point) -> float | None:
        """The curve's efficiency in goodput tokens/s: its efficiency times the goodput at
        ``p`` over the goodput at the first point with a row."""
        first = next((q for q in self.curve.points if getattr(q, mode)), None)
        e = self.curve.efficiency(mode, p)
        return None if e is None else e * self.fraction(p.gpus) / self.fraction(first.gpus)

    def knee(self, mode: str) -> int | None:
        """The first GPU count whose goodput efficiency is under ``scaling.KNEE`` or whose
        goodput tokens/s do not grow; None when scaling pays all the way."""
        prev = None
        for p in self.curve.points:
            now = self.tokens_per_s(mode, p)
            if now is None:
                continue
            e = self.efficiency(mode, p)
            if e is not None and e < KNEE or prev is not None and now <= prev:
                return p.gpus
            prev = now
        return None


def scaling_goodput(system: System, curve: Curve, checkpoint: float, restart: float = 0.0,
                    rates: str = DEFAULT_RATES) -> GoodputCurve:
    """``curve`` with the goodput of a job at each of its GPU counts (``estimate``)."""
    if checkpoint is None or not checkpoint > 0:
        raise ValueError("a goodput curve needs a checkpoint cost above 0 seconds")
    return GoodputCurve(curve, tuple((p.gpus, estimate(system, p.gpus, checkpoint, restart,
                                                       rates)) for p in curve.points))
