"""Hints for unknown names that are true: the right kind, and different hardware said so.

An unknown device model, group or link type gets the closest declared name, but only one of a
kind the context admits (``Expect``): a member the library's groups call ``leaf`` is a
network switch, a ``gpu``-typed group parameter takes a GPU, a connection between a NIC and an
InfiniBand switch takes an InfiniBand link. Where the context fixes no kind, the typed name's
leading letters choose among the library's families (``Q...`` are Quantum switches). A name
only one declaration's library comment mentions (``Q3400``, the Quantum-X800 ``QX800``) is
offered that declaration first. A suggestion that differs in a model number (``DGXH100`` for ``DGXH200``) is different
hardware: the hint says so and shows the parameterised form the library declares
(``DGXH100(G = H200)``). Every hint ends with the pointer to ``docs/library.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import attrs

from ..base.diagnostics import closest
from ..base.units import RATE, human
from ..ir.kinds import KINDS
from ..ir.system import DeviceModel, LinkType
from . import syntax as s
from .catalog import GROUP, call, catalog
from .closest import POINTER, different_hardware, numbered
from .resolve import Program

#: The library's namespaces a name is looked for in: device models and groups, or link types.
DEVICES, LINKS = ("device", "group"), ("link",)


@attrs.frozen
class Expect:
    """The kinds the context admits, and why, for the message when the closest name is of
    another kind."""

    kinds: frozenset[str]
    why: str


def _switches(kinds: frozenset[str]) -> frozenset[str]:
    """Kinds widened to every switch kind when they are all switches: a member called ``sw``
    may be an NVSwitch though the library's ``sw`` members are network switches."""
    every = frozenset(k for k in KINDS if k.endswith("switch"))
    return every if kinds and kinds <= every else kinds


def role_kinds(member: str) -> Expect | None:
    """The kinds a member of this name is, judged by what the library's groups call theirs
    (``leaf`` -> net_switch) or by a kind's own name in it (``switch``, ``gpu``); the last
    word that says wins, as in ``leaf_switch``. None when the name says nothing."""
    roles = catalog().roles
    name = member.lower()
    found = roles.get(name)
    if found is None:
        for word in re.split(r"[_\d]+", name):
            if word in roles:
                found = roles[word]
            kinds = frozenset(k for k in KINDS if k == word or k.endswith("_" + word))
            if kinds:
                found = kinds
    if found is None:
        return None
    found = _switches(found)
    return Expect(found, f"a member named '{member}' is " + _either(found))


def _either(kinds: frozenset[str]) -> str:
    words = sorted(kinds)
    return _article(words[0]) if len(words) == 1 else \
        "a " + ", ".join(words[:-1]) + f" or {words[-1]}"


def link_classes(ends: Iterable[tuple[str, DeviceModel | None]]) -> Expect | None:
    """The link classes both ends of a connection have ports for; None when an end declares no
    port budget (it takes any class) or is not a device. ``ends``: (path text, model)."""
    allowed, named = None, []
    for text, m in ends:
        if m is None or not m.ports:
            continue
        mine = frozenset(c for c, n in m.ports if n > 0)
        allowed = mine if allowed is None else allowed & mine
        named.append(f"'{text}' ({m.name})")
    if not allowed:
        return None
    return Expect(allowed, f"{' and '.join(named)} take{'s' if len(named) == 1 else ''} "
                  f"{' and '.join(sorted(allowed))} links only")


def parameter_kind(param: str, kind: str) -> Expect:
    """A model-typed group parameter's kind."""
    return Expect(frozenset({kind}), f"parameter '{param}' takes {_article(kind)}")


def nearest(name: str, kinds: Mapping[str, str], allowed: frozenset[str] | None,
            space: tuple[str, ...] = DEVICES) -> tuple[str, bool] | None:
    """The closest name of an allowed kind. Where ``allowed`` is None, the candidates that
    share the typed name's leading letters (case aside) and the library's names of the same
    letters choose the kinds: ``Q3400`` is looked for among switches. The flag says the
    name was found in the declaration's library comment (likely the same hardware by its
    product name), the only one that mentions it."""
    pool = {n: k for n, k in kinds.items() if allowed is None or k in allowed}
    if allowed is None:
        family = _family(name, pool, space)
        if family:
            pool = {n: k for n, k in pool.items() if k in family}
    mentioned = [e.name for e in catalog().mentions(name) if e.name in pool]
    if len(mentioned) == 1:
        return mentioned[0], True
    close = closest(name, pool)
    return (close, False) if close else None


def _family(name: str, pool: Mapping[str, str], space: tuple[str, ...]) -> frozenset[str]:
    """The kinds of the declared names whose leading letters extend the typed name's or are
    extended by them (``Q`` -> QM9700, QX800: switches), in scope or in the library."""
    head = _head(name)
    if not head:
        return frozenset()
    lib = {e.name: e.kind for e in catalog().by_name.values() if e.what in space}
    return frozenset(k for n, k in {**lib, **pool}.items()
                     if (h := _head(n)) and (h.startswith(head) or head.startswith(h)))


def _head(name: str) -> str:
    m = re.match(r"[A-Za-z]+", name)
    return m.group(0).lower() if m else ""


def describe(name: str, program: Program, kind: str = GROUP) -> str:
    """What a declared name is, in a few words: 'a group of H100 GPUs', 'a net_switch: 800
    Gb/s, 144 infiniband ports', 'a link of class infiniband, 400 Gb/s per lane'; ``kind``
    for a name the program does not declare (a group's model parameter: 'a gpu')."""
    model = program.device_models.get(name)
    if model is not None:
        return _article(model.kind) + _figures(model)
    lt = program.link_types.get(name)
    if lt is not None:
        return f"a link of class {lt.cls}, {_rate(lt)} per lane"
    if name not in program.groups:
        return _article(kind)
    gpus = sorted(_gpus(name, program, ()))
    return "a group" + (f" of {', '.join(gpus)} GPUs" if gpus else "")


def _plural(kind: str) -> str:
    """'GPUs', 'CPUs', 'net_switches'."""
    return kind.upper() + "s" if len(kind) == 3 else kind + "es"


def _article(word: str) -> str:
    return ("an " if word[0] in "aeio" else "a ") + word


def _rate(lt: LinkType) -> str:
    return bits(lt.bandwidth) if lt.cls in ("infiniband", "ethernet") else human(lt.bandwidth,
                                                                                 RATE)


def bits(rate: float) -> str:
    """A network rate as its ports are sold: 50e9 bytes/s is '400 Gb/s'."""
    return f"{rate * 8 / 1e9:g} Gb/s"


def _figures(model: DeviceModel) -> str:
    parts = []
    hbm = model.attr("hbm")
    if hbm:
        parts.append(f"{hbm / 1e9:.1f}".rstrip("0").rstrip(".") + " GB HBM")
    rate = model.attr("rate")
    if rate:
        parts.append(bits(rate))
    parts.extend(f"{n} {cls} ports" for cls, n in model.ports
                 if model.kind.endswith("switch") and n)
    return (": " + ", ".join(parts)) if parts else ""


def _gpus(group: str, program: Program, stack: tuple[str, ...]) -> set[str]:
    """The GPU models a group holds with its parameters' defaults."""
    decl = program.groups.get(group)
    if decl is None or group in stack:
        return set()
    defaults = {p.name: p.default.name for p in decl.params
                if isinstance(p.default, s.Var)}
    out: set[str] = set()
    for stmt in decl.body:
        if isinstance(stmt, s.Instance):
            target = defaults.get(stmt.target, stmt.target)
            model = program.device_models.get(target)
            if model is not None and model.kind == "gpu":
                out.add(model.name)
            elif model is None:
                out |= _gpus(target, program, (*stack, group))
    return out


def _system_file(name: str) -> str:
    """'; the library's "nvidia/dgx_h200.topo" is that system: ...' when a library file of
    that name (``DGXH200``, ``GB200NVL72``: case, '_' and '-' aside) declares a system."""
    key = re.sub(r"[_\-]", "", name.lower())
    for f in catalog().files:
        stem = re.sub(r"[_\-]", "", f.path.rsplit("/", 1)[-1].removesuffix(".topo").lower())
        if f.system is None or stem != key:
            continue
        form = call(f.system.group, f.system.args)
        home = catalog().by_name.get(f.system.group)
        use = f' from "{home.file}"' if home is not None else ""
        return (f'; the library\'s "{f.path}" is that system: write \'{form}\'{use}, or '
                f'compile "{f.path}" itself')
    return ""


def names(program: Program, models: Mapping[str, DeviceModel] = {}) -> dict[str, str]:
    """The device models and groups in scope with their kinds (``models``: a group's own
    model parameters)."""
    out = {n: GROUP for n in program.groups}
    out.update({n: m.kind for n, m in program.device_models.items()})
    out.update({n: m.kind for n, m in models.items()})
    return out


def parameterised(typed: str, offered: str, program: Program) -> str:
    """For a group offered in place of a name that carries another device model (``DGXH200``
    holds ``H200``): 'for H200 GPUs write 'DGXH100(G = H200)'', plus the library file whose
    system is that form. '' when the group has no parameter of that model's kind."""
    decl = program.groups.get(offered)
    if decl is None:
        return ""
    low = typed.lower()
    carried = sorted((m for m in program.device_models.values() if m.name.lower() in low),
                     key=lambda m: -len(m.name))
    for model in carried:
        param = next((p for p in decl.params if p.type == model.kind), None)
        if param is None or (isinstance(param.default, s.Var)
                             and param.default.name == model.name):
            continue
        form = f"{offered}({param.name} = {model.name})"
        files = [path for path, sys in catalog().systems_of(offered)
                 if any(a.name == param.name and isinstance(a.value, s.Var)
                        and a.value.name == model.name for a in sys.args)]
        where = "".join(f'; the library\'s "{f}" is that system' for f in files)
        return f": for {model.name} {_plural(model.kind)} write '{form}'{where}"
    return ""


def unknown(name: str, kinds: Mapping[str, str], program: Program,
            expect: Expect | None = None, space: tuple[str, ...] = DEVICES) -> str:
    """The text after an unknown-name error's message, then the pointer to the library's
    list. In order: the library file to import when the library declares the name; the
    generations of a family named without its number; the closest name in scope of an allowed
    kind (said to be different hardware, with the parameterised form or the library's system
    file of that name, when it has another number); the library's system file of that name;
    the closest library name of an allowed kind, with the file to import; the closest name of
    another kind, with why it does not fit. ``kinds``: the names in scope and their kinds
    (device kind, link class or GROUP); ``space``: DEVICES or LINKS."""
    lib = catalog()
    declared = lib.by_name.get(name)
    if declared is not None and declared.what in space:
        return (f'; the library declares it in "{declared.file}": add use "{declared.file}"'
                + POINTER)
    allowed = expect.kinds if expect else None
    generations = numbered(name, [n for n, k in kinds.items() if allowed is None or k in allowed])
    if len(generations) > 1:
        return (f"; '{name}' names no one model: "
                + ", ".join(f"'{n}'" for n in generations[:-1]) + f" or '{generations[-1]}'"
                + POINTER)
    system = _system_file(name) if space == DEVICES else ""
    found = nearest(name, kinds, allowed, space)
    if found is None and system:
        return system + POINTER
    where = ""
    if found is None:
        # nothing in scope: the library's own names, from the file that declares them
        outside = {e.name: e.kind for e in lib.by_name.values()
                   if e.what in space and e.name not in kinds}
        found = nearest(name, outside, allowed, space)
        if found is not None:
            entry = lib.by_name[found[0]]
            program = next(f.program for f in lib.files if f.path == entry.file)
            where = f' (add use "{entry.file}")'
    other = None if found or expect is None else nearest(name, kinds, None, space)
    offered, named = found or (None, False)
    if other is not None and not different_hardware(name, other[0]):
        hint = (f"; '{other[0]}' is {describe(other[0], program, kinds[other[0]])}, but "
                f"{expect.why}")
    elif offered is None:
        hint = ""
    elif named:
        hint = (f"; the library's comment on '{offered}'{where} "
                f"({describe(offered, program, GROUP)}) "
                f"mentions '{name}': did you mean '{offered}'?")
    elif different_hardware(name, offered):
        kind = kinds.get(offered, GROUP)
        hint = (f"; '{offered}'{where} is different hardware "
                f"({describe(offered, program, kind)})"
                + (parameterised(name, offered, program) or system))
    else:
        hint = f"; did you mean '{offered}'{where}?"
    return hint + POINTER
