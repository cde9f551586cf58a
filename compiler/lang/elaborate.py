"""Stage 3: groups and the system declaration to a flat System IR (``elaborate``).

Each group is elaborated once per distinct argument set into a ``Template``: its members and its
own connections resolved to paths relative to the group. Instantiation then only prefixes paths,
so the cost is linear in devices plus links, and a selector is enumerated once per template, not
once per instance. Sizes are known before anything is expanded, so limits are checked first.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Mapping

import attrs

from . import syntax as s
from ..base.diagnostics import Collector, CompileError, Note, Span, error, suggest
from . import fastconn, hints, layout
from .exprs import EvalError, check_requirement, evaluate, evaluate_fast, variables
from ..base.gcpause import gc_paused
from .hosts import check_patterns, nested_host
from ..ir.hosts import HOST_RANGES
from ..ir.incidence import Ends
from ..ir.links import Links
from ..ir.kinds import KINDS
from ..ir.system import Device, DeviceModel, Host, Link, LinkType, System
from ..base.limits import LIMITS, MEMORY_COST
from .resolve import Program

# Connections larger than this are not expanded once an error is recorded: the program
# cannot compile, and the links' only use would be further diagnostics of the same kind.
_EXPAND_AFTER_ERROR = 10_000
#: Connections of at least this many bindings are enumerated in numpy (``fastconn``) when
#: they are of the ordinary kind; below it numpy's per-call cost outweighs the loop's.
_FAST_LINKS = 4096


@attrs.define
class Member:
    """One instance statement of a template: a device model or a nested template."""

    name: str
    size: int | None
    model: DeviceModel | None
    template: Template | None
    span: Span
    host: bool = False
    hostname: str | None = None
    #: The member's first device in its template's layout (``layout``): an element's devices
    #: follow one another, so ``start + i * devices of one element`` is element i's first.
    start: int = 0


@attrs.define
class Template:
    """A group elaborated for one argument set: members, local links, total counts."""

    name: str
    members: dict[str, Member]
    #: one ``layout.Chunk`` per connection statement that made links, in statement order
    links: list[layout.Chunk]
    devices: int
    total_links: int
    params: dict[str, int] = attrs.Factory(dict)
    #: Device-model parameters (``group HGX(G: gpu = H100)``) by name.
    models: dict[str, DeviceModel] = attrs.Factory(dict)
    #: Whether two members could name an element alike (``layout.ambiguous``; None: not yet
    #: asked).
    ambiguous: bool | None = None
    #: The links as named tuples, made when the per-instance walk needs them (``_named``).
    named: list | None = None


class _Elaborator:
    def __init__(self, program: Program, diags: Collector):
        self.program = program
        self.diags = diags
        self.cache: dict[tuple, Template | None] = {}
        #: A group's own links already exceed a device's port budget: verify's E220 is
        #: certain, so large connections above it need not be expanded (as after an error).
        self.doomed = False
        #: links written out one by one by connections, over every template so far: each
        #: costs far more memory than a link an instance copies (``MEMORY_COST.written``)
        self.written = 0

    def check_memory(self, t: Template, span: Span) -> None:
        """E292 when the system, as counted so far, would take more than ``LIMITS.memory``
        to compile: checked before the links or instances that would cross it are made.
        A template's counts grow up to the system's, so the root's last check is the whole's.
        Not once the program has failed (or verify's E220 is certain): large connections are
        then counted but not expanded (``_EXPAND_AFTER_ERROR``), so the counts overstate it."""
        if self.diags.has_errors or self.doomed:
            return
        need = MEMORY_COST(t.devices, t.total_links, self.written)
        if need > LIMITS.memory:
            raise EvalError(error(
                "E292", f"group '{t.name}' would need about {need / 1e9:.1f} GB to compile "
                f"({t.devices:,} devices, {t.total_links:,} links, {self.written:,} of them "
                f"written one by one by connections); the limit is {LIMITS.memory / 1e9:.1f} GB "
                "(docs/scale.md, Limits: a link a connection writes costs about four times one "
                "an instance copies, so repeat a small wired group as an array instead)", span))

    # -- templates
    def template(self, decl: s.GroupDecl, args: Mapping[str, int | DeviceModel], call: Span,
                 stack: tuple[str, ...]) -> Template | None:
        key = (decl.name, tuple(sorted(args.items())))
        if key in self.cache:
            return self.cache[key]
        if len(stack) >= LIMITS.nesting:
            self.diags.error("E293", f"groups nested deeper than {LIMITS.nesting} levels "
                             f"({' > '.join(stack[:4])} > ...)", call)
            self.cache[key] = None
            return None
        bound = self.bind_params(decl, args, call)
        if bound is None:
            self.cache[key] = None
            return None
        env, model_params = bound
        t = Template(decl.name, {}, [], 0, 0, dict(env), model_params)
        self.cache[key] = None  # a recursive use of this key during elaboration sees None
        failed: set[str] = set()    # members that did not elaborate: already reported
        for stmt in decl.body:
            try:
                if isinstance(stmt, s.Let):
                    if stmt.name in env:
                        raise EvalError(error("E120", f"'{stmt.name}' is already defined in "
                                              f"group '{decl.name}'", stmt.span))
                    env[stmt.name] = evaluate(stmt.value, env)
                elif isinstance(stmt, s.Require):
                    check_requirement(stmt, env)
                elif isinstance(stmt, s.Instance):
                    self.instance(t, stmt, env, (*stack, decl.name))
            except EvalError as exc:
                d = exc.diagnostic
                if isinstance(stmt, s.Require) and d.code == "E223":
                    # outside the group's limits: its body would only cascade
                    self.diags.add(attrs.evolve(d, notes=(
                        *d.notes, Note(f"'{decl.name}' instantiated here", call))))
                    return None
                self.diags.add(d)
                if isinstance(stmt, s.Instance):
                    failed.add(stmt.name)
        self.check_element_names(t)
        for stmt in decl.body:
            if isinstance(stmt, s.Connection):
                try:
                    self.connection(t, stmt, env)
                except EvalError as exc:
                    d = exc.diagnostic
                    if d.code == "E112" and any(f"no member '{m}'" in d.message for m in failed):
                        continue    # one error per typo: the member's own error said it
                    self.diags.add(d)
        if not self.doomed and _over_budget(t):
            self.doomed = True
        self.cache[key] = t
        return t

    def model_arg(self, param: s.Param, expr: s.Expr, scope: Mapping[str, DeviceModel]):
        """The device model a model-typed parameter receives: a bare name of a model (or of the
        enclosing group's own model parameter) whose kind is the parameter's type."""
        if not isinstance(expr, s.Var):
            raise EvalError(error("E205", f"parameter '{param.name}' takes a {param.type} device "
                                  "model by name, as in "
                                  f"'{param.name} = {self.example(param.type)}'", expr.span))
        model = scope.get(expr.name) or self.program.device_models.get(expr.name)
        if model is None:
            raise EvalError(error("E110", f"unknown device model '{expr.name}'" + hints.unknown(
                expr.name, hints.names(self.program, scope), self.program,
                hints.parameter_kind(param.name, param.type)), expr.span))
        if model.kind != param.type:
            raise EvalError(error("E205", f"parameter '{param.name}' takes a {param.type}, but "
                                  f"'{model.name}' is a {model.kind}", expr.span))
        return model

    def example(self, kind: str) -> str:
        return next((m.name for m in self.program.device_models.values() if m.kind == kind),
                    "H100")

    def arguments(self, decl: s.GroupDecl, args: tuple[s.Arg, ...], env: Mapping[str, int],
                  scope: Mapping[str, DeviceModel]) -> dict[str, int | DeviceModel]:
        """Evaluate call arguments: integers, or device models for model-typed parameters."""
        params = {p.name: p for p in decl.params}
        out: dict[str, int | DeviceModel] = {}
        for a in args:
            p = params.get(a.name)
            if p is not None and p.type in KINDS:
                out[a.name] = self.model_arg(p, a.value, scope)
            elif isinstance(a.value, s.Var) and a.value.name not in env and (
                    a.value.name in scope or a.value.name in self.program.device_models):
                raise EvalError(error("E205", f"parameter '{a.name}' takes a number, but "
                                      f"'{a.value.name}' is a device model", a.value.span))
            else:
                out[a.name] = evaluate(a.value, env)
        return out

    def bind_params(self, decl: s.GroupDecl, args: Mapping[str, int | DeviceModel], call: Span):
        env: dict[str, int] = {}
        model_params: dict[str, DeviceModel] = {}
        names = [p.name for p in decl.params]
        for name in args:
            if name not in names:
                self.diags.error("E113", f"group '{decl.name}' has no parameter '{name}'"
                                 + suggest(name, names), call)
                return None
        for p in decl.params:
            if p.type != "int" and p.type not in KINDS:
                self.diags.error("E205", f"parameter '{p.name}' has type '{p.type}'; parameters "
                                 f"are 'int' or a device kind ({', '.join(KINDS)})"
                                 + suggest(p.type, ["int", *KINDS]), p.span)
                return None
            if p.name in env or p.name in model_params:
                self.diags.error("E120", f"parameter '{p.name}' is declared twice", p.span)
                return None
            if p.type in KINDS:
                try:
                    if p.name in args:
                        given = args[p.name]
                        if not isinstance(given, DeviceModel):
                            self.diags.error("E205", f"parameter '{p.name}' takes a {p.type} "
                                             "device model, not a number", call)
                            return None
                        model_params[p.name] = given
                    elif p.default is not None:
                        model_params[p.name] = self.model_arg(p, p.default, {})
                    else:
                        self.diags.error("E113", f"group '{decl.name}' needs a {p.type} for "
                                         f"parameter '{p.name}'", call,
                                         Note("parameter declared here", p.span))
                        return None
                except EvalError as exc:
                    self.diags.add(exc.diagnostic)
                    return None
                continue
            if p.name in args and isinstance(args[p.name], DeviceModel):
                self.diags.error("E205", f"parameter '{p.name}' is an int, not a device model",
                                 call)
                return None
            if p.name in args:
                env[p.name] = args[p.name]
            elif p.default is not None:
                try:
                    env[p.name] = evaluate(p.default, env)
                except EvalError as exc:
                    self.diags.add(exc.diagnostic)
                    return None
            else:
                self.diags.error("E113", f"group '{decl.name}' needs a value for parameter "
                                 f"'{p.name}'", call, Note("parameter declared here", p.span))
                return None
        return env, model_params

    def instance(self, t: Template, stmt: s.Instance, env: dict[str, int],
                 stack: tuple[str, ...]) -> None:
        if stmt.name in t.members:
            raise EvalError(error("E121", f"'{stmt.name}' is declared twice in group '{t.name}'",
                                  stmt.span, Note("first declared here",
                                                  t.members[stmt.name].span)))
        size = None
        if stmt.size is not None:
            size = evaluate(stmt.size, env)
            if size < 1:
                raise EvalError(error("E221", f"array '{stmt.name}' has size {size}; sizes are "
                                      f"at least 1{_values(stmt.size, env)}", stmt.size.span))
            if size > LIMITS.array:
                raise EvalError(error("E295", f"array '{stmt.name}' has {size} elements; the limit "
                                      f"is {LIMITS.array}", stmt.size.span))
        count = size or 1
        model = t.models.get(stmt.target) or self.program.device_models.get(stmt.target)
        member = Member(stmt.name, size, model, None, stmt.span, stmt.host, stmt.hostname)
        if model is not None:
            if stmt.args:
                raise EvalError(error("E205", f"'{stmt.target}' is a device model and takes no "
                                      "arguments", stmt.args[0].span))
            devices, links = count, 0
        else:
            decl = self.program.groups.get(stmt.target)
            if decl is None:
                raise EvalError(error("E110", f"unknown device model or group '{stmt.target}'"
                                      + hints.unknown(stmt.target,
                                                      hints.names(self.program, t.models),
                                                      self.program,
                                                      hints.role_kinds(stmt.name)),
                                      stmt.target_span))
            if decl.name in stack:
                chain = " > ".join([*stack[stack.index(decl.name):], decl.name])
                raise EvalError(error("E140", f"group '{decl.name}' contains itself ({chain})",
                                      stmt.target_span, Note("group declared here", decl.span)))
            typed = {p.name for p in decl.params if p.type in KINDS}
            unbound = sorted({v for a in stmt.args if a.name not in typed
                              for v in variables(a.value)} - set(env))
            if unbound and size is not None:
                first = next(a for a in stmt.args if unbound[0] in variables(a.value))
                raise EvalError(error(
                    "E114", f"unknown name '{unbound[0]}': the arguments of array '{stmt.name}' "
                    "are evaluated once, for every element alike, and no element index is "
                    "bound here. For elements that differ, declare one member per variant, "
                    f"e.g. 'big[2] : {decl.name}(...)' and 'small[2] : {decl.name}(...)', and "
                    "wire each (docs/language.md, heterogeneous arrays)", first.value.span))
            args = self.arguments(decl, stmt.args, env, t.models)
            child = self.template(decl, args, stmt.span, stack)
            if child is None:
                return
            member.template = child
            devices, links = count * child.devices, count * child.total_links
        member.start = t.devices
        t.devices += devices
        t.total_links += links
        if t.devices > LIMITS.devices:
            raise EvalError(error("E291", f"group '{t.name}' would hold {t.devices} devices; the "
                                  f"limit is {LIMITS.devices}", stmt.span))
        if t.total_links > LIMITS.links:
            raise EvalError(error("E292", f"group '{t.name}' would hold {t.total_links} links; the "
                                  f"limit is {LIMITS.links}", stmt.span))
        self.check_memory(t, stmt.span)
        t.members[stmt.name] = member

    def check_element_names(self, t: Template) -> None:
        """A scalar named like an array element (``gpu0`` beside ``gpu[2]``) would share its id."""
        for name, m in t.members.items():
            stem = name.rstrip("0123456789")
            digits = name[len(stem):]
            other = t.members.get(stem)
            if digits and other is not None and other.size is not None and (
                    digits == "0" or not digits.startswith("0")) and int(digits) < other.size:
                self.diags.error("E121", f"'{name}' has the same id as element {digits} of array "
                                 f"'{stem}'", m.span, Note("the array is declared here",
                                                           other.span))

    # -- connections
    def connection(self, t: Template, stmt: s.Connection, env: dict[str, int]) -> None:
        link_type = self.program.link_types.get(stmt.link)
        if link_type is None:
            ends = hints.link_classes((_text(p), _end_model(t, p))
                                      for p in (stmt.left, stmt.right))
            raise EvalError(error("E111", f"unknown link type '{stmt.link}'" + hints.unknown(
                stmt.link, {n: lt.cls for n, lt in self.program.link_types.items()},
                self.program, ends, hints.LINKS), stmt.link_span))
        lanes = 1
        if stmt.lanes is not None:
            lanes = evaluate(stmt.lanes, env)
            if lanes < 1:
                raise EvalError(error("E222", f"a connection needs at least one lane, not {lanes}"
                                      + _values(stmt.lanes, env), stmt.lanes.span))
            if lanes > LIMITS.lanes:
                raise EvalError(error("E298", f"{lanes} lanes in one connection; the limit is "
                                      f"{LIMITS.lanes}", stmt.lanes.span))
        axes: list[tuple[str, range]] = []      # (variable, domain) in enumeration order
        named: dict[str, int] = {}               # named index -> position in axes
        sides = [self.walk(t, stmt.left, env, axes, named),
                 self.walk(t, stmt.right, env, axes, named)]
        # An index that appears only inside expressions (``gpu[2 * p] <-> gpu[2 * p + 1]``)
        # ranges over the values for which every selector using it stays in range.
        free: dict[str, int] = {}
        for side in sides:
            for _, sel, size, _, _, _ in side:
                if isinstance(sel, s.Index):
                    for v in sorted(variables(sel.expr)):
                        if v not in env and v not in named:
                            free[v] = max(free.get(v, 0), size)
        first_free = len(axes)
        for v, size in free.items():
            axes.append((v, range(size)))
        total = 1
        for _, dom in axes:
            total *= len(dom)
        if total * lanes > LIMITS.enumeration or total > LIMITS.links:
            raise EvalError(error("E299", f"this connection makes {total} links; the limit is "
                                  f"{min(LIMITS.enumeration, LIMITS.links)}", stmt.span))
        t.total_links += total
        if t.total_links > LIMITS.links:
            raise EvalError(error("E292", f"group '{t.name}' would hold {t.total_links} links; "
                                  f"the limit is {LIMITS.links}", stmt.span))
        self.written += total
        self.check_memory(t, stmt.span)
        if total > _EXPAND_AFTER_ERROR and (self.diags.has_errors or self.doomed):
            # The program already fails; expanding a large connection only to drop it would
            # spend seconds per ten million links (issue 25: a mutated rack of 10 M links).
            return
        names = [v for v, _ in axes]
        scope = dict(env)
        made = 0
        # each selected segment with its element names, so a path joins listed names
        plans = [tuple((name, sel, size, var, _element_names(name, size)
                        if sel is not None and size <= _NAMES_MAX else None, start, unit)
                       for name, sel, size, var, start, unit in side) for side in sides]
        by_name = layout.ambiguous(t)
        fast = fastconn.expand(plans, axes, free, env, by_name) if total >= _FAST_LINKS \
            else None
        if fast is not None:
            made = len(fast[0])
            if made:
                t.links.append(layout.Chunk(None, None, fast, link_type, lanes,
                                            not stmt.directed, stmt.span) if by_name else
                               layout.Chunk(*fast, None, link_type, lanes, not stmt.directed,
                                            stmt.span))
        a_names: list[str] = []
        b_names: list[str] = []
        a_offsets: list[int] = []
        b_offsets: list[int] = []
        try:
            for combo in () if fast is not None else \
                    itertools.product(*(dom for _, dom in axes)):
                scope.update(zip(names, combo))
                a = self.path(plans[0], scope, stmt, free)
                b = self.path(plans[1], scope, stmt, free)
                if a is None or b is None:
                    continue
                if a[0] == b[0]:
                    raise EvalError(error("E215", f"connects '{a[0]}' to itself", stmt.span))
                a_names.append(a[0])
                b_names.append(b[0])
                a_offsets.append(a[1])
                b_offsets.append(b[1])
                made += 1
        finally:
            if a_names:     # the links before an error too, as they were kept before
                t.links.append(layout.Chunk(a_offsets, b_offsets, (a_names, b_names),
                                            link_type, lanes, not stmt.directed, stmt.span))
        if free and not made:
            v = names[first_free]
            sel = next(sel for side in sides for _, sel, *_ in side
                       if isinstance(sel, s.Index) and v in variables(sel.expr))
            raise EvalError(error(
                "E213", f"index '{v}' takes no value that keeps every selector in range: bind it "
                f"alone in a selector, as in 'gpu[{v}]', or correct the expression", sel.span))
        t.total_links -= total - made

    def walk(self, t: Template, path: s.Path, env, axes, named):
        """Check a path against the template; return per segment (name, selector, size, var,
        the member's first device in its template, the devices of one element)."""
        out = []
        node: Template | None = t
        for i, seg in enumerate(path.segments):
            if node is None:
                prev = path.segments[i - 1].name
                raise EvalError(error("E212", f"'{prev}' is a device; it has no member "
                                      f"'{seg.name}'", seg.span))
            m = node.members.get(seg.name)
            if m is None:
                raise EvalError(error("E112", f"group '{node.name}' has no member '{seg.name}'"
                                      + suggest(seg.name, node.members), seg.span))
            sel, var = seg.selector, None
            if m.size is None and sel is not None:
                raise EvalError(error("E211", f"'{seg.name}' is a single instance, not an array; "
                                      "drop the brackets", sel.span))
            if m.size is not None and sel is None:
                raise EvalError(error("E211", f"'{seg.name}' is an array of {m.size}; select with "
                                      f"'{seg.name}[i]', '{seg.name}[*]' or "
                                      f"'{seg.name}[0..{m.size - 1}]'", seg.span))
            if isinstance(sel, s.Star):
                var = f"*{len(axes)}"
                axes.append((var, range(m.size)))
            elif isinstance(sel, s.Range):
                lo, hi = evaluate(sel.lo, env), evaluate(sel.hi, env)
                if not 0 <= lo <= hi < m.size:
                    raise EvalError(error("E210", f"range {lo}..{hi} is outside '{seg.name}', "
                                          f"which has elements 0..{m.size - 1}", sel.span))
                var = f"*{len(axes)}"
                axes.append((var, range(lo, hi + 1)))
            elif isinstance(sel, s.Index) and isinstance(sel.expr, s.Var) and \
                    sel.expr.name not in env and sel.expr.name not in named:
                named[sel.expr.name] = len(axes)
                axes.append((sel.expr.name, range(m.size)))
            if i == len(path.segments) - 1 and m.model is None and m.template is not None:
                raise EvalError(error("E212", f"'{seg.name}' is a group ({m.template.name}), not a "
                                      "device; name a device inside it", seg.span))
            out.append((seg.name, sel, m.size, var, m.start,
                        1 if m.template is None else m.template.devices))
            node = m.template
        return out

    @staticmethod
    def path(side, scope, stmt, free=()) -> tuple[str, int] | None:
        """The element path for one binding and its device's offset in the template's layout;
        None when an index ranging over its inferred domain (``free``) falls outside an array
        here, so the binding makes no link."""
        parts = []
        offset = 0
        for name, sel, size, var, elements, start, unit in side:
            offset += start
            if sel is None:
                parts.append(name)
                continue
            idx = scope[var] if var is not None else evaluate_fast(sel.expr, scope)
            if 0 <= idx < size:
                parts.append(elements[idx] if elements is not None else f"{name}{idx}")
                offset += idx * unit
                continue
            if free and variables(sel.expr) & set(free):
                return None
            if not 0 <= idx < size:
                bound = ", ".join(f"{k}={v}" for k, v in scope.items()
                                  if not k.startswith("*") and k in variables(sel.expr))
                raise EvalError(error("E210", f"selects {name}[{idx}]"
                                      + (f" (when {bound})" if bound else "")
                                      + f", but '{name}' has elements 0..{size - 1}", sel.span))
        return ".".join(parts), offset


def _text(path: s.Path) -> str:
    """A connection end as written, indices aside: 'node.nic'."""
    return ".".join(seg.name for seg in path.segments)


def _end_model(t: Template, path: s.Path) -> DeviceModel | None:
    """The device model a connection's end names, None where the path reaches no device."""
    node: Template | None = t
    for seg in path.segments:
        m = node.members.get(seg.name) if node is not None else None
        if m is None:
            return None
        if seg is path.segments[-1]:
            return m.model
        node = m.template
    return None


#: Whether a template's own links overrun a direct device's port budget (``layout``).
_over_budget = layout.over_budget


def _values(expr, env: Mapping[str, int]) -> str:
    """' (with spines = 56, nodes = 280)': the names an expression read, for a message about
    its value, so a -D sweep that breaks a library formula says which value broke it."""
    names = sorted(v for v in variables(expr) if v in env)
    return f" (with {', '.join(f'{v} = {env[v]}' for v in names)})" if names else ""


#: The largest array whose element names a connection lists (``connection``, ``path``).
_NAMES_MAX = 65536
_element_names = layout.element_names


def _named(t: Template) -> list[tuple]:
    """The template's links as (src, dst, type, lanes, duplex, span) with names relative to
    an instance, made once per template: what the per-instance walk reads."""
    found = t.named
    if found is None:
        found = t.named = list(layout.tuples(t))
    return found


def _instantiate(t: Template, prefix: str, devices: list[Device],
                 links: dict[tuple, Link], sites: dict[str, Span], stem: str,
                 hosts: list[Host], chain: tuple[tuple[str, int | None], ...] = (),
                 ids: dict[str, int] | None = None, ends: _EndsBuilder | None = None) -> None:
    """Append the devices, hosts and links of ``t`` instantiated at ``prefix``. ``ids`` maps
    each device id to the device's index, so a link's ends share their devices' strings
    instead of holding two copies each (160 bytes a link: 2.2 GB at 8,192 racks), and
    ``ends`` records the links as integer arrays on the way (``System.ends``).

    Every instance of one template lays its devices out alike, so a link's ends sit at the
    same offsets from the instance's first device in each: the first instance finds them by
    id, the others (1,023 of 1,024 racks) add the offsets to their own first index."""
    if ids is None:
        ids = {}
    base = len(devices)
    for m in t.members.values():
        names = _element_names(m.name, m.size)
        sites.setdefault(stem + m.name, m.span)     # once per member, not per element
        indices = [None] if m.size is None else list(range(m.size))
        if m.model is not None:
            # the member's devices made in C (map), not one Python step each
            start = len(devices)
            dids = [prefix + n for n in names]
            devices.extend(map(Device, dids, itertools.repeat(m.model, len(dids)),
                               itertools.repeat(m.span, len(dids))))
            ids.update(zip(dids, range(start, start + len(dids))))
            if m.host:
                hosts.extend(Host(prefix + n, (*chain, (m.name, i)), m.hostname, m.span)
                             for n, i in zip(names, indices))
        else:
            for n, i in zip(names, indices):
                if m.host:
                    hosts.append(Host(prefix + n, (*chain, (m.name, i)), m.hostname, m.span))
                _instantiate(m.template, f"{prefix}{n}.", devices, links, sites,
                             f"{stem}{m.name}.", hosts, (*chain, (m.name, i)), ids, ends)
    if type(links) is list and ends is not None:    # nothing can merge: no keys to keep
        rows = ends.layout.get(id(t))
        if rows is None:
            rows = ends.layout[id(t)] = ends.rows(t, prefix, ids, base) or False
        if rows:
            if not ends.compact:
                append = links.append
                for oa, ob, lt, lanes, duplex, span in rows:
                    append(Link(None, devices[base + oa].id, devices[base + ob].id, lt, lanes,
                                duplex, span))       # id: src<->dst:type
            ends.add_many(base, rows, t)    # compact: the arrays are the links (ir.links)
            return
    if type(links) is list:
        if ends is not None and ends.compact and t.links:
            ends.to_objects(links, devices)     # links from here on are objects: keep order
        for a, b, lt, lanes, duplex, span in _named(t):
            si, di = ids.get(src := prefix + a), ids.get(dst := prefix + b)
            if si is not None and di is not None:
                src, dst = devices[si].id, devices[di].id
            links.append(Link(None, src, dst, lt, lanes, duplex, span))   # id: src<->dst:type
        return
    for a, b, lt, lanes, duplex, span in _named(t):
        si, di = ids.get(src := prefix + a), ids.get(dst := prefix + b)
        if si is not None and di is not None:
            src, dst = devices[si].id, devices[di].id
        key = (min(src, dst), max(src, dst), lt.name, True) if duplex else (src, dst, lt.name,
                                                                               False)
        old = links.get(key)
        if old is not None:
            # The same pair wired twice with one link type: more lanes on one link.
            links[key] = attrs.evolve(old, lanes=old.lanes + lanes)
            continue
        links[key] = Link(None, src, dst, lt, lanes, duplex, span)   # id: src<->dst:type


#: Templates with more links than this add their instances' ends in numpy (``add_many``).
_NUMPY_ROWS = 48


class _EndsBuilder:
    """``System.ends`` filled while instantiation appends links: per template, its links' end
    offsets and type codes once (``rows``, ``layout``), then whole instances at a time."""

    def __init__(self):
        self.src, self.dst, self.type, self.lanes = array("i"), array("i"), array("H"), \
            array("i")
        self.codes: dict[int, int] = {}
        self.types: list[LinkType] = []
        self.layout: dict[int, list | None] = {}
        self.columns: dict[int, tuple] = {}
        self.wide: dict[int, tuple] = {}            # numpy views of many-link templates' columns
        self.ok = True
        #: True while every link so far is only a row of these arrays (``ir.links.Links``);
        #: the first link that is not a template row (``to_objects``) ends it
        self.compact = True
        self.row = array("i")                       # each link's entry in ``row_table``
        self.row_table: list[tuple[bool, Span]] = []    # (duplex, span) per template row

    def rows(self, t: Template, prefix: str, ids: dict[str, int], base: int) -> list | None:
        """(src offset, dst offset, type, lanes, duplex, span) per link of ``t``, from its
        first instance at ``prefix``; None (the slow path, and no ``System.ends`` from here)
        when an end is not a device of the instance."""
        out = []
        for a, b, lt, lanes, duplex, span in _named(t):
            si, di = ids.get(prefix + a), ids.get(prefix + b)
            if si is None or di is None:
                self.ok = False
                return None
            out.append((si - base, di - base, lt, lanes, duplex, span))
        codes = array("H")
        for row in out:
            code = self.codes.get(id(row[2]))
            if code is None:
                code = self.codes[id(row[2])] = len(self.types)
                self.types.append(row[2])
            codes.append(code)
        first = len(self.row_table)
        self.row_table.extend((r[4], r[5]) for r in out)
        self.columns[id(t)] = (array("i", (r[0] for r in out)), array("i", (r[1] for r in out)),
                               codes, array("i", (r[3] for r in out)),
                               array("i", range(first, first + len(out))))
        return out

    def add_many(self, base: int, rows: list, t: Template) -> None:
        """The integer ends of one instance's links (``rows`` of its template at ``base``):
        offsets plus ``base``, in numpy for a template of many links (an NVL72 rack's 1,296
        NVLink links, 8,192 times), in Python for a few (numpy's call costs more there)."""
        src, dst, codes, lanes, rows_ = self.columns[id(t)]
        if len(src) > _NUMPY_ROWS:
            wide = self.wide.get(id(t))
            if wide is None:
                import numpy as np
                wide = self.wide[id(t)] = (np, np.frombuffer(src, dtype=np.int32),
                                           np.frombuffer(dst, dtype=np.int32))
            np, a, b = wide
            self.src.frombytes(np.add(a, base, dtype=np.int32).tobytes())
            self.dst.frombytes(np.add(b, base, dtype=np.int32).tobytes())
        else:
            self.src.extend([base + o for o in src])
            self.dst.extend([base + o for o in dst])
        self.type.extend(codes)
        self.lanes.extend(lanes)
        if self.compact:
            self.row.extend(rows_)

    def to_objects(self, links: list[Link], devices: list[Device]) -> None:
        """Leave the compact form: the links recorded so far as objects, appended in order."""
        if self.compact:
            self.compact = False
            types, table = self.types, self.row_table
            links.extend(Link(None, devices[a].id, devices[b].id, types[c], n, *table[r])
                         for a, b, c, n, r in zip(self.src, self.dst, self.type, self.lanes,
                                                  self.row))
            self.row = array("i")

    def links(self, devices: tuple[Device, ...], ends: Ends) -> Links:
        """The compact link sequence over these arrays (``compact`` only)."""
        return Links(devices, ends, self.row_table, self.row)

    def done(self, n_links: int) -> Ends | None:
        if not self.ok or len(self.src) != n_links:
            return None
        return Ends(self.src, self.dst, self.type, tuple(self.types), self.lanes)


#: Whether two links of the system could coincide and merge (``layout.may_merge``).
_may_merge = layout.may_merge


@gc_paused()
def elaborate(program: Program, overrides: Mapping[str, int] | None = None) -> System:
    """Elaborate the root file's system (with ``-D`` overrides) into a flat ``System``."""
    diags = Collector()
    if not program.systems:
        raise CompileError([error("E150", "no system declared; add 'system NAME : Group' to "
                                  "compile this file (a file of declarations only, a library, "
                                  "is checked by 'topoc lint')", program.root_span)])
    decl = program.systems[0]
    group = program.groups.get(decl.group)
    if group is None:
        hint = hints.unknown(decl.group, dict.fromkeys(program.groups, hints.GROUP), program)
        kind = " (a device model; a system instantiates a group)" \
            if decl.group in program.device_models else ""
        raise CompileError([error("E110", f"unknown group '{decl.group}'{kind}{hint}",
                                  decl.group_span)])
    args: dict[str, int | DeviceModel] = {}
    elab = _Elaborator(program, diags)
    for a in decl.args:
        try:
            args.update(elab.arguments(group, (a,), {}, {}))
        except EvalError as exc:
            diags.add(exc.diagnostic)
    params = [p.name for p in group.params]
    for name, value in (overrides or {}).items():
        if name not in params:
            diags.error("E160", f"-D {name}: system '{decl.name}' ({group.name}) has no parameter "
                        f"'{name}'" + suggest(name, params)
                        + (f"; its parameters are {', '.join(params)}" if params else ""),
                        decl.span)
        args[name] = value
    diags.check()
    t = elab.template(group, args, decl.span, ())
    diags.check()
    assert t is not None
    devices: list[Device] = []
    links: dict[tuple, Link] | list[Link] = {} if _may_merge(elab.cache.values()) else []
    sites: dict[str, Span] = {}
    hosts: list[Host] = []
    recorded = _EndsBuilder() if isinstance(links, list) else None
    by_layout = recorded is not None and recorded.compact and not any(
        layout.ambiguous(x) for x in elab.cache.values() if x is not None)
    if by_layout:
        # every link is a row of its template's layout: the whole system from the layouts
        devices, hosts, sites, found, row_table, row, host_ranges, models = layout.instantiate(
            t, f"{decl.name}.", f"{decl.name}.")
    else:
        _instantiate(t, f"{decl.name}.", devices, links, sites, f"{decl.name}.", hosts,
                     ends=recorded)
    nested = nested_host(hosts)
    if nested is not None:
        inner, outer = nested
        raise CompileError([error("E216", f"host '{inner.id}' lies inside host '{outer.id}'; a "
                                  "host is one OS image, so hosts do not nest", inner.span,
                                  Note("the outer host is marked here", outer.span))])
    check_patterns(hosts)
    devices_t = tuple(devices)
    if by_layout:
        flat = Links(devices_t, found, row_table, row)
    elif recorded is not None and recorded.compact:
        # still compact means every link is a row (``rows`` failing leaves the compact form
        # at once, ``_instantiate``), so the arrays are all the links
        found = recorded.done(len(recorded.src))
        flat = recorded.links(devices_t, found)
    else:
        flat = tuple(links.values()) if isinstance(links, dict) else tuple(links)
        found = recorded.done(len(flat)) if recorded is not None else None
    out = System(decl.name, devices_t, flat, (),
                 tuple(sorted(t.params.items())), decl.span, tuple(sorted(sites.items())),
                 hosts=tuple(hosts))
    if found is not None:
        out.memo["ends"] = found
    if by_layout:
        out.memo[HOST_RANGES] = host_ranges
        out.memo.update(models)
    return out
