"""Connections enumerated in numpy (``fastconn``) give the links, in the order, and the
diagnostics the binding-by-binding loop gives: every library file, and connections of each
kind the loop handles (named, star, range and free indices, expressions with floors, remainders
and negation, bindings dropped by a free index, and the errors the loop reports)."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.lang import elaborate, fastconn

from ...conftest import LIBRARY

FILES = sorted(p for p in LIBRARY.rglob("*.topo") if "\nsystem " in p.read_text())
H = 'use "nvidia/links.topo"\nuse "nvidia/devices.topo"\n'


def _outcome(load):
    """Links (every field) and device ids, or the diagnostics' text."""
    try:
        system = load()
    except CompileError as exc:
        return [str(d) for d in exc.diagnostics]
    return ([(lk.id, lk.src, lk.dst, lk.type, lk.lanes, lk.duplex, lk.span)
             for lk in system.links], [d.id for d in system.devices])


def _both(load, monkeypatch):
    """(loop only, numpy wherever it applies) outcomes, and how many connections numpy took."""
    monkeypatch.setattr(elaborate, "_FAST_LINKS", 10**18)
    loop = _outcome(load)
    taken = []
    expand = fastconn.expand

    def counted(*args):
        found = expand(*args)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(elaborate, "_FAST_LINKS", 0)
    monkeypatch.setattr(fastconn, "expand", counted)
    return loop, _outcome(load), sum(taken)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_library_files_alike(path, monkeypatch):
    loop, fast, _ = _both(lambda: topoc.load(path), monkeypatch)
    assert loop == fast


GROUPS = H + "group R { g[8] : H100  s[4] : QM9700 }\n"


@pytest.mark.parametrize("body, taken", [
    ("r[i].g[j] <-> s[(8 * i + j) / 4 % 4] : ndr", 1),            # named indices, / and %
    ("r[*].g[3] <-> s[*] : ndr", 1),                              # stars
    ("r[1..3].g[j] <-> s[j / 2] : ndr", 1),                       # a range
    ("r[2 * p].g[0] <-> r[2 * p + 1].g[0] : nvlink4", 1),         # a free index: p < 3
    ("r[k].g[0] <-> r[k + 1].g[0] : nvlink4", 0),                 # E210: k is named
    ("r[5 - k].g[1] <-> s[k - 1] : ndr", 1),                      # free, dropping both ends
    ("r[-(0 - i)].g[0] <-> s[i % 3] : ndr", 1),                   # negation
    ("r[i].g[0] <-> s[i] : ndr", 0),                              # E210: s[4], s[5]
    ("r[i].g[j] <-> s[j / 2] : ndr", 1),                          # named, once each
    ("r[i].g[j] <-> s[j / (i - 2)] : ndr", 0),                    # E214 at i = 2
    ("r[i].g[0] <-> r[i].g[0] : nvlink4", 0),                     # E215
    ("r[i].g[0] <-> s[i * 4611686018427387904 % 4] : ndr", 0),    # E297
])
def test_connections_alike(body, taken, monkeypatch):
    text = GROUPS + f"group W {{ r[6] : R  s[4] : QM9700\n  {body}\n}}\nsystem w : W\n"
    loop, fast, n = _both(lambda: topoc.loads(text), monkeypatch)
    assert loop == fast
    assert n == taken           # numpy took the connection, or left it to the loop
