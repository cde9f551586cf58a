"""A parallel strategy's training step, analysed: the seed's checklist in numbers.

For each traffic flow: the bytes per call and per step, how often, which link classes its group
crosses, the predicted time (``compiler.cost``) and whether it can hide behind compute. Then the
step: T_total = T_compute + T_comm + T_idle, where T_comm is the communication that is not
hidden and T_idle the pipeline bubble; speedup S = T1 / T_total against one GPU and efficiency
E = S / N.

Overlap: data-parallel gradient traffic runs during the backward pass (about two thirds of a
step's compute, backward costing twice the forward), context-parallel ring attention during the
attention compute; both share that window. Tensor-, expert- and pipeline-parallel traffic sits
on the critical path: each layer or stage waits for it, except the expert all-to-alls that
Megatron-Core's EP A2A overlap pairs with another micro-batch's compute (window
``ep_overlap``, ``training.ep_overlap``), which also cost the SMs they take from it.
"""

from __future__ import annotations

from collections import defaultdict

import attrs

from ..collectives.cost import Cost, CostError, group_loads
from ..collectives.coster import coster, sweep
from ..base.diagnostics import plural
from ..ir.system import SCALEOUT_CLASSES, ParallelStrategy, System
from ..ir.groups import RankGroup, group_translates, rank_groups
from ..ir.locality import island_period
from ..ir.gpus import gpu_figures, hbm_of
from ..training.model import Compute, Memory, bubble, idle_time, model_flops
from .concurrent import shared_cost

OVERLAPPING = {"dp": "yes, with the backward pass", "cp": "yes, with attention compute"}
BACKWARD_SHARE = 2 / 3
#: Overlap classes of traffic and the share of the step's compute each can hide behind: the
#: backward and forward passes, the weight-gradient GEMMs (a third of the compute; Megatron
#: overlaps the backward tensor-parallel collectives with them by default). Derived strategies
#: add windows measured in seconds (``windows``): the attention kernels, the last
#: micro-batch's backward (gradient reduction) and the first one's forward (weight gather).
WINDOWS = {"backward": BACKWARD_SHARE, "forward": 1 - BACKWARD_SHARE, "wgrad": 1 / 3}
OVERLAP_TEXT = {"backward": "yes, with the backward pass", "forward": "yes, with the forward pass",
                "wgrad": "yes, with the weight-gradient GEMMs",
                "attention": "yes, with the attention kernels",
                "grad_sync": "yes, with the last micro-batch's backward",
                "param_sync": "yes, with the first micro-batch's forward",
                "ep_overlap": "yes, with another micro-batch's compute (EP A2A overlap)",
                "none": "no: on the critical path"}
#: A flow called at least this often per step is "frequent" (every layer or micro-batch).
FREQUENT = 8
PER_LAYER = ("tp", "cp", "ep")     # traffic inside every layer
SLOW_CLASSES = (*SCALEOUT_CLASSES, "pcie", "inter_socket")


def message_time(alpha: float, nbytes: float, bandwidth: float) -> float:
    """T = alpha + D / B: start-up latency plus size over effective bandwidth."""
    return alpha + nbytes / bandwidth


def step_time(compute: float, comm: float, idle: float) -> float:
    """T_total = T_compute + T_comm + T_idle."""
    return compute + comm + idle


def speedup(t1: float, tn: float) -> float:
    """S_N = T_1 / T_N."""
    return t1 / tn


def efficiency(t1: float, tn: float, n: int) -> float:
    """E_N = S_N / N."""
    return speedup(t1, tn) / n


@attrs.frozen
class FlowReport:
    """One traffic line of a strategy, costed on the slowest of its kinds of group."""

    dim: str
    collective: str
    bytes: int
    count: int
    groups: int
    group_size: int
    cost: Cost | None          # None: the group is one GPU, or the model refused (``note``)
    classes: tuple[str, ...]
    overlap: str
    note: str = ""
    window: str = ""           # "backward", "forward", "wgrad", or "" (on the critical path)

    @property
    def per_step(self) -> float:
        """Seconds per training step: the call's time times the calls per step."""
        return self.cost.time * self.count if self.cost else 0.0

    @property
    def hidden(self) -> bool:
        """Whether this traffic can overlap compute."""
        return bool(self.window)

    @property
    def refused(self) -> bool:
        """Whether the cost model refused groups of several GPUs (``note`` says why: their
        GPUs not linked, say): the line has no time, so the step's totals leave it out."""
        return self.cost is None and self.group_size > 1


@attrs.frozen
class StepReport:
    """The analysis of one strategy's training step."""

    strategy: ParallelStrategy
    gpus: int
    flows: tuple[FlowReport, ...]
    bubble: float
    compute: float | None
    baseline: float | None
    comm: float                 # exposed communication per step
    comm_total: float           # all communication per step, hidden or not
    idle: float | None
    warnings: tuple[str, ...]
    memory: Memory | None = None       # per GPU, when the strategy names a model
    model_flops: float | None = None   # per step, all GPUs (the numerator of MFU)
    tokens: int | None = None          # per step
    peak: float | None = None          # dense FLOP/s of the (slowest) GPU
    detail: Compute | None = None      # the derived compute time, split
    hbm: float | None = None           # bytes of the smallest GPU memory

    @property
    def fits(self) -> bool | None:
        """Whether the memory per GPU fits the GPU's HBM (None without a model)."""
        if self.memory is None or self.hbm is None:
            return None
        return self.memory.total <= self.hbm

    @property
    def total(self) -> float | None:
        """T_total, when the file gives the compute time."""
        if self.compute is None:
            return None
        return step_time(self.compute, self.comm, self.idle or 0.0)

    @property
    def per_step(self) -> float | None:
        """T_total, or for a block of written traffic lines (no compute time) its exposed
        communication per step: what a failure or drift adds to each step either way."""
        return self.total if self.total is not None else self.comm

    @property
    def mfu(self) -> float | None:
        """Model FLOPs utilisation: model FLOPs per second over the GPUs' dense peak."""
        if self.model_flops is None or not self.total or not self.peak:
            return None
        return self.model_flops / (self.total * self.gpus * self.peak)

    @property
    def tokens_per_s(self) -> float | None:
        """Tokens trained per second, all GPUs."""
        return self.tokens / self.total if self.tokens and self.total else None

    @property
    def t1(self) -> float | None:
        """The single-GPU step: ``baseline``, else compute x N (a perfect split)."""
        if self.baseline is not None:
            return self.baseline
        return None if self.compute is None else self.compute * self.gpus


def staged_pairs(system: System, ranks) -> tuple[int, tuple[int, int]] | None:
    """How many pairs of ``ranks`` stage through host memory, and one of them; None if none
    (at once when every island of the system is one peer-to-peer set: ``_staging_anywhere``)."""
    if not _staging_anywhere(system):
        return None
    loc = system.locality
    parts: dict[tuple, list[int]] = defaultdict(list)
    for r in ranks:
        parts[loc.island[r], loc.p2p.find(system.gpus[r].id)].append(r)
    by_island: dict[int, list[list[int]]] = defaultdict(list)
    for (island, _), members in parts.items():
        by_island[island].append(members)
    count, example = 0, None
    for sets in by_island.values():
        sizes = [len(s) for s in sets]
        count += (sum(sizes) ** 2 - sum(s * s for s in sizes)) // 2
        if len(sets) > 1 and example is None:
            example = (sets[0][0], sets[1][0])
    return (count, example) if count else None


def _staging_anywhere(system: System) -> bool:
    """Whether some island of the system holds GPUs of two peer-to-peer sets (a PCIe server
    whose sockets' GPUs stage through host memory); once per system. When none does, no group
    has a staged pair, and a data-parallel group of a quarter of the world is not walked rank
    by rank to find that out."""
    key = "strategy.staging_anywhere"
    if key not in system.memo:
        import numpy as np

        loc = system.locality
        found = False
        if len(system.gpus):
            label = np.asarray(loc.p2p.label, dtype=np.int64)[
                np.asarray(loc.gpu_index, dtype=np.int64)]
            island = np.asarray(loc.island, dtype=np.int64)
            _, first, inverse = np.unique(island, return_index=True, return_inverse=True)
            found = bool(np.any(label != label[first][inverse.reshape(-1)]))
        system.memo[key] = found
    return system.memo[key]


def _kind(system: System, ranks) -> tuple:
    """What makes two groups of one dimension cost alike: their GPU models in order and how
    they fall into islands (a group of H200s and one of A100s are two kinds)."""
    loc = system.locality
    gpus = system.gpus
    islands: dict[int, int] = {}
    for r in ranks:
        islands[loc.island[r]] = islands.get(loc.island[r], 0) + 1
    return tuple(gpus[r].model.name for r in ranks), tuple(islands.values())


def dedup_share(system: System, ranks, top_k: int, limit: int) -> float:
    """The share of an expert dispatch's bytes DeepEP still moves, against one copy per routed
    expert, when each token goes once to each place that hosts one of its experts: across
    nodes once to each node, forwarded there over NVLink (DeepSeek-V3 report sec. 3.2.2), at
    most ``limit`` nodes (node-limited routing); inside one node once to each GPU (DeepEP's
    intranode dispatch sends a token to a rank, ``is_token_in_rank``, and the rank permutes
    it to its experts). Over n places holding experts evenly, a token's ``top_k`` experts fall
    on n (1 - (1 - 1/n)^k) of them; the share is that over k."""
    n = len({system.locality.island[r] for r in ranks})
    if n < 2:
        n, limit = len(set(ranks)), 0          # one node: distinct GPUs, no node limit
    if n < 2 or top_k < 2:
        return 1.0
    distinct = n * (1 - (1 - 1 / n) ** top_k)
    if limit:
        distinct = min(distinct, limit)
    return min(1.0, distinct / top_k)


def _window(f) -> str:
    """The overlap class of a traffic line: derived lines carry one; written lines overlap by
    their group kind (dp with the backward pass, cp with attention)."""
    if f.overlap:
        return "" if f.overlap == "none" else f.overlap
    return "backward" if f.dim in OVERLAPPING else ""


def placement(system: System, n: int) -> tuple[int, ...] | None:
    """The GPUs ``n`` ranks run on when they do not fill the system: spread evenly over as few
    islands (nodes, NVL72 racks) as hold them, the first ranks of each, as schedulers place jobs
    (256 GPUs on NVL72 racks are 64 per rack on 4 racks, not 72 + 72 + 72 + 40); None for the
    first ``n`` GPUs in order."""
    islands = system.locality.island_ranks
    if n >= len(system.gpus) or not islands or n <= len(islands[0]):
        return None
    size = len(islands[0])
    k = -(-n // size)
    if n % k or any(len(i) < n // k for i in islands[:k]):
        return None
    out = tuple(r for i in islands[:k] for r in i[:n // k])
    return None if out == tuple(range(n)) else out


def _groups(system: System, p: ParallelStrategy, dim: str, cache: dict | None,
            where: tuple[int, ...] | None) -> tuple[int, int, dict[tuple, RankGroup], tuple]:
    """How many groups one dimension has on the system's GPUs, their size, the first group
    of each kind, and each kind's group number (``_group_id``: () without a cache), shared by
    every strategy of the same sizes and order (``cache``)."""
    key = ("groups", p.sizes, p.order, p.expert_tp, dim, _where_key(cache, where))
    if cache is not None and key in cache:
        return cache[key]
    found = _groups_by_period(system, p, dim) if where is None else None
    if found is None:
        raw = rank_groups(p, dim)
        if where is not None:
            raw = [[where[r] for r in g] for g in raw]
        kinds: dict[tuple, RankGroup] = {}
        for i, g in enumerate(raw):
            ranks = tuple(g)
            kind = _kind(system, ranks)
            if kind not in kinds:
                kinds[kind] = RankGroup(f"{dim}:{i}", ranks)
        found = (len(raw), len(raw[0]), kinds)
    if cache is not None:
        ids = []
        for kind, g in found[2].items():
            number, ranks = _group_id(cache, g.ranks)
            found[2][kind] = attrs.evolve(g, ranks=ranks)    # one tuple per distinct group
            ids.append(number)
        found = cache[key] = (*found, tuple(ids))
    else:
        found = (*found, ())
    return found


def _group_id(cache: dict, ranks: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    """A number for a group's ranks, the same for equal ranks, and the one tuple of them kept:
    the costs are cached under the number, so a group of a quarter of the world (a
    data-parallel group at tp 4) is hashed once per kind of strategy, not at every lookup."""
    ids = cache.setdefault("group_ids", {})
    found = ids.get(ranks)
    if found is None:
        found = ids[ranks] = (len(ids), ranks)
    return found


def _where_key(cache: dict | None, where: tuple[int, ...] | None):
    """``where`` (the GPUs of a partial placement, up to every GPU) as a small cache key."""
    if where is None or cache is None:
        return where
    return ("where", _group_id(cache, where)[0])


def _groups_by_period(system: System, p: ParallelStrategy, dim: str):
    """``_groups`` from one period of the islands: when every island holds s consecutive
    ranks of one repeating run of GPU models (``island_period``), a group's kind depends on
    its first rank modulo s only (every group is a translate of the first:
    ``group_translates``), so the first group of each residue stands for all, and the first
    of each kind is among them. A residue's kind is read in numpy: its GPU models by rank mod
    s, its island counts the runs of (rank // s) along the group's ascending ranks (the
    islands in the order first met), which is ``_kind``'s equivalence. None when the islands
    or models do not repeat."""
    import numpy as np

    s = island_period(system)
    codes = _model_codes(system, s) if s else None
    if codes is None:
        return None
    first, offsets = group_translates(p, dim)
    step = np.asarray(offsets, dtype=np.int64)
    # the first group of each residue (``np.unique``'s first indices, without its sort of
    # every group's first rank: a pass that keeps each residue's least index)
    at = np.full(s, len(first), dtype=np.int64)
    np.minimum.at(at, first % s, np.arange(len(first), dtype=np.int64))
    kinds: dict[tuple, RankGroup] = {}
    for i in sorted(at[at < len(first)].tolist()):
        ranks = int(first[i]) + step
        island = ranks // s
        runs = np.diff(np.flatnonzero(np.diff(island, prepend=-1, append=-1)))
        kind = (codes[ranks % s].tobytes(), runs.tobytes())
        if kind not in kinds:
            kinds[kind] = RankGroup(f"{dim}:{i}", tuple(ranks.tolist()))
    return len(first), len(offsets), kinds


def _model_codes(system: System, s: int):
    """Each rank mod s's GPU model as a number (numpy), when rank r's model is rank r mod s's
    for every rank; None otherwise. Once per system."""
    key = ("model_codes", s)
    if key not in system.memo:
        import numpy as np

        numbers: dict[str, int] = {}
        codes = [numbers.setdefault(g.model.name, len(numbers)) for g in system.gpus]
        found = None
        if all(codes[r] == codes[r % s] for r in range(len(codes))):
            found = np.asarray(codes[:s], dtype=np.int32)
        system.memo[key] = found
    return system.memo[key]


def _flow(system: System, p: ParallelStrategy, f, cache: dict | None = None,
          where: tuple[int, ...] | None = None) -> FlowReport:
    """One traffic line, costed on one group of every distinct kind; the slowest kind is the
    one on the critical path and the one reported. ``cache`` memoises groups and costs across
    calls; ``where`` maps the strategy's ranks to the system's GPUs (``placement``)."""
    count, size, kinds, ids = _groups(system, p, f.dim, cache, where)
    window = _window(f)
    overlap = OVERLAP_TEXT[window or "none"] if f.overlap else \
        OVERLAPPING.get(f.dim, "no: on the critical path")
    if size < 2:
        return FlowReport(f.dim, f.collective, f.bytes, f.count, count, 1, None, (),
                          overlap, "groups of one GPU move nothing")
    # what the groups' costs and notes come to depends on the groups, the collective, the
    # size and the dispatch's deduplication only: once per strategy shape, not per candidate
    key = ("flow", ids, f.dim, f.collective, f.bytes, f.dedup)
    found = cache.get(key) if cache is not None else None
    if found is None:
        found = _costed(system, f, kinds, ids, cache, p, where)
        if cache is not None:
            cache[key] = found
    cost, note = found
    if cost is None:
        return FlowReport(f.dim, f.collective, f.bytes, f.count, count, size,
                          None, (), overlap, note, window)
    return FlowReport(f.dim, f.collective, f.bytes, f.count, count, size,
                      cost, cost.classes, overlap, note, window)


def _alone(system: System, f, g: RankGroup, gid: int | None, cache: dict | None) -> Cost:
    """One group's cost of a traffic line as if it ran alone (``cache``: under its group
    number ``gid``)."""
    size_b = _size(system, f, g)
    if cache is None:
        return attrs.evolve(sweep(system, g, f.collective, [size_b])[0], group=g.name)
    if gid is None:
        gid = _group_id(cache, g.ranks)[0]
    key = (gid, f.collective, size_b)
    c = cache.get(key)
    if c is None:
        at = cache.get((gid, f.collective))
        if at is None:
            at = cache[gid, f.collective] = coster(system, g, f.collective)
        c = cache[key] = at(size_b)
    return attrs.evolve(c, group=g.name)


def _loads(system: System, f, g: RankGroup, algorithm: str, cache: dict | None) -> dict:
    """``cost.group_loads`` of one group, kept in ``cache`` under its group number: the plan
    search meets the same groups in many strategies."""
    if cache is None:
        return group_loads(system, g, f.collective, algorithm)
    key = ("loads", _group_id(cache, g.ranks)[0], f.collective, algorithm)
    found = cache.get(key)
    if found is None:
        found = cache[key] = group_loads(system, g, f.collective, algorithm)
    return found


def _size(system: System, f, g: RankGroup) -> int:
    """A group's bytes per call (an expert dispatch's deduplicated share)."""
    return int(f.bytes * dedup_share(system, g.ranks, *f.dedup)) if f.dedup[0] else f.bytes


def _costed(system: System, f, kinds: dict[tuple, RankGroup], ids: tuple[int, ...],
            cache: dict | None, p: ParallelStrategy | None = None,
            where: tuple[int, ...] | None = None) -> tuple[Cost | None, str]:
    """(the slowest kind's cost, the flow's note) of one traffic line on the first group of
    each kind, with the links it shares with the line's groups running next to it
    (``concurrent.shared_cost``); (None, why) when the model refuses it. ``ids``: the kinds'
    group numbers, the keys of ``cache``'s costs."""
    costs, shared = [], {}
    ranks_of: dict[str, tuple[int, ...]] = {}
    try:
        for g, gid in zip(kinds.values(), ids or [None] * len(kinds)):
            c = _alone(system, f, g, gid, cache)
            ranks = g.ranks
            if p is not None:
                c, sharing, ranks = shared_cost(
                    system, p, f, g, c, lambda h: _size(system, f, h),
                    lambda h: _alone(system, f, h, None, cache), where,
                    lambda h, a: _loads(system, f, h, a, cache))
                shared[c.group] = sharing
            ranks_of[c.group] = ranks
            costs.append(c)
    except CostError as exc:
        return None, str(exc)
    cost = max(costs, key=lambda c: c.time)
    notes = [f"{len(kinds)} kinds of {f.dim} group (GPU models or island layouts); the slowest, "
             f"{cost.group}, is reported"] if len(kinds) > 1 else []
    if shared.get(cost.group):
        notes.append(f"{cost.group} shares links with "
                     f"{plural(shared[cost.group], f'other {f.dim} group')} running at the same "
                     "time, whose loads are counted")
    slow = ranks_of[cost.group]
    at = next((i for i, g in enumerate(kinds.values()) if g.ranks == slow), None)
    if cache is None or at is None:
        staged = staged_pairs(system, slow)
    else:
        if ("staged", ids[at]) not in cache:
            cache["staged", ids[at]] = staged_pairs(system, slow)
        staged = cache["staged", ids[at]]
    if staged:
        count, (a, b) = staged
        notes.append(f"{plural(count, 'GPU pair')} of {cost.group} stage through host memory "
                     f"(no peer-to-peer path), e.g. {system.gpus[a].id} and {system.gpus[b].id}")
    return cost, "; ".join(notes)


def _slow(f: FlowReport) -> list[str]:
    return [c for c in f.classes if c in SLOW_CLASSES]


def _mapping_warnings(flows: tuple[FlowReport, ...]) -> list[str]:
    """Per-layer traffic (tp, cp, ep) on slow links, and frequent traffic on slow links while
    rarer traffic has the fast ones; and lines the cost model refused, which the totals
    leave out."""
    out = [f"{f.dim} {f.collective} is not costed ({f.note}): the step's totals leave it out"
           for f in flows if f.refused]
    for f in flows:
        if f.dim in PER_LAYER and f.count >= FREQUENT and _slow(f):
            out.append(f"{f.dim} {f.collective} runs {f.count} times per step over "
                       f"{', '.join(_slow(f))}: keep {f.dim} groups inside one NVLink domain")
    for f in flows:
        for g in flows:
            if f.count >= FREQUENT and f.count > g.count and _slow(f) and g.classes and \
                    not _slow(g):
                out.append(f"{f.dim} {f.collective} ({f.count} per step) crosses "
                           f"{', '.join(_slow(f))} while {g.dim} ({g.count} per step) stays on "
                           f"{', '.join(g.classes)}: swap {f.dim} and {g.dim} in 'order'")
    return out


def windows(compute: float | None, detail: Compute | None = None) -> dict[str, float]:
    """Seconds of compute each overlap class can hide behind in one step."""
    if compute is None:
        return {}
    out = {w: share * compute for w, share in WINDOWS.items()}
    if detail is not None:
        out["attention"] = detail.attention_time
        out["grad_sync"] = BACKWARD_SHARE * detail.microbatch_time
        out["param_sync"] = (1 - BACKWARD_SHARE) * detail.microbatch_time
    return out


def exposed(flows, compute: float | None, detail: Compute | None = None) -> float:
    """Communication on the critical path: lines that cannot overlap, plus whatever of each
    overlap class outgrows its window (all of it without a compute time)."""
    return sum(exposed_by_dim(flows, compute, detail).values())


def exposed_by_dim(flows, compute: float | None,
                   detail: Compute | None = None) -> dict[str, float]:
    """``exposed`` split by group kind: a window's overflow is shared in proportion to what
    each kind put in it."""
    out: dict[str, float] = {}
    for f in flows:
        if not f.window:
            out[f.dim] = out.get(f.dim, 0.0) + f.per_step
    room = windows(compute, detail)
    for f in flows:
        if f.window == "ep_overlap":
            over, cost = ep_exposed(f, compute, detail)
            out[f.dim] = out.get(f.dim, 0.0) + over + cost
    for window in sorted({f.window for f in flows if f.window and f.window != "ep_overlap"}):
        inside = [f for f in flows if f.window == window]
        hidden = sum(f.per_step for f in inside)
        over = max(0.0, hidden - room.get(window, 0.0)) if compute is not None else hidden
        for f in inside:
            if hidden:
                out[f.dim] = out.get(f.dim, 0.0) + over * f.per_step / hidden
    return out


def ep_exposed(f, compute: float | None, detail: Compute | None) -> tuple[float, float]:
    """(exposed seconds, SM cost) of expert all-to-alls under Megatron-Core's EP A2A overlap.
    Per paired layer pass the schedule runs the backward micro-batch's combine behind the
    forward one's attention, the forward dispatch behind the backward MLP, the backward
    dispatch behind the forward MLP and the forward combine behind the backward attention
    (Megatron-Core's combined 1F1B schedule plan, as DualPipe's overlap of a forward and a
    backward chunk): each all-to-all hides up to its segment's compute, and the hidden
    seconds slow that compute by the SMs the all-to-all holds."""
    if compute is None or detail is None or len(detail.ep_segments) != 4 or not f.count:
        return f.per_step, 0.0
    each = f.per_step / f.count
    hidden = f.count / 4 * sum(min(each, c) for c in detail.ep_segments)
    return f.per_step - hidden, hidden * detail.ep_sm_share


def step(system: System, p: ParallelStrategy, cache: dict | None = None,
         warnings: tuple[str, ...] = (), where: tuple[int, ...] | None = None) -> StepReport:
    """Cost every traffic flow of strategy ``p`` (attached to ``system`` or not; on the GPUs
    ``where`` names, else the first ones) and put the step together; with a model, also its
    memory, model FLOPs and tokens."""
    flows = tuple(_flow(system, p, f, cache, where) for f in p.flows)
    settings = dict(p.settings)
    compute, baseline = settings.get("compute"), settings.get("baseline")
    stages, chunks = p.size("pp"), p.training.interleave if p.training else 1
    frac = bubble(stages, p.microbatches, chunks)
    d = p.derived
    comm = exposed(flows, compute, d.compute if d else None)
    # M micro-batches over P stages take M + P - 1 slots; the P - 1 extra are idle (an
    # interleaved schedule of V chunks divides the idle part by V).
    idle = idle_time(compute, stages, p.microbatches, chunks) if compute is not None else None
    extra = {}
    if p.training is not None and d is not None:
        t = p.training
        tokens = t.batch * t.model.seq
        gpu = gpu_figures(system)
        fp8 = (t.fp8 or t.model.dtype == "fp8") and gpu is not None and gpu.fp8 > 0
        extra = {"memory": d.memory, "model_flops": model_flops(t.model, tokens),
                 "tokens": tokens, "peak": (gpu.fp8 if fp8 else gpu.bf16) if gpu else None,
                 "detail": d.compute, "hbm": hbm_of(system, p.world)}
    return StepReport(p, p.world, flows, frac, compute, baseline, comm,
                      sum(f.per_step for f in flows), idle, warnings + tuple(
                          _mapping_warnings(flows)), **extra)


def analyse(system: System, name: str) -> StepReport:
    """Cost every traffic flow of strategy ``name`` and put the step together, with the lint
    findings about that strategy (each finding names the strategy it is about)."""
    from ..lint.lint import LintConfig
    from ..lint.rules import RULES
    config = LintConfig()
    warnings = tuple(f.message for code in sorted(RULES)
                     if code.startswith("W5") and config.level(code) != "off"
                     for f in RULES[code].check(system, config.rule_options(code))
                     if f.strategy == name)
    return step(system, system.parallel(name), warnings=warnings)
