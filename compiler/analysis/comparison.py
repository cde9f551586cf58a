"""``topoc plan --compare``: where a given strategy ranks in the search and which terms of its
step separate it from the best (compute, bubble, exposed communication by group kind, memory).
"""

from __future__ import annotations

import attrs

from ..training.model import RECOMPUTE, ZERO
from .plan import PlanResult, PlanRow

#: What ``--compare`` accepts, with the type of each value.
KEYS = {"tp": int, "cp": int, "ep": int, "dp": int, "pp": int, "microbatch": int,
        "recompute": str, "interleave": int, "sequence_parallel": bool, "zero": int}


def parse_sizes(text: str) -> dict[str, object]:
    """``tp=8,pp=4,dp=2`` -> {"tp": 8, "pp": 4, "dp": 2}; ValueError naming the bad part: a
    key given twice, a size below 1 (a ZeRO stage not in 0..3), a recompute that is none of
    none/selective/full, a sequence_parallel that is not 0/1/true/false."""
    out: dict[str, object] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        key = key.strip().replace("-", "_")
        value = value.strip()
        if not sep or key not in KEYS:
            raise ValueError(f"'{part.strip()}': give KEY=VALUE with KEY one of "
                             f"{', '.join(KEYS)}")
        if key in out:
            raise ValueError(f"'{key}' is given twice; give each key once")
        kind = KEYS[key]
        if kind is bool:
            truth = {"1": True, "true": True, "yes": True, "on": True,
                     "0": False, "false": False, "no": False, "off": False}.get(value.lower())
            if truth is None:
                raise ValueError(f"'{part.strip()}': {key} takes true or false (1 or 0)")
            out[key] = truth
        elif kind is str:
            if value not in RECOMPUTE:
                raise ValueError(f"'{part.strip()}': {key} is one of {', '.join(RECOMPUTE)}")
            out[key] = value
        else:
            try:
                number = int(value)
            except ValueError:
                raise ValueError(f"'{part.strip()}': {key} takes a whole number") from None
            if key == "zero" and number not in ZERO:
                raise ValueError(f"'{part.strip()}': zero is one of "
                                 f"{', '.join(map(str, ZERO))}")
            if key != "zero" and number < 1:
                raise ValueError(f"'{part.strip()}': {key} is at least 1")
            out[key] = number
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
            # the largest difference first, ties by name (a set's order varies per process)
            names = sorted(set(mine) | set(top), key=lambda n: (-abs(mine.get(n, 0.0) -
                                                                  top.get(n, 0.0)), n))
            terms = tuple((n, mine.get(n, 0.0), top.get(n, 0.0)) for n in names)
            return Comparison(tuple(sorted(wanted.items())), r, i + 1, best, terms)
    return Comparison(tuple(sorted(wanted.items())), None, None, best, ())
