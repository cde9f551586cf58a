"""Whether two systems are one structure: the same name, devices (ids and models, in order),
links (ends, types, lanes and directions, in order) and host markers.

Two compiles of one design (``topoc diff design.topo other.topo`` where the other file uses
the design and instantiates its system at the same size, or the same file twice) give two
``System`` objects whose derived views (locality, levels, the fabric view, per-host facts) are
equal, as every one of them is a function of these fields alone. A comparison that finds two
systems alike can read one system's views for both and skip comparing what cannot differ:
``diff`` of 1,024 NVL72 racks against themselves made every view twice and compared 18,432
hosts item by item to find nothing.

The test reads the compact arrays (``System.ends``, the links' direction flags, the devices'
models as codes): a few bytes compares over millions of links, no
``Link`` object made. Only the fields named above are compared (not the parallel blocks nor
the parameters, which no view reads); a system whose links are not the compact ``Links``
(built by hand) is never found alike, which costs a comparison its speed, never its result.
"""

from __future__ import annotations

from operator import attrgetter

from .links import Links
from .system import System


def model_codes(system: System) -> tuple[tuple, object]:
    """The distinct device models in first-use order, and each device's model as a code into
    them (a numpy int32 array in device order), made once per system: two systems' models
    compare as a few objects and one buffer, and a pass over the devices' kinds or model names
    reads the few models."""
    found = system.memo.get("model_codes")
    if found is None:
        import numpy as np

        objects = list(map(attrgetter("model"), system.devices))
        ids = list(map(id, objects))
        by_id = dict(zip(ids, objects))
        code = {k: c for c, k in enumerate(dict.fromkeys(ids))}
        found = system.memo["model_codes"] = (
            tuple(by_id[k] for k in code),
            np.fromiter(map(code.__getitem__, ids), dtype=np.int32, count=len(ids)))
    return found


def _links_alike(a: Links, b: Links) -> bool:
    ea, eb = a.ends, b.ends
    if ea.types != eb.types:
        return False
    for column in ("src", "dst", "type", "lanes"):
        x, y = getattr(ea, column), getattr(eb, column)
        if x.typecode != y.typecode or x != y:
            return False
    return bool((a.duplex_array() == b.duplex_array()).all())


def alike(a: System, b: System) -> bool:
    """True when ``a`` and ``b`` have the same name, devices, links and host markers (module
    docstring): every view derived from one is the other's."""
    if a is b:
        return True
    if a.name != b.name or len(a.devices) != len(b.devices) or \
            len(a.links) != len(b.links) or a.hosts != b.hosts:
        return False
    if not isinstance(a.links, Links) or not isinstance(b.links, Links):
        return False
    if list(map(attrgetter("id"), a.devices)) != list(map(attrgetter("id"), b.devices)):
        return False
    (ma, ca), (mb, cb) = model_codes(a), model_codes(b)
    if ma != mb or not (ca == cb).all():
        return False
    return _links_alike(a.links, b.links)
