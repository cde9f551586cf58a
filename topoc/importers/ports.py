"""Switch and HCA port numbers of every cable, as ibnetdiscover reports them, beside a .topo.

The language has no port numbers (a connection is between devices), so they live in a side
file next to the design, as bus ids and GUIDs do: ``topoc import ibnetdiscover dump.txt -o
fabric.topo --ports ports.txt`` writes one line per cable, ``<end> <port> <end> <port>``, each
end named as the exports name it (a switch by name, an HCA as ``<hostname>/<NIC index>``);
``topoc export ibsim|ibdiagnet --ports ports.txt`` numbers the cables so, and ``topoc diff A B
--ports ports.txt`` compares A's ports with B's (a dump B gives its own), so a cable moved to
another port of the same switch is a difference.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from .base import ImportFailure

#: (end, end) in sorted order -> the port pairs of the cables between them, in that order.
PortMap = Mapping[tuple[str, str], tuple[tuple[int, int], ...]]
MAX_PORT = 65_535


def port_map(records: Iterable[tuple[str, int, str, int]]) -> dict[tuple[str, str],
                                                                   tuple[tuple[int, int], ...]]:
    """Records (end, port, end, port) as a ``PortMap``."""
    out: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for a, pa, b, pb in records:
        if (b, pb) < (a, pa):
            a, pa, b, pb = b, pb, a, pa
        out[(a, b)].append((pa, pb))
    return {k: tuple(sorted(v)) for k, v in sorted(out.items())}


def write_ports(ports: PortMap) -> str:
    """The ``--ports`` file text, one cable a line in a stable order."""
    lines = ["# cable ports (topoc --ports): <end> <port> <end> <port>"]
    for (a, b), pairs in ports.items():
        lines += [f"{a} {pa} {b} {pb}" for pa, pb in pairs]
    return "\n".join(lines) + "\n"


def read_ports(text: str, path: str = "<ports>") -> dict[tuple[str, str],
                                                          tuple[tuple[int, int], ...]]:
    """A ``--ports`` file: ``<end> <port> <end> <port>`` per line, ``#`` comments; a port used
    twice is an error naming both lines."""
    records, used = [], {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if (len(parts) != 4 or not parts[1].isdigit() or not parts[3].isdigit()
                or not 0 < int(parts[1]) <= MAX_PORT or not 0 < int(parts[3]) <= MAX_PORT):
            raise ImportFailure(f"{path}:{number}: expected '<end> <port> <end> <port>' with "
                                f"ports 1..{MAX_PORT}")
        a, pa, b, pb = parts[0], int(parts[1]), parts[2], int(parts[3])
        for end in ((a, pa), (b, pb)):
            if end in used:
                raise ImportFailure(f"{path}:{number}: port {end[1]} of '{end[0]}' is already "
                                    f"cabled at line {used[end]}")
            used[end] = number
        records.append((a, pa, b, pb))
    return port_map(records)
