"""Stage 2: follow imports and give names meaning (``resolve``).

Imports are read relative to the importing file, then from the bundled library; a path that
leaves the allowed roots is refused. Each file sees its own declarations, then its imports'
(``compiler.lang.scope``); the tables here are keyed by the scoped names. Link and device
attributes are checked against their schemas here, with units.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from . import syntax as s
from ..base.diagnostics import (NOTE, Collector, CompileError, Diagnostic, Note, Source,
                                Span,
                                closest, suggest)
from ..ir.kinds import BOOL, INT, KINDS, STRING
from ..ir.system import (LINK_CLASSES, NIC_ROLES, NIC_TUNERS, TRANSPORTS,
                         DeviceModel, LinkType, Transformer)
from ..base import reading
from ..base.limits import LIMITS
from .closest import POINTER, different_hardware, numbered
from .parse import parse
from .scope import Shadow, scoped
from ..base.units import BYTES, NUMBER, RATE, SECONDS, Dim, describe, human

LINK_SCHEMA: dict[str, Any] = {"bandwidth": RATE, "latency": SECONDS, "gen": INT, "width": INT}


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
    #: W120 notes: the user's declarations that shadow a used file's (``compiler.lang.scope``)
    notes: tuple[Diagnostic, ...] = attrs.field(eq=False, repr=False, default=())
    #: Every file read, root last: what the compiled-system cache's key hashes
    #: (``compiler.lang.syscache``)
    sources: tuple[Source, ...] = attrs.field(eq=False, repr=False, default=())


def library_root() -> Path:
    """The folder of the bundled .topo library."""
    from ... import library
    return Path(library.__file__).resolve().parent


def _importable(wanted: str, base: Path) -> list[str]:
    """The paths a ``use`` could have meant, spelt as it would spell them: every bundled .topo
    file, and the .topo files in the folder the path names next to the importing file (one
    folder listed, never a walk of the user's tree)."""
    root = library_root()
    out = [p.relative_to(root).as_posix() for p in sorted(root.rglob("*.topo"))]
    folder = os.path.dirname(wanted)
    try:
        near = sorted((base / folder).glob("*.topo"))
    except OSError:
        near = []
    out += [f"{folder}/{p.name}" if folder else p.name for p in near]
    return out


def _suggest_path(wanted: str, base: Path) -> str:
    """'; did you mean 'nvidia/devices.topo'?' for a misspelt ``use``. Closeness is judged on
    the file name alone: whole paths share 'nvidia/' and '.topo', which would make any two
    look close; among files of that name, the one in the closest folder."""
    paths = _importable(wanted, base)
    stem = closest(Path(wanted).stem, [Path(p).stem for p in paths])
    if stem is None:
        return ""
    same = [p for p in paths if Path(p).stem == stem]
    return suggest(wanted, same) or f"; did you mean '{same[0]}'?"


class _Loader:
    def __init__(self, roots: Sequence[Path], diags: Collector,
                 parsed: Mapping[Path, s.Module] | None = None):
        self.roots = [r.resolve() for r in roots]
        self.diags = diags
        self.parsed = parsed or {}
        self.modules: dict[Path, s.Module] = {}
        self.order: list[tuple[Path, s.Module]] = []
        #: each file's imports in order: (the ``use``, the file it found)
        self.uses: dict[Path | None, list[tuple[s.Use, Path]]] = {}

    def find(self, use: s.Use, base: Path) -> Path | None:
        """The file ``use`` names, next to the importing file or in the library. A path that
        leaves the allowed roots gets E132 whether or not a file is there: the answer must
        not tell what exists outside the project."""
        if "\0" in use.path:     # no file system takes one (os raises ValueError)
            self.diags.error("E130", f"cannot read '{use.path}': a file name holds no NUL "
                             "character", use.span)
            return None
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
                         "library" + _suggest_path(use.path, base), use.span)
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
            self.uses.setdefault(path, []).append((item, target))
            if target in self.modules:
                continue
            try:
                child = self.parsed.get(target) or parse(reading.read_text(target),
                                                         _display(target))
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
            self.order.append((target, child))


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


def _device_model(decl: s.DeviceDecl, diags: Collector, parent: DeviceModel | None = None,
                  kinds: dict[str, str | None] | None = None) -> DeviceModel | None:
    """A device model; with ``parent`` (``device H200 : H100 { ... }``) it starts from the
    parent's kind, attributes and ports and the body overrides them one by one. ``kinds``:
    every declared model's kind, for the hint when the parent is unknown."""
    if parent is None and decl.kind not in KINDS:
        diags.error("E204", f"unknown device kind or model '{decl.kind}'"
                    + _parent_hint(decl, kinds or {})
                    + f" (a kind is one of {', '.join(KINDS)})" + POINTER, decl.kind_span)
        return None
    kind = parent.kind if parent is not None else decl.kind
    values, ports = _attributes(decl, KINDS[kind].schema(), "device", diags)
    if parent is not None:
        values = {**dict(parent.attrs), **values}
        ports = {**dict(parent.ports), **ports}
    return DeviceModel(decl.name, kind, tuple(sorted(values.items())),
                       tuple(sorted(ports.items())), decl.span)


def _parent_hint(decl: s.DeviceDecl, kinds: dict[str, str | None]) -> str:
    """The closest kind or model whose kind has every attribute the body sets (``hbm``: a
    GPU), said to be other hardware when it is a model with another number (``H200`` for
    ``H20``)."""
    keys = {a.key for a in decl.attrs if not a.key.startswith("ports.")}
    fits = {k for k in KINDS if keys <= set(KINDS[k].schema())}
    pool = [*(k for k in KINDS if k in fits),
            *(n for n, k in kinds.items() if k in fits and n != decl.name)]
    generations = numbered(decl.kind, pool)
    if len(generations) > 1:
        return (f"; '{decl.kind}' names no one model: "
                + ", ".join(f"'{n}'" for n in generations[:-1]) + f" or '{generations[-1]}'")
    close = closest(decl.kind, pool)
    if not close:
        return ""
    if close in kinds and different_hardware(decl.kind, close):
        return f"; '{close}' is different hardware (a {kinds[close]} model)"
    return f"; did you mean '{close}'?"


def _declared_kind(name: str, decls: dict[str, s.DeviceDecl]) -> str | None:
    """The kind a declared model has through its chain of parents; None when the chain ends
    in an unknown name or comes back to itself."""
    seen = set()
    while name in decls and name not in seen:
        seen.add(name)
        name = decls[name].kind
    return name if name in KINDS else None


def _device_models(decls: dict[str, s.DeviceDecl], diags: Collector) -> dict[str, DeviceModel]:
    """Every device model, parents before children wherever they are declared; a chain of
    parents that comes back to itself is an error (E141)."""
    done: dict[str, DeviceModel | None] = {}

    def build(name: str, chain: tuple[str, ...]) -> DeviceModel | None:
        if name in done:
            return done[name]
        decl = decls[name]
        parent = None
        if decl.kind not in KINDS and decl.kind in decls:
            if decl.kind in chain or decl.kind == name:
                diags.error("E141", f"device '{name}' inherits from itself "
                            f"({' : '.join((*chain, name, decl.kind))})", decl.kind_span)
                done[name] = None
                return None
            parent = build(decl.kind, (*chain, name))
            if parent is None:
                done[name] = None
                return None
        done[name] = _device_model(decl, diags, parent, kinds)
        return done[name]

    kinds = {n: _declared_kind(n, decls) for n in decls}

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
            extra_roots: Sequence[str | os.PathLike] = (),
            parsed: Mapping[Path, s.Module] | None = None) -> Program:
    """Load ``module``'s imports, scope their names (``compiler.lang.scope``: every
    declaration gets one key, its name unless shadowed), check every declaration and index
    them by key. ``parsed``: files already parsed, by resolved path, taken instead of reading
    them again (the library catalog resolves every library file and parses each once)."""
    diags = Collector()
    path = Path(root_path).resolve() if root_path else None
    base = path.parent if path else Path.cwd()
    loader = _Loader([base, library_root(), *map(Path, extra_roots)], diags, parsed)
    if path is not None:
        loader.modules[path] = module
    loader.load(module, path, [(path, module.span)] if path else [])
    scopes = scoped([*loader.order, (path, module)], loader.uses, path, str(library_root()),
                    diags)
    modules = scopes.modules

    link_types: dict[str, LinkType] = {}
    models: dict[str, DeviceModel] = {}
    groups: dict[str, s.GroupDecl] = {}
    transformers: dict[str, Transformer] = {}
    device_decls: dict[str, s.DeviceDecl] = {}
    for mod in modules:
        for item in mod.items:
            if isinstance(item, (s.Use, s.SystemDecl, s.ParallelDecl)):
                continue
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
    systems = tuple(i for i in modules[-1].items if isinstance(i, s.SystemDecl))
    parallels = tuple(i for i in modules[-1].items if isinstance(i, s.ParallelDecl))
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
    tables = {"link type": link_types, "device model": models, "group": groups,
              "model": transformers}
    notes = tuple(_shadow_note(sh, tables[sh.what]) for sh in scopes.shadows)
    sources = tuple(m.span.source for _, m in [*loader.order, (path, module)])
    return Program(module.path, link_types, models, groups, transformers, systems[:1], parallels,
                   module.span, notes, sources)


def _shadow_note(sh: Shadow, table: dict) -> Diagnostic:
    """W120: what a declaration of the user's file hides, where, and how the two differ."""
    mine, theirs = table.get(sh.name), table.get(sh.hidden)
    differ = differences(mine, theirs) if mine is not None and theirs is not None else ""
    where = sh.hidden.split("@", 1)[-1]
    text = (f"'{sh.name}' shadows the {sh.what} '{sh.name}' of {where}: this file means its "
            f"own, the used files keep theirs (as '{sh.hidden}')")
    return Diagnostic("W120", NOTE, text + (f"; they differ in {differ}" if differ
                                              else "; the two are alike"),
                      sh.span, (Note(f"the shadowed {sh.what}", sh.hidden_span),))


def differences(mine, theirs) -> str:
    """'hbm: 141 GB here, 143 GB there; ports.nvlink: ...' for two declarations of a family."""
    def fields(x) -> dict:
        if isinstance(x, DeviceModel):
            return {"kind": x.kind, **dict(x.attrs), **{f"ports.{k}": v for k, v in x.ports}}
        if isinstance(x, LinkType):
            return {"class": x.cls, "bandwidth": x.bandwidth, "latency": x.latency,
                    **dict(x.attrs)}
        if isinstance(x, s.GroupDecl):
            return {"parameters": ", ".join(p.name for p in x.params) or "none",
                    "statements": len(x.body)}
        return {k: v for k, v in attrs.asdict(x, recurse=False).items()
                if k not in ("name", "span")}
    dims = {**LINK_SCHEMA, **(KINDS[mine.kind].schema() if getattr(mine, "kind", None) in KINDS else {}), **MODEL_SCHEMA}
    a, b = fields(mine), fields(theirs)
    out = [f"{k}: {_show(a.get(k), dims.get(k))} here, {_show(b.get(k), dims.get(k))} there"
           for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return "; ".join(out[:4]) + (f" (and {len(out) - 4} more)" if len(out) > 4 else "")


def _show(value, dim) -> str:
    if value is None:
        return "unset"
    if dim in (BYTES, RATE, SECONDS) and isinstance(value, (int, float)):
        return human(value, dim)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
