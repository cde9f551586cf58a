"""The scale-out passes on integer arrays give what the passes over ``Link`` objects gave: the
same levels, tiers and W405 findings (messages, order) on every library file and on fabrics
that oversubscribe."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

import topoc
from topoc.compiler.ir.incidence import arrays_in, columns_in
from topoc.compiler.ir.summary import level_array, scaleout_levels, scaleout_tiers
from topoc.compiler.ir.system import SCALEOUT_CLASSES
from topoc.compiler.lint.rules import RULES

from ...conftest import LIBRARY, library_file

FILES = sorted(p for p in LIBRARY.rglob("*.topo") if "\nsystem " in p.read_text())


def _scaleout(system):
    return [lk for lk in system.links if lk.cls in SCALEOUT_CLASSES]


def _levels_by_links(system):
    """The breadth-first pass as it was written over links."""
    adj = defaultdict(list)
    for link in _scaleout(system):
        adj[link.src].append(link)
        adj[link.dst].append(link)
    level = {d.id: 0 for d in system.devices if d.kind in ("nic", "dpu") and d.id in adj}
    frontier = sorted(level)
    while frontier:
        nxt = []
        for node in frontier:
            for link in adj[node]:
                other = link.dst if link.src == node else link.src
                if other not in level:
                    level[other] = level[node] + 1
                    nxt.append(other)
        frontier = nxt
    return level


def _w405_by_links(system, ratio=1.0):
    """W405's findings as (span, level, cases) the way the rule summed them link by link."""
    level = _levels_by_links(system)
    up, down = Counter(), Counter()
    for link in _scaleout(system):
        if link.src in level and link.dst in level:
            a, b = link.src, link.dst
            if level[a] == level[b]:
                continue
            low, high = (a, b) if level[a] < level[b] else (b, a)
            up[low] += link.bandwidth
            down[high] += link.bandwidth
    found = defaultdict(list)
    for sw, d in down.items():
        if up[sw] and d / up[sw] > ratio:
            found[system.device(sw).span, level[sw]].append((d / up[sw], sw, d, up[sw]))
    return found


def _tiers_by_links(system):
    """Each tier's bandwidth summed link by link, as the pass over ids did."""
    level, tiers = _levels_by_links(system), defaultdict(float)
    for link in _scaleout(system):
        if link.src in level and link.dst in level:
            tiers[min(level[link.src], level[link.dst]) + 1] += link.bandwidth
    return dict(sorted(tiers.items()))


def _check(system, ratio=1.0):
    assert scaleout_levels(system) == _levels_by_links(system)
    levels = _levels_by_links(system)
    assert level_array(system).tolist() == [levels.get(d.id, -1) for d in system.devices]
    tiers = scaleout_tiers(system)
    assert tiers == _tiers_by_links(system)
    assert [type(k) for k in tiers] == [int] * len(tiers)
    assert [type(v) for v in tiers.values()] == [float] * len(tiers)
    links = _scaleout(system)
    src, dst, bandwidth = columns_in(system, SCALEOUT_CLASSES)
    assert (src, dst, bandwidth) == ([lk.src for lk in links], [lk.dst for lk in links],
                                     [lk.bandwidth for lk in links])
    a, b, bw = arrays_in(system, SCALEOUT_CLASSES)
    assert bw.tolist() == bandwidth and len(a) == len(b) == len(links)
    expected = [(span, max(cases)) for (span, _), cases in _w405_by_links(system, ratio).items()]
    got = list(RULES["W405"].check(system, {"ratio": ratio}))
    assert [(f.span, f.subject) for f in got] == [(span, case[1]) for span, case in expected]
    return got


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_levels_columns_and_w405_equal_the_passes_over_links(path):
    _check(topoc.load(path))


@pytest.mark.parametrize("ratio", [0.25, 0.5, 0.9])
def test_w405_findings_in_the_same_order_when_tiers_oversubscribe(ratio):
    # a lower ratio flags more tiers: two findings (tiers 1 and 2) at 0.25, in that order
    system = topoc.load(library_file("nvl72_fourtier.topo"), {"racks": 16})
    got = _check(system, ratio)
    assert [f.message.split(" switches")[0] for f in got] == \
        (["tier-1", "tier-2"] if ratio < 0.5 else ["tier-1"])
    assert got[0].message == _message(system, ratio)


def _message(system, ratio):
    """The first finding's message as the rule wrote it from the link-by-link sums."""
    (span, lvl), cases = next(iter(_w405_by_links(system, ratio).items()))
    r, sw, d, u = max(cases)
    return (f"tier-{lvl} switches oversubscribed up to {r:.2f}:1, e.g. {sw}: {d / 1e9:g} GB/s "
            f"down, {u / 1e9:g} GB/s up ({len(cases)} switch{'es' if len(cases) != 1 else ''})")
