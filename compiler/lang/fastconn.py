"""A large connection's links enumerated in numpy (``expand``), for ``elaborate.connection``.

A cluster's top group writes its scale-out wiring as a few connections of hundreds of
thousands of links each (``node[m].nic[n] <-> leaf[8 * (m / 32) + n]``): enumerated one
binding at a time, each link cost an environment update, two selector evaluations and two
string joins in Python (1.2 s of a 6 s compile at 32,768 DGX nodes). Here every axis is an
array over all bindings at once (in ``itertools.product`` order, so the links come out in the
same order) and each selector is evaluated over those arrays. The ends come out as device
offsets in the group's layout (a member's first device plus each selected index times the
size of one element, ``elaborate.Member.start``): no name is made, the links stay integer
rows up to ``System.ends`` (``compiler.lang.layout``). Only when the group's member names could
spell one element two ways (``l2[5]`` and ``l[25]``) are the paths joined as names, by ``map``.

Only the ordinary case is taken: every selector an integer expression of the axes and the
group's parameters, every value in range (or out of range only where an index ranging over
its inferred domain drops the binding, as the loop does), no division by zero, no product
near the loop's bound, no link from a device to itself. Anything else returns None and the
loop runs instead, so every diagnostic (E210, E214, E215, E297, ...) comes from one place,
word for word as before.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping

from . import syntax as s
from .exprs import variables

#: Bindings evaluated per numpy pass: bounds the temporary arrays (8 bytes per binding each).
CHUNK = 1 << 20
#: Values beyond this magnitude are left to the loop (its bound on products is 2**62).
_BOUND = 2**62


def _vector(expr: s.Expr, scope: Mapping[str, object]):
    """``expr`` over the arrays (and integers) of ``scope``, as ``evaluate`` computes it
    (``/`` floors, ``%`` takes the divisor's sign); None where the loop must decide (a name
    that is not an integer, a division by zero, a value that could pass the bound)."""
    import numpy as np

    if isinstance(expr, s.Num):
        value = expr.value
        return value if type(value) is int and abs(value) <= _BOUND else None
    if isinstance(expr, s.Var):
        value = scope.get(expr.name)
        if type(value) is int:
            return value if abs(value) <= _BOUND else None
        return value if isinstance(value, np.ndarray) else None
    if isinstance(expr, s.Neg):
        inner = _vector(expr.operand, scope)
        return None if inner is None else -inner
    if not isinstance(expr, s.BinOp) or expr.op not in ("+", "-", "*", "/", "%"):
        return None
    left, right = _vector(expr.left, scope), _vector(expr.right, scope)
    if left is None or right is None:
        return None
    big_l, big_r = _magnitude(left), _magnitude(right)
    if expr.op in ("+", "-"):
        if big_l + big_r > _BOUND:
            return None
        return left + right if expr.op == "+" else left - right
    if expr.op == "*":
        return None if big_l * big_r > _BOUND else left * right
    if np.any(np.asarray(right) == 0):
        return None
    return left // right if expr.op == "/" else left % right


def _magnitude(value) -> int:
    """The largest absolute value of an integer or an array (0 for an empty one)."""
    if type(value) is int:
        return abs(value)
    return int(abs(value).max()) if value.size else 0


def expand(plans, axes: list[tuple[str, range]], free: Mapping[str, int],
           env: Mapping[str, object], names: bool = False) -> tuple | None:
    """The two ends of every link of a connection, in the loop's order, or None when the loop
    must run (module docstring): two int64 arrays of device offsets in the group's layout, or
    with ``names`` two lists of paths. ``plans`` are the two sides' segments as ``connection``
    lays them out: (name, selector, size, axis variable or None, element names or None, the
    member's first device, the devices of one element)."""
    import numpy as np

    sizes = [len(dom) for _, dom in axes]
    total = 1
    for n in sizes:
        total *= n
    free_names = set(free)
    # per side and segment: is it a constant name, a selector of an axis, or an expression;
    # and may an out-of-range value drop the binding (an index over its inferred domain)
    drops = [[sel is not None and var is None and bool(variables(sel.expr) & free_names)
              for _, sel, _, var, _, _, _ in side] for side in plans]
    ends: list[list] = [[], []]
    with np.errstate(all="ignore"):
        for lo in range(0, total, CHUNK):
            flat = np.arange(lo, min(total, lo + CHUNK), dtype=np.int64)
            scope: dict[str, object] = {k: v for k, v in env.items() if type(v) is int}
            inner = total
            for (name, dom), n in zip(axes, sizes):
                inner //= n
                scope[name] = flat // inner % n + dom.start
            keep = None
            columns = []
            for side, side_drops in zip(plans, drops):
                cols = []
                for (name, sel, size, var, _, _, _), drop in zip(side, side_drops):
                    if sel is None:
                        cols.append(None)
                        continue
                    idx = scope[var] if var is not None else _vector(sel.expr, scope)
                    if idx is None:
                        return None
                    if type(idx) is int:
                        idx = np.full(len(flat), idx, dtype=np.int64)
                    inside = (idx >= 0) & (idx < size)
                    if not inside.all():
                        if not drop:
                            return None         # the loop's E210
                        keep = inside if keep is None else keep & inside
                    cols.append(idx)
                columns.append(cols)
            count = len(flat) if keep is None else int(keep.sum())
            for k, (side, cols) in enumerate(zip(plans, columns)):
                if not names:
                    # offset: each member's first device plus index times element size
                    offset = np.full(count, sum(seg[5] for seg in side), dtype=np.int64)
                    for (_, _, _, _, _, _, unit), idx in zip(side, cols):
                        if idx is not None:
                            offset += (idx if keep is None else idx[keep]) * unit
                    ends[k].append(offset)
                    continue
                parts = []
                for (name, sel, size, var, elements, _, _), idx in zip(side, cols):
                    if idx is None:
                        parts.append(itertools.repeat(name, count))
                        continue
                    values = (idx if keep is None else idx[keep]).tolist()
                    parts.append(map(elements.__getitem__, values) if elements is not None
                                 else map(f"{name}{{}}".format, values))
                ends[k].extend(parts[0] if len(parts) == 1 else map(".".join, zip(*parts)))
    if not names:
        a, b = (side[0] if len(side) == 1 else np.concatenate(side) if side else
                np.zeros(0, dtype=np.int64) for side in ends)
        if bool(np.any(a == b)):
            return None                         # the loop's E215
        return a, b
    a, b = ends
    if any(map(operator.eq, a, b)):
        return None                             # the loop's E215
    return a, b
