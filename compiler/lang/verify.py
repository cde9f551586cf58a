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
    library line to the user's own line through it)."""
    over: dict[tuple, list[tuple[str, int, int]]] = defaultdict(list)
    budgets: dict[tuple[int, str], int | None] = {}     # per (device model, class), not per device
    index = system.device_index
    for (dev_id, cls), lanes in port_usage(system).items():
        device = index[dev_id]
        key = (id(device.model), cls)
        budget = budgets[key] if key in budgets else \
            budgets.setdefault(key, device.model.port_budget(cls))
        if budget is not None and lanes > budget:
            over[device.span, device.model, cls].append((dev_id, lanes, budget))
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
