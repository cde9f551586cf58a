"""The finished values of ``topoc report --format html``: everything the page shows, computed
here so the backend only formats.

- the strategy's step (``analyse``) and its exposed communication per dimension;
- the headline: step time, exposed communication, bubble, MFU, memory against HBM, the link
  that limits each dimension, and the strategy's rank among ``topoc plan``'s results;
- one busbw-versus-size curve per (dimension, collective), with the size the strategy moves
  per call (the operating point) and the published nccl-tests points measured on as many GPUs
  of the same model in one NVLink domain;
- the ten fastest mappings ``topoc plan`` finds for the model (below PLAN_LIMIT candidates).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import attrs

from ..collectives.cost import CostError
from ..collectives.coster import sweep
from ..ir.groups import RankGroup, rank_groups
from ..ir.system import System
from ..training.memory import sharding
from ..training.model import Shape
from .plan import (Candidate, PlanResult, PlanRow, PlanUsageError, enumerate_candidates, is_tight,
                   plan, row_of)
from .strategy import StepReport, analyse, exposed_by_dim

SIZES = tuple(2**k for k in range(10, 34))          # 1 KiB .. 8 GiB, as nccl-tests sweeps
#: The page runs topoc plan's search only below this many candidates (seconds, not minutes).
PLAN_LIMIT = 50_000


@attrs.frozen
class Curve:
    """The cost model's busbw by size for one (dimension, collective) on the first group."""

    dim: str
    collective: str
    group: str
    ranks: tuple[int, ...]
    sizes: tuple[int, ...]
    busbw: tuple[float, ...]                       # bytes/s
    operating: tuple[int, ...]                     # bytes per call of the strategy's lines
    published: tuple[tuple[int, float], ...] = ()  # (bytes, GB/s) measured
    source: str = ""


@attrs.frozen
class PlanSummary:
    """``topoc plan``'s ranking for the strategy's model, or why it was not run."""

    rows: tuple[PlanRow, ...] = ()
    considered: int = 0
    rank: int | None = None        # 1-based place of this strategy's mapping among ``rows``
    note: str = ""


@attrs.frozen
class Bottleneck:
    """The link class that limits one traffic line, with one link of it."""

    dim: str
    collective: str
    window: str
    cls: str
    link: str


@attrs.frozen
class Page:
    """What the HTML report shows, finished."""

    system: str
    strategy: str
    model: str | None
    report: StepReport
    exposed: dict[str, float]
    bottlenecks: tuple[Bottleneck, ...]
    curves: tuple[Curve, ...]
    plan: PlanSummary | None

    @property
    def title(self) -> str:
        """'llama3-70b on rack: strategy train (72 GPUs)'."""
        what = f"{self.model} on {self.system}" if self.model else self.system
        return f"{what}: strategy '{self.strategy}' ({self.report.gpus} GPUs)"


def published_rows() -> list[dict]:
    """The single-node all-reduce calibration rows of library/calibration.csv (excluded ones
    left out), each with the GPU model of the library system it was measured on
    (``gpu_model``)."""
    from ...library import calibration, find
    from ..lang import pipeline
    rows, models = [], {}
    for row in calibration():
        if row["defines"] or row.get("role") in ("exclude", "inconsistent") or \
                (row.get("collective") or "allreduce") != "allreduce":
            continue
        if row["system"] not in models:
            models[row["system"]] = pipeline.load(find(f"{row['system']}.topo")).gpus[0].model.name
        rows.append({**row, "gpu_model": models[row["system"]]})
    return rows


def _curves(system: System, r: StepReport, published: Sequence[dict]) -> tuple[Curve, ...]:
    from ...library import size_bytes
    loc = system.locality
    seen: dict[tuple[str, str], tuple[RankGroup, list[int]]] = {}
    for f in r.flows:
        if f.group_size <= 1:
            continue
        if (f.dim, f.collective) not in seen:
            ranks = rank_groups(r.strategy, f.dim)[0]
            seen[f.dim, f.collective] = (RankGroup(f"{f.dim}:0", tuple(ranks)), [])
        seen[f.dim, f.collective][1].append(int(f.bytes))
    out = []
    for (dim, coll), (group, sizes) in sorted(seen.items()):
        try:
            costs = sweep(system, group, coll, list(SIZES))
        except CostError:
            continue
        models = {system.gpus[i].model.name for i in group.ranks}
        one_island = len({loc.island[i] for i in group.ranks}) == 1
        points = [row for row in published if coll == "allreduce" and one_island and
                  models == {row["gpu_model"]} and int(row["gpus"]) == len(group.ranks)]
        out.append(Curve(dim, coll, group.name, tuple(group.ranks), tuple(c.size for c in costs),
                         tuple(c.busbw for c in costs), tuple(sorted(set(sizes))),
                         tuple((size_bytes(p["size"]), float(p["busbw"])) for p in points),
                         points[0]["source"] if points else ""))
    return tuple(out)


def _plan(system: System, r: StepReport) -> PlanSummary | None:
    t = r.strategy.training
    if t is None:
        return None
    model = t.model
    if len(enumerate_candidates(model, r.gpus, t.batch, {})) > PLAN_LIMIT:
        return PlanSummary(note=f"{r.gpus} GPUs give more than {PLAN_LIMIT:,} candidate "
                                f"mappings: run topoc plan FILE --model {model.name} --batch "
                                f"{t.batch} with some dimensions fixed")
    try:
        result = plan(system, model, t, gpus=r.gpus, jobs=1)
    except PlanUsageError as exc:
        return PlanSummary(note=str(exc))
    rows, rank = with_own_row(system, r, result)
    return PlanSummary(rows, result.considered, rank)


def own_candidate(r: StepReport) -> Candidate:
    """The strategy's own mapping as a plan candidate, its ZeRO stage included (a ZeRO-0
    strategy is not its ZeRO-1 variant: their memory differs by the optimizer's shards)."""
    p, t = r.strategy, r.strategy.training
    shape = Shape(p.size("tp"), p.size("cp"), p.size("ep"), p.size("dp"), p.size("pp"))
    return Candidate(shape, t.microbatch, t.recompute, t.interleave, t.sequence_parallel,
                     sharding(t) or 0)


def with_own_row(system: System, r: StepReport, result: PlanResult) \
        -> tuple[tuple[PlanRow, ...], int | None]:
    """The search's rows with the strategy's own row among them, and its 1-based rank: the
    rank of exactly the strategy the page shows. A mapping the search does not try (ZeRO 0 or
    2, a micro-batch past ``MICROBATCHES``) or prunes is costed here and placed by the rows'
    ``rank_key``; None when it does not run at all."""
    mine = own_candidate(r)
    for i, row in enumerate(result.rows):
        if row.candidate == mine:
            return tuple(result.rows), i + 1
    p = r.strategy
    if p.derived is None or r.memory is None:
        return tuple(result.rows), None
    row = row_of(system, mine, p, hbm=result.hbm)
    row = attrs.evolve(row, tight=is_tight(row.memory_per_gpu, result.hbm, result.margin))
    at = bisect.bisect_left([x.rank_key for x in result.rows], row.rank_key)
    return tuple(result.rows[:at]) + (row,) + tuple(result.rows[at:]), at + 1


def report_page(system: System, name: str, published: Sequence[dict] = (),
                with_plan: bool = True) -> Page:
    """Every value the page for strategy ``name`` shows. ``published`` are calibration rows
    with their ``gpu_model`` (``published_rows()``)."""
    r = analyse(system, name)
    t = r.strategy.training
    bottlenecks = tuple(Bottleneck(f.dim, f.collective, f.window, f.cost.bottleneck,
                                   f.cost.bottleneck_link)
                        for f in r.flows if f.cost is not None)
    exposed = exposed_by_dim(r.flows, r.compute, r.detail) if r.compute is not None else {}
    return Page(system.name, name, t.model.name if t is not None else None, r, exposed,
                bottlenecks, _curves(system, r, published),
                _plan(system, r) if with_plan else None)
