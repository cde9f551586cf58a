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

from array import array
from collections.abc import Iterator, Sequence

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

    @property
    def ends(self):
        """The arrays the links are made from (``incidence.Ends``: ``System.ends``)."""
        return self._ends

    def kept(self, devices: Sequence[Device], ends, keep) -> Links:
        """The links where ``keep`` (a numpy bool array in link order) holds, over ``devices``
        and ``ends`` (those links' arrays, their device indices into ``devices``): a degraded
        system's list (``ir.degrade``), made without a ``Link`` object."""
        import numpy as np

        row = np.frombuffer(self._row, dtype=np.dtype(self._row.typecode))[keep]
        kept = array(self._row.typecode)
        kept.frombytes(memoryview(np.ascontiguousarray(row)).cast("B"))    # copied once
        return Links(devices, ends, self._rows, kept)

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

    def duplex_array(self):
        """Each link's direction flag (True: duplex) as a numpy bool array, in link order."""
        import numpy as np

        by_row = np.array([bool(row[0]) for row in self._rows], dtype=np.bool_)
        return by_row[np.frombuffer(self._row, dtype=np.dtype(self._row.typecode))] \
            if len(self._row) else np.zeros(0, dtype=np.bool_)

    def digest(self, h) -> None:
        """Feed ``h`` (a hashlib object) what every link is made of, from the arrays (no
        ``Link`` object): the ends' device indices, type codes, lanes and template rows, each
        type's class, bandwidth and latency, each row's direction. Two sequences of the same
        devices digest alike exactly when their links are equal and in the same order."""
        e = self._ends
        for column in (e.src, e.dst, e.type, e.lanes, self._row):
            h.update(f"{column.typecode} {len(column)}\n".encode())
            h.update(column)
        h.update(repr([(t.cls, t.bandwidth, t.latency) for t in e.types]).encode())
        h.update(repr([row[0] for row in self._rows]).encode())

    def materialize(self) -> tuple[Link, ...]:
        """Every link as an object, once (kept: later reads return these objects)."""
        if self._all is None:
            made, make = self._made, self._make
            self._all = tuple(made.get(i) or make(i) for i in range(len(self._row)))
            self._made = {}
        return self._all

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
