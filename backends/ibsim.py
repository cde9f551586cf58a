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

from ..compiler.analysis.fabric import Fabric, Wire, wiring
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
