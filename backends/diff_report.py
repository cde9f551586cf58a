"""``topoc diff --format text|json|github|sarif``: drift between two systems, for people and CI.

Differences have no source line of their own (one side is often a dump), so GitHub annotations
and SARIF results point at file A, the declared design, line 1.
"""

from __future__ import annotations

import json

from ..compiler.analysis.diff import Diff
from ..compiler.base.text import visible
from .lint_report import SARIF_SCHEMA, _escape_data, _escape_property

#: SARIF rule ids per finding category.
CODES = {"hosts": "D01", "devices": "D02", "nvlink": "D03", "nic": "D04", "pcie": "D05",
         "numa": "D06", "switches": "D07", "cabling": "D08", "ports": "D09"}
SUMMARY = {"hosts": "a host is missing on one side", "devices": "devices differ in kind or "
           "model", "nvlink": "NVLink lanes differ", "nic": "a GPU's local NIC differs",
           "pcie": "a GPU's PCIe switch differs", "numa": "a GPU's NUMA node differs",
           "switches": "a fabric switch is missing or of another model",
           "cabling": "fabric cables or their rates differ",
           "ports": "a cable is on other switch or HCA ports"}


def text(d: Diff, a: str, b: str) -> str:
    """One line per difference, then the notes and a verdict (hostnames and file names with
    control characters escaped: one line each, nothing for a terminal to obey)."""
    a, b = visible(a), visible(b)
    lines = [f"{CODES[f.category]} {f.category}: {visible(f.message)}" for f in d.findings]
    lines += [f"note: {visible(n)}" for n in d.notes]
    if d.equal:
        lines.append(f"no differences between {a} and {b} (compared: "
                     f"{', '.join(d.compared) or 'nothing in common'})")
    else:
        lines.append(f"{len(d.findings)} difference{'s' if len(d.findings) != 1 else ''} "
                     f"between {a} and {b}")
    return "\n".join(lines) + "\n"


def as_json(d: Diff, a: str, b: str, impact: dict | None = None) -> str:
    """``topoc.diff/1`` (with ``impact`` when ``--impact`` asked for it)."""
    doc = {"schema": "topoc.diff/1", "a": a, "b": b, "equal": d.equal,
           "compared": list(d.compared), "notes": list(d.notes),
           "differences": [{"code": CODES[f.category], "category": f.category,
                            "where": f.where, "a": f.a, "b": f.b,
                            "message": f.message, **({"plane": f.plane} if f.plane else {})}
                           for f in d.findings]}
    if impact is not None:
        doc["impact"] = impact
    return json.dumps(doc, indent=1) + "\n"


def github(d: Diff, a: str, b: str) -> str:
    """GitHub Actions ``::error`` commands on file A."""
    return "".join(f"::error file={_escape_property(a)},line=1,title="
                   f"{_escape_property(CODES[f.category] + ' drift')}::"
                   f"{_escape_data(f.message)}\n" for f in d.findings)


def sarif(d: Diff, a: str, b: str, version: str) -> str:
    """SARIF 2.1.0: one rule per category used, one result per difference."""
    used = sorted({f.category for f in d.findings}, key=CODES.__getitem__)
    rules = [{"id": CODES[c], "name": c, "shortDescription": {"text": SUMMARY[c]}} for c in used]
    results = [{"ruleId": CODES[f.category], "ruleIndex": used.index(f.category),
                "level": "error", "message": {"text": f.message},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": a.replace("\\", "/")},
                    "region": {"startLine": 1}}}]} for f in d.findings]
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "topoc", "version": version, "rules": rules}},
        "results": results}]}, indent=1) + "\n"
