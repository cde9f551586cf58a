"""A parallel block that names a model: its training settings read and its step derived.

``parallel train on rack { tp = 8  pp = 9  dp = auto  model = llama3_70b  batch = 512 ... }``
replaces hand-written ``traffic`` lines and the ``compute`` time: ``compiler.training`` derives
both from the model's shape, the mapping and the GPUs' declared peak and memory bandwidth.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import attrs

from . import syntax as s
from ..base.diagnostics import Collector, Span, suggest
from ..ir.gpus import GPUFigures, gpu_figures, no_fp8
from ..ir.system import ParallelStrategy, System, Transformer
from .closest import POINTER, model_spelling
from .resolve import Program, library_root
from ..training.model import (ATTENTION_KERNELS, CROSS_ENTROPY, EXPERT_EPILOGUES, FSDP_PREFETCH,
                              GRAD_ACCUMULATION, RECOMPUTE,
                              RECOMPUTE_MODULES, ZERO3_IMPLS, MappingError, Training,
                              derive as derive_step, shape_of)
from ..training.fp8 import FP8_RECIPES
from ..training.memory import sharding_conflict
from ..base.units import NUMBER

_WHOLE = ("batch", "microbatch", "interleave")
_COUNTS = ("zero", "first_stage_layers", "last_stage_layers", "route_nodes", "offload_layers")     # whole numbers from 0
#: Settings that take true or false (public: the language server completes their values).
BOOL_SETTINGS = ("sequence_parallel", "distributed_optimizer", "overlap", "flash_attention",
                 "fsdp", "fp8", "pure_bf16", "pipeline_slots", "dualpipe", "recompute_norms",
                 "fp8_activations", "bf16_moments", "bf16_grads", "deepep", "ep_overlap",
                 "launch_blocking", "scatter_gather", "async_tp", "token_drop")
_FRACTIONS = ("gemm_efficiency", "hbm_efficiency")
TRAINING_SETTINGS = ("model", *_WHOLE, *_COUNTS, "recompute", "recompute_modules", "attention_kernel",
                     "expert_epilogue", "cross_entropy", "grad_accumulation", "fp8_recipe",
                     "fsdp_prefetch", "zero3_impl", *BOOL_SETTINGS, "bucket", "imbalance",
                     *_FRACTIONS)


#: Settings that name one of a few choices: the setting -> its choices (the language server
#: completes them).
SETTING_CHOICES = {"attention_kernel": ATTENTION_KERNELS, "expert_epilogue": EXPERT_EPILOGUES,
                   "cross_entropy": CROSS_ENTROPY,
                   "grad_accumulation": tuple(GRAD_ACCUMULATION), "fp8_recipe": FP8_RECIPES,
                   "recompute": RECOMPUTE, "fsdp_prefetch": FSDP_PREFETCH,
                   "zero3_impl": tuple(ZERO3_IMPLS)}


def _name(value: s.Value) -> str | None:
    if isinstance(value, s.NameList) and len(value.names) == 1:
        return value.names[0]
    if isinstance(value, s.StringValue):
        return value.value
    return None


def _number(value: s.Value) -> float | None:
    if isinstance(value, s.QuantityValue) and value.quantity.dim == NUMBER:
        return value.quantity.as_number()
    return None


@functools.lru_cache(maxsize=1)
def bundled_models() -> dict[str, Transformer]:
    """Every model declared in the bundled library/models/*.topo, by name."""
    from .parse import parse
    from .resolve import resolve
    out: dict[str, Transformer] = {}
    for path in sorted((library_root() / "models").glob("*.topo")):
        out.update(resolve(parse(path.read_text(encoding="utf-8"), str(path)), str(path)).models)
    return out


def find_model(system: System, name: str) -> Transformer:
    """A model by name (``llama3-70b`` is ``llama3_70b``, ``llama3.1-405b`` ``llama31_405b``):
    the file's own declarations first, then the bundled presets. KeyError with a suggestion
    when there is none."""
    plain = name.strip().lower().replace("-", "_")
    known = {m.name: m for m in (*bundled_models().values(), *system.models)}
    key = plain.replace(".", "_")
    for candidate in (key, plain.replace(".", "")):     # llama3.1-405b: llama31_405b
        if candidate in known:
            return known[candidate]
    raise KeyError(f"unknown model '{name}'" + (suggest(key, sorted(known)) or
                   f"; known models: {', '.join(sorted(known))}") + POINTER)


def _model_hint(name: str, own: Iterable[str]) -> str:
    """The closest model to a name the file does not declare, among its own and the bundled
    presets (the CLI's spelling 'llama3-8b' is 'llama3_8b'), with the import a bundled one
    needs; '' when nothing is close."""
    own = set(own)
    pick = model_spelling(name, own | set(bundled_models()))
    if pick is None:
        return ""
    if pick == name:
        return _library_hint(name)
    if pick in own:
        return f"; did you mean '{pick}'?"
    return (f"; did you mean '{pick}' (bundled: add use "
            f"\"models/{Path(bundled_models()[pick].span.path).name}\")?")


def _library_hint(name: str) -> str:
    """'; add use "models/llama3.topo"' when a bundled file declares a model of that name."""
    model = bundled_models().get(name)
    return f'; add use "models/{Path(model.span.path).name}" (bundled)' if model else ""


def _settings(seen: Mapping[str, s.Attr], diags: Collector) -> dict | None:
    out: dict = {}
    ok = True
    for key, item in seen.items():
        if key not in TRAINING_SETTINGS or key == "model":
            continue
        v = item.value
        if key in _WHOLE:
            n = _number(v)
            if n is None or n != int(n) or n < 1:
                diags.error("E303", f"'{key}' takes a whole number of at least 1", v.span)
                ok = False
            else:
                out[key] = int(n)
        elif key in _COUNTS:
            n = _number(v)
            top = 3 if key == "zero" else 10**6
            if n is None or n != int(n) or not 0 <= n <= top:
                diags.error("E303", f"'{key}' takes "
                            + ("0, 1, 2 or 3" if key == "zero" else "a whole number"), v.span)
                ok = False
            else:
                out[key] = int(n)
        elif key in BOOL_SETTINGS:
            if isinstance(v, s.BoolValue):
                out[key] = v.value
            else:
                diags.error("E303", f"'{key}' takes true or false", v.span)
                ok = False
        elif key in SETTING_CHOICES:
            name, options = _name(v), SETTING_CHOICES[key]
            if name not in options:
                diags.error("E303", f"'{key}' is one of {', '.join(options)}"
                            + (suggest(name, options) if name else ""), v.span)
                ok = False
            else:
                out[key] = name
        elif key == "recompute_modules":
            names = list(v.names) if isinstance(v, s.NameList) else None
            bad = [n for n in names or [] if n not in RECOMPUTE_MODULES]
            if not names or bad:
                diags.error("E303", f"'{key}' lists modules of "
                            f"{', '.join(RECOMPUTE_MODULES)}"
                            + (suggest(bad[0], RECOMPUTE_MODULES) if bad else ""), v.span)
                ok = False
            else:
                out[key] = tuple(names)
        elif key == "bucket":
            # parameters, as Megatron-Core's --ddp-bucket-size counts them (not bytes)
            n = _number(v)
            if n is not None and n >= 1 and n == int(n):
                out[key] = int(n)
            else:
                diags.error("E201", "'bucket' is the parameters a gradient bucket holds, as "
                            "Megatron-Core's --ddp-bucket-size: 'bucket = 40000000'", v.span)
                ok = False
        else:
            n = _number(v)
            lo_ok = n is not None and (n >= 1 if key == "imbalance" else 0 < n <= 1)
            if not lo_ok:
                want = ("a number of at least 1 (the busiest expert's load over the mean)"
                        if key == "imbalance" else "a fraction between 0 and 1")
                diags.error("E303", f"'{key}' takes {want}", v.span)
                ok = False
            else:
                out[key] = float(n)
    return out if ok else None


def derive(strategy: ParallelStrategy, seen: Mapping[str, s.Attr], program: Program,
           system: System, diags: Collector,
           misfit: Callable[[str, Span], None] | None = None,
           auto: str | None = None) -> ParallelStrategy | None:
    """The strategy with its traffic, micro-batches and compute time derived from the model.
    ``misfit`` (the system's size came from ``-D``): a mapping the model cannot run because of
    the block's ``auto`` size, which the override changed (the batch over dp, the
    micro-batches), is reported through it, a warning that leaves the block out for the verbs
    that do not use it, instead of error E303; a reason no size changes (heads over a given
    tp, ep on a dense model) stays E303."""

    def size_error(message: str, span, dims) -> None:
        if misfit is not None and auto in dims:
            misfit(message, span)
        else:
            diags.error("E303", message, span)
    item = seen["model"]
    name = _name(item.value)
    if name is None or name not in program.models:
        known = sorted(program.models)
        diags.error("E110", f"unknown model '{name}'" + (_model_hint(name, known) if name else "")
                    + POINTER, item.value.span)
        return None
    if strategy.flows:
        diags.error("E308", "a parallel block that names a model derives its traffic: drop the "
                    "'traffic' lines or the model", strategy.flows[0].span)
        return None
    if "compute" in seen:
        diags.error("E308", "a parallel block that names a model derives its compute time: "
                    "drop 'compute' (or tune 'gemm_efficiency')", seen["compute"].span)
        return None
    options = _settings(seen, diags)
    if options is None:
        return None
    if "batch" not in options:
        diags.error("E303", "a parallel block that names a model needs 'batch' (the global "
                    "batch in sequences, as in 'batch = 512')", item.span)
        return None
    # settings that contradict each other, which one of them would otherwise settle silently
    # (plan's flags refuse the same: FSDP is ZeRO-3, the distributed optimizer ZeRO-1 at least)
    conflict = sharding_conflict(options.get("zero"), options.get("fsdp", False),
                                 options.get("distributed_optimizer", False))
    if conflict:
        diags.error("E303", f"'zero = {options['zero']}' contradicts '{conflict[0]} = true' "
                    f"({conflict[1]})", seen["zero"].span)
        return None
    model = program.models[name]
    training = Training(model, **options)
    gpu = gpu_figures(system)
    if gpu is None:
        diags.error("E309", f"the GPUs of '{system.name}' do not all declare tflops_bf16 and "
                    "hbm_bandwidth, which a model's compute time needs", item.span)
        return None
    if options.get("fp8") and no_fp8(gpu):
        diags.error("E303", f"'fp8 = true', but {no_fp8(gpu)}", seen["fp8"].span)
        return None
    try:
        derived = with_training(strategy, training, gpu)
    except MappingError as exc:
        where = seen.get("batch") if "batch" in str(exc) else item
        size_error(str(exc), where.span, exc.dims)
        return None
    if "microbatches" in seen and strategy.microbatches != derived.microbatches:
        size_error(f"'microbatches = {strategy.microbatches}', but batch {training.batch} / "
                   f"(microbatch {training.microbatch} x dp {strategy.size('dp')}) is "
                   f"{derived.microbatches}", seen["microbatches"].span, ("dp",))
        return None
    return derived


def with_training(strategy: ParallelStrategy, training: Training,
                  gpu: GPUFigures) -> ParallelStrategy:
    """``strategy`` with everything ``training`` derives for it on GPUs of ``gpu``
    (``gpu_figures``), computed once and carried (``strategy.derived``): micro-batches,
    traffic, compute time and memory. MappingError when the model cannot run the mapping."""
    d = derive_step(training, shape_of(strategy), gpu)
    settings = tuple(sorted({**dict(strategy.settings), "compute": d.compute.time}.items()))
    return attrs.evolve(strategy, flows=d.flows, microbatches=d.microbatches,
                        settings=settings, training=training, derived=d)
