"""The reference interpreter: replay a ``topoc.schedule/1`` document and say what is wrong.

Every slot holds a set of contributions (which rank's input of which chunk). A round reads all
its sources as they were when it began; then ``copy`` overwrites and ``reduce`` accumulates into
the destination. A reduce that would count a contribution twice is a defect. At the end the
result buffer must hold what the collective promises (docs/contracts.md). The interpreter
works on the plain JSON document, so it checks schedules from anywhere, not only topoc's.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

MAX_REPORTED = 20


def _initial(doc: dict[str, Any]) -> dict[tuple[int, str], dict[int, frozenset]]:
    n, chunks, coll = len(doc["ranks"]), doc["chunks"], doc["collective"]
    k = chunks // n if n else 0
    state: dict[tuple[int, str], dict[int, frozenset]] = defaultdict(dict)
    for r in range(n):
        slots = range(r * k, (r + 1) * k) if coll == "allgather" else range(chunks)
        for c in slots:
            state[r, "in"][c] = frozenset({(r, c)})
    return state


def _expected(doc: dict[str, Any]):
    """(participant, slot) -> expected contributions, for the result buffer."""
    n, chunks, coll, root = len(doc["ranks"]), doc["chunks"], doc["collective"], doc.get("root")
    k = chunks // n if n else 0
    everyone = range(n)
    if coll == "allreduce":
        return {(r, c): frozenset((q, c) for q in everyone) for r in everyone
                for c in range(chunks)}
    if coll == "reducescatter":
        return {(r, c): frozenset((q, c) for q in everyone) for r in everyone
                for c in range(r * k, (r + 1) * k)}
    if coll == "allgather":
        return {(r, c): frozenset({(c // k, c)}) for r in everyone for c in range(chunks)}
    if coll == "broadcast":
        return {(r, c): frozenset({(root, c)}) for r in everyone for c in range(chunks)}
    if coll == "reduce":
        return {(root, c): frozenset((q, c) for q in everyone) for c in range(chunks)}
    if coll == "alltoall":
        return {(j, i * k + t): frozenset({(i, j * k + t)}) for i in everyone
                for j in everyone for t in range(k)}
    if coll == "sendrecv":
        return {(s + 1, c): frozenset({(s, c)}) for s in range(n - 1) for c in range(chunks)}
    raise ValueError(f"unknown collective {coll!r}")


def replay(doc: dict[str, Any]) -> list[str]:
    """Problems found when replaying ``doc``; [] means it computes its collective."""
    problems: list[str] = []
    n = len(doc["ranks"])
    parts = n + len(doc.get("agents", ()))
    state = _initial(doc)
    for i, rnd in enumerate(doc["rounds"]):
        reads = []
        for t in rnd:
            src, dst = t["src"], t["dst"]
            if not (0 <= src < parts and 0 <= dst < parts):
                problems.append(f"round {i}: participant out of range in {t}")
                continue
            value = state[src, t.get("src_buf", "in")].get(t["src_chunk"], frozenset())
            reads.append((t, value))
        written: dict[tuple, str] = {}
        for t, value in reads:
            key = (t["dst"], t.get("dst_buf", "in"))
            slot = t["dst_chunk"]
            previous_op = written.get((*key, slot))
            if previous_op is not None and (previous_op == "copy" or t["op"] == "copy"):
                problems.append(f"round {i}: slot {slot} of {key} written twice with a copy")
            written[(*key, slot)] = t["op"]
            if t["op"] == "copy":
                state[key][slot] = value
            elif t["op"] == "reduce":
                old = state[key].get(slot, frozenset())
                twice = old & value
                if twice:
                    problems.append(f"round {i}: reduce into slot {slot} of participant "
                                    f"{key[0]} counts {sorted(twice)[:3]} twice")
                state[key][slot] = old | value
            else:
                problems.append(f"round {i}: unknown op {t['op']!r}")
        if len(problems) > MAX_REPORTED:
            return problems
    result = doc.get("result_buf", "in")
    for (r, c), want in sorted(_expected(doc).items()):
        got = state[r, result].get(c, frozenset())
        if got != want:
            missing, extra = sorted(want - got)[:3], sorted(got - want)[:3]
            problems.append(f"rank position {r} slot {c}: missing {missing}, unexpected {extra}")
            if len(problems) > MAX_REPORTED:
                break
    return problems


def check_links(doc: dict[str, Any], endpoints: dict[str, tuple[str, str]]) -> list[str]:
    """Every transfer's links must form a path from its source device to its destination
    device (``endpoints``: link id -> (end, end)); a local copy crosses no link."""
    devs = list(doc["devices"]) + list(doc.get("agents", ()))
    problems = []
    for i, rnd in enumerate(doc["rounds"]):
        for t in rnd:
            at, goal = devs[t["src"]], devs[t["dst"]]
            for link in t.get("links", ()):
                a, b = endpoints[link]
                if at not in (a, b):
                    problems.append(f"round {i}: link {link} does not touch {at}")
                    break
                at = b if at == a else a
            if at != goal:
                problems.append(f"round {i}: links of {t['src']}->{t['dst']} end at {at}")
    return problems
