"""Stage: checks on the elaborated system that no single statement can see (``verify``).

Port budgets: a device whose model declares ``ports.<class> = N`` cannot carry more than N lanes
of that class, whichever statements wired them. Findings are grouped per instance statement so
72 over-wired GPUs give one diagnostic, not 72.

A finding about a device declared in a library file is reported at the user's own line (the
connection or instance statement of the compiled file that made the device what it is), the
library line kept as a note: every verb (compile, check, lint in every format, the language
server) reports it where the user can act on it, suppress it, and where a CI annotation lands
inside the repository. ``at_user_line`` does the same for lint's rule findings.
"""

from __future__ import annotations

import re
from collections import defaultdict

import attrs

from ..base.diagnostics import Diagnostic, Note, Span, error
from ..ir.system import System

_INDEX = re.compile(r"\d+(?=\.|$)")
ORIGIN = "the library line it comes from"


def lanes_by_class(system: System) -> dict[str, list[int]]:
    """Lanes per device index, one list per link class, summed over the links' integer ends."""
    return {cls: row.tolist() for cls, row in _lane_arrays(system).items()}


def _lane_arrays(system: System):
    """``lanes_by_class`` as numpy int64 arrays: ``bincount`` over both ends of each class's
    links (whole numbers, so the sums are exact whatever the order; a pass link by link in
    Python took seconds at 8,192 NVL72 racks)."""
    import numpy as np

    ends = system.ends
    n = len(system.devices)
    used = {}
    for cls in dict.fromkeys(t.cls for t in ends.types):
        src, dst, lanes = ends.arrays(lambda t, c=cls: t.cls == c, ("src", "dst", "lanes"))
        lanes = lanes.astype(np.int64)
        used[cls] = np.bincount(src, weights=lanes, minlength=n).astype(np.int64) + \
            np.bincount(dst, weights=lanes, minlength=n).astype(np.int64)
    return used


def port_usage(system: System) -> dict[tuple[str, str], int]:
    """Lanes per (device id, link class), for every device that has links of that class."""
    devices = system.devices
    return {(devices[i].id, cls): lanes for cls, row in lanes_by_class(system).items()
            for i, lanes in enumerate(row) if lanes}


def verify(system: System) -> list[Diagnostic]:
    """Error diagnostics for port budgets exceeded (E220), each at the user's line; empty when
    the system is sound."""
    return [at_user_line(system, d, subject) for d, subject in verify_subjects(system)]


def user_site(system: System, subject: str) -> Span | None:
    """The line of the compiled file that made ``subject`` what it is: a connection of the file
    that touches it (its wiring), else the file's statement that instantiated it or the group
    holding it, else the ``system`` line; None when nothing in the file is nearer."""
    root = system.span.source if system.span is not None else None
    if root is None:
        return None
    for link in sorted(system.links_of(subject), key=lambda lk: lk.id):
        if link.span is not None and link.span.source is root:
            return link.span
    sites = dict(system.sites)
    parts = _INDEX.sub("", subject).split(".")
    for n in range(len(parts), 1, -1):
        span = sites.get(".".join(parts[:n]))
        if span is not None and span.source is root:
            return span
    return system.span


def at_user_line(system: System, d: Diagnostic, subject: str | None) -> Diagnostic:
    """A finding on a library line moved to the user's own line (where a suppression and a
    GitHub annotation can sit), the library line kept as a note (``ORIGIN``)."""
    root = system.span.source if system.span is not None else None
    if subject is None or root is None or d.span is None or d.span.source is root:
        return d
    site = user_site(system, subject)
    if site is None or site.source is not root:
        return d
    return attrs.evolve(d, span=site, notes=(Note(ORIGIN, d.span), *d.notes))


def verify_subjects(system: System) -> list[tuple[Diagnostic, str]]:
    """The port-budget diagnostics where they are declared, each with the device it is about
    (``verify`` moves each to the user's line through it); computed once per system (compile
    and lint both ask)."""
    found = system.memo.get("verify")
    if found is None:
        found = system.memo["verify"] = _verify_subjects(system)
    return list(found)


def _verify_subjects(system: System) -> list[tuple[Diagnostic, str]]:
    import numpy as np

    over: dict[tuple, list[tuple[str, int, int]]] = defaultdict(list)
    devices = system.devices
    lanes_of = _lane_arrays(system)
    if lanes_of:
        from ..ir.modelcodes import model_numbers
        where, models = model_numbers(system)
    for cls, row in lanes_of.items():
        # each model's budget once, spread over its devices
        budgets = [m.port_budget(cls) for m in models]
        has = np.array([b is not None for b in budgets], dtype=np.bool_)[where]
        budget = np.array([0 if b is None else b for b in budgets], dtype=np.int64)[where]
        for i in np.flatnonzero(has & (row > 0) & (row > budget)).tolist():
            device = devices[i]
            over[device.span, device.model, cls].append((device.id, int(row[i]),
                                                         int(budget[i])))
    out = []
    for key in sorted(over, key=lambda k: (k[0].path, k[0].line, k[0].col, k[2])):
        span, model, cls = key
        cases = over[key]
        worst = max(cases, key=lambda c: (c[1], c[0]))
        many = f"{len(cases)} devices, e.g. " if len(cases) > 1 else ""
        out.append((error(
            "E220", f"port budget exceeded: {many}{worst[0]} has {worst[1]} {cls} lanes, but "
            f"{model.name} has ports.{cls} = {worst[2]}", span,
            Note(f"{model.name} declared here", model.span)), worst[0]))
    return out
