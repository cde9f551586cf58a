"""``topoc plan --goodput``: strategies ranked by the tokens a second they deliver once
interruptions, checkpoints and restarts are paid for (docs/reliability.md, docs/plan.md).

A row's goodput tokens/s is its tokens/s times the expected goodput fraction of a job on its
GPU count (``reliability.estimate``: the published failure rates, Daly's checkpoint interval
for the stated checkpoint cost, the restart time). The fraction depends on what the job runs
on (GPUs, hosts, compute NICs), so every candidate of one search, which all use the same GPUs,
shares it: the ranking by goodput then keeps the step-time order and says what each row is
worth after failures. Rows keep ``plan``'s bands (tight rows after the rest).
"""

from __future__ import annotations

import attrs

from ..ir.system import System
from .plan import PlanResult, PlanRow
from .reliability import DEFAULT_RATES, Estimate, estimate


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
        """The plan's bands (not tight first, then tight that fit, then tight over HBM), each
        by goodput tokens/s, highest first, then by the mapping (deterministic)."""
        r = self.row
        return (r.tight, not r.fits, -self.tokens_per_s, r.candidate)

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
