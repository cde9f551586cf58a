"""``topoc compile --format json``: the ``topoc.system/1`` document (docs/contracts.md).

The document lists every device and link as an object. At 8,192 NVL72 racks that is 1.7 M
devices and 13.7 M links, 4.8 GB of text: built as Python objects it took about 3.5 KB a
link and died past 4,096 racks. So the text is made in pieces (``chunks``) and written as it
is made: each device and link is one format string per device model, or per link type, lane
count and direction, filled with its escaped ids, in the order of the ids, and the links are
read from the compact IR's arrays without making a ``Link`` object. The pieces are the bytes
``json.dumps(document(system), indent=1, ensure_ascii=False)`` writes (the templates are made
by ``json.dumps`` itself), so the two agree to the byte; tests/backends/test_json_system.py
compares them on every library file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..compiler.base.units import exact
from ..compiler.ir.links import Links
from ..compiler.ir.summary import summarize
from ..compiler.ir.system import System

SCHEMA = "topoc.system/1"
#: Items formatted per piece written (about 35 MB of text for links).
CHUNK = 100_000
_ESC = json.encoder.encode_basestring       # what json.dumps(ensure_ascii=False) writes


def _device_dict(d, rank) -> dict[str, Any]:
    attrs_ = {k: v for k, v in d.model.attrs}
    if d.model.ports:
        attrs_["ports"] = dict(d.model.ports)
    return {"id": d.id, "kind": d.kind, "model": d.model.name, "rank": rank, "attrs": attrs_}


def _link_dict(link) -> dict[str, Any]:
    return {"id": link.id, "src": link.src, "dst": link.dst, "class": link.cls,
            "type": link.type.name, "lanes": link.lanes, "bandwidth": exact(link.bandwidth),
            "latency": exact(link.latency), "duplex": link.duplex}


def _parallel(system: System) -> list[dict[str, Any]]:
    return [{"name": p.name, "sizes": dict(p.sizes), "order": list(p.order),
             "microbatches": p.microbatches,
             "traffic": [{"group": f.dim, "collective": f.collective, "bytes": f.bytes,
                          "count": f.count} for f in p.flows]}
            for p in system.parallels]


def document(system: System) -> dict[str, Any]:
    """The system as plain data: devices and links sorted by id, summary, strategies (every
    link made as an object: for small systems and the Python API; ``chunks`` writes the same
    text at any size)."""
    ranks = {d.id: r for r, d in enumerate(system.gpus)}
    devices = [_device_dict(d, ranks.get(d.id))
               for d in sorted(system.devices, key=lambda d: d.id)]
    links = [_link_dict(link) for link in sorted(system.links, key=lambda link: link.id)]
    return {"schema": SCHEMA, "name": system.name, "params": dict(system.params),
            "devices": devices, "links": links, "summary": summarize(system),
            "parallel": _parallel(system)}


# ---- the text in pieces -----------------------------------------------------------------------

_HOLES = ("\0a\0", "\0b\0", "\0c\0")


def _braced(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _template(sample: dict, fills: dict[str, str]) -> str:
    """``sample`` as one item of a list two levels down the document, as a ``str.format``
    string: json.dumps's own text (braces escaped) with each placeholder string of
    ``_HOLES`` replaced by its fill."""
    text = json.dumps(sample, indent=1, ensure_ascii=False)
    text = _braced("\n".join("  " + line for line in text.split("\n")))
    for hole, fill in fills.items():
        text = text.replace(json.dumps(hole), fill)
    return text


def _listed(batches: Iterator[list[str]]) -> Iterator[str]:
    """A JSON list at depth one from batches of its items' text."""
    first = True
    for batch in batches:
        if not batch:
            continue
        yield ("[\n" if first else ",\n") + ",\n".join(batch)
        first = False
    yield "[]" if first else "\n ]"


def _devices(system: System) -> Iterator[list[str]]:
    devices = system.devices
    ids = [d.id for d in devices]
    rank: list[int | None] = [None] * len(devices)
    r = 0
    templates: dict[int, str] = {}
    for i, d in enumerate(devices):
        if d.kind == "gpu":
            rank[i] = r
            r += 1
        if id(d.model) not in templates:
            templates[id(d.model)] = _template(
                _device_dict(d, _HOLES[1]) | {"id": _HOLES[0]},
                {_HOLES[0]: "{0}", _HOLES[1]: "{1}"})
    order = sorted(range(len(ids)), key=ids.__getitem__)
    for start in range(0, len(order), CHUNK):
        yield [templates[id(devices[i].model)].format(
            _ESC(ids[i]), "null" if rank[i] is None else rank[i])
            for i in order[start:start + CHUNK]]


def _links(system: System) -> Iterator[list[str]]:
    links = system.links
    if isinstance(links, Links) and len(links):
        order = _compact_order(system, links)
        if order is not None:
            yield from _compact_links(system, links, order)
            return
    ordered = sorted(links, key=lambda link: link.id)
    holes = dict(zip(("id", "src", "dst"), _HOLES))
    fills = {h: "{%d}" % n for n, h in enumerate(_HOLES)}
    templates: dict[tuple, str] = {}
    for start in range(0, len(ordered), CHUNK):
        batch = []
        for link in ordered[start:start + CHUNK]:
            k = (id(link.type), link.lanes, link.duplex)
            t = templates.get(k)
            if t is None:
                t = templates[k] = _template(_link_dict(link) | holes, fills)
            batch.append(t.format(_ESC(link.id), _ESC(link.src), _ESC(link.dst)))
        yield batch


def _compact_order(system: System, links: Links):
    """The compact links' indices sorted as ``sorted(links, key=id)`` sorts them (stable),
    without making their ids: a link's id is ``src + arrow + dst + ':' + type``, and when no
    device id holds '>' or ':' the heads ``src + arrow`` are prefix-free, and so are
    ``dst + ':'``, so ids compare as (head, ``dst + ':'``, type name) compare. None when an
    id holds one of those characters (the caller sorts the ids themselves)."""
    import numpy as np

    ids = [d.id for d in system.devices]
    if any(">" in i or ":" in i for i in ids):
        return None
    e = system.ends
    src, dst, codes = e.arrays(None, ("src", "dst", "type"))
    one_way = ~links.duplex_array()
    head = src.astype(np.int64) * 2 + one_way
    used = np.unique(head).tolist()
    text = [ids[h >> 1] + ("->" if h & 1 else "<->") for h in used]
    head_rank = np.zeros(2 * len(ids), dtype=np.int64)
    head_rank[np.array(used, dtype=np.int64)[sorted(range(len(used)), key=text.__getitem__)]] \
        = np.arange(len(used))
    ends = np.unique(dst).tolist()
    text = [ids[i] + ":" for i in ends]
    dst_rank = np.zeros(len(ids), dtype=np.int64)
    dst_rank[np.array(ends, dtype=np.int64)[sorted(range(len(ends)), key=text.__getitem__)]] \
        = np.arange(len(ends))
    names = [t.name for t in e.types]
    type_rank = np.zeros(len(names), dtype=np.int64)
    type_rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    # lexsort is stable, as sorted is: links of one id keep their declaration order
    return np.lexsort((type_rank[codes], dst_rank[dst], head_rank[head]))


def _compact_links(system: System, links: Links, order) -> Iterator[list[str]]:
    """The compact links in ``order``, from the arrays (no ``Link`` object): one template per
    (type, lanes, direction) the links use, filled with the two ends' escaped ids (escaping
    works character by character, so the id's pieces escaped alone join to the escaped id)."""
    import numpy as np

    e = system.ends
    src, dst, codes, lanes = e.arrays(None, ("src", "dst", "type", "lanes"))
    duplex = links.duplex_array()
    width = int(lanes.max()) + 1
    found, which = np.unique((codes.astype(np.int64) * 2 + duplex) * width + lanes,
                             return_inverse=True)
    templates = []
    for c in found.tolist():
        rest, n = divmod(c, width)
        code, dup = divmod(rest, 2)
        t = e.types[code]
        sample = {"id": _HOLES[0], "src": _HOLES[1], "dst": _HOLES[2], "class": t.cls,
                  "type": t.name, "lanes": n, "bandwidth": exact(t.bandwidth * n),
                  "latency": exact(t.latency), "duplex": bool(dup)}
        arrow = "<->" if dup else "->"
        name = _braced(_ESC(t.name)[1:-1])
        templates.append(_template(sample, {_HOLES[0]: '"{0}%s{1}:%s"' % (arrow, name),
                                            _HOLES[1]: '"{0}"', _HOLES[2]: '"{1}"'}))
    esc = [_ESC(d.id)[1:-1] for d in system.devices]
    which = which.reshape(-1)
    for start in range(0, len(order), CHUNK):
        part = order[start:start + CHUNK]
        yield [templates[k].format(esc[a], esc[b])
               for a, b, k in zip(src[part].tolist(), dst[part].tolist(),
                                  which[part].tolist())]


_PLACES = ("\0devices\0", "\0links\0")


def chunks(system: System) -> Iterator[str]:
    """The document's text (``render``'s bytes) in pieces, made as they are written."""
    doc = {"schema": SCHEMA, "name": system.name, "params": dict(system.params),
           "devices": _PLACES[0], "links": _PLACES[1], "summary": summarize(system),
           "parallel": _parallel(system)}
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    head, rest = text.split(json.dumps(_PLACES[0]))
    middle, tail = rest.split(json.dumps(_PLACES[1]))
    yield head
    yield from _listed(_devices(system))
    yield middle
    yield from _listed(_links(system))
    yield tail


def render(system: System) -> str:
    """The JSON text, one stable layout (same input, same bytes)."""
    return "".join(chunks(system))
