"""``topoc plan``: every valid mapping of a model on a topology, costed and ranked.

A candidate fixes tp, cp, ep, dp, pp, the micro-batch, the recompute mode, the interleave and
sequence parallelism. Each is checked (``training.check``), its traffic derived and costed on
the system's real groups with the collective cost model (``strategy.step``, the same numbers as
``topoc report``), and its memory set against the GPUs' HBM. Rows are ranked by step time,
fitting ones first.

Costs of one collective on one group and size are memoised across candidates; whole rows are
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

from ..base.version import VERSION
from ..lang import pipeline
from ..ir.gpus import gpu_rates
from ..lang.derive import with_training
from ..ir.system import DEFAULT_ORDER, ParallelStrategy, System, Transformer
from . import plan_cache, remote
from .strategy import StepReport, exposed_by_dim, step
from ..training.model import RECOMPUTE, PlanError, Shape, Training

DIMS = ("tp", "cp", "ep", "dp", "pp")
MICROBATCHES = (1, 2, 4, 8)
INTERLEAVES = (1, 2, 3, 4, 6, 8)
#: At most this many candidates per run: past it the command asks for fixed dimensions.
MAX_CANDIDATES = 200_000
CACHE_VERSION = 1
#: Fewer candidates than this run in process: a pool's start-up would cost more than it saves.
POOL_MIN = 32


@attrs.frozen(order=True)
class Candidate:
    """One mapping to evaluate."""

    tp: int
    cp: int
    ep: int
    dp: int
    pp: int
    microbatch: int
    recompute: str
    interleave: int
    sequence_parallel: bool

    @property
    def shape(self) -> Shape:
        """The sizes as a ``training.Shape``."""
        return Shape(self.tp, self.cp, self.ep, self.dp, self.pp)

    @property
    def key(self) -> str:
        """A stable text key (the disk cache's)."""
        return (f"tp{self.tp}-cp{self.cp}-ep{self.ep}-dp{self.dp}-pp{self.pp}-mb{self.microbatch}"
                f"-{self.recompute}-v{self.interleave}-sp{int(self.sequence_parallel)}")


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

    def as_dict(self) -> dict:
        """The JSON row (contract field names first)."""
        c = self.candidate
        return {"tp": c.tp, "cp": c.cp, "ep": c.ep, "dp": c.dp, "pp": c.pp,
                "microbatch": c.microbatch, "recompute": c.recompute,
                "interleave": c.interleave, "sequence_parallel": c.sequence_parallel,
                "step_time": self.step_time, "compute_time": self.compute_time,
                "comm_time": self.comm_time, "bubble_time": self.bubble_time,
                "memory_per_gpu": self.memory_per_gpu, "fits": self.fits, "mfu": self.mfu,
                "tokens_per_s": self.tokens_per_s, "comm_by_dim": dict(self.comm_by_dim),
                "links_by_dim": {k: list(v) for k, v in self.links_by_dim}}

    @classmethod
    def from_dict(cls, d: Mapping) -> PlanRow:
        """Back from ``as_dict`` (the disk cache)."""
        c = Candidate(d["tp"], d["cp"], d["ep"], d["dp"], d["pp"], d["microbatch"],
                      d["recompute"], d["interleave"], d["sequence_parallel"])
        return cls(c, d["step_time"], d["compute_time"], d["comm_time"], d["bubble_time"],
                   d["memory_per_gpu"], d["fits"], d["mfu"], d["tokens_per_s"],
                   tuple(sorted(d["comm_by_dim"].items())),
                   tuple(sorted((k, tuple(v)) for k, v in d["links_by_dim"].items())))

    @property
    def rank_key(self) -> tuple:
        """Fitting rows first, then by step time, then by the mapping (deterministic)."""
        return (not self.fits, self.step_time, self.candidate)


class PlanUsageError(ValueError):
    """A plan request that cannot run (a usage problem: exit 2)."""


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidates(model: Transformer, gpus: int, batch: int, fixed: Mapping[str, object]) \
        -> list[Candidate]:
    """Every mapping of ``model`` on ``gpus`` GPUs that ``fixed`` allows (keys tp, cp, ep, dp,
    pp, microbatch, recompute, interleave, sequence_parallel), before the model's own checks."""
    def choices(key: str, default: Iterable) -> list:
        return [fixed[key]] if fixed.get(key) is not None else list(default)
    out = []
    for tp in choices("tp", _divisors(gpus)):
        for cp in choices("cp", _divisors(gpus // tp) if gpus % tp == 0 else []):
            rest = gpus // (tp * cp) if gpus % (tp * cp) == 0 else 0
            for pp in choices("pp", [p for p in _divisors(rest) if p <= model.layers]):
                if not rest or rest % pp:
                    continue
                dp = rest // pp
                if fixed.get("dp") is not None and fixed["dp"] != dp:
                    continue
                eps = _divisors(model.experts) if model.experts else [1]
                for ep in choices("ep", [e for e in eps if (tp * cp * dp) % e == 0]):
                    for mb in choices("microbatch", MICROBATCHES):
                        for rc in choices("recompute", RECOMPUTE):
                            for v in choices("interleave", [
                                    v for v in INTERLEAVES if v == 1 or
                                    pp > 1 and model.layers % (pp * v) == 0]):
                                for sp in choices("sequence_parallel",
                                                  (False, True) if tp > 1 else (False,)):
                                    out.append(Candidate(tp, cp, ep, dp, pp, mb, rc, v, sp))
                                    if len(out) > MAX_CANDIDATES:
                                        raise PlanUsageError(
                                            f"more than {MAX_CANDIDATES:,} candidates: fix some "
                                            "dimensions (--tp, --pp, --recompute ...)")
    return out


def strategy_for(system: System, base: Training, c: Candidate) -> ParallelStrategy | None:
    """The ParallelStrategy of one candidate; None when the model cannot run it."""
    training = attrs.evolve(base, microbatch=c.microbatch, recompute=c.recompute,
                            interleave=c.interleave, sequence_parallel=c.sequence_parallel)
    sizes = tuple((d, getattr(c, d)) for d in DIMS)
    try:
        return with_training(ParallelStrategy("plan", sizes, DEFAULT_ORDER, 1, ()), training,
                             gpu_rates(system, base.model.dtype))
    except PlanError:
        return None


def evaluate(system: System, base: Training, c: Candidate,
             cache: dict | None = None) -> PlanRow | None:
    """One candidate's row, or None when the model cannot run with it."""
    p = strategy_for(system, base, c)
    if p is None:
        return None
    r: StepReport = step(system, p, cache)
    by_dim = exposed_by_dim(r.flows, r.compute)
    links: dict[str, set] = {}
    for f in r.flows:
        links.setdefault(f.dim, set()).update(f.classes)
    return PlanRow(c, r.total, r.compute, r.comm, r.idle or 0.0, r.memory.total, bool(r.fits),
                   r.mfu or 0.0, r.tokens_per_s or 0.0,
                   tuple(sorted(by_dim.items())),
                   tuple(sorted((k, tuple(sorted(v))) for k, v in links.items())))


# ---- running many ---------------------------------------------------------------------------

#: What a forked worker evaluates against (set before the pool starts, inherited by fork).
_WORK: dict = {}


def _run_chunk(chunk: Sequence[Candidate]) -> list[tuple[Candidate, PlanRow | None]]:
    system, base = _WORK["system"], _WORK["base"]
    cache = _WORK.setdefault("cache", {})
    return [(c, evaluate(system, base, c, cache)) for c in chunk]


def _chunks(items: Sequence, n: int) -> list[Sequence]:
    return [items[i:i + n] for i in range(0, len(items), n)]


def run_local(system: System, base: Training, todo: Sequence[Candidate],
              jobs: int, progress: Callable[[int], None]) -> dict[Candidate, PlanRow | None]:
    """Evaluate ``todo`` in this process (jobs = 1) or a pool of forked processes."""
    import multiprocessing
    _WORK.update(system=system, base=base)
    _WORK.pop("cache", None)
    out: dict[Candidate, PlanRow | None] = {}
    chunks = _chunks(todo, max(1, min(64, len(todo) // (4 * max(1, jobs)) or 1)))
    if jobs <= 1 or len(todo) < POOL_MIN or "fork" not in multiprocessing.get_all_start_methods():
        for chunk in chunks:
            out.update(_run_chunk(chunk))
            progress(len(out))
        return out
    system.graph, system.locality        # build the cached views once, before the fork
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for result in pool.imap_unordered(_run_chunk, chunks):
            out.update(result)
            progress(len(out))
    return out


def _ray_chunk(source: dict, base: Training, chunk: Sequence[Candidate]) -> list:
    """A Ray task: compile the system where it runs (once per worker) and evaluate a chunk."""
    key = json.dumps(source, sort_keys=True)
    if _WORK.get("ray_key") != key:
        _WORK.update(ray_key=key, system=pipeline.load(source["path"], source["defines"],
                                                    source["import_roots"]),
                     base=base, cache={})
    _WORK.update(base=base)
    return _run_chunk(chunk)


def run_ray(address: str, source: dict, base: Training,
            todo: Sequence[Candidate], progress: Callable[[int], None]) \
        -> dict[Candidate, PlanRow | None]:
    """Evaluate ``todo`` as Ray tasks on the cluster at ``address``."""
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
        pending = [task.remote(source, base, chunk) for chunk in _chunks(todo, 64)]
        out: dict[Candidate, PlanRow | None] = {}
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


def fingerprint(system: System, base: Training, gpus: int) -> str:
    """A hash of everything a row depends on: the devices and their figures, the links, the
    model, the training options, the GPU count and the code that computes it."""
    h = hashlib.sha256()
    h.update(f"{CACHE_VERSION} {VERSION} {_code_hash()} {gpus}\n".encode())
    h.update(repr(attrs.evolve(base.model, span=None)).encode())
    h.update(repr(attrs.evolve(base, model=None)).encode())
    models = {}
    for d in system.devices:
        models.setdefault(d.model.name, d.model)
        h.update(f"{d.id} {d.model.name}\n".encode())
    for name in sorted(models):
        h.update(repr((models[name].attrs, models[name].ports)).encode())
    for link in system.links:
        h.update(f"{link.src} {link.dst} {link.type.cls} {link.type.bandwidth} "
                 f"{link.type.latency} {link.lanes} {link.duplex}\n".encode())
    return h.hexdigest()[:32]


def cache_dir() -> Path:
    """$TOPOC_CACHE, else $XDG_CACHE_HOME/topoc, else ~/.cache/topoc."""
    if os.environ.get("TOPOC_CACHE"):
        return Path(os.environ["TOPOC_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "topoc"


def _load_cache(path: Path) -> dict[str, dict | None]:
    """The cache's valid rows (``plan_cache``: shape, code hash and checksum checked; anything
    else is recomputed)."""
    return plan_cache.load(path, _code_hash(), lambda d: Candidate(
        d["tp"], d["cp"], d["ep"], d["dp"], d["pp"], d["microbatch"], d["recompute"],
        d["interleave"], d["sequence_parallel"]).key)


def _save_cache(path: Path, rows: dict[str, dict | None]) -> None:
    plan_cache.save(path, rows, _code_hash())


# ---- the entry point ------------------------------------------------------------------------

@attrs.frozen
class PlanResult:
    """Ranked rows and what the run did."""

    rows: tuple[PlanRow, ...]
    considered: int            # candidates enumerated
    invalid: int               # rejected by the model's checks
    cached: int                # rows read from the disk cache
    gpus: int
    runner: str = "cache"      # what evaluated the rest: "process", "pool", "ray" or "cache"


def plan(system: System, model: Transformer, base: Training, gpus: int | None = None,
         fixed: Mapping[str, object] | None = None, jobs: int = 1, ray: str | None = None,
         source: dict | None = None, use_cache: bool = True,
         progress: Callable[[int, int], None] | None = None) -> PlanResult:
    """Enumerate, evaluate (cached) and rank the mappings of ``model`` (``base.model``, the
    model the training options are for) on ``system``."""
    if model != base.model:
        raise PlanUsageError(f"the training options are for '{base.model.name}', not "
                             f"'{model.name}'")
    world = len(system.gpus)
    gpus = gpus or world
    if not 1 <= gpus <= world:
        raise PlanUsageError(f"--gpus {gpus}: the system has {world} GPUs")
    if gpu_rates(system, model.dtype) is None:
        raise PlanUsageError(f"the GPUs of '{system.name}' do not all declare "
                             f"{'tflops_fp8' if model.dtype == 'fp8' else 'tflops_bf16'} and "
                             "hbm_bandwidth, which a compute time needs")
    todo = candidates(model, gpus, base.batch, fixed or {})
    path = cache_dir() / "plan" / f"{fingerprint(system, base, gpus)}.json"
    stored = _load_cache(path) if use_cache else {}
    done: dict[Candidate, PlanRow | None] = {}
    for c in todo:
        if c.key in stored:
            row = stored[c.key]
            done[c] = PlanRow.from_dict(row) if row is not None else None
    cached = len(done)
    rest = [c for c in todo if c not in done]
    tick = (lambda n: progress(cached + n, len(todo))) if progress else (lambda n: None)
    runner = "cache"
    if rest:
        if ray:
            if source is None:
                raise PlanUsageError("--ray needs the system's file (its path and -D values)")
            done.update(run_ray(ray, source, base, rest, tick))
            runner = "ray"
        else:
            done.update(run_local(system, base, rest, jobs, tick))
            runner = "pool" if jobs > 1 and len(rest) >= POOL_MIN else "process"
        if use_cache:
            stored.update({c.key: (r.as_dict() if r else None) for c, r in done.items()})
            _save_cache(path, stored)
    rows = sorted((r for r in done.values() if r is not None), key=lambda r: r.rank_key)
    return PlanResult(tuple(rows), len(todo), sum(1 for r in done.values() if r is None),
                      cached, gpus, runner)
