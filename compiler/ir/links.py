"""The compact link list: ``System.links`` as integer arrays, ``Link`` objects on demand.

An 8,192-rack NVL72 cluster has 13.7 M links. Made as objects during elaboration they cost
about 0.75 us and 100 bytes each (10 s and 1.4 GB there), yet compile, lint and a world
all-reduce read a small part of them: whole-system passes read ``System.ends`` (the same links
as arrays), lint's scale-out rules the scale-out links, the cost model the links of the few
devices it routes through. So elaborate records each link as a row of arrays (its ends' device
indices, link type, lanes, and the template statement it came from) and ``Links`` is the
sequence over them: ``links[i]`` makes the ``Link`` the old tuple held, the same object for
every read of ``i``, and iterating makes them all once (render, the JSON and NCCL exports,
the networkx graph), after which they are kept in a tuple as before. Equality, hashing and
pickling are the tuple's. See docs/scale.md for the figures behind the choice.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import compress

from .system import Device, Link


class Links(Sequence):
    """A read-only sequence of ``Link`` made from elaborate's arrays (module docstring)."""

    __slots__ = ("_devices", "_ends", "_rows", "_row", "_made", "_all")

    def __init__(self, devices: Sequence[Device], ends, rows: Sequence[tuple], row):
        self._devices = devices          # System.devices
        self._ends = ends                # incidence.Ends: src, dst, type codes, types, lanes
        self._rows = rows                # (duplex, span) per template statement row
        self._row = row                  # array: each link's row
        self._made: dict[int, Link] = {}
        self._all: tuple[Link, ...] | None = None

    def _make(self, i: int) -> Link:
        e = self._ends
        duplex, span = self._rows[self._row[i]]
        devices = self._devices
        return Link(None, devices[e.src[i]].id, devices[e.dst[i]].id, e.types[e.type[i]],
                    e.lanes[i], duplex, span)

    def __len__(self) -> int:
        return len(self._row)

    def __getitem__(self, i):
        if self._all is not None:
            return self._all[i]
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        n = len(self._row)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("link index out of range")
        found = self._made.get(i)
        if found is None:
            found = self._made[i] = self._make(i)
        return found

    def __iter__(self) -> Iterator[Link]:
        return iter(self.materialize())

    def materialize(self) -> tuple[Link, ...]:
        """Every link as an object, once (kept: later reads return these objects)."""
        if self._all is None:
            made, make = self._made, self._make
            self._all = tuple(made.get(i) or make(i) for i in range(len(self._row)))
            self._made = {}
        return self._all

    def select(self, flags) -> tuple[Link, ...]:
        """The links whose flag is true (``Ends.mask``), made one by one: the scale-out links
        of a large cluster without making the NVLink ones."""
        if self._all is not None:
            return tuple(compress(self._all, flags))
        import numpy as np

        picked = np.flatnonzero(np.frombuffer(bytes(flags), dtype=np.bool_))
        e, rows, made, devices, types = self._ends, self._rows, self._made, self._devices, \
            self._ends.types

        def column(values, dtype):
            return np.frombuffer(values, dtype=dtype)[picked].tolist()
        out = []
        for i, a, b, c, n, r in zip(picked.tolist(), column(e.src, np.int32),
                                    column(e.dst, np.int32),
                                    column(e.type, np.uint8 if e.type.typecode == "B"
                                           else np.uint16),
                                    column(e.lanes, np.int32), column(self._row, np.int32)):
            link = made.get(i)
            if link is None:
                link = made[i] = Link(None, devices[a].id, devices[b].id, types[c], n, *rows[r])
            out.append(link)
        return tuple(out)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Links):
            other = other.materialize()
        if not isinstance(other, tuple):
            return NotImplemented
        return self.materialize() == other

    def __hash__(self) -> int:
        return hash(self.materialize())

    def __repr__(self) -> str:
        return repr(self.materialize())

    def __add__(self, other):
        return self.materialize() + tuple(other)

    def __reduce__(self):
        return (tuple, (self.materialize(),))
