"""``topoc plan --compare``: where a given strategy ranks in the search and which terms of its
step separate it from the best (compute, bubble, exposed communication by group kind, memory).
"""

from __future__ import annotations

import attrs

from .plan import PlanResult, PlanRow

#: What ``--compare`` accepts, with the type of each value.
KEYS = {"tp": int, "cp": int, "ep": int, "dp": int, "pp": int, "microbatch": int,
        "recompute": str, "interleave": int, "sequence_parallel": bool, "zero": int}


def parse_sizes(text: str) -> dict[str, object]:
    """``tp=8,pp=4,dp=2`` -> {"tp": 8, "pp": 4, "dp": 2}; ValueError naming the bad part."""
    out: dict[str, object] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in KEYS:
            raise ValueError(f"'{part.strip()}': give KEY=VALUE with KEY one of "
                             f"{', '.join(KEYS)}")
        kind = KEYS[key]
        try:
            out[key] = (value.strip().lower() in ("1", "true", "yes", "on")) if kind is bool \
                else kind(value.strip())
        except ValueError:
            raise ValueError(f"'{part.strip()}': {key} takes a whole number") from None
    return out


@attrs.frozen
class Comparison:
    """The best row matching the request, its rank, and the terms against #1."""

    wanted: tuple[tuple[str, object], ...]
    row: PlanRow | None
    rank: int | None
    best: PlanRow | None
    terms: tuple[tuple[str, float, float], ...]     # (term, this row, the best), seconds

    @property
    def slower(self) -> float | None:
        """This row's step over the best's, minus one."""
        if self.row is None or self.best is None:
            return None
        return self.row.step_time / self.best.step_time - 1


def _terms(r: PlanRow) -> dict[str, float]:
    out = {"compute": r.compute_time, "bubble": r.bubble_time}
    for dim, t in r.comm_by_dim:
        out[f"exposed {dim}"] = t
    return out


def compare(result: PlanResult, wanted: dict[str, object]) -> Comparison:
    """The best-ranked row whose candidate matches every key of ``wanted``."""
    best = result.rows[0] if result.rows else None
    for i, r in enumerate(result.rows):
        c = r.candidate
        if all(getattr(c, k) == v for k, v in wanted.items()):
            mine, top = _terms(r), _terms(best)
            names = sorted(set(mine) | set(top), key=lambda n: -abs(mine.get(n, 0.0) -
                                                                 top.get(n, 0.0)))
            terms = tuple((n, mine.get(n, 0.0), top.get(n, 0.0)) for n in names)
            return Comparison(tuple(sorted(wanted.items())), r, i + 1, best, terms)
    return Comparison(tuple(sorted(wanted.items())), None, None, best, ())
