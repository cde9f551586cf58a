"""Stage: parallel blocks checked against the system and attached to it (``ranks``).

A block gives sizes for tp, cp, ep, dp and pp (one of them may be ``auto``), a rank ``order``
(leftmost varies fastest, as Megatron's ``tp-cp-ep-dp-pp``), micro-batches and the traffic each
group kind moves per step. The sizes must multiply to the number of GPUs.
"""

from __future__ import annotations

import math

import attrs

from . import syntax as s
from ..base.diagnostics import Collector, Diagnostic, Note, suggest
from .exprs import EvalError, evaluate
from ..base.gcpause import gc_paused
from ..ir.system import (COLLECTIVES, DEFAULT_ORDER, GROUP_KINDS, PARALLEL_DIMS, ParallelStrategy, System,
                 TrafficFlow)
from .resolve import Program, unique
from ..ir.hosts import HOST_RANGES
from .derive import TRAINING_SETTINGS, derive
from ..base.units import BYTES, NUMBER, SECONDS

SETTINGS = (*PARALLEL_DIMS, "etp", "order", "microbatches", "compute", "baseline",
            *TRAINING_SETTINGS)
#: Time settings: compute time per training step on each GPU, and the same step on one GPU.
TIME_SETTINGS = {"compute": "'compute' must be a positive time: the compute time per training step "
                 "on each GPU, as in 'compute = 25 s'",
                 "baseline": "'baseline' must be a positive time: one training step on a single "
                 "GPU, as in 'baseline = 100 s'"}


def _int(value: s.Value, what: str, diags: Collector) -> int | None:
    if isinstance(value, s.QuantityValue) and value.quantity.dim == NUMBER and \
            value.quantity.value.denominator == 1 and value.quantity.value >= 1:
        return int(value.quantity.value)
    diags.error("E303", f"'{what}' takes a whole number of at least 1", value.span)
    return None


def _order(value: s.Value, diags: Collector) -> tuple[str, ...] | None:
    if isinstance(value, s.StringValue):
        names = tuple(n.strip() for n in value.value.split("-"))
    elif isinstance(value, s.NameList):
        names = value.names
    else:
        diags.error("E304", "'order' takes dimension names, as in 'order = tp, dp, pp' or "
                    "'order = \"tp-cp-ep-dp-pp\"'", value.span)
        return None
    for n in names:
        if n not in PARALLEL_DIMS:
            diags.error("E304", f"unknown dimension '{n}' in order" + suggest(n, PARALLEL_DIMS),
                        value.span)
            return None
    if len(set(names)) != len(names):
        diags.error("E304", "a dimension appears twice in order", value.span)
        return None
    # Dimensions left out of the order keep their default places after the named ones, except
    # ep, which Megatron carves out of the data-parallel ranks: it goes just before dp.
    rest = [d for d in DEFAULT_ORDER if d not in names and d != "ep"]
    out = list(names) + rest
    if "ep" not in names:
        out.insert(out.index("dp"), "ep")
    return tuple(out)


def _strategy(decl: s.ParallelDecl, program: Program, system: System,
              diags: Collector, skipped: list | None = None) -> ParallelStrategy | None:
    sizes: dict[str, int] = {}
    auto = None
    order, microbatches, times, etp = DEFAULT_ORDER, 1, {}, 1
    seen = unique(decl.settings, diags)
    for item in seen.values():
        if item.key in TRAINING_SETTINGS:
            continue            # read by training.derive once the sizes are known
        if item.key == "ep" and isinstance(item.value, s.Auto):
            diags.error("E303", "'ep' cannot be 'auto': expert groups split the data-parallel "
                        "ranks, so give their size", item.span)
        elif item.key == "etp":
            etp = _int(item.value, "etp", diags) or 1
        elif item.key in PARALLEL_DIMS:
            if isinstance(item.value, s.Auto):
                if auto is not None:
                    diags.error("E303", "only one dimension can be 'auto'", item.span,
                                Note("the other 'auto'", seen[auto].span))
                auto = item.key
            else:
                n = _int(item.value, item.key, diags)
                if n is not None:
                    sizes[item.key] = n
        elif item.key == "order":
            order = _order(item.value, diags) or order
        elif item.key == "microbatches":
            microbatches = _int(item.value, "microbatches", diags) or 1
        elif item.key in TIME_SETTINGS:
            v = item.value
            if isinstance(v, s.QuantityValue) and v.quantity.dim == SECONDS and \
                    v.quantity.as_number() > 0:
                times[item.key] = v.quantity.as_number()
            else:
                diags.error("E201", TIME_SETTINGS[item.key], v.span)
        else:
            diags.error("E301", f"unknown setting '{item.key}' in parallel block"
                        + suggest(item.key, SETTINGS), item.span)
    world = len(system.gpus)
    # Megatron: world = tp x cp x dp x pp; expert parallelism reuses those ranks (below).
    known = math.prod(n for d, n in sizes.items() if d != "ep")
    if auto is not None:
        if known == 0 or world % known:
            _misfit(diags, skipped, decl, f"'{auto} = auto' needs {world} GPUs to divide by "
                    f"the other sizes, whose product is {known}", seen[auto].span)
            return None
        sizes[auto] = world // known
    elif known != world:
        detail = " x ".join(f"{d}={sizes[d]}" for d in PARALLEL_DIMS if d in sizes and d != "ep")
        note = (" (ep is no factor: expert groups split the tp x cp x dp ranks)"
                if "ep" in sizes else "")
        _misfit(diags, skipped, decl, f"sizes multiply to {known} ({detail or 'nothing'}) but "
                f"system '{system.name}' has {world} GPUs{note}", decl.span)
        return None
    dense = sizes.get("tp", 1) * sizes.get("cp", 1) * sizes.get("dp", 1)
    if dense % (etp * sizes.get("ep", 1)):
        where = seen.get("ep", seen.get("etp"))
        diags.error("E307", f"ep={sizes.get('ep', 1)} x etp={etp} does not divide the "
                    f"tp x cp x dp = {dense} ranks of a pipeline stage that expert layers "
                    "split (Megatron's expert data parallel size would not be whole)",
                    where.span if where else decl.span)
        return None
    flows = []
    for f in decl.flows:
        if f.dim not in GROUP_KINDS:
            diags.error("E305", f"unknown group kind '{f.dim}'" + suggest(f.dim, GROUP_KINDS),
                        f.span)
            continue
        if f.collective not in COLLECTIVES:
            diags.error("E306", f"unknown collective '{f.collective}'"
                        + suggest(f.collective, COLLECTIVES), f.span)
            continue
        if f.size.quantity.dim != BYTES:
            diags.error("E201", f"traffic size '{f.size.text}' is not bytes", f.size.span)
            continue
        try:
            count = evaluate(f.count, {}) if f.count is not None else 1
        except EvalError as exc:
            diags.add(exc.diagnostic)
            continue
        if count < 1:
            diags.error("E303", "a traffic count is at least 1", f.span)
            continue
        flows.append(TrafficFlow(f.dim, f.collective, int(f.size.quantity.value), count, f.span))
    settings = tuple(sorted(times.items()))
    strategy = ParallelStrategy(decl.name, tuple((d, sizes.get(d, 1)) for d in PARALLEL_DIMS),
                                order, microbatches, tuple(flows), settings, decl.span, etp)
    if "model" in seen:
        misfit = None if skipped is None else \
            (lambda message, span: _misfit(diags, skipped, decl, message, span))
        return derive(strategy, seen, program, system, diags, misfit, auto)
    for key in TRAINING_SETTINGS:
        if key in seen and key != "model":
            near = suggest(key, [k for k in SETTINGS if k not in TRAINING_SETTINGS
                                 and k.startswith(key)])
            if near:        # 'microbatch' for 'microbatches' is a typo more often than not
                diags.error("E301", f"unknown setting '{key}' in parallel block{near} "
                            f"('{key}' is a training setting, which needs 'model = ...')",
                            seen[key].span)
            else:
                diags.error("E308", f"'{key}' describes training a model: name it with "
                            "'model = ...' (a 'model' declaration, e.g. from use "
                            "\"models/llama3.topo\")", seen[key].span)
            return None
    return strategy


def _misfit(diags: Collector, skipped: list | None, decl, message: str, span) -> None:
    """Sizes that do not fit the system's GPUs: error E302, or with ``-D`` overrides (``skipped``
    given) warning W507, the block left out for the verbs that do not use it."""
    if skipped is None:
        diags.error("E302", message, span)
    else:
        skipped.append((decl.name, Diagnostic(
            "W507", "warning", f"parallel block '{decl.name}' does not fit this size and is "
            f"left out: {message}", span)))


@gc_paused()
def ranks(program: Program, system: System, lenient: bool = False) -> System:
    """Check every parallel block of the root file against ``system`` and attach them.
    ``lenient`` (the system's size came from ``-D`` overrides): a block whose sizes do not fit
    is left out with a warning (``System.skipped``) instead of an error."""
    diags = Collector()
    skipped: list | None = [] if lenient else None
    strategies = []
    for decl in program.parallels:
        if decl.system != system.name:
            diags.error("E300", f"parallel block '{decl.name}' is on '{decl.system}', but the "
                        f"system is '{system.name}'" + suggest(decl.system, [system.name]),
                        decl.system_span)
            continue
        strat = _strategy(decl, program, system, diags, skipped)
        if strat is not None:
            strategies.append(strat)
    diags.check()
    out = attrs.evolve(system, parallels=tuple(strategies),
                       models=tuple(program.models[k] for k in sorted(program.models)),
                       skipped=tuple(skipped or ()), notes=program.notes)
    # the same devices, links and hosts: elaborate's integer arrays, hosts' device runs and
    # models' numbers
    for key in ("ends", HOST_RANGES, "model_ids", "model_numbers"):
        if key in system.memo:
            out.memo[key] = system.memo[key]
    return out
