"""``topoc plan --compare``: where a given strategy ranks in the search and which terms of its
step separate it from the best (compute, bubble, exposed communication by group kind, memory).
"""

from __future__ import annotations

import attrs

from ..training.model import RECOMPUTE, ZERO
from .plan import CP_FLOOR, MICROBATCHES, ZERO_STAGES, PlanResult, PlanRow

#: What ``--compare`` accepts, with the type of each value.
KEYS = {"tp": int, "cp": int, "ep": int, "dp": int, "pp": int, "microbatch": int,
        "recompute": str, "interleave": int, "sequence_parallel": bool, "zero": int}


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def parse_sizes(text: str) -> dict[str, object]:
    """``tp=8,pp=4,dp=2`` -> {"tp": 8, "pp": 4, "dp": 2}; ValueError naming the bad part (an
    unknown or repeated key, a size below 1, a recompute mode or ZeRO stage that does not
    exist, a sequence_parallel that is neither on nor off)."""
    out: dict[str, object] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        key, value = key.strip().replace("-", "_"), value.strip()
        if not sep or key not in KEYS:
            raise ValueError(f"'{part.strip()}': give KEY=VALUE with KEY one of "
                             f"{', '.join(KEYS)}")
        if key in out:
            raise ValueError(f"'{part.strip()}': {key} is given twice")
        kind = KEYS[key]
        if kind is bool:
            if value.lower() not in _TRUE + _FALSE:
                raise ValueError(f"'{part.strip()}': {key} is on or off (1 or 0)")
            out[key] = value.lower() in _TRUE
        elif kind is str:
            if value not in RECOMPUTE:
                raise ValueError(f"'{part.strip()}': {key} is one of {', '.join(RECOMPUTE)}")
            out[key] = value
        else:
            try:
                out[key] = int(value)
            except ValueError:
                raise ValueError(f"'{part.strip()}': {key} takes a whole number") from None
            low = 0 if key == "zero" else 1
            if key == "zero" and out[key] not in ZERO or out[key] < low:
                raise ValueError(f"'{part.strip()}': {key} is " +
                                 ("one of " + ", ".join(map(str, ZERO)) if key == "zero"
                                  else "at least 1"))
    return out


def check_sizes(wanted: dict[str, object], gpus: int, seq: int,
                fixed: dict[str, object] | None = None) -> str | None:
    """Why a ``--compare`` request cannot be among the candidates of a search on ``gpus`` GPUs
    with ``fixed`` dimensions (a sequence of ``seq`` tokens), or None: a value that contradicts
    a fixed one, sizes whose product is not the GPU count (or does not divide it), context
    parallelism below the search's floor when ``cp`` is not fixed, a ZeRO stage or micro-batch
    the search does not try unless fixed."""
    fixed = fixed or {}
    for k, v in wanted.items():
        if fixed.get(k) is not None and fixed[k] != v:
            return (f"{k}={v} contradicts the search's fixed {k} = {fixed[k]}: every "
                    f"candidate has {k} = {fixed[k]}")
    dims = [k for k in ("tp", "cp", "dp", "pp") if k in wanted]
    product = 1
    for k in dims:
        product *= wanted[k]
    shown = " x ".join(dims)
    if len(dims) == 4 and product != gpus:
        return f"{shown} = {product:,}, but the search places {gpus:,} GPUs"
    if gpus % product:
        return f"{shown} = {product:,} does not divide the search's {gpus:,} GPUs"
    cp = wanted.get("cp")
    if cp and fixed.get("cp") is None and cp > 1 and seq // cp < CP_FLOOR:
        return (f"cp={cp} leaves {seq // cp:,} tokens of the {seq:,}-token sequence per rank, "
                f"below the search's floor of {CP_FLOOR:,}, so the search does not try it; "
                f"--cp {cp} searches cp = {cp} only (#1 is then the best with it)")
    for key, flag, searched in (("zero", "--zero", ZERO_STAGES),
                                ("microbatch", "--microbatch", MICROBATCHES)):
        if key in wanted and fixed.get(key) is None and wanted[key] not in searched:
            return (f"{key}={wanted[key]} is not searched (only "
                    f"{', '.join(map(str, searched))}); {flag} {wanted[key]} searches {key} = "
                    f"{wanted[key]} only (#1 is then the best with it)")
    return None


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
    """The best-ranked row whose candidate matches every key of ``wanted`` (keys of ``KEYS``;
    ValueError naming any other)."""
    unknown = sorted(set(wanted) - set(KEYS))
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r}: give one of {', '.join(KEYS)}")
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
