"""``topoc plan``: every valid mapping of a model on a topology, costed and ranked.

A candidate fixes the sizes (tp, cp, ep, dp, pp), the micro-batch, the recompute mode, the
interleave, sequence parallelism and the ZeRO stage. Each is checked and derived
(``training.derive``); a mapping whose memory cannot fit even with its lightest options (full
recompute, micro-batch 1, sequence parallelism) is pruned with all its variants before anything
is costed, and a candidate over the GPUs' HBM is counted, not costed. The rest have their
traffic costed on the system's real groups with the collective cost model (``strategy.step``,
the same numbers as ``topoc report``) and are ranked by step time.

Candidates share what does not depend on their options: the groups of each size and order and
how they fall into kinds, and the cost of one collective on one group and size. Whole rows are
cached on disk per (topology, model, options, candidate), so a rerun is instant. Candidates run
in process, in a local process pool (``jobs``), or on a Ray cluster (``ray``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import attrs

from ..base.cachefile import cache_dir
from ..base.gcpause import gc_paused
from ..base.version import VERSION
from ..lang import pipeline
from ..ir import degrade
from ..ir.links import Links
from ..ir.gpus import GPUFigures, gpu_figures, hbm_of
from ..lang.derive import with_training
from ..ir.system import DEFAULT_ORDER, ParallelStrategy, System, Transformer
from ..lint.rules import domain_codes
from . import plan_cache, remote
from .strategy import StepReport, exposed_by_dim, placement, step
from ..training.memory import MEMORY_MARGIN, TIGHT, band, fit
from ..training.model import (RECOMPUTE, MappingError, Shape, Training, check, layout, memory,
                              stage_layout)

DIMS = ("tp", "cp", "ep", "dp", "pp")
MICROBATCHES = (1, 2, 4, 8)
#: ZeRO stages searched when none is fixed: Megatron's distributed optimizer and full sharding.
ZERO_STAGES = (1, 3)
#: Context parallelism is searched only while each rank keeps at least this many tokens of the
#: sequence (shorter chunks run attention and GEMMs inefficiently and no published run goes
#: below it); ``--cp`` asks for any size.
CP_FLOOR = 4096
#: At most this many candidates per run: past it the command asks for fixed dimensions.
MAX_CANDIDATES = 400_000
CACHE_VERSION = 2
#: Fewer candidates than this run in process: a pool's start-up would cost more than it saves.
POOL_MIN = 32


@attrs.frozen(order=True)
class Candidate:
    """One mapping to cost: the sizes (a ``training.Shape``) and the options searched."""

    shape: Shape
    microbatch: int
    recompute: str
    interleave: int
    sequence_parallel: bool
    zero: int = 1

    tp = property(lambda self: self.shape.tp, doc="tensor-parallel size")
    cp = property(lambda self: self.shape.cp, doc="context-parallel size")
    ep = property(lambda self: self.shape.ep, doc="expert-parallel size")
    dp = property(lambda self: self.shape.dp, doc="data-parallel size")
    pp = property(lambda self: self.shape.pp, doc="pipeline-parallel size")

    @property
    def key(self) -> str:
        """A stable text key (the disk cache's)."""
        return (f"tp{self.tp}-cp{self.cp}-ep{self.ep}-dp{self.dp}-pp{self.pp}-mb{self.microbatch}"
                f"-{self.recompute}-v{self.interleave}-sp{int(self.sequence_parallel)}"
                f"-z{self.zero}")

    def training(self, base: Training) -> Training:
        """``base`` with this candidate's options."""
        zero = {} if base.fsdp else {"zero": self.zero, "distributed_optimizer": False}
        return attrs.evolve(base, microbatch=self.microbatch, recompute=self.recompute,
                            interleave=self.interleave,
                            sequence_parallel=self.sequence_parallel, **zero)


@attrs.frozen
class PlanRow:
    """One evaluated candidate: the ``topoc.plan/1`` row."""

    candidate: Candidate
    step_time: float
    compute_time: float
    comm_time: float                # exposed
    bubble_time: float
    memory_per_gpu: float
    fits: bool
    mfu: float
    tokens_per_s: float
    comm_by_dim: tuple[tuple[str, float], ...]     # exposed seconds per group kind
    links_by_dim: tuple[tuple[str, tuple[str, ...]], ...]
    #: inside the memory model's uncertainty either side of HBM (``is_tight``): it fits but
    #: could go over, or it is over but could fit; a mark, not a rank (``rank_key``)
    tight: bool = False
    #: the largest memory term and its bytes (what is over when the row is)
    largest: tuple[str, float] = ("", 0.0)

    def as_dict(self) -> dict:
        """The JSON row (contract field names first)."""
        c = self.candidate
        return {"tp": c.tp, "cp": c.cp, "ep": c.ep, "dp": c.dp, "pp": c.pp,
                "microbatch": c.microbatch, "recompute": c.recompute,
                "interleave": c.interleave, "sequence_parallel": c.sequence_parallel,
                "zero": c.zero,
                "step_time": self.step_time, "compute_time": self.compute_time,
                "comm_time": self.comm_time, "bubble_time": self.bubble_time,
                "memory_per_gpu": self.memory_per_gpu, "fits": self.fits, "mfu": self.mfu,
                "tokens_per_s": self.tokens_per_s, "tight": self.tight,
                "largest_memory_term": {"term": self.largest[0], "bytes": self.largest[1]},
                "comm_by_dim": dict(self.comm_by_dim),
                "links_by_dim": {k: list(v) for k, v in self.links_by_dim}}

    @classmethod
    def from_dict(cls, d: Mapping) -> PlanRow:
        """Back from ``as_dict`` (the disk cache)."""
        c = Candidate(Shape(d["tp"], d["cp"], d["ep"], d["dp"], d["pp"]), d["microbatch"],
                      d["recompute"], d["interleave"], d["sequence_parallel"], d["zero"])
        return cls(c, d["step_time"], d["compute_time"], d["comm_time"], d["bubble_time"],
                   d["memory_per_gpu"], d["fits"], d["mfu"], d["tokens_per_s"],
                   tuple(sorted(d["comm_by_dim"].items())),
                   tuple(sorted((k, tuple(v)) for k, v in d["links_by_dim"].items())),
                   largest=(d["largest_memory_term"]["term"],
                            d["largest_memory_term"]["bytes"]))

    @property
    def rank_key(self) -> tuple:
        """Rows predicted to fit in HBM first, by step time, tight or not; then the rows
        predicted over HBM but inside the memory model's uncertainty (tight, ``fits`` false:
        answered, not refused), by step time; then the mapping (deterministic). Tight is a
        mark, not a rank: measured winners run close to HBM (FlagPerf's at 92-95 % of it), and on
        the measured alternatives of benchmarks/plan_validation.py --orderings, ranking the
        tight rows that fit after the rest lost more measured winners and pairs than the
        measured out-of-memory alternatives it kept below their group's winner (docs/plan.md,
        "Tight is a mark, not a rank")."""
        return (not self.fits, self.step_time, self.candidate)


def is_tight(memory: float, hbm: float | None, margin: float) -> bool:
    """Whether ``memory`` bytes per GPU are inside the memory model's measured uncertainty of
    ``hbm`` (``memory.band``: above (1 - margin) x HBM, at most HBM / (1 - margin); the margin
    is ``memory.MEMORY_MARGIN``, docs/plan.md "Memory"): it may not fit, or it may fit though
    predicted over. Never with ``margin`` 0 or an unknown ``hbm``."""
    return bool(margin > 0 and hbm and fit(memory, hbm, margin) == TIGHT)


def answered(row: PlanRow, hbm: float | None, margin: float) -> PlanRow | None:
    """``row`` as ``plan`` answers it at ``hbm`` and ``margin``: marked tight inside the
    memory model's uncertainty of HBM (``is_tight``), None when it is over HBM by more than the
    uncertainty (pruned, counted over memory). The one rule ``plan`` and the orderings check
    (benchmarks/plan_validation.py, "as plan ranks") both apply before ``rank_key``."""
    limit = limit_of(hbm, margin)
    if limit is not None and row.memory_per_gpu > limit:
        return None
    return attrs.evolve(row, tight=is_tight(row.memory_per_gpu, hbm, margin))


def limit_of(hbm: float | None, margin: float) -> float | None:
    """The most bytes per GPU a candidate may be predicted at and still be answered: HBM over
    ``1 - margin`` (the top of ``memory.band``); HBM itself with margin 0."""
    return None if hbm is None else band(hbm, margin)[1]


class PlanUsageError(ValueError):
    """A plan request that cannot run (a usage problem: exit 2)."""


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def interleaves(model: Transformer, pp: int) -> list[int]:
    """Model chunks per stage that split the stage layout evenly: every divisor of the layers
    (or layer slots) per stage, 1 without a pipeline."""
    if pp < 2 or pp > model.layers:
        return [1]
    try:
        lay = layout(model, Shape(pp=pp))
    except MappingError:
        return [1]
    per = lay.middle if lay.slots else (model.layers // pp if model.layers % pp == 0 else 0)
    return _divisors(per) if per else [1]


def enumerate_candidates(model: Transformer, gpus: int, batch: int,
                         fixed: Mapping[str, object],
                         tp_ok: Callable[[int], bool] | None = None) -> list[Candidate]:
    """Every mapping of ``model`` on ``gpus`` GPUs that ``fixed`` allows (keys tp, cp, ep, dp,
    pp, microbatch, recompute, interleave, sequence_parallel, zero), before the model's own
    checks. Context parallelism stops at ``CP_FLOOR`` tokens per rank unless ``cp`` is fixed;
    tensor parallelism, unless fixed, takes only the sizes ``tp_ok`` admits (``plan``: those
    whose groups stay in one NVLink domain, ``tp_within_domains``)."""
    def choices(key: str, default: Iterable) -> list:
        return [fixed[key]] if fixed.get(key) is not None else list(default)
    out = []
    for tp in choices("tp", [t for t in _divisors(gpus) if model.heads % t == 0 and
                             (tp_ok is None or tp_ok(t))]):
        cps = [c for c in _divisors(gpus // tp) if c == 1 or model.seq // c >= CP_FLOOR] \
            if gpus % tp == 0 else []
        for cp in choices("cp", cps):
            rest = gpus // (tp * cp) if gpus % (tp * cp) == 0 else 0
            for pp in choices("pp", [p for p in _divisors(rest) if p <= model.layers]):
                if not rest or rest % pp:
                    continue
                dp = rest // pp
                if fixed.get("dp") is not None and fixed["dp"] != dp or batch % dp:
                    continue
                eps = _divisors(model.experts) if model.experts else [1]
                for ep in choices("ep", [e for e in eps if (tp * cp * dp) % e == 0]):
                    shape = Shape(tp, cp, ep, dp, pp)
                    for v in choices("interleave", interleaves(model, pp)):
                        for z in choices("zero", ZERO_STAGES):
                            for mb in choices("microbatch", MICROBATCHES):
                                for rc in choices("recompute", RECOMPUTE):
                                    for sp in choices("sequence_parallel",
                                                      (False, True) if tp > 1 else (False,)):
                                        out.append(Candidate(shape, mb, rc, v, sp, z))
                    if len(out) > MAX_CANDIDATES:
                        raise PlanUsageError(
                            f"more than {MAX_CANDIDATES:,} candidates: fix some dimensions "
                            "(--tp, --pp, --recompute ...)")
    return out


def tp_within_domains(system: System, gpus: int) -> Callable[[int], bool]:
    """Whether every tp group of a size stays inside one NVLink domain of the GPUs the search
    runs on (``placement``; tp varies fastest in ``DEFAULT_ORDER``, so a size's groups are
    consecutive ranks whatever the other sizes): lint's W501 test (``lint.rules.
    spans_domains``). Tensor parallelism communicates in every layer, on the critical path;
    Narayanan et al. 2021 (sec. 5.4.1, Figure 13, "Takeaway #1") measured tensor parallelism
    beyond one server's GPUs losing to pipeline parallelism across servers, and every
    published run of tests/training_rows.py keeps tp inside one NVLink domain. So the search
    does not offer what ``topoc lint`` calls a placement mistake (W501, and with it W504's
    inverted mapping); ``--tp N`` still asks for any size (docs/plan.md, "Search")."""
    import numpy as np

    where = placement(system, gpus)
    seen: dict[int, bool] = {}

    def ok(tp: int) -> bool:
        # every group of tp consecutive ranks in one place (``spans_domains`` == 1), all
        # groups at once over the places' numbers (``domain_codes``)
        if tp not in seen:
            gpu = np.arange(gpus - gpus % tp, dtype=np.int64)
            if where is not None:
                gpu = np.asarray(where, dtype=np.int64)[gpu]
            places = domain_codes(system)[gpu].reshape(-1, tp)
            seen[tp] = tp <= 1 or bool(np.all(places == places[:, :1]))
        return seen[tp]
    return ok


def strategy_for(base: Training, c: Candidate, gpu: GPUFigures) -> ParallelStrategy | None:
    """The ParallelStrategy of one candidate, its step derived; None when the model cannot run
    it."""
    try:
        return with_training(ParallelStrategy("plan", c.shape.sizes, DEFAULT_ORDER, 1, ()),
                             c.training(base), gpu)
    except MappingError:
        return None


def row_of(system: System, c: Candidate, p: ParallelStrategy, cache: dict | None = None,
           where: tuple[int, ...] | None = None, hbm: float | None = None) -> PlanRow:
    """Cost one derived candidate's traffic on the system (on the GPUs ``where`` names, see
    ``strategy.placement``) and put its row together; ``hbm`` (bytes per GPU) replaces the
    system's GPU memory in the row's verdict."""
    return _row(c, p, step(system, p, cache, where=where), hbm)


def _row(c: Candidate, p: ParallelStrategy, r: StepReport, hbm: float | None) -> PlanRow:
    by_dim = exposed_by_dim(r.flows, r.compute, p.derived.compute)
    links: dict[str, set] = {}
    for f in r.flows:
        links.setdefault(f.dim, set()).update(f.classes)
    fits = bool(r.fits) if hbm is None else r.memory.total <= hbm
    return PlanRow(c, r.total, r.compute, r.comm, r.idle or 0.0, r.memory.total, fits,
                   r.mfu or 0.0, r.tokens_per_s or 0.0,
                   tuple(sorted(by_dim.items())),
                   tuple(sorted((k, tuple(sorted(v))) for k, v in links.items())),
                   largest=r.memory.largest)


def cost_candidate(system: System, base: Training, c: Candidate, cache: dict | None = None,
                   hbm: float | None = None, limit: float | None = None) \
        -> PlanRow | float | None:
    """One candidate's row, its verdict against ``hbm``; its bytes per GPU (a float) when it is
    over ``limit`` (default ``hbm``: not costed); None when the model cannot run it or the cost
    model refuses one of its traffic lines (a group whose GPUs are not linked)."""
    gpu = (cache or {}).get("gpu") or gpu_figures(system)
    p = strategy_for(base, c, gpu)
    if p is None:
        return None
    limit = hbm if limit is None else limit
    if limit is not None and p.derived.memory.total > limit:
        return p.derived.memory.total
    if cache is not None and ("where", c.shape.world) not in cache:
        cache["where", c.shape.world] = placement(system, c.shape.world)
    where = cache.get(("where", c.shape.world)) if cache is not None else \
        placement(system, c.shape.world)
    r = step(system, p, cache, where=where)
    # a line the cost model refuses (its groups' GPUs not linked) has no time: ranked with
    # it left out, a mapping that cannot run would come first
    return None if any(f.refused for f in r.flows) else _row(c, p, r, hbm)


# ---- running many ---------------------------------------------------------------------------

#: What a forked worker evaluates against (set before the pool starts, inherited by fork).
_WORK: dict = {}


def _run_chunk(chunk: Sequence[Candidate]) -> list[tuple[Candidate, PlanRow | float | None]]:
    system, base = _WORK["system"], _WORK["base"]
    cache = _WORK.setdefault("cache", {})
    if "gpu" not in cache:
        cache["gpu"] = gpu_figures(system)
        cache["hbm"] = hbm_of(system)
    return [(c, cost_candidate(system, base, c, cache, _WORK.get("hbm"), _WORK.get("limit")))
            for c in chunk]


def _chunks(items: Sequence, n: int) -> list[Sequence]:
    return [items[i:i + n] for i in range(0, len(items), n)]


Outcome = PlanRow | float | None        # a row, bytes per GPU over HBM, or cannot run


def pool_size(jobs: int, chunks: int) -> int:
    """Worker processes for ``jobs``: no more than the chunks to cost or the CPUs this process
    may run on (the search is CPU-bound: ``--jobs 1024`` on two cores forked 1,024 copies of
    the planner, 4 GB and a minute for a search of one second)."""
    import os
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(jobs, chunks, cpus))


def run_local(system: System, base: Training, todo: Sequence[Candidate], jobs: int,
              progress: Callable[[int], None], limit: float | None = None,
              hbm: float | None = None) -> dict[Candidate, Outcome]:
    """Cost ``todo`` in this process (jobs = 1) or a pool of forked processes; candidates over
    ``limit`` bytes per GPU are not costed, the rest judged against ``hbm`` (default
    ``limit``)."""
    import multiprocessing
    _WORK.update(system=system, base=base, limit=limit, hbm=limit if hbm is None else hbm)
    _WORK.pop("cache", None)
    out: dict[Candidate, Outcome] = {}
    chunks = _chunks(todo, max(1, min(64, len(todo) // (4 * max(1, jobs)) or 1)))
    if jobs <= 1 or len(todo) < POOL_MIN or "fork" not in multiprocessing.get_all_start_methods():
        for chunk in chunks:
            out.update(_run_chunk(chunk))
            progress(len(out))
        return out
    system.incidence, system.locality    # build the cached views once, before the fork
    with multiprocessing.get_context("fork").Pool(pool_size(jobs, len(chunks))) as pool:
        for result in pool.imap_unordered(_run_chunk, chunks):
            out.update(result)
            progress(len(out))
    return out


def _ray_chunk(source: dict, base: Training, chunk: Sequence[Candidate],
               limit: float | None = None, hbm: float | None = None) -> list:
    """A Ray task: compile the system where it runs (once per worker) and cost a chunk."""
    key = json.dumps(source, sort_keys=True)
    if _WORK.get("ray_key") != key:
        system = pipeline.load(source["path"], source["defines"], source["import_roots"])
        if source.get("fail") or source.get("degrade") or source.get("faults"):
            scenario = degrade.Faults.read(Path(source["faults"]).read_text(),  # the same
                                           source["faults"]) \
                if source.get("faults") else degrade.Faults()                    # degraded system
            system = degrade.apply(system, source.get("fail", ()), source.get("degrade", ()),
                                   scenario).system
        _WORK.update(ray_key=key, system=system, base=base, cache={})
    _WORK.update(base=base, limit=limit, hbm=limit if hbm is None else hbm)
    return _run_chunk(chunk)


def run_ray(address: str, source: dict, base: Training, todo: Sequence[Candidate],
            progress: Callable[[int], None], limit: float | None = None,
            hbm: float | None = None) -> dict[Candidate, Outcome]:
    """Cost ``todo`` as Ray tasks on the cluster at ``address``."""
    try:
        import ray
    except ImportError:
        raise PlanUsageError("--ray needs Ray: pip install 'topoc[ray]'") from None
    try:
        remote.probe(address)
    except remote.Unreachable as exc:
        raise PlanUsageError(str(exc)) from None
    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
             logging_level="ERROR")
    try:
        task = ray.remote(_ray_chunk)
        pending = [task.remote(source, base, chunk, limit, hbm) for chunk in _chunks(todo, 64)]
        out: dict[Candidate, Outcome] = {}
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            out.update(ray.get(done[0]))
            progress(len(out))
        return out
    finally:
        ray.shutdown()


# ---- the disk cache -------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _code_hash() -> str:
    """A hash of the compiler's own source: a row computed by other code is never reused, even
    between two commits of one version."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def fingerprint(system: System, base: Training, gpus: int, hbm: float | None = None) -> str:
    """A hash of everything a row depends on: the devices and their figures, the links, the
    model, the training options, the GPU count, the GPU memory asked for (``hbm``, when it
    replaces the devices' own) and the code that computes it."""
    h = hashlib.sha256()
    h.update(f"{CACHE_VERSION} {VERSION} {_code_hash()} {gpus}\n".encode())
    if hbm is not None:
        h.update(f"hbm {hbm!r}\n".encode())
    h.update(repr(attrs.evolve(base.model, span=None)).encode())
    h.update(repr(attrs.evolve(base, model=None)).encode())
    models = {}
    for d in system.devices:
        models.setdefault(d.model.name, d.model)
        h.update(f"{d.id} {d.model.name}\n".encode())
    for name in sorted(models):
        h.update(repr((models[name].attrs, models[name].ports)).encode())
    if isinstance(system.links, Links):
        system.links.digest(h)          # the compact links' arrays: no Link object made
        return h.hexdigest()[:32]
    for link in system.links:
        h.update(f"{link.src} {link.dst} {link.type.cls} {link.type.bandwidth} "
                 f"{link.type.latency} {link.lanes} {link.duplex}\n".encode())
    return h.hexdigest()[:32]


def _load_cache(path: Path) -> tuple[dict[str, dict | None], str | None]:
    """The cache's valid rows (``plan_cache``: a regular file, shape, code hash and checksum
    checked; anything else is recomputed) and a note when a bad file was ignored."""
    return plan_cache.load_noted(path, _code_hash(), lambda d: (
        f"tp{d['tp']}-cp{d['cp']}-ep{d['ep']}-dp{d['dp']}-pp{d['pp']}-mb{d['microbatch']}"
        f"-{d['recompute']}-v{d['interleave']}-sp{int(d['sequence_parallel'])}"
        f"-z{d.get('zero', 1)}"))


def _save_cache(path: Path, rows: dict[str, dict | None]) -> None:
    plan_cache.save(path, rows, _code_hash())


# ---- the entry point ------------------------------------------------------------------------

@attrs.frozen
class PlanResult:
    """Ranked rows and what the run did."""

    rows: tuple[PlanRow, ...]
    considered: int            # candidates enumerated
    invalid: int               # rejected by the model's checks
    cached: int                # outcomes read from the disk cache
    gpus: int
    runner: str = "cache"      # what costed the rest: "process", "pool", "ray" or "cache"
    over_memory: int = 0       # over HBM by more than the margin: counted, not costed
    smallest: tuple[float, str] | None = None   # the least memory over and its candidate key
    margin: float = 0.0        # the memory margin the rows were marked tight with
    hbm: float | None = None   # the memory per GPU the search ran at
    cache_note: str | None = None   # why a cache file that was there was ignored

    @property
    def tight(self) -> int:
        """Rows inside the margin either side of HBM."""
        return sum(1 for r in self.rows if r.tight)

    @property
    def tight_over(self) -> int:
        """Tight rows predicted over HBM (answered, not refused: ``memory.band``)."""
        return sum(1 for r in self.rows if r.tight and not r.fits)


def lightest(c: Candidate) -> Candidate:
    """``c`` with its lightest options (micro-batch 1, full recompute, sequence parallelism
    with tp): the variant whose memory bounds the mapping's from below."""
    return Candidate(c.shape, 1, "full", c.interleave, c.shape.tp > 1, c.zero)


def smallest_over(base: Training, result: PlanResult, gpu: GPUFigures,
                  fixed: Mapping[str, object] | None = None):
    """The candidate behind ``result.smallest`` (the least memory over HBM) and its derived
    strategy, whose ``derived.memory`` names the terms to shrink; None when it cannot be
    found again. A pruned mapping's smallest is its lightest variant's, a costed one's its
    own, so the variant whose memory is that figure is the one returned."""
    if result.smallest is None:
        return None
    size, key = result.smallest
    for c in enumerate_candidates(base.model, result.gpus, base.batch, fixed or {}):
        if c.key == key:
            for variant in (lightest(c), c):
                p = strategy_for(base, variant, gpu)
                if p is not None and abs(p.derived.memory.total - size) <= 1e6:
                    return variant, p
            return None
    return None


def first_rejection(base: Training, gpus: int, fixed: Mapping[str, object] | None = None):
    """(the first candidate's key, why the model cannot run it), or None when it can: what a
    search whose every candidate was rejected says."""
    for c in enumerate_candidates(base.model, gpus, base.batch, fixed or {})[:1]:
        try:
            check(c.training(base), c.shape)
        except MappingError as exc:
            return c.key, str(exc)
    return None


def first_refusal(system: System, base: Training, gpus: int,
                  fixed: Mapping[str, object] | None = None):
    """(the first candidate the model accepts, why the cost model refuses a traffic line of
    it: its groups' GPUs not linked), or None when it is costed: what a search whose
    candidates were rejected on the topology says. Costs one candidate."""
    gpu = gpu_figures(system)
    for c in enumerate_candidates(base.model, gpus, base.batch, fixed or {}):
        p = strategy_for(base, c, gpu) if gpu is not None else None
        if p is None:
            continue
        r = step(system, p, where=placement(system, c.shape.world))
        bad = [f for f in r.flows if f.refused]
        return (c.key, f"{bad[0].dim} {bad[0].collective} cannot run: {bad[0].note}") if bad \
            else None
    return None


def why_empty(base: Training, result: PlanResult,
              fixed: Mapping[str, object] | None = None) -> str:
    """Why a search found no row, in one clause (what ``--scaling`` prints for a '-' cell):
    over GPU memory (the smallest candidate's need), no mapping of the GPU count at all, or
    every candidate rejected by the model (the first one's reason)."""
    if result.over_memory and result.smallest is not None:
        size, key = result.smallest
        over = f", {(size - result.hbm) / 1e9:.1f} GB over" if result.hbm else ""
        return (f"over GPU memory: the smallest of {result.over_memory:,} candidates needs "
                f"{size / 1e9:.1f} GB per GPU{over} ({key})")
    if not result.considered:
        gpus = f"{result.gpus} GPU{'s' if result.gpus != 1 else ''}"
        return (f"no mapping of {gpus}: tp x cp x dp x pp must make {result.gpus}, "
                f"with tp dividing the heads, dp the batch {base.batch} and pp at most the "
                "layers (and the sizes fixed)")
    found = first_rejection(base, result.gpus, fixed)
    return (f"all {result.considered:,} candidates rejected by the model"
            + (f" ({found[0]}: {found[1]})" if found else ""))


def _prune(base: Training, todo: Sequence[Candidate], gpu: GPUFigures,
           hbm: float | None) -> tuple[list[Candidate], dict[Candidate, float]]:
    """Drop every candidate whose mapping cannot fit even with its lightest options (micro-batch
    1, full recompute, sequence parallelism: a lower bound of its memory); returns the rest and
    the dropped ones with that bound."""
    if hbm is None:
        return list(todo), {}
    bound: dict[tuple, float | None] = {}
    keep, dropped = [], {}
    for c in todo:
        key = (c.shape, c.interleave, c.zero)
        if key not in bound:
            t = lightest(c).training(base)
            try:
                micro = check(t, c.shape)
                bound[key] = memory(t.model, t, c.shape, stage_layout(t, c.shape), micro).total
            except MappingError:
                bound[key] = None
        b = bound[key]
        if b is not None and b > hbm:
            dropped[c] = b
        else:
            keep.append(c)
    return keep, dropped


def _stored(entry) -> Outcome:
    if entry is None:
        return None
    if "memory" in entry and len(entry) == 1:
        return float(entry["memory"])
    return PlanRow.from_dict(entry)


def _storable(outcome: Outcome):
    if outcome is None:
        return None
    if isinstance(outcome, float):
        return {"memory": outcome}
    row = outcome.as_dict()
    del row["tight"]            # a property of the margin asked for, marked on every read
    return row


@gc_paused()
def plan(system: System, model: Transformer, base: Training, gpus: int | None = None,
         fixed: Mapping[str, object] | None = None, jobs: int = 1, ray: str | None = None,
         source: dict | None = None, use_cache: bool = True,
         progress: Callable[[int, int], None] | None = None,
         hbm: float | None = None, margin: float = MEMORY_MARGIN) -> PlanResult:
    """Enumerate, prune by memory, cost (cached) and rank the mappings of ``model``
    (``base.model``, the model the training options are for) on ``system``. ``hbm`` (bytes
    per GPU) replaces the GPUs' declared memory: the same GPU in another memory size (an
    A100 40 GB on a file that declares the 80 GB part, an H200 on the H100's fabric).
    ``margin`` (the memory model's uncertainty, a fraction of HBM; 0 turns it off) marks the
    rows inside it either side of HBM ``tight``: those predicted to fit rank among the rest by
    step time (a mark, not a rank: ``PlanRow.rank_key``), and a candidate predicted over HBM
    by less than the uncertainty (at most HBM / (1 - margin), ``memory.band``) is costed and
    answered, ``fits`` false and ``tight``, after every row that fits; only one over by more
    is pruned and counted over memory (``answered``; the default is the memory validation's
    ``MEMORY_MARGIN``)."""
    if model != base.model:
        raise PlanUsageError(f"the training options are for '{base.model.name}', not "
                             f"'{model.name}'")
    world = len(system.gpus)
    gpus = gpus or world
    if not 1 <= gpus <= world:
        raise PlanUsageError(f"--gpus {gpus}: the system has {world} GPUs")
    gpu = gpu_figures(system)
    if gpu is None:
        raise PlanUsageError(f"the GPUs of '{system.name}' do not all declare tflops_bf16 and "
                             "hbm_bandwidth, which a compute time needs")
    if hbm is not None and not hbm > 0:
        raise PlanUsageError(f"--hbm {hbm}: GPU memory must be positive")
    if not 0 <= margin < 1:
        raise PlanUsageError(f"--memory-margin {margin}: a fraction of HBM from 0 (off) to "
                             "below 1")
    hbm = hbm if hbm is not None else hbm_of(system, gpus)
    limit = limit_of(hbm, margin)
    todo = enumerate_candidates(model, gpus, base.batch, fixed or {},
                                tp_within_domains(system, gpus))
    live, pruned = _prune(base, todo, gpu, limit)
    path = cache_dir() / "plan" / f"{fingerprint(system, base, gpus, hbm)}.json" \
        if use_cache else None
    stored, cache_note = _load_cache(path) if use_cache else ({}, None)
    done: dict[Candidate, Outcome] = {}
    for c in live:
        if c.key in stored:
            found = _stored(stored[c.key])
            # a bare size was over the limit of the run that stored it: a wider margin costs it
            if not (isinstance(found, float) and limit is not None and found <= limit):
                done[c] = found
    cached = len(done)
    rest = [c for c in live if c not in done]
    tick = (lambda n: progress(len(pruned) + cached + n, len(todo))) if progress else \
        (lambda n: None)
    runner = "cache"
    if rest:
        if ray:
            if source is None:
                raise PlanUsageError("--ray needs the system's file (its path and -D values)")
            done.update(run_ray(ray, source, base, rest, tick, limit, hbm))
            runner = "ray"
        else:
            done.update(run_local(system, base, rest, jobs, tick, limit, hbm))
            runner = "pool" if jobs > 1 and len(rest) >= POOL_MIN else "process"
        if use_cache:
            stored.update({c.key: _storable(r) for c, r in done.items()})
            _save_cache(path, stored)
    elif progress:
        progress(len(todo), len(todo))
    # a row stored by a run with a wider margin is over this run's limit: counted, not shown
    done = {c: r.memory_per_gpu if isinstance(r, PlanRow) and limit is not None and
            r.memory_per_gpu > limit else r for c, r in done.items()}
    rows = sorted((answered(r, hbm, margin) for r in done.values() if isinstance(r, PlanRow)),
                  key=lambda r: r.rank_key)
    over = {c: r for c, r in done.items() if isinstance(r, float)}
    over.update(pruned)
    smallest = min(((m, c.key) for c, m in over.items()), default=None)
    return PlanResult(tuple(rows), len(todo), sum(1 for r in done.values() if r is None),
                      cached, gpus, runner, len(over), smallest, margin, hbm, cache_note)
