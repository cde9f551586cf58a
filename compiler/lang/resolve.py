"""Stage 2: follow imports and give names meaning (``resolve``).

Imports are read relative to the importing file, then from the bundled library; a path that
leaves the allowed roots is refused. Every declaration lands in one namespace; duplicates cite
both places. Link and device attributes are checked against their schemas here, with units.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from . import syntax as s
from ..base.diagnostics import Collector, CompileError, Note, Span, suggest
from ..ir.system import (DEVICE_KINDS, LINK_CLASSES, NIC_ROLES, NIC_TUNERS, TRANSPORTS,
                         DeviceModel, LinkType, Transformer)
from ..base import reading
from ..base.limits import LIMITS
from .parse import parse
from ..base.units import BYTES, NUMBER, RATE, SECONDS, Dim, describe

STRING, BOOL, INT = "string", "bool", "int"

LINK_SCHEMA: dict[str, Any] = {"bandwidth": RATE, "latency": SECONDS, "gen": INT, "width": INT}
_COMMON = {"vendor": STRING, "arch": STRING, "description": STRING}
DEVICE_SCHEMA: dict[str, dict[str, Any]] = {
    "gpu": {**_COMMON, "hbm": BYTES, "hbm_bandwidth": RATE, "sm": INT,
            "tflops_bf16": NUMBER, "tflops_fp8": NUMBER, "tflops_fp4": NUMBER,
            "gemm_efficiency": NUMBER},
    "cpu": {**_COMMON, "memory": BYTES, "memory_bandwidth": RATE, "cores": INT},
    "nic": {**_COMMON, "rate": RATE, "role": STRING, "transport": STRING, "tuner": STRING},
    "dpu": {**_COMMON, "rate": RATE, "cores": INT, "memory": BYTES},
    "switch": {**_COMMON, "reduction": BOOL},
    "pcie_switch": {**_COMMON},
    "net_switch": {**_COMMON, "rate": RATE, "sharp": BOOL},
}


#: A ``model`` declaration: a decoder-only transformer's shape (``compiler.training``).
MODEL_SCHEMA: dict[str, Any] = {
    "layers": INT, "hidden": INT, "ffn": INT, "heads": INT, "kv_heads": INT, "seq": INT,
    "vocab": INT, "experts": INT, "top_k": INT, "expert_ffn": INT, "shared_experts": INT,
    "dense_layers": INT, "gated": BOOL, "tied": BOOL, "dropout": BOOL, "dtype": STRING,
    "description": STRING, "source": STRING, "head_dim": INT, "kv_lora_rank": INT,
    "q_lora_rank": INT, "rope_head_dim": INT, "capacity_factor": NUMBER, "act_clamp": NUMBER,
    "expert_bias": BOOL}
MODEL_REQUIRED = ("layers", "hidden", "heads", "seq", "vocab")
DTYPES = ("bf16", "fp16", "fp8")


@attrs.frozen
class Program:
    """Every declaration reachable from the root file, by name, plus its system and strategies."""

    root: str
    link_types: dict[str, LinkType]
    device_models: dict[str, DeviceModel]
    groups: dict[str, s.GroupDecl]
    models: dict[str, Transformer]
    systems: tuple[s.SystemDecl, ...]
    parallels: tuple[s.ParallelDecl, ...]
    root_span: Span = attrs.field(eq=False, repr=False)


def library_root() -> Path:
    """The folder of the bundled .topo library."""
    from ... import library
    return Path(library.__file__).resolve().parent


class _Loader:
    def __init__(self, roots: Sequence[Path], diags: Collector):
        self.roots = [r.resolve() for r in roots]
        self.diags = diags
        self.modules: dict[Path, s.Module] = {}
        self.order: list[s.Module] = []

    def find(self, use: s.Use, base: Path) -> Path | None:
        """The file ``use`` names, next to the importing file or in the library. A path that
        leaves the allowed roots gets E132 whether or not a file is there: the answer must
        not tell what exists outside the project."""
        try:
            candidates = [(folder / use.path).resolve() for folder in (base, library_root())]
        except (RuntimeError, OSError) as exc:    # Python < 3.13 says a symlink loop this way
            self.diags.error("E130", f"cannot read '{use.path}': "
                             + ("a symbolic link loop" if isinstance(exc, RuntimeError)
                                else str(exc.strerror or exc)), use.span)
            return None
        inside = [c for c in candidates if any(c.is_relative_to(r) for r in self.roots)]
        if not inside:
            self.diags.error("E132", f"import '{use.path}' leaves the importing file's "
                             "folder and the bundled library (allow more folders with "
                             "--import-root)", use.span)
            return None
        for candidate in inside:
            if candidate.is_file():
                return candidate
        self.diags.error("E130", f"cannot find '{use.path}' next to this file or in the bundled "
                         "library", use.span)
        return None

    def load(self, module: s.Module, path: Path | None, stack: list[tuple[Path, Span]]):
        """Depth-first over imports; a file already loaded is not read again."""
        if len(stack) > LIMITS.imports:
            self.diags.error("E294", f"imports nested deeper than {LIMITS.imports} files",
                             stack[-1][1])
            return
        for item in module.items:
            if not isinstance(item, s.Use):
                continue
            base = path.parent if path else Path.cwd()
            target = self.find(item, base)
            if target is None:
                continue
            if any(target == p for p, _ in stack) or target == path:
                chain = " -> ".join(p.name for p, _ in stack) + f" -> {target.name}"
                self.diags.error("E131", f"import cycle: {chain}", item.span)
                continue
            if target in self.modules:
                continue
            try:
                text = reading.read_text(target)
                child = parse(text, _display(target))
            except reading.TooLarge as exc:
                self.diags.error("E290", f"cannot import '{item.path}': larger than the limit "
                                 f"of {exc.limit} bytes", item.span)
                continue
            except (OSError, UnicodeDecodeError) as exc:
                self.diags.error("E130", f"cannot read '{item.path}': {exc}", item.span)
                continue
            except CompileError as exc:
                for d in exc.diagnostics:
                    self.diags.add(d)
                continue
            self.modules[target] = child
            self.load(child, target, [*stack, (target, item.span)])
            self.order.append(child)


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _check_value(key: str, value: s.Value, want: Any, diags: Collector) -> Any:
    """Check one attribute against its expected type or dimension; return the value or None."""
    if want == STRING:
        if isinstance(value, s.StringValue):
            return value.value
        diags.error("E200", f"'{key}' takes a string in quotes", value.span)
        return None
    if want == BOOL:
        if isinstance(value, s.BoolValue):
            return value.value
        diags.error("E200", f"'{key}' takes true or false", value.span)
        return None
    if not isinstance(value, s.QuantityValue):
        diags.error("E200", f"'{key}' takes {'a whole number' if want == INT else describe(want)}",
                    value.span)
        return None
    q = value.quantity
    if want == INT:
        if q.dim != NUMBER or q.value.denominator != 1 or q.value < 0:
            diags.error("E200", f"'{key}' takes a whole number, found '{value.text}'", value.span)
            return None
        return int(q.value)
    dim: Dim = want
    if q.dim != dim:
        diags.error("E201", f"'{key}' is {describe(dim)}, but '{value.text}' is {describe(q.dim)}"
                    + (" (add a unit)" if q.dim == NUMBER else ""), value.span)
        return None
    if q.value < 0:
        diags.error("E200", f"'{key}' cannot be negative", value.span)
        return None
    return q.as_number()


def unique(settings: Sequence[s.Attr], diags: Collector) -> dict[str, s.Attr]:
    """Settings by key, in order; a key set again is reported (E122) and the repeat dropped."""
    out: dict[str, s.Attr] = {}
    for attr in settings:
        if attr.key in out:
            diags.error("E122", f"'{attr.key}' is set twice", attr.span,
                        Note("first set here", out[attr.key].span))
            continue
        out[attr.key] = attr
    return out


def _attributes(decl, schema: dict[str, Any], what: str, diags: Collector):
    """Checked (key, value) pairs and the port budget of one declaration."""
    values: dict[str, Any] = {}
    ports: dict[str, int] = {}
    for attr in unique(decl.attrs, diags).values():
        if attr.key.startswith("ports.") and what == "device":
            cls = attr.key[len("ports."):]
            if cls not in LINK_CLASSES:
                diags.error("E204", f"unknown link class '{cls}' in '{attr.key}'"
                            + suggest(cls, LINK_CLASSES), attr.span)
                continue
            n = _check_value(attr.key, attr.value, INT, diags)
            if n is not None:
                ports[cls] = n
            continue
        if attr.key not in schema:
            diags.error("E202", f"{what} '{decl.name}' has no attribute '{attr.key}'"
                        + suggest(attr.key, list(schema) + (["ports.nvlink"] if what == "device"
                                                            else [])), attr.span)
            continue
        value = _check_value(attr.key, attr.value, schema[attr.key], diags)
        choices = {"role": NIC_ROLES, "transport": TRANSPORTS, "tuner": NIC_TUNERS}.get(attr.key)
        if choices and value is not None and value not in choices:
            diags.error("E200", f"{attr.key} '{value}': a NIC's {attr.key} is "
                        + ", ".join(f"'{r}'" for r in choices[:-1])
                        + f" or '{choices[-1]}'" + suggest(value, choices), attr.value.span)
            continue
        if value is not None:
            values[attr.key] = value
    return values, ports


def _link_type(decl: s.LinkDecl, diags: Collector) -> LinkType | None:
    if decl.cls not in LINK_CLASSES:
        diags.error("E204", f"unknown link class '{decl.cls}'" + suggest(decl.cls, LINK_CLASSES)
                    + f" (one of {', '.join(LINK_CLASSES)})", decl.cls_span)
        return None
    values, _ = _attributes(decl, LINK_SCHEMA, "link", diags)
    if "bandwidth" not in values:
        if not any(a.key == "bandwidth" for a in decl.attrs):
            diags.error("E203", f"link '{decl.name}' needs a bandwidth, as in "
                        "'{ bandwidth = 50 GB/s }'", decl.span)
        return None
    if values["bandwidth"] == 0:
        diags.error("E200", f"link '{decl.name}' has zero bandwidth", decl.span)
        return None
    extra = tuple(sorted((k, v) for k, v in values.items() if k not in ("bandwidth", "latency")))
    return LinkType(decl.name, decl.cls, values["bandwidth"], values.get("latency", 0), extra,
                    decl.span)


def _device_model(decl: s.DeviceDecl, diags: Collector,
                  parent: DeviceModel | None = None) -> DeviceModel | None:
    """A device model; with ``parent`` (``device H200 : H100 { ... }``) it starts from the
    parent's kind, attributes and ports and the body overrides them one by one."""
    if parent is None and decl.kind not in DEVICE_KINDS:
        diags.error("E204", f"unknown device kind or model '{decl.kind}'"
                    + suggest(decl.kind, DEVICE_KINDS)
                    + f" (a kind is one of {', '.join(DEVICE_KINDS)})", decl.kind_span)
        return None
    kind = parent.kind if parent is not None else decl.kind
    values, ports = _attributes(decl, DEVICE_SCHEMA[kind], "device", diags)
    if parent is not None:
        values = {**dict(parent.attrs), **values}
        ports = {**dict(parent.ports), **ports}
    return DeviceModel(decl.name, kind, tuple(sorted(values.items())),
                       tuple(sorted(ports.items())), decl.span)


def _device_models(decls: dict[str, s.DeviceDecl], diags: Collector) -> dict[str, DeviceModel]:
    """Every device model, parents before children wherever they are declared; a chain of
    parents that comes back to itself is an error (E141)."""
    done: dict[str, DeviceModel | None] = {}

    def build(name: str, chain: tuple[str, ...]) -> DeviceModel | None:
        if name in done:
            return done[name]
        decl = decls[name]
        parent = None
        if decl.kind not in DEVICE_KINDS and decl.kind in decls:
            if decl.kind in chain or decl.kind == name:
                diags.error("E141", f"device '{name}' inherits from itself "
                            f"({' : '.join((*chain, name, decl.kind))})", decl.kind_span)
                done[name] = None
                return None
            parent = build(decl.kind, (*chain, name))
            if parent is None:
                done[name] = None
                return None
        done[name] = _device_model(decl, diags, parent)
        return done[name]

    for name in decls:
        build(name, ())
    return {n: m for n in decls if (m := done.get(n)) is not None}


def _transformer(decl: s.ModelDecl, diags: Collector) -> Transformer | None:
    values, _ = _attributes(decl, MODEL_SCHEMA, "model", diags)
    missing = [k for k in MODEL_REQUIRED if k not in values
               and not any(a.key == k for a in decl.attrs)]
    if missing:
        diags.error("E203", f"model '{decl.name}' needs {', '.join(missing)}, as in "
                    "'model m { layers = 32  hidden = 4096  heads = 32  seq = 4096  "
                    "vocab = 32000 }'", decl.span)
        return None
    if any(k not in values for k in MODEL_REQUIRED):
        return None
    for key in ("layers", "hidden", "heads", "seq", "vocab"):
        if values[key] == 0:
            diags.error("E200", f"model '{decl.name}': '{key}' must be at least 1", decl.span)
            return None
    where = {a.key: a.value.span for a in decl.attrs}
    for key in ("ffn", "expert_ffn"):       # a GEMM of no columns divided every rate by zero
        if values.get(key) == 0:
            diags.error("E200", f"model '{decl.name}': '{key}' must be at least 1", where[key])
            return None
    heads, kv = values["heads"], values.get("kv_heads", values["heads"])
    if (values["hidden"] % heads and not values.get("head_dim")) or kv == 0 or heads % kv:
        diags.error("E200", f"model '{decl.name}': hidden = {values['hidden']} must divide by "
                    f"heads = {heads}, and heads by kv_heads = {kv}",
                    where.get("kv_heads", where["heads"]))
        return None
    experts, top_k = values.get("experts", 0), values.get("top_k", 0)
    if experts and not 1 <= top_k <= experts:
        diags.error("E200", f"model '{decl.name}' has {experts} experts: 'top_k' must be "
                    f"between 1 and {experts}", where.get("top_k", decl.span))
        return None
    dtype = values.get("dtype", "bf16")
    if dtype not in DTYPES:
        diags.error("E200", f"dtype '{dtype}': one of {', '.join(DTYPES)}"
                    + suggest(dtype, DTYPES), where["dtype"])
        return None
    if values.get("dense_layers", 0) > values["layers"]:
        diags.error("E200", f"model '{decl.name}': dense_layers is more than its "
                    f"{values['layers']} layers", where["dense_layers"])
        return None
    return Transformer(
        decl.name, values["layers"], values["hidden"], heads, values["seq"], values["vocab"],
        ffn=values.get("ffn", 4 * values["hidden"]), kv_heads=kv, experts=experts,
        top_k=top_k, expert_ffn=values.get("expert_ffn", values.get("ffn", 4 * values["hidden"])),
        shared_experts=values.get("shared_experts", 0),
        dense_layers=values.get("dense_layers", 0), gated=values.get("gated", False),
        tied=values.get("tied", True), dropout=values.get("dropout", True), dtype=dtype,
        span=decl.span, head_dim=values.get("head_dim", 0),
        kv_lora_rank=values.get("kv_lora_rank", 0), q_lora_rank=values.get("q_lora_rank", 0),
        rope_head_dim=values.get("rope_head_dim", 0),
        capacity_factor=float(values.get("capacity_factor", 0.0)),
        act_clamp=float(values.get("act_clamp", 0.0)),
        expert_bias=values.get("expert_bias", False))


def resolve(module: s.Module, root_path: str | None = None,
            extra_roots: Sequence[str | os.PathLike] = ()) -> Program:
    """Load ``module``'s imports, check every declaration and index them by name."""
    diags = Collector()
    path = Path(root_path).resolve() if root_path else None
    base = path.parent if path else Path.cwd()
    loader = _Loader([base, library_root(), *map(Path, extra_roots)], diags)
    if path is not None:
        loader.modules[path] = module
    loader.load(module, path, [(path, module.span)] if path else [])
    modules = [*loader.order, module]

    declared: dict[str, Span] = {}
    link_types: dict[str, LinkType] = {}
    models: dict[str, DeviceModel] = {}
    groups: dict[str, s.GroupDecl] = {}
    transformers: dict[str, Transformer] = {}
    device_decls: dict[str, s.DeviceDecl] = {}
    for mod in modules:
        for item in mod.items:
            if isinstance(item, (s.Use, s.SystemDecl, s.ParallelDecl)):
                continue
            if item.name in declared:
                diags.error("E120", f"'{item.name}' is declared twice", item.span,
                            Note("first declared here", declared[item.name]))
                continue
            declared[item.name] = item.span
            if isinstance(item, s.LinkDecl):
                lt = _link_type(item, diags)
                if lt:
                    link_types[item.name] = lt
            elif isinstance(item, s.DeviceDecl):
                device_decls[item.name] = item
            elif isinstance(item, s.ModelDecl):
                tf = _transformer(item, diags)
                if tf:
                    transformers[item.name] = tf
            else:
                groups[item.name] = item
    models.update(_device_models(device_decls, diags))
    # Systems and strategies come from the root file only, so every library file can be
    # compiled alone and still be imported for its declarations.
    systems = tuple(i for i in module.items if isinstance(i, s.SystemDecl))
    parallels = tuple(i for i in module.items if isinstance(i, s.ParallelDecl))
    for extra in systems[1:]:
        diags.error("E151", "a file declares at most one system", extra.span,
                    Note("the first system is here", systems[0].span))
    seen: dict[str, Span] = {}
    for p in parallels:
        if p.name in seen:
            diags.error("E120", f"parallel strategy '{p.name}' is declared twice", p.span,
                        Note("first declared here", seen[p.name]))
        seen[p.name] = p.span
    diags.check()
    return Program(module.path, link_types, models, groups, transformers, systems[:1], parallels,
                   module.span)
