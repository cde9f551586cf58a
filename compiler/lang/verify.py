"""Stage: checks on the elaborated system that no single statement can see (``verify``).

Port budgets: a device whose model declares ``ports.<class> = N`` cannot carry more than N lanes
of that class, whichever statements wired them. Findings are grouped per instance statement so
72 over-wired GPUs give one diagnostic, not 72.
"""

from __future__ import annotations

from collections import defaultdict

from ..base.diagnostics import Diagnostic, Note, error
from ..ir.system import System


def port_usage(system: System) -> dict[tuple[str, str], int]:
    """Lanes per (device id, link class), over every link."""
    used: dict[tuple[str, str], int] = defaultdict(int)
    for link in system.links:
        cls, lanes = link.type.cls, link.lanes
        used[link.src, cls] += lanes
        used[link.dst, cls] += lanes
    return used


def verify(system: System) -> list[Diagnostic]:
    """Error diagnostics for port budgets exceeded (E220); empty when the system is sound."""
    return [d for d, _ in verify_subjects(system)]


def verify_subjects(system: System) -> list[tuple[Diagnostic, str]]:
    """``verify``'s diagnostics, each with the device it is about (lint moves a finding on a
    library line to the user's own line through it); computed once per system (compile and
    lint both ask)."""
    found = system.memo.get("verify")
    if found is None:
        found = system.memo["verify"] = _verify_subjects(system)
    return list(found)


def _verify_subjects(system: System) -> list[tuple[Diagnostic, str]]:
    over: dict[tuple, list[tuple[str, int, int]]] = defaultdict(list)
    devices, ends = system.devices, system.ends
    # Lanes per device, one list per link class, summed over the links' integer ends.
    cls_of = [t.cls for t in ends.types]
    used = {cls: [0] * len(devices) for cls in cls_of}
    by_code = [used[cls] for cls in cls_of]
    for code, a, b, lanes in zip(ends.type, ends.src, ends.dst, ends.lanes):
        row = by_code[code]
        row[a] += lanes
        row[b] += lanes
    for cls, row in used.items():
        budgets: dict[int, int | None] = {}     # per device model, not per device
        for i, lanes in enumerate(row):
            if not lanes:
                continue
            device = devices[i]
            key = id(device.model)
            budget = budgets[key] if key in budgets else \
                budgets.setdefault(key, device.model.port_budget(cls))
            if budget is not None and lanes > budget:
                over[device.span, device.model, cls].append((device.id, lanes, budget))
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
