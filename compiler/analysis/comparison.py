"""``topoc plan --compare``: where a given strategy ranks in the search and which terms of its
step separate it from the best (compute, bubble, exposed communication by group kind, memory).
``detail`` splits the compute term into what the model adds up for it (GEMMs, attention
kernels, element-wise work, the gradient-accumulation passes, synchronous launches) and gives both strategies'
micro-batches a step: a smaller micro-batch shortens the bubble, and pays its per-micro-batch
passes and smaller GEMMs more often.
"""

from __future__ import annotations

import attrs

from ..ir.gpus import GPUFigures
from ..training.model import RECOMPUTE, ZERO, Training
from .plan import CP_FLOOR, MICROBATCHES, ZERO_STAGES, PlanResult, PlanRow, strategy_for

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
    #: micro-batches a step of this row and of the best (``detail``; None before it)
    microbatches: tuple[int, int] | None = None

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


def compute_parts(base: Training, row: PlanRow, gpu: GPUFigures) -> tuple[dict[str, float], int]:
    """The row's compute split as the model adds it up (seconds per step on the slowest
    stage), what the step report adds on top of it (EP overlap's SM share) as "other", and the
    row's micro-batches a step."""
    p = strategy_for(base, row.candidate, gpu)
    if p is None:
        return {"compute": row.compute_time}, 0
    c = p.derived.compute
    parts = {"compute: GEMMs": c.gemm_time, "compute: attention": c.attention_time,
             "compute: element-wise": c.memory_time - c.accumulation_time,
             "compute: grad accumulation": c.accumulation_time,
             "compute: launches": c.launch_time, "compute: CPU offload": c.offload_time,
             "compute: per layer and micro-batch": c.layer_time,
             "compute: ZeRO-3 per-rank copies": c.zero3_host_time}
    other = row.compute_time - sum(parts.values())
    if abs(other) > 1e-9 * max(row.compute_time, 1e-9):
        parts["compute: other"] = other
    return parts, p.derived.microbatches


def detail(cmp: Comparison, base: Training, gpu: GPUFigures | None) -> Comparison:
    """``cmp`` with its compute term split into ``compute_parts`` and both rows' micro-batches
    a step (unchanged when there is no row, or no GPU figures to derive it on)."""
    if cmp.row is None or cmp.best is None or gpu is None:
        return cmp
    mine, mb_mine = compute_parts(base, cmp.row, gpu)
    top, mb_top = compute_parts(base, cmp.best, gpu)
    rest = {n: (a, b) for n, a, b in cmp.terms if n != "compute"}
    for n in set(mine) | set(top):
        rest[n] = (mine.get(n, 0.0), top.get(n, 0.0))
    names = sorted(rest, key=lambda n: (-abs(rest[n][0] - rest[n][1]), n))
    terms = tuple((n, *rest[n]) for n in names if rest[n][0] or rest[n][1])
    return attrs.evolve(cmp, terms=terms, microbatches=(mb_mine, mb_top))


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
