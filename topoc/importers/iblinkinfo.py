"""``iblinkinfo`` output (infiniband-diags) as a .topo fabric.

iblinkinfo prints every node of the subnet under a header (``Switch: 0x<port GUID> <node
description>:``, ``CA: <node description>:``, ``Router: ...``) and one line per port::

    Switch: 0x0000000000200000 MF0;leaf0:QM9700/U1:
               3    1[  ] ==( 4X       106.25 Gbps  Active/  LinkUp)==>      12    1[  ] "dgx-a mlx5_0" ( )
    CA: dgx-a mlx5_0:
          0x0000000000100001     12    1[  ] ==( 4X       106.25 Gbps  Active/  LinkUp)==>       3    1[  ] "MF0;leaf0:QM9700/U1" ( )

(infiniband-diags/iblinkinfo.c, ``print_node_header`` and ``print_port``); ``iblinkinfo -l``
prints one line per port instead, both ends by port GUID, and no node type (a node listing
more than two ports is a switch: an HCA has one or two). A default-format port line names
its peer by LID, port and node description only, so a cable is a port line whose peer has the
reciprocal line: the node with that description and LID whose port points back. Both ends
must agree, which is what resolves an SM-less fabric (ibsim: every LID 0) and descriptions
many nodes share (SHARP aggregation nodes, HCAs that never set theirs).

This module only reads the format: nodes (by GUID: a switch's header GUID, a CA's first port
GUID, as iblinkinfo prints no node GUID; real hardware reports the same GUIDs for both, as
every node of tests/fixtures/ibnetdiscover/topograph_example.out does), cables and their width x lane speed become the
records ``ibnetdiscover.parse`` returns, and ``ibnetdiscover.from_records`` makes the .topo,
so hosts, HCA identity (``mlx5_N`` / ``HCA-N``), SHARP nodes and pseudo-hosts follow one set
of rules for both dumps.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping

from .base import ImportFailure, printable
from .ibnetdiscover import MAX_LINE, MAX_NODES, from_records

#: iblinkinfo's active lane speed text (libibmad/dump.c ``mad_dump_linkspeed``,
#: ``mad_dump_linkspeedext``; ``10.0 Gbps (FDR10)`` from iblinkinfo.c) -> the IBTA name.
LANE_SPEED = {"2.5 Gbps": "SDR", "5.0 Gbps": "DDR", "10.0 Gbps": "QDR",
              "10.0 Gbps (FDR10)": "FDR10", "14.0625 Gbps": "FDR", "25.78125 Gbps": "EDR",
              "53.125 Gbps": "HDR", "106.25 Gbps": "NDR", "212.5 Gbps": "XDR"}
MAX_PORTS = 65_535

_HEADER = re.compile(r"^(Switch|CA|Router): (?:0x([0-9A-Fa-f]{1,16}) )?(.*):$")
# A port line: [CA port GUID] LID port[ext] ==(link)==> then the peer. Bounded runs only
# (no nested quantifiers), so a hostile line is matched in linear time.
_PORT = re.compile(r"^[ \t]{0,64}(?:0x([0-9A-Fa-f]{1,16})[ \t]{1,16})?([0-9]{1,5})[ \t]{1,16}"
                   r"([0-9]{1,5})\[[^\]]{0,8}\][ \t]{0,16}==\(([^\n]{0,96}?)\)==>")
_LINK = re.compile(r"^[ \t]*([0-9]{1,2})X[ \t]+([0-9.]{1,12} Gbps(?: \(FDR10\))?)[ \t]+"
                   r"([A-Za-z]{1,16})/[ \t]*([A-Za-z]{1,24})[ \t]*$")
_SETTINGS = re.compile(r"\)[ \t]\(HOQ:[0-9]{1,5} VL_Stall:[0-9]{1,5}$")
_DOWN = re.compile(r"^[ \t]*([A-Za-z]{1,16})/[ \t]*([A-Za-z]{1,24})[ \t]*$")
_PEER = re.compile(r"^[ \t]{1,16}(?:0x[0-9A-Fa-f]{1,16}[ \t]{1,16})?([0-9]{1,5})[ \t]{1,16}"
                   r"([0-9]{1,5})\[[^\]]{0,8}\][ \t]\"")
# iblinkinfo -l: the node's port GUID and description (right-aligned in 30 columns) on every
# line, the peer's port GUID before its LID.
_LINE = re.compile(r'^0x([0-9A-Fa-f]{1,16})[ \t]"([^\n]{0,200}?)"[ \t]{1,16}([0-9]{1,5})[ \t]{1,16}'
                   r"([0-9]{1,5})\[[^\]]{0,8}\][ \t]{0,16}==\(([^\n]{0,96}?)\)==>")
_LINE_PEER = re.compile(r'^[ \t]{1,16}0x([0-9A-Fa-f]{1,16})[ \t]{1,16}([0-9]{1,5})[ \t]{1,16}'
                        r'([0-9]{1,5})\[[^\]]{0,8}\][ \t]"')
#: iblinkinfo -l prints no node type: a node listing more ports than an HCA has is a switch.
CA_PORTS = 2
_NO_PEER = re.compile(r'^[ \t]*(?:\[[ ]{0,4}\][ \t]*""[ \t]*\([ \t]*\)|"Port not available")'
                      r'[ \t]*$')


def _fail(path: str, number: int, col: int, raw: str, message: str) -> ImportFailure:
    """``path:line:col: message``, quoting the line (its first 120 characters, escaped)."""
    return ImportFailure(f"{path}:{number}:{col}: {message}: '{printable(raw[:120])}'")


def parse(text: str, path: str = "<dump>"):
    """(nodes, cables, devids) as ``ibnetdiscover.parse`` returns them (devids empty:
    iblinkinfo prints no PCI device id) from iblinkinfo's default output or ``-l``'s."""
    first = next((ln for ln in text[:65536].split("\n") if ln.strip()), "")
    if first.startswith("0x"):
        return (*_parse_lines(text, path), {})
    nodes: dict[str, tuple[str, str]] = {}
    # guid -> port -> (peer description or None, peer LID, peer port, (lanes, speed), line)
    ports: dict[str, dict[int, tuple]] = defaultdict(dict)
    lid_of: dict[tuple[str, int], str] = {}                 # (guid, port) -> LID
    current = None          # (kind, guid or None until a CA's first port, description)
    for number, raw in enumerate(text.split("\n"), 1):
        if len(raw) > MAX_LINE:
            raise ImportFailure(f"{path}:{number}:1: a line of {len(raw):,} characters; "
                                f"iblinkinfo's are under {MAX_LINE} (node descriptions are "
                                "64 bytes)")
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _HEADER.match(line)
        if m:
            kind = {"Switch": "SW", "CA": "CA", "Router": "RT"}[m.group(1)]
            if kind == "SW" and not m.group(2):
                raise _fail(path, number, 9, raw, "a Switch header without its GUID")
            guid = _guid(m.group(2)) if m.group(2) else None
            current = [kind, guid, m.group(3), number]
            if guid is not None:
                _declare(nodes, guid, kind, m.group(3), path, number, raw)
            continue
        m = _PORT.match(line)
        if not m:
            raise _fail(path, number, 1, raw, "not an iblinkinfo header ('Switch: 0x<GUID> "
                        "<description>:', 'CA: <description>:') or port line ('<LID> <port>[ ] "
                        "==(<width> <speed> <state>/<phys>)==> <LID> <port>[ ] \"<peer>\" ( )')")
        if current is None:
            raise _fail(path, number, 1, raw, "a port line before any Switch/CA header")
        kind, guid, desc, _ = current
        if kind == "CA":
            if not m.group(1):
                raise _fail(path, number, 1, raw, "a CA port line without its port GUID")
            if guid is None:        # a CA is known by its first port's GUID
                guid = current[1] = _guid(m.group(1))
                _declare(nodes, guid, kind, desc, path, number, raw)
        elif m.group(1):
            raise _fail(path, number, 1, raw, "a GUID on a switch port line (iblinkinfo -l "
                        "output starts with one, not with a header)")
        lid, port = int(m.group(2)), int(m.group(3))
        if not 0 < port <= MAX_PORTS:
            raise _fail(path, number, m.start(3) + 1, raw, f"port {port} is not 1..{MAX_PORTS}")
        if port in ports[guid]:
            raise _fail(path, number, m.start(3) + 1, raw, f"port {port} of '{printable(desc)}'"
                        f" listed twice (first at line {ports[guid][port][4]})")
        lid_of[(guid, port)] = lid
        link, tail = m.group(4), line[m.end():]
        link = _link(link, path, number, m.start(4), raw)
        if link is None or _NO_PEER.match(tail):    # down, or up without a peer
            ports[guid][port] = (None, 0, 0, None, number)
            continue
        peer = _PEER.match(tail)
        # The peer's description runs to the line's last '" (': it may hold quotes itself.
        end = tail.rfind('" (')
        if peer is None or end < peer.end() - 1 or not tail.endswith(")"):
            raise _fail(path, number, m.end() + 1, raw, "expected the peer as '<LID> <port>[ ] "
                        "\"<node description>\" (...)'")
        ports[guid][port] = (tail[peer.end():end], int(peer.group(1)), int(peer.group(2)),
                             link, number)
    return nodes, _cables(nodes, ports, lid_of, path), {}


def _parse_lines(text: str, path: str):
    """(nodes, cables) of ``iblinkinfo -l`` output: one line per port, both ends by GUID."""
    nodes: dict[str, tuple[str, str]] = {}
    ports: dict[str, dict[int, tuple]] = defaultdict(dict)
    for number, raw in enumerate(text.split("\n"), 1):
        if len(raw) > MAX_LINE:
            raise ImportFailure(f"{path}:{number}:1: a line of {len(raw):,} characters; "
                                f"iblinkinfo's are under {MAX_LINE}")
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise _fail(path, number, 1, raw, "not an iblinkinfo -l line ('0x<port GUID> "
                        "\"<description>\" <LID> <port>[ ] ==(<link>)==> 0x<GUID> <LID> "
                        "<port>[ ] \"<peer>\" ( )')")
        guid, desc, port = _guid(m.group(1)), m.group(2).lstrip(" "), int(m.group(4))
        if not 0 < port <= MAX_PORTS:
            raise _fail(path, number, m.start(4) + 1, raw, f"port {port} is not 1..{MAX_PORTS}")
        if nodes.setdefault(guid, ("CA", desc))[1] != desc:
            raise _fail(path, number, m.start(2) + 1, raw, f"node 0x{guid} was "
                        f"'{printable(nodes[guid][1])}' on an earlier line")
        if len(nodes) > MAX_NODES:
            raise ImportFailure(f"{path}:{number}:1: more than {MAX_NODES} nodes")
        if port in ports[guid]:
            raise _fail(path, number, m.start(4) + 1, raw, f"port {port} of 0x{guid} listed "
                        f"twice (first at line {ports[guid][port][4]})")
        link, tail = _link(m.group(5), path, number, m.start(5), raw), line[m.end():]
        peer = _LINE_PEER.match(tail) if link else None
        end = tail.rfind('" (')
        if link is None or _NO_PEER.match(tail):
            ports[guid][port] = (None, 0, 0, None, number)
        elif peer is None or end < peer.end() - 1 or not tail.endswith(")"):
            raise _fail(path, number, m.end() + 1, raw, "expected the peer as '0x<GUID> <LID> "
                        "<port>[ ] \"<node description>\" (...)'")
        else:
            ports[guid][port] = (_guid(peer.group(1)), int(peer.group(2)),
                                 int(peer.group(3)), link, number)
    for guid, lines in ports.items():
        if len(lines) > CA_PORTS or max(lines) > CA_PORTS:
            nodes[guid] = ("SW", nodes[guid][1])
    cables: dict[tuple, tuple] = {}
    for guid in sorted(ports):
        for port, (peer, _, peer_port, link, number) in sorted(ports[guid].items()):
            if peer is None:
                continue
            back = ports.get(peer, {}).get(peer_port)
            if back is None or back[0] != guid or back[2] != port:
                raise ImportFailure(
                    f"{path}:{number}:1: port {port} of 0x{guid} names port {peer_port} of "
                    f"0x{peer}, which " + ("is never listed (a truncated dump, or "
                                           "--switches-only / --cas-only output?)"
                                           if back is None else "names another port back"))
            if back[3] != link:
                raise ImportFailure(
                    f"{path}:{number}:1: the two ends of a cable disagree: port {port} of "
                    f"0x{guid} says {link[0]}X {link[1]}, port {peer_port} of 0x{peer} "
                    f"{back[3][0]}X {back[3][1]}")
            cables.setdefault(min((guid, port), (peer, peer_port)),
                              (guid, port, peer, peer_port, *link))
    if not cables:
        raise ImportFailure(f"{path}: no cabled port found; is this iblinkinfo output?")
    return nodes, list(cables.values())


def _link(text: str, path: str, number: int, col: int, raw: str) -> tuple[int, str] | None:
    """(lanes, IBTA speed) of a port line's ``==( ... )==>``; None for a port that is down.
    ``iblinkinfo -p`` appends the switch settings (``) (HOQ:16 VL_Stall:7``), left aside."""
    text = _SETTINGS.sub("", text)
    up = _LINK.match(text)
    if up is None:
        if _DOWN.match(text):
            return None
        raise _fail(path, number, col + 1, raw, "expected '<width>X <speed> Gbps "
                    "<state>/<phys state>' (or '<state>/<phys state>' of a port down)")
    speed = LANE_SPEED.get(up.group(2))
    if speed is None:
        raise _fail(path, number, col + up.start(2) + 1, raw,
                    f"unknown lane speed '{up.group(2)}' (one of {', '.join(LANE_SPEED)})")
    return int(up.group(1)), speed


def _declare(nodes, guid, kind, desc, path, number, raw) -> None:
    if guid in nodes:
        raise _fail(path, number, 1, raw, f"node 0x{guid} appears twice")
    if len(nodes) >= MAX_NODES:
        raise ImportFailure(f"{path}:{number}:1: more than {MAX_NODES} nodes")
    nodes[guid] = (kind, desc)


def _cables(nodes, ports, lid_of, path) -> list[tuple]:
    """Each cable once, from the port lines of both its ends: a line's peer is the node with
    that description and LID whose port line points back to it (an index, so a dump of many
    nodes sharing a description and LID costs one look-up a line)."""
    lines_to: dict[tuple, list[str]] = defaultdict(list)
    for guid, lines in ports.items():
        for port, (peer_desc, peer_lid, peer_port, _, _) in lines.items():
            if peer_desc is not None:
                lines_to[(nodes[guid][1], lid_of[(guid, port)], port,
                          peer_desc, peer_lid, peer_port)].append(guid)
    cables: dict[tuple, tuple] = {}
    for guid in sorted(ports):
        desc = nodes[guid][1]
        for port, (peer_desc, peer_lid, peer_port, link, number) in sorted(
                ports[guid].items()):
            if peer_desc is None:
                continue
            back = lines_to.get((peer_desc, peer_lid, peer_port, desc,
                                 lid_of[(guid, port)], port), ())
            if len(back) != 1:
                why = "no node" if not back else f"{len(back)} nodes"
                raise ImportFailure(
                    f"{path}:{number}:1: port {port} of '{printable(desc)}' names port "
                    f"{peer_port} of '{printable(peer_desc)}' (LID {peer_lid}), and {why} "
                    "of that description and LID list a port line back to it (a truncated "
                    "or edited dump?)")
            peer_link = ports[back[0]][peer_port][3]
            if peer_link != link:
                raise ImportFailure(
                    f"{path}:{number}:1: the two ends of a cable disagree: port {port} of "
                    f"'{printable(desc)}' says {link[0]}X {link[1]}, port {peer_port} of "
                    f"'{printable(peer_desc)}' {peer_link[0]}X {peer_link[1]}")
            key = min((guid, port), (back[0], peer_port))
            cables.setdefault(key, (guid, port, back[0], peer_port, *link))
    if not cables:
        raise ImportFailure(f"{path}: no cabled port found; is this iblinkinfo output (its "
                            "default format)?")
    return list(cables.values())


def _guid(hex_digits: str) -> str:
    return hex_digits.lower().lstrip("0") or "0"


def from_iblinkinfo(text: str, path: str = "<dump>",
                    guids: Mapping[str, tuple[str, int]] | None = None,
                    ports: list[tuple[str, int, str, int]] | None = None
                    ) -> tuple[str, list[str]]:
    """The .topo text (and notes) of one iblinkinfo dump, as ``from_ibnetdiscover`` makes
    it (``guids`` and ``ports`` as there; a CA is known by its first port's GUID)."""
    path = printable(path)
    nodes, cables, devids = parse(text, path)
    return from_records(nodes, cables, devids, path, guids, ports, "an iblinkinfo dump")
