"""topoc: a declarative language and compiler for GPU system topologies.

>>> import topoc
>>> system = topoc.load("library/nvidia/gb200_nvl72.topo")   # doctest: +SKIP
>>> topoc.summary(system)["devices"]                           # doctest: +SKIP
{'cpu': 36, 'gpu': 72, 'nic': 72, 'switch': 18}
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

# Nothing of the compiler is imported until it is used (PEP 562 below): the ``topoc`` command
# starts in ``topoc.launch``, which must be able to catch a Ctrl-C from its first instruction,
# and importing the compiler (networkx, numpy, the grammar) takes half a second.
_LAZY = {"CompileError": ("compiler.base.diagnostics", "CompileError"),
         "Diagnostic": ("compiler.base.diagnostics", "Diagnostic"),
         "System": ("compiler.ir.system", "System"),
         "replay": ("compiler.collectives.replay", "replay"),
         "pipeline": ("compiler.lang", "pipeline"),
         "VERSION": ("compiler.base.version", "VERSION"),
         "__version__": ("compiler.base.version", "VERSION")}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'topoc' has no attribute '{name}'")
    import importlib
    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(f".{module}", __name__), attr)
    globals()[name] = value
    return value

__all__ = ["CompileError", "Diagnostic", "System", "check", "compile", "infer", "library_reference",
           "load", "loads", "lint", "reliability", "replay", "__version__"]

PathLike = str | os.PathLike


def compile(text: str, path: PathLike | None = None, defines: Mapping[str, int] | None = None,
            import_roots: Sequence[PathLike] = ()) -> System:
    """Compile .topo source text to a System (``compiler.lang.pipeline``).

    ``path`` names the file (for diagnostics and relative imports), ``defines`` overrides
    parameters of the file's system (``-D racks=20``), ``import_roots`` allows more folders for
    imports. Raises ``CompileError`` carrying the diagnostics when the input has errors.
    """
    from .compiler.lang import pipeline
    return pipeline.compile(text, path, defines, import_roots)


def load(path: PathLike, defines: Mapping[str, int] | None = None,
         import_roots: Sequence[PathLike] = (), cache: bool = False,
         notes: list[str] | None = None) -> System:
    """Read and compile one .topo file (see ``compile``). ``cache=True`` goes through the
    compiled-system cache the command line uses (``$TOPOC_CACHE/systems``, docs/scale.md): a
    large system compiled before from the same sources, parameters and code is read back
    instead of compiled; ``notes`` collects why a cache file there was ignored."""
    from .compiler.lang import pipeline
    return pipeline.load(path, defines, import_roots, cache, notes)


def loads(text: str, defines: Mapping[str, int] | None = None,
          import_roots: Sequence[PathLike] = ()) -> System:
    """Compile .topo text that has no file; imports resolve from the current folder."""
    from .compiler.lang import pipeline
    return pipeline.compile(text, None, defines, import_roots)


def check(path: PathLike, defines: Mapping[str, int] | None = None,
          import_roots: Sequence[PathLike] = ()) -> list[Diagnostic]:
    """Every error diagnostic for one file, [] when it is clean. A file with no ``system``
    (a library of declarations) is checked as far as its declarations go."""
    from .compiler.lang import pipeline
    return pipeline.check(path, defines, import_roots)


def lint(path: PathLike, config=None, defines: Mapping[str, int] | None = None,
         import_roots: Sequence[PathLike] = (), cache: bool = False) -> list[Diagnostic]:
    """Compile errors, or else the rule catalogue's findings, for one file, filtered by its
    ``[tool.topoc.lint]`` configuration and ``# topoc: ignore[...]`` comments (docs/rules.md);
    ``cache`` as for ``load``."""
    from .compiler.lint.lint import lint_file
    return lint_file(path, config, defines, import_roots, cache)


def library_reference() -> str:
    """The bundled library's reference as Markdown: every device, link type, group and model
    with its key figures and source comment (what ``topoc library`` prints and
    docs/library.md holds)."""
    from .backends.library_doc import render
    return render()


def summary(system: System) -> dict:
    """Counts per kind, HBM, scale-up and scale-out figures (``compiler.summary``)."""
    from .compiler.ir.summary import summarize
    return summarize(system)


def groups(system: System, kind: str, parallel: str | None = None):
    """The rank groups of one dimension (tp, cp, ep, dp, pp) of a strategy, as RankGroups
    named ``kind:index``; ``parallel`` may be omitted when the file has one strategy."""
    from .compiler.ir.groups import groups as rank_groups
    return rank_groups(system, kind, parallel)


def schedule(system: System, collective: str, group=None, *, ranks: str | None = None,
             algorithm: str = "auto", nbytes: int = 2**30, **options):
    """Plan ``collective`` on ``group`` (a RankGroup, a spec like ``'dp:0'`` or ``'world'``)
    or on ``ranks`` (``'0..7,16'``); see ``compiler.schedule.schedule`` for the options.
    ``nbytes`` is a finite whole number of bytes, 1 to 2**50 (ValueError otherwise; TypeError
    for arguments of the wrong type)."""
    from .compiler.ir.groups import RankGroup, select_group
    from .compiler.collectives.schedule import schedule as plan
    from .compiler.ir.system import System
    if not isinstance(system, System):
        raise TypeError(f"schedule needs a System (from topoc.load), not {type(system).__name__}")
    if not (group is None or isinstance(group, (str, RankGroup))):
        raise TypeError(f"group is a RankGroup or a spec such as 'dp:0', not "
                        f"{type(group).__name__}")
    if group is None or isinstance(group, str):
        group = select_group(system, group, options.pop("parallel", None), ranks)
    return plan(system, group, collective, algorithm, nbytes, **options)


def infer(system: System, model, isl: int, osl: int, *, gpus: int | None = None,
          tp: int | None = None, pp: int | None = None, ep: int | None = None,
          attention_dp: bool | None = None, precision: str | None = None,
          kv_precision: str | None = None, concurrency: int | str = "sweep",
          disaggregate: bool = False, ttft_limit: float | None = None,
          tpot_limit: float | None = None, settings=None, request_rate: float | None = None,
          requests: int | None = None, client: str | None = None, engine: str | None = None,
          warmup: int | None = None, collectives: str | None = None,
          nccl: str | None = None, length_spread: float | None = None,
          max_num_tokens: int | None = None, chunked_prefill: bool | None = None):
    """Serve ``model`` (a name or a ``Transformer``) on the first ``gpus``
    GPUs of ``system``: every tp x pp x ep (x attention DP) layout the fixed sizes allow, at
    ``concurrency`` requests in flight ("max": the saturated engine; "sweep": 1, 2, 4, ...),
    ranked by output tokens/s per GPU; the same rows as ``topoc infer`` (docs/infer.md).
    ``request_rate`` (requests/s over the replicas, Poisson; ``math.inf``: ``requests`` at
    once, default 1000) replaces the concurrency with an open-loop load, as
    ``topoc infer --request-rate`` does. Raises ``compiler.analysis.infer.InferError`` when the
    model cannot be laid out, the load is not one, or a size, concurrency or limit is out of
    range (what ``topoc infer`` calls a usage error).

    ``engine`` ("trtllm", the default, "vllm" or "sglang") applies that engine's scheduler
    defaults (``compiler.analysis.serve_sim.ENGINES``) unless ``settings`` is given; ``client``
    ("closed" at ``concurrency``, or "poisson" at ``request_rate``) simulates a benchmark of
    ``requests`` requests (default 1,000), the first ``warmup`` (default 0) left out; a named
    client ("genai-perf", "aiperf", "vllm-bench-serve": ``serve_sim.PROTOCOLS``) runs the
    closed loop with that client's defaults (genai-perf: max(10, 2 x concurrency) requests), as
    ``topoc infer --client`` does: the rows' TTFT, TPOT and throughput are the run's means
    and ``parts`` holds the median and p90; ``length_spread`` R draws each simulated request's
    lengths within isl and osl x (1 +- R) (``topoc infer --length-spread``);
    ``max_num_tokens`` and ``chunked_prefill`` replace the engine's token budget per step and
    its chunking of long prompts (``topoc infer --max-num-tokens``, ``--chunked-prefill``). ``collectives`` ("fastest", the default, "nccl"
    or "engine": the engine's own all-reduce kernels by its rule) is ``topoc infer
    --collectives``; ``nccl`` (a release, "2.20"; default the latest profile) the NCCL the
    engine's NCCL calls run on, ``topoc infer --nccl``."""
    import attrs

    from .compiler.analysis import serve_sim
    from .compiler.analysis.infer import InferError, Settings, default_precision, gpu_of
    from .compiler.analysis.infer import infer as run
    from .compiler.analysis.infer_rate import DEFAULT_REQUESTS, Arrivals
    if engine is not None and engine not in serve_sim.ENGINES:
        raise InferError(f"engine '{engine}': one of {', '.join(serve_sim.ENGINES)}")
    if client is not None and client not in serve_sim.CLIENT_NAMES:
        raise InferError(f"client '{client}': one of {', '.join(serve_sim.CLIENT_NAMES)}")
    if warmup is not None and client is None:
        raise InferError("warmup needs client (the simulated run's warm-up)")
    if length_spread is not None and client is None:
        raise InferError("length_spread needs client (the simulated run's lengths)")
    if length_spread is not None and not 0 <= length_spread < 1:
        raise InferError(f"length_spread {length_spread:g}: from 0 up to (not including) 1")
    arrivals = None
    if request_rate is not None:
        if concurrency != "sweep" and client is None:
            raise InferError("concurrency and request_rate: give one load, not both")
        arrivals = Arrivals(float(request_rate), DEFAULT_REQUESTS if requests is None
                            else int(requests))
    elif requests is not None and client is None:
        raise InferError("requests needs request_rate (the open-loop run's requests)")
    sim = None
    if client is not None:
        if client == "poisson" and request_rate is None:
            raise InferError("client 'poisson' needs request_rate")
        if client != "poisson" and request_rate is not None:
            raise InferError(f"client '{client}' takes concurrency, not request_rate")
        sim = serve_sim.client_for(client, math.inf if request_rate is None
                                   else float(request_rate),
                                   None if requests is None else int(requests),
                                   None if warmup is None else int(warmup),
                                   float(length_spread or 0.0))
        arrivals = None
    from .compiler.lang.derive import find_model
    if isinstance(model, str):
        model = find_model(system, model)
    n = gpus or len(system.gpus)
    precision = precision or default_precision(gpu_of(system, min(n, len(system.gpus))))
    fixed = {"tp": tp, "pp": pp, "ep": ep, "attention_dp": attention_dp}
    sched = serve_sim.small_gpu(serve_sim.ENGINES[engine or serve_sim.DEFAULT_ENGINE],
                                gpu_of(system, min(n, len(system.gpus))).hbm)
    if collectives is not None:
        from .compiler.collectives.coster import CHOOSERS
        if collectives not in CHOOSERS + ("engine",):
            raise InferError(f"collectives '{collectives}': one of "
                             f"{', '.join(CHOOSERS + ('engine',))}")
        if settings is not None:
            raise InferError("collectives and settings: give the chooser in the settings")
    if nccl is not None and settings is not None:
        raise InferError("nccl and settings: give the release in the settings")
    if max_num_tokens is not None:
        if not 1 <= int(max_num_tokens) <= 10**9:
            raise InferError(f"max_num_tokens {max_num_tokens}: 1 to 1,000,000,000")
        sched = attrs.evolve(sched, max_tokens=int(max_num_tokens))
        if settings is not None:
            settings = attrs.evolve(settings, max_tokens=int(max_num_tokens))
    if chunked_prefill is not None:
        sched = attrs.evolve(sched, chunked_prefill=bool(chunked_prefill))
    if sim is not None:
        # the limits given win over those of an engine the client launches (trtllm-bench)
        if max_num_tokens is not None:
            sim = attrs.evolve(sim, tuned=False)
        if chunked_prefill is not None:
            sim = attrs.evolve(sim, chunked=None)
    if settings is None:
        chooser = (engine or serve_sim.DEFAULT_ENGINE) if collectives == "engine" \
            else collectives or Settings().collectives
        settings = serve_sim.settings_for(Settings(collectives=chooser, nccl=nccl), sched)
    return run(system, model, isl, osl, gpus, fixed, precision, kv_precision, concurrency,
               disaggregate, ttft_limit, tpot_limit, settings, arrivals, sim, sched)


def reliability(system: System, *, gpus: int | None = None, checkpoint: float | None = None,
                restart: float = 0.0, rates: str = "llama3"):
    """A job on the first ``gpus`` GPUs of ``system`` under a published study's failure rates
    (``rates``: a study of library/reliability.csv): an ``Estimate`` with ``per_day``
    (expected interruptions), ``mtbf`` (seconds), ``young`` and ``daly`` (checkpoint
    intervals, seconds, for a checkpoint of ``checkpoint`` seconds) and ``goodput`` (with a
    restart of ``restart`` seconds); the figures ``topoc reliability`` prints
    (docs/reliability.md). Raises ``compiler.analysis.reliability.ReliabilityError`` for an
    unknown study, a system without GPUs or a negative time."""
    from .compiler.analysis.reliability import estimate
    return estimate(system, gpus, checkpoint, restart, rates)
