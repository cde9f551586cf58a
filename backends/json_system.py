"""``topoc compile --format json``: the ``topoc.system/1`` document (docs/contracts.md)."""

from __future__ import annotations

import json
from typing import Any

from ..compiler.ir.system import System
from ..compiler.ir.summary import summarize
from ..compiler.base.limits import LIMITS
from ..compiler.base.units import exact

SCHEMA = "topoc.system/1"


def document(system: System) -> dict[str, Any]:
    """The system as plain data: devices and links sorted by id, summary, strategies."""
    ranks = {d.id: r for r, d in enumerate(system.gpus)}
    devices = []
    for d in sorted(system.devices, key=lambda d: d.id):
        attrs_ = {k: v for k, v in d.model.attrs}
        if d.model.ports:
            attrs_["ports"] = dict(d.model.ports)
        devices.append({"id": d.id, "kind": d.kind, "model": d.model.name,
                        "rank": ranks.get(d.id), "attrs": attrs_})
    links = [{"id": link.id, "src": link.src, "dst": link.dst, "class": link.cls,
              "type": link.type.name, "lanes": link.lanes, "bandwidth": exact(link.bandwidth),
              "latency": exact(link.latency), "duplex": link.duplex}
             for link in sorted(system.links, key=lambda link: link.id)]
    parallel = [{"name": p.name, "sizes": dict(p.sizes), "order": list(p.order),
                 "microbatches": p.microbatches,
                 "traffic": [{"group": f.dim, "collective": f.collective, "bytes": f.bytes,
                              "count": f.count} for f in p.flows]}
                for p in system.parallels]
    return {"schema": SCHEMA, "name": system.name, "params": dict(system.params),
            "devices": devices, "links": links, "summary": summarize(system),
            "parallel": parallel}


class TooLarge(ValueError):
    """A system past the JSON document's limit (``LIMITS.json_links``): refused before any of
    it is built, where building it would exhaust the memory."""


def render(system: System) -> str:
    """The JSON text, one stable layout (same input, same bytes); TooLarge past the limit."""
    if len(system.links) > LIMITS.json_links:
        raise TooLarge(f"the JSON document holds every link as an object: {len(system.links):,} "
                       f"links is past its limit of {LIMITS.json_links:,} (about 450 NVL72 "
                       "racks); the summary, lint, cost, export and blast work at any size, "
                       "or compile a smaller size with -D")
    return json.dumps(document(system), indent=1, ensure_ascii=False) + "\n"
