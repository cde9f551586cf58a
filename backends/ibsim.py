"""The fabric as an ibsim network file, and as ibdiagnet's cabling plan (``ibdiagnet -t``).

ibsim: one record per node, ``Switch N "name"`` or ``Hca N "name"``, then one line per cabled
port ``[port] "peer"[peer port] w=W e=E`` (the file format of ibsim's net-examples). Switch node
descriptions follow NVIDIA's managed-switch form ``MF0;<name>:<model>/U1``; an HCA is
``<hostname> mlx5_<n>`` as the kernel names it, so ``ibnetdiscover``'s output names hosts and
switches again. ibsim 0.10 (Debian 12) knows link speeds up to HDR; a faster cable is written as
the same rate over more lanes (4x NDR 400 Gb/s as 8x HDR), said in a comment, so rates
survive the round trip even when the lane count cannot.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from operator import itemgetter

from ..compiler.analysis.fabric import Fabric, Wire, wire_ends, wiring
from ..compiler.base.gcpause import gc_paused
from ..compiler.base.text import visible
from .names import IBDIAGNET, IBSIM, check as check_names

#: ibsim width codes (PortInfo LinkWidthEnabled bits) by lanes.
WIDTH = {1: 1, 4: 2, 8: 4, 12: 8, 2: 16}
#: Per-lane signalling ibsim can express: (Gb/s per lane, name, 's' or 'e', code).
SPEEDS = ((2.5, "SDR", "s", 1), (5, "DDR", "s", 2), (10, "QDR", "s", 4),
          (14, "FDR", "e", 1), (25, "EDR", "e", 2), (50, "HDR", "e", 4))


class ExportError(ValueError):
    """The fabric cannot be written (the message says why)."""


@functools.lru_cache(maxsize=64)       # a fabric has a handful of rates and many cables
def width_speed(rate: float) -> tuple[int, tuple[float, str, str, int], bool]:
    """(lanes, speed, exact) for a cable of ``rate`` bits/s: 4 lanes when a speed fits, else
    the fewest lanes of the fastest speed that carry the rate (exact False)."""
    gbps = rate / 1e9
    for speed in SPEEDS:
        if abs(4 * speed[0] - gbps) < 1e-6:
            return 4, speed, True
    for lanes in (1, 2, 8, 12):
        for speed in SPEEDS:
            if abs(lanes * speed[0] - gbps) < 1e-6:
                return lanes, speed, False
    raise ExportError(f"a {gbps:g} Gb/s cable has no width x speed ibsim can express "
                      "(ibsim 0.10: 1x/2x/4x/8x/12x at SDR..HDR)")


def switch_desc(name: str, model: str) -> str:
    """The node description of a managed switch: ``MF0;leaf0:QM9700/U1``."""
    return f"MF0;{name}:{model}/U1"


def hca_desc(host: str, index: int) -> str:
    """The node description of an HCA: ``<hostname> mlx5_<n>``."""
    return f"{host} mlx5_{index}"


def _names(fab: Fabric) -> dict[str, str]:
    names = {s.name: switch_desc(s.name, s.model) for s in fab.switches}
    names.update({f"{h.host}/{h.index}": hca_desc(h.host, h.index) for h in fab.hcas})
    return names


@gc_paused()        # a line or more per cable of 18,432 hosts: no collector passes
def render_ibsim(fab: Fabric, source: str = "", ports=None) -> str:
    """The ibsim net file; switches first (ibsim's SM port is the first port in the file).
    Host and switch names are checked first (``names.InvalidName``). ``ports`` numbers the
    cables as a dump reported them (``fabric.wiring``)."""
    check_names(fab, IBSIM)
    if not fab.switches:
        raise ExportError("the system has no scale-out switches to simulate")
    columns = wire_ends(fab) if ports is None else None
    if columns is not None:
        return _ibsim_columns(fab, source, *columns)
    wires = wiring(fab, ports)
    ports: dict[str, list[tuple[int, str, int, Wire]]] = defaultdict(list)
    for w in wires:
        ports[w.a].append((w.a_port, w.b, w.b_port, w))
        ports[w.b].append((w.b_port, w.a, w.a_port, w))
    names = _names(fab)
    lines = [f"# ibsim network written by topoc from {visible(source or fab.name)}", ""]
    inexact = sorted({w.rate for w in wires if not width_speed(w.rate)[2]})
    for rate in inexact:
        lanes, speed, _ = width_speed(rate)
        lines.insert(1, f"# {rate / 1e9:g} Gb/s cables written as {lanes}x{speed[1]} (same "
                     "rate): ibsim 0.10 has no faster lane speed")
    tail = {}           # each rate's width and speed as ibsim writes them, once
    for rate in {w.rate for w in wires}:
        lanes, speed, _ = width_speed(rate)
        tail[rate] = f"w={WIDTH[lanes]} {speed[2]}={speed[3]}"
    ends = [s.name for s in fab.switches] + [f"{h.host}/{h.index}" for h in fab.hcas]
    quoted = {end: f'"{name}"' for end, name in names.items()}
    first = itemgetter(0)
    for end in ends:
        mine = sorted(ports.get(end, ()), key=first)
        if not mine:
            continue
        is_switch = "/" not in end
        radix = max(len(mine), mine[-1][0], fab.switch(end).radix or 0 if is_switch else 0)
        if radix > 254:
            raise ExportError(f"switch '{end}' needs {radix} ports; ibsim takes at most 254")
        lines.append(f"{'Switch' if is_switch else 'Hca'}\t{radix} {quoted[end]}")
        lines.extend([f"[{port}]\t{quoted[peer]}[{peer_port}]\t{tail[w.rate]}"
                      for port, peer, peer_port, w in mine])
        lines.append("")
    return "\n".join(lines)


@gc_paused()        # a line or more per cable of 18,432 hosts: no collector passes
def render_ibdiagnet(fab: Fabric, source: str = "", ports=None) -> str:
    """The cabling plan as an IBDM topology file (ibdm-topo-file(1)), which ``ibdiagnet -t``
    checks the discovered fabric against: one section per system (a switch, or one HCA of a
    host named ``<hostname>/U<n+1>``), ``P<port> -> <type> <peer> P<peer port>`` per cable.
    Host and switch names are checked first (``names.InvalidName``); ``ports`` numbers the
    cables as a dump reported them (``fabric.wiring``)."""
    check_names(fab, IBDIAGNET)
    if not fab.switches:
        raise ExportError("the system has no scale-out switches")
    columns = wire_ends(fab) if ports is None else None
    if columns is not None:
        return _ibdiagnet_columns(fab, source, *columns)
    wires = wiring(fab, ports)
    model = {s.name: s.model for s in fab.switches}
    model.update({f"{h.host}/{h.index}": h.model for h in fab.hcas})

    def system(end: str) -> str:
        if "/" in end:
            host, idx = end.split("/", 1)
            return f"{host}/U{int(idx) + 1}"
        return end

    ports: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    for w in wires:
        ports[w.a].append((w.a_port, w.b, w.b_port))
        ports[w.b].append((w.b_port, w.a, w.a_port))
    lines = [f"# IBDM topology file written by topoc from {visible(source or fab.name)}", ""]
    ends = [s.name for s in fab.switches] + [f"{h.host}/{h.index}" for h in fab.hcas]
    system_of = {end: system(end) for end in ends}      # once per end, not per cable end
    for end in ends:
        if end not in ports:
            continue
        lines.append(f"{model[end]} {system_of[end]}")
        lines.extend([f"   P{port} -> {model[peer]} {system_of[peer]} P{peer_port}"
                      for port, peer, peer_port in sorted(ports[end])])
        lines.append("")
    return "\n".join(lines)


def _end_names(fab: Fabric) -> tuple[list[str | None], list[str | None]]:
    """Per name of the fabric's cable table: (its switch's model or None, its HCA's host and
    index as ``(host, index)`` or None), from ``Fabric.end_positions``."""
    hca_at, switch_at = fab.end_positions
    switches, hcas = fab.switches, fab.hcas
    return ([switches[k] if k >= 0 else None for k in switch_at.tolist()],
            [hcas[k] if k >= 0 else None for k in hca_at.tolist()])


def _runs(lines: list[str], heads: list[str], body: list[str], starts) -> None:
    """``lines`` += each end's head, its run of ``body`` (from ``starts``) and a blank: each
    line put at its place in one array (677,000 ends at 8,192 NVL72 racks, no Python step
    per end)."""
    import numpy as np

    n = len(starts)
    out = np.empty(len(body) + 2 * n, dtype=object)
    run = np.repeat(np.arange(n), np.diff(np.r_[starts, len(body)]))
    # end k's head goes after k heads and k blanks and the k runs before it
    out[np.asarray(starts, dtype=np.int64) + 2 * np.arange(n)] = heads
    out[np.arange(len(body)) + 2 * run + 1] = body
    out[np.r_[starts[1:], len(body)].astype(np.int64) + 2 * np.arange(n) + 1] = ""
    lines += out.tolist()


def _ibsim_columns(fab: Fabric, source: str, columns, starts) -> str:
    """``render_ibsim`` from ``wire_ends``' columns: a format per wire end, no ``Wire`` or
    per-end list (4.7 M wire ends at 8,192 NVL72 racks)."""
    import numpy as np

    end, port, peer, peer_port, row = columns
    t = fab.table
    switch_of, hca_of = _end_names(fab)
    quoted = [f'"{switch_desc(s.name, s.model)}"' if s is not None else
              f'"{hca_desc(h.host, h.index)}"' if h is not None else None
              for s, h in zip(switch_of, hca_of)]
    lines = [f"# ibsim network written by topoc from {visible(source or fab.name)}", ""]
    # the rates in wire order (the first one ibsim cannot write is the error)
    wired = np.unique(t.kind[t.count > 0], return_index=True)
    used = wired[0][np.argsort(wired[1], kind="stable")].tolist()
    rates = [t.kinds[k][1] for k in used]
    inexact = sorted({r for r in rates if not width_speed(r)[2]})
    for rate in inexact:
        lanes, speed, _ = width_speed(rate)
        lines.insert(1, f"# {rate / 1e9:g} Gb/s cables written as {lanes}x{speed[1]} (same "
                     "rate): ibsim 0.10 has no faster lane speed")
    tail = {}
    for k, rate in zip(used, rates):
        lanes, speed, _ = width_speed(rate)
        tail[k] = f"w={WIDTH[lanes]} {speed[2]}={speed[3]}"
    heads = []
    owner = end[starts].tolist()
    sizes = np.diff(np.r_[starts, len(end)]).tolist()     # ports 1..n: the last is n
    for e, n in zip(owner, sizes):
        s = switch_of[e]
        radix = max(n, s.radix or 0) if s is not None else n
        if radix > 254:
            raise ExportError(f"switch '{t.names[e]}' needs {radix} ports; ibsim takes at most "
                              "254")
        heads.append(f"{'Switch' if s is not None else 'Hca'}\t{radix} {quoted[e]}")
    kind = t.kind[row].tolist()
    body = [f"[{p}]\t{quoted[q]}[{pp}]\t{tail[k]}" for p, q, pp, k in
            zip(port.tolist(), peer.tolist(), peer_port.tolist(), kind)]
    _runs(lines, heads, body, starts)
    return "\n".join(lines)


def _ibdiagnet_columns(fab: Fabric, source: str, columns, starts) -> str:
    """``render_ibdiagnet`` from ``wire_ends``' columns."""
    end, port, peer, peer_port, _ = columns
    switch_of, hca_of = _end_names(fab)
    # each end as the plan names it: its model and system (an HCA: <hostname>/U<n+1>)
    named = [f"{s.model} {s.name}" if s is not None else
             f"{h.model} {h.host}/U{h.index + 1}" if h is not None else None
             for s, h in zip(switch_of, hca_of)]
    lines = [f"# IBDM topology file written by topoc from {visible(source or fab.name)}", ""]
    heads = list(map(named.__getitem__, end[starts].tolist()))
    body = [f"   P{p} -> {named[q]} P{pp}" for p, q, pp in
            zip(port.tolist(), peer.tolist(), peer_port.tolist())]
    _runs(lines, heads, body, starts)
    return "\n".join(lines)
