"""The instances of a system, numbered (``Instances``): every dotted prefix of a device id
that holds a dot itself (``c.rack3.tray1`` of ``c.rack3.tray1.sc0.gpu0``; not the system), with
its parent, depth and first device, and each device's holder at every depth. What the
passes over instances read instead of a pass over every id: which devices an instance holds
(``devices``: ``degrade``'s selector of a prefix), which GPUs sit under a set of instances
(``under``: the GPUs a fault's instances hold), and, folded up the tree in numpy
(``upward``), what each instance holds. Made once per system (``instances``), only where a
caller asks many such questions of one system (``blast``).
"""

from __future__ import annotations

import itertools

from ..base.arrays import unique
from .system import System


class Instances:
    """Every instance of a system (a dotted prefix of a device id that holds a dot itself,
    so not the system), numbered: ``names``, ``up`` (the parent's number, -1 at the top),
    ``depth`` (dots in the name), ``first`` (its first device's index) and ``at[d]``: each
    device's holder at depth d (-1: none), so that an instance's devices are one column's
    matches (``devices``)."""

    def __init__(self, ids: list[str]):
        import numpy as np

        self.n = n = len(ids)
        parents = [i.rpartition(".")[0] for i in ids]
        # each parent id -> the index of its first device (``setdefault`` keeps the first)
        first_of: dict[str, int] = {}
        pfirst = np.fromiter(map(first_of.setdefault, parents, itertools.count()),
                             dtype=np.int64, count=n)
        names = [p for p in first_of if "." in p]
        number = {p: k for k, p in enumerate(names)}
        direct = len(names)
        up: list[int] = []
        k = 0
        while k < len(names):           # names grows by the ancestors found
            above = names[k].rpartition(".")[0]
            if "." in above:
                j = number.get(above)
                if j is None:
                    j = number[above] = len(names)
                    names.append(above)
                up.append(j)
            else:
                up.append(-1)
            k += 1
        self.names, self.number = names, number
        self.up = np.asarray(up, dtype=np.int64)
        self.depth = np.fromiter(map(str.count, names, itertools.repeat(".")),
                                 dtype=np.int64, count=len(names))
        # each device's own holder (its parent instance; -1 under the system itself)
        by_first = np.full(n + 1, -1, dtype=np.int64)
        by_first[np.fromiter((first_of[p] for p in names[:direct]), dtype=np.int64,
                             count=direct)] = np.arange(direct)
        self.holder = by_first[pfirst]
        first = np.full(len(names), n, dtype=np.int64)
        own = self.holder >= 0
        np.minimum.at(first, self.holder[own], np.flatnonzero(own))
        self.first = self.upward(first, np.minimum)
        top = int(self.depth.max()) if len(names) else 0
        self.at = {d: np.full(n, -1, dtype=np.int32) for d in range(1, top + 1)}
        walk = self.holder.copy()
        while True:
            live = np.flatnonzero(walk >= 0)
            if not len(live):
                break
            inst = walk[live]
            for d in unique(self.depth[inst]).tolist():
                pick = self.depth[inst] == d
                self.at[d][live[pick]] = inst[pick]
            walk[live] = self.up[inst]

    def upward(self, values, op):
        """``values`` per instance folded up the tree with the ufunc ``op`` (each instance
        ends with ``op`` over its subtree), deepest instances first."""
        import numpy as np

        out = values.copy()
        for d in sorted(set(self.depth.tolist()), reverse=True):
            rows = np.flatnonzero((self.depth == d) & (self.up >= 0))
            op.at(out, self.up[rows], out[rows])
        return out

    def holder_of(self, ident: str) -> int:
        """The number of the innermost instance strictly holding ``ident`` (-1: none)."""
        at = ident.rpartition(".")[0]
        while "." in at:
            k = self.number.get(at)
            if k is not None:
                return k
            at = at.rpartition(".")[0]
        return -1

    def devices(self, name: str) -> list[int] | None:
        """The indices of the devices under instance ``name`` (ascending), or None when it is
        no instance: ``degrade``'s selector of a prefix, without a pass over every id."""
        import numpy as np

        k = self.number.get(name)
        if k is None:
            return None
        return np.flatnonzero(self.at[int(self.depth[k])] == k).tolist()

    def under(self, names, rows=None):
        """A bool array over ``rows`` (device indices; every device when None): whether one
        of the instances ``names`` holds the device (names that are no instance hold
        nothing)."""
        import numpy as np

        flag = np.zeros(len(self.names) + 1, dtype=np.bool_)     # the last: -1, none
        for name in names:
            k = self.number.get(name)
            if k is not None:
                flag[k] = True
        out = None
        for column in self.at.values():
            held = column if rows is None else column[rows]
            hit = flag[held]
            out = hit if out is None else out | hit
        if out is None:
            out = np.zeros(len(rows) if rows is not None else self.n, dtype=np.bool_)
        return out


def instances(system: System) -> Instances:
    """``Instances`` of ``system``, made once per system."""
    found = system.memo.get(MEMO)
    if found is None:
        found = system.memo[MEMO] = Instances([d.id for d in system.devices])
    return found


#: The memo key of a system's instance table (``degrade`` reads it only where it was made).
MEMO = "instances"
