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

from .links import Links
from .system import System


def _models(system: System) -> tuple[list, bytes]:
    """The distinct device models in first-use order, and each device's model as a code
    (four bytes a device): two systems' models compare as a few objects and one buffer."""
    from array import array

    codes: dict[int, int] = {}
    models: list = []
    out = array("i")
    for d in system.devices:
        m = d.model
        c = codes.get(id(m))
        if c is None:
            c = codes[id(m)] = len(models)
            models.append(m)
        out.append(c)
    return models, out.tobytes()


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
    if [d.id for d in a.devices] != [d.id for d in b.devices]:
        return False
    if _models(a) != _models(b):
        return False
    return _links_alike(a.links, b.links)
