"""The syntax tree of one .topo file: what ``parse`` returns, before names mean anything."""

from __future__ import annotations

from typing import Union

import attrs
from attrs import field

from ..base.diagnostics import Span
from ..base.units import Quantity

# ---- expressions (integers over parameters and index variables) -------------------------------


@attrs.frozen
class Num:
    """An integer literal."""

    value: int
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Var:
    """A parameter, a ``let`` name or an index variable."""

    name: str
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class BinOp:
    """``left op right`` with op one of + - * / % (``/`` is floor division)."""

    op: str
    left: Expr
    right: Expr
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Neg:
    """Unary minus."""

    operand: Expr
    span: Span = field(eq=False, repr=False)


Expr = Union[Num, Var, BinOp, Neg]

# ---- attribute values ------------------------------------------------------------------------


@attrs.frozen
class QuantityValue:
    """A number with an optional unit, already converted to base units."""

    quantity: Quantity
    text: str
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class StringValue:
    """A quoted string (escapes already applied)."""

    value: str
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class BoolValue:
    """``true`` or ``false``."""

    value: bool
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class NameList:
    """``a, b, c``: one or more bare names."""

    names: tuple[str, ...]
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Auto:
    """The ``auto`` keyword in a parallel block."""

    span: Span = field(eq=False, repr=False)


Value = Union[QuantityValue, StringValue, BoolValue, NameList, Auto]


@attrs.frozen
class Attr:
    """``key = value``; dotted keys like ``ports.nvlink`` keep their dots."""

    key: str
    value: Value
    span: Span = field(eq=False, repr=False)


# ---- declarations ----------------------------------------------------------------------------


@attrs.frozen
class Use:
    """``use "path.topo"``, or ``use "path.topo" as nv`` (its names only as ``nv.NAME``)."""

    path: str
    span: Span = field(eq=False, repr=False)
    alias: str | None = None


@attrs.frozen
class LinkDecl:
    """``link NAME : CLASS { attrs }``."""

    name: str
    cls: str
    attrs: tuple[Attr, ...]
    span: Span = field(eq=False, repr=False)
    cls_span: Span = field(eq=False, repr=False)


@attrs.frozen
class DeviceDecl:
    """``device NAME : KIND { attrs }``."""

    name: str
    kind: str
    attrs: tuple[Attr, ...]
    span: Span = field(eq=False, repr=False)
    kind_span: Span = field(eq=False, repr=False)


@attrs.frozen
class ModelDecl:
    """``model NAME { attrs }``: a transformer's shape (layers, hidden, heads, ...)."""

    name: str
    attrs: tuple[Attr, ...]
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Param:
    """``name: type = default`` in a group's parameter list."""

    name: str
    type: str
    default: Expr | None
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Arg:
    """``name = expr`` when instantiating a group."""

    name: str
    value: Expr
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Let:
    """``let name = expr`` inside a group."""

    name: str
    value: Expr
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Require:
    """``require left OP right, "why"`` inside a group: a limit of the group's parameters."""

    left: Expr
    op: str
    right: Expr
    message: str | None
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Instance:
    """``name[size] : Target(args)``; size is None for a single instance."""

    name: str
    size: Expr | None
    target: str
    args: tuple[Arg, ...]
    span: Span = field(eq=False, repr=False)
    target_span: Span = field(eq=False, repr=False)
    #: ``host ...``: each element is one host (one OS image); ``hostname`` its name pattern.
    host: bool = False
    hostname: str | None = None


@attrs.frozen
class Star:
    """``[*]``: every element, enumerated independently of every other star."""

    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Range:
    """``[lo..hi]``: the elements lo to hi inclusive."""

    lo: Expr
    hi: Expr
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Index:
    """``[expr]``: one element; a bare unbound name binds an index variable."""

    expr: Expr
    span: Span = field(eq=False, repr=False)


Selector = Union[Star, Range, Index]


@attrs.frozen
class Segment:
    """One step of a path: ``name`` or ``name[selector]``."""

    name: str
    selector: Selector | None
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Path:
    """``a[i].b[*].c``: a device selection relative to the enclosing group."""

    segments: tuple[Segment, ...]
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class Connection:
    """``left <-> right : link x lanes`` (``->`` for a one-way link)."""

    left: Path
    right: Path
    directed: bool
    link: str
    lanes: Expr | None
    span: Span = field(eq=False, repr=False)
    link_span: Span = field(eq=False, repr=False)


Statement = Union[Instance, Connection, Let, Require]


@attrs.frozen
class GroupDecl:
    """``group Name(params) { statements }``."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Statement, ...]
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class SystemDecl:
    """``system name : Group(args)``."""

    name: str
    group: str
    args: tuple[Arg, ...]
    span: Span = field(eq=False, repr=False)
    group_span: Span = field(eq=False, repr=False)


@attrs.frozen
class Flow:
    """``tp allreduce 64 MiB x 160`` in a parallel block's traffic section."""

    dim: str
    collective: str
    size: QuantityValue
    count: Expr | None
    span: Span = field(eq=False, repr=False)


@attrs.frozen
class ParallelDecl:
    """``parallel name on system { settings traffic { flows } }``."""

    name: str
    system: str
    settings: tuple[Attr, ...]
    flows: tuple[Flow, ...]
    span: Span = field(eq=False, repr=False)
    system_span: Span = field(eq=False, repr=False)


Declaration = Union[Use, LinkDecl, DeviceDecl, ModelDecl, GroupDecl, SystemDecl, ParallelDecl]


@attrs.frozen
class Module:
    """One parsed file: its path, its source and its declarations in order."""

    path: str
    items: tuple[Declaration, ...]
    span: Span = field(eq=False, repr=False)
