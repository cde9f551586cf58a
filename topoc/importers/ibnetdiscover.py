"""``ibnetdiscover`` dumps (the default topology format and ``-p``) as a .topo fabric.

Switches take their name and model from a managed switch's node description
(``MF0;leaf0:QM9700/U1``); any other description names the switch after its GUID and its model
after the description. HCA ports are grouped into hosts by node description (``dgx-01 mlx5_3``:
host ``dgx-01``, NIC 3); an HCA whose description has no ``mlx5_N`` part is a host of its own.
A host keeps its HCAs' identities: ``nic[8]`` when they are mlx5_0..7, else one member per HCA
named as the machine does (``mlx5_1``, ``mlx5_2``, ``mlx5_5``: a subnet holding half of each
host's rails), so ``diff`` and the exports see ``mlx5_N`` and not a renumbering; each host's
HCA node GUIDs are kept in a comment.
An HCA's model comes from its PCI device id (``devid=``, default format only: ConnectX-6, -7,
-8); without one it is ``HCA_<rate>G``, a model named only by its rate, which ``diff`` compares
by count.
Every cable keeps its active width x speed as a rate (4xNDR = 400 Gb/s): a rate the bundled
library has a link type for uses it (``ndr``, ``hdr``), others get one declared. Tiers follow
from the cabling when the file is compiled. Unconnected ports are left out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

import attrs

from ..compiler.lang import emit, pipeline
from .base import ImportFailure, ident, printable

#: Per-lane signalling, Gb/s, as IBTA names it (nominal: 4xNDR is 400 Gb/s).
LANE_GBPS = {"SDR": 2.5, "DDR": 5, "QDR": 10, "FDR10": 10, "FDR": 14, "EDR": 25, "HDR": 50,
             "NDR": 100, "XDR": 200}
MAX_NODES = 100_000
MAX_LINE = 4096
#: HCA PCI device ids (``devid=`` in the default format) -> library NIC models.
HCA_DEVID = {0x101B: "CX6", 0x1021: "CX7", 0x1023: "CX8"}

# The description runs to the line's last quote: a node description may hold quotes itself.
_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR]-[0-9A-Fa-f]+)"\s*#\s*"(.*)"')
# Every pattern is linear in the line: a lane count is 1-3 digits after a non-digit (a lazy
# '.*?' before an unbounded '\d+' retried the digits from every position), and a -p line's two
# quoted descriptions are split at the last "' - '" in Python, not by backtracking.
_PORT = re.compile(r'^\[(\d+)\](?:\([0-9A-Fa-f]+\))?\s+"([SHR]-[0-9A-Fa-f]+)"\[(\d+)\]'
                   r'(?:\([0-9A-Fa-f]+\))?\s*#')
_RATE = re.compile(r"(?<![0-9])([0-9]{1,3})x\s*([A-Z]{1,8}[0-9]{0,3})\s*$")
_PLINE = re.compile(r"^(SW|CA|RT)\s+\d+\s+(\d+)\s+(0x[0-9A-Fa-f]+)\s+(\d+)x\s*([A-Z]+\d*)\s+-\s+"
                    r"(SW|CA|RT)\s+\d+\s+(\d+)\s+(0x[0-9A-Fa-f]+)\s+\(\s*'")
_BETWEEN = re.compile(r"'\s+-\s+'")
_MANAGED = re.compile(r"^MF0;([^:]+):([^/]+)(?:/.*)?$")
_HCA = re.compile(r"^(\S+)\s+(?:mlx\d+_|HCA-)(\d+)$")
#: A SHARP aggregation node: the switch's in-network reduction engine, seen as a CA.
_SHARP = re.compile(r"\baggregation node\b", re.I)


@attrs.frozen
class Role:
    """A kind of host a GPU fabric carries that is no GPU host, recognised by its hostname
    (the only thing a dump says about a host besides its HCAs): kept with its HCAs and cables
    but not marked ``host``, so the exports (Slurm, Kubernetes, ibsim) and diff's hosts leave
    it out, and reported as what it is."""

    name: str
    pattern: re.Pattern
    what: str


#: Hosts that are no GPU host, by hostname; a name part (between dashes, dots or underscores)
#: that starts so; or an OS's default hostname. ``B11-P1-CUFM-02`` is a UFM host in
#: topograph's real dump (tests/fixtures/ibnetdiscover/topograph_example.out), which also holds
#: HCAs of ``localhost`` and ``ubuntu``.
ROLES = (
    Role("management", re.compile(r"(?i)(?:^|[^a-z])(?:c?ufm|mgmt|mgt|head(?:node)?|login|"
                                   r"admin|bcm)(?:[^a-z]|$)"),
         "UFM, head, login and management nodes"),
    Role("storage", re.compile(r"(?i)(?:^|[^a-z])(?:stor(?:age)?|nsd|oss|mds|mgs|lustre|gpfs|"
                                r"ddn|vast|weka|nfs)(?:[^a-z]|$)"),
         "file-system and storage servers"),
    Role("unnamed", re.compile(r"(?i)^(?:localhost(?:\.localdomain)?|ubuntu|debian|\(none\))$"),
         "hosts that never set a hostname: the OS's default, which several hosts share"),
)


def role_of(hostname: str) -> Role | None:
    """The role a hostname names (``ROLES``), or None for a GPU host."""
    return next((r for r in ROLES if r.pattern.search(hostname)), None)


#: The node description an HCA reports until the host sets one (``MT4129 ConnectX7 Mellanox
#: Technologies``): it names the adapter, not the host.
_DEFAULT_DESC = re.compile(r"^(?:MT\d+\b.*|.*\bMellanox Technologies)$")


def parse(text: str, path: str = "<dump>"):
    """(nodes, cables, devids): nodes by GUID as (type, description); cables as
    (guid a, port a, guid b, port b, lanes, speed), each once; PCI device ids by GUID where
    the default format gives one."""
    nodes: dict[str, tuple[str, str]] = {}
    devids: dict[str, int] = {}
    cables: dict[tuple, tuple] = {}
    current = None
    devid = 0
    # Lines end at '\n' only, as ibnetdiscover writes them: a node description may hold any
    # other character (a form feed, U+2028) and still be one description.
    for number, raw in enumerate(text.split("\n"), 1):
        if len(raw) > MAX_LINE:
            raise ImportFailure(f"{path}:{number}: a line of {len(raw):,} characters; "
                                f"ibnetdiscover's are under {MAX_LINE} (node descriptions are "
                                "64 bytes)")
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("devid="):
            try:
                devid = int(line.split("=", 1)[1], 16)
            except ValueError:
                devid = 0
            continue
        m = _NODE.match(line)
        if m:
            kind = {"Switch": "SW", "Ca": "CA", "Rt": "RT"}[m.group(1)]
            current = m.group(3)[2:].lower().lstrip("0") or "0"
            nodes[current] = (kind, m.group(4))
            if devid:
                devids[current] = devid
            devid = 0
            continue
        m = _PORT.match(line)
        rate = _RATE.search(line, m.end()) if m else None
        if m and rate:
            if current is None:
                raise ImportFailure(f"{path}:{number}: a port line before any Switch/Ca line")
            peer = m.group(2)[2:].lower().lstrip("0") or "0"
            _cable(cables, current, int(m.group(1)), peer, int(m.group(3)), int(rate.group(1)),
                   rate.group(2), path, number)
            continue
        m = _PLINE.match(line)
        descs = _descriptions(line[m.end():]) if m else None
        if m and descs:
            a, b = _guid(m.group(3)[2:]), _guid(m.group(8)[2:])
            nodes.setdefault(a, (m.group(1), descs[0]))
            nodes.setdefault(b, (m.group(6), descs[1]))
            _cable(cables, a, int(m.group(2)), b, int(m.group(7)), int(m.group(4)), m.group(5),
                   path, number)
        if len(nodes) > MAX_NODES:
            raise ImportFailure(f"{path}: more than {MAX_NODES} nodes")
    missing = {g for c in cables.values() for g in (c[0], c[2]) if g not in nodes}
    if missing:
        raise ImportFailure(f"{path}: port lines name node {sorted(missing)[0]} that the dump "
                            "never declares (a truncated dump?)")
    if not cables:
        raise ImportFailure(f"{path}: no cabled port found; is this ibnetdiscover output "
                            "(default or -p format)?")
    return nodes, list(cables.values()), devids


def switch_name(guid: str, desc: str) -> tuple[str, str]:
    """A switch's (name, model): from a managed switch's description ``MF0;leaf0:QM9700/U1``,
    else ``sw_<guid>`` and the description as the model."""
    m = _MANAGED.match(desc)
    return (m.group(1), m.group(2)) if m else (f"sw_{guid}", desc or "Switch")


def merge(dumps: Sequence[tuple[str, str]]) -> tuple[str, dict[str, tuple[int, ...]]]:
    """Several subnets' dumps (text, path), one per rail or plane, as one dump (their
    concatenation: ibnetdiscover sees one subnet, the fabric is their union), and per switch
    (its .topo instance name) the positions of the dumps that hold it, so ``diff`` can say
    which plane a difference is on. Each dump is parsed on its own first, so a bad line is
    reported with its own file and line."""
    where: dict[str, list[int]] = defaultdict(list)
    for n, (text, path) in enumerate(dumps):
        nodes, _, _ = parse(text, printable(path))
        for guid, (kind, desc) in sorted(nodes.items()):
            if kind == "SW":
                name = ident(switch_name(guid, desc)[0])
                if n not in where[name]:
                    where[name].append(n)
    joined = "".join(t if not t or t.endswith("\n") else t + "\n" for t, _ in dumps)
    return joined, {k: tuple(v) for k, v in where.items()}


def _descriptions(tail: str) -> tuple[str, str] | None:
    """The two descriptions of a -p line from what follows its "( '": ``a' - 'b' )``, split at
    the last "' - '" (a description may hold quotes and dashes itself); None when malformed."""
    tail = tail.rstrip()
    if not tail.endswith(")"):
        return None
    inner = tail[:-1].rstrip()
    if not inner.endswith("'"):
        return None
    inner = inner[:-1]
    split = None
    for split in _BETWEEN.finditer(inner):
        pass
    if split is None:
        return None
    return inner[:split.start()], inner[split.end():]


def _guid(hex_digits: str) -> str:
    """A GUID as the dump's two formats both reduce to: lower case, no leading zeros."""
    return hex_digits.lower().lstrip("0") or "0"


def _cable(cables, a, pa, b, pb, lanes, speed, path, number):
    if speed not in LANE_GBPS:
        raise ImportFailure(f"{path}:{number}: unknown link speed '{speed}' (one of "
                            f"{', '.join(LANE_GBPS)})")
    key = min((a, pa), (b, pb))
    cables.setdefault(key, (a, pa, b, pb, lanes, speed))


def from_ibnetdiscover(text: str, path: str = "<dump>",
                       guids: Mapping[str, tuple[str, int]] | None = None,
                       ports: list[tuple[str, int, str, int]] | None = None
                       ) -> tuple[str, list[str]]:
    """The .topo text (and notes) of one ibnetdiscover dump; ``guids`` (node GUID ->
    (hostname, NIC index), as ``topoc import hwloc --guids`` writes them) places HCAs by GUID
    before their descriptions are read. A ``ports`` list gets every cable between a switch or
    a GPU host's HCA as (end, port, end, port), the ends named as the fabric view names them
    (switch name, ``<hostname>/<NIC index>``): ``topoc.importers.ports``."""
    path = printable(path)
    nodes, cables, devids = parse(text, path)
    return from_records(nodes, cables, devids, path, guids, ports, "an ibnetdiscover dump")


def from_records(nodes: Mapping[str, tuple[str, str]], cables: Sequence[tuple],
                 devids: Mapping[str, int], path: str, guids=None, ports=None,
                 source: str = "an ibnetdiscover dump") -> tuple[str, list[str]]:
    """The .topo text (and notes) of a fabric as ``parse`` returns it: nodes by GUID as
    (type, description), cables as (guid a, port a, guid b, port b, lanes, speed), PCI device
    ids by GUID. Every fabric dump's parser (ibnetdiscover, iblinkinfo) ends here, so hosts,
    HCA identity, SHARP and pseudo-hosts are recognised by one set of rules; ``source`` names
    the input in the file's first comment."""
    library = pipeline.front_end('use "nvidia/links.topo"\nuse "nvidia/devices.topo"\n')
    lib_links = {lt.bandwidth * 8: name for name, lt in library.link_types.items()
                 if lt.cls == "infiniband"}
    lib_models = library.device_models
    notes: list[str] = []
    models: dict[str, str] = {}
    links: dict[str, str] = {}
    switches: dict[str, tuple[str, str]] = {}     # guid -> (instance, model)
    hosts: dict[str, list[tuple[int, str]]] = defaultdict(list)   # hostname -> (index, guid)
    sharp: list[str] = []           # GUIDs of SHARP aggregation nodes
    unnamed: list[str] = []         # GUIDs of HCAs with the adapter's default description
    for guid, (kind, desc) in sorted(nodes.items(), key=lambda kv: kv[0]):
        if kind == "SW":
            name, model = switch_name(guid, desc)
            model_id = ident(model)
            if model_id not in lib_models or lib_models[model_id].kind != "net_switch":
                models.setdefault(model_id, f"device {model_id} : net_switch {{ }}")
            switches[guid] = (ident(name), model_id)
        elif kind == "CA":
            m = _HCA.match(desc)
            if guids and guid in guids:
                host, idx = guids[guid]
            elif m:
                host, idx = m.group(1), int(m.group(2))
            elif _SHARP.search(desc):
                sharp.append(guid)
                continue
            elif not desc or _DEFAULT_DESC.match(desc):
                unnamed.append(guid)
                continue
            else:
                host, idx = desc, 0
            hosts[host].append((idx, guid))
        else:
            notes.append(f"router {guid} ('{desc}') left out: topoc models no IB routers")
    names = [s[0] for s in switches.values()]
    if len(set(names)) != len(names):
        dup = sorted(n for n in names if names.count(n) > 1)[0]
        raise ImportFailure(f"{path}: two switches are both called '{dup}'")
    # Each HCA's rate: the fastest cable on it.
    rate_of: dict[str, float] = defaultdict(float)
    cable_rate = []
    for a, pa, b, pb, lanes, speed in cables:
        rate = lanes * LANE_GBPS[speed] * 1e9
        cable_rate.append(rate)
        for g in (a, b):
            rate_of[g] = max(rate_of[g], rate)

    def link_type(rate: float) -> str:
        if rate in lib_links:
            return lib_links[rate]
        name = f"ib_{rate / 1e9:g}g".replace(".", "_")
        links.setdefault(name, f"link {name} : infiniband {{ bandwidth = {rate / 1e9:g} Gb/s }}")
        return name

    nic_model: dict[str, str] = {}
    for g in [g for items in hosts.values() for _, g in items] + unnamed:
        lib = HCA_DEVID.get(devids.get(g, 0))
        if lib and lib in lib_models:
            nic_model[g] = lib
        else:
            rate = rate_of[g]
            name = f"HCA_{rate / 1e9:g}G".replace(".", "_")
            models.setdefault(name, f"device {name} : nic {{ rate = {rate / 1e9:g} Gb/s }}")
            nic_model[g] = name
    shapes: dict[tuple, str] = {}
    host_lines, end_of = [], {}
    roles: dict[str, list[str]] = defaultdict(list)     # role -> its hostnames
    fabric_end: dict[str, str] = {}     # GUID -> the fabric view's end name (ports)
    used = set(names)
    for host in sorted(hosts, key=_natural):
        items = sorted(hosts[host])
        indices = [i for i, _ in items]
        dense = indices == list(range(len(items)))
        if len(set(indices)) != len(indices):
            notes.append(f"host '{host}': two HCAs both say mlx5_{_dup(indices)}; numbered "
                         f"nic0..nic{len(items) - 1} in GUID order")
            items = [(n, g) for n, (_, g) in enumerate(items)]
            dense = True
        shape = tuple((None if dense else i, nic_model[g]) for i, g in items)
        if shape not in shapes:
            shapes[shape] = f"IBHost{len(shapes)}"
        inst = ident(host, "h_")
        while inst in used:
            inst += "_"
        used.add(inst)
        host_lines.append(f"  # {emit.comment(host)} HCA node GUIDs: " + " ".join(
            f"mlx5_{i}=0x{g.zfill(16)}" for i, g in items))
        role = role_of(host)
        if role is None:
            host_lines.append(f"  host {inst} : {shapes[shape]} {emit.pattern(host)}")
        else:
            roles[role.name].append(host)
            host_lines.append(f"  {inst} : {shapes[shape]}  # {role.name} host "
                              f"{emit.comment(host)}, not a GPU host")
        uniform = len({m for _, m in shape}) == 1
        for n, (i, g) in enumerate(items):
            if role is None:
                fabric_end[g] = f"{host}/{n if dense else i}"
            if not dense:
                end_of[g] = f"{inst}.mlx5_{i}"
            else:
                end_of[g] = f"{inst}.nic[{n}]" if uniform else f"{inst}.nic{n}"
    for g, (inst, _) in switches.items():
        end_of[g] = inst
        fabric_end[g] = inst
    if ports is not None:
        ports += [(fabric_end[a], pa, fabric_end[b], pb) for a, pa, b, pb, _, _ in cables
                  if a in fabric_end and b in fabric_end]
    pseudo = _pseudo_hosts(nodes, cables, switches, sharp, unnamed, nic_model, end_of, notes)
    for role in ROLES:
        found = roles.get(role.name)
        if found:
            shown = ", ".join(f"'{h}'" for h in found[:3]) + (
                f" and {len(found) - 3} more" if len(found) > 3 else "")
            notes.append(f"{len(found)} {role.name} host(s) recognised by name ({shown}; "
                         f"{role.what}): kept with their HCAs and cables but not as hosts, so "
                         "exports and diff's hosts leave them out")
    wires: dict[tuple[str, str, str], int] = defaultdict(int)
    for (a, _, b, _, _, _), rate in zip(cables, cable_rate):
        if a not in end_of or b not in end_of:
            continue
        x, y = sorted((end_of[a], end_of[b]), key=_natural)
        wires[(x, y, link_type(rate))] += 1
    out = [f"# Imported by topoc from {emit.comment(path)}, {source}: {len(switches)} switches, "
           f"{sum(len(v) for v in hosts.values())} HCAs in {len(hosts)} hosts"
           + (" (" + ", ".join(f"{len(roles[r.name])} {r.name}" for r in ROLES
                               if roles.get(r.name)) + ")" if roles else "") + ", "
           + (f"{len(unnamed)} unnamed HCAs, " if unnamed else "")
           + (f"{len(sharp)} SHARP aggregation nodes, " if sharp else "")
           + f"{len(cables)} cables.", 'use "nvidia/links.topo"', 'use "nvidia/devices.topo"', ""]
    out += [links[k] for k in sorted(links)] + [models[k] for k in sorted(models)]
    if links or models:
        out.append("")
    for shape, gname in shapes.items():
        members = _arrays(shape)
        out.append(f"group {gname} {{ {'  '.join(members)} }}")
    out += ["", "group Fabric {"]
    out += host_lines
    out += pseudo
    out += [f"  {inst} : {model}" for inst, model in
            sorted(switches.values(), key=lambda s: _natural(s[0]))]
    for (x, y, lt), n in sorted(wires.items(), key=lambda kv: (_natural(kv[0][0]),
                                                                  _natural(kv[0][1]), kv[0][2])):
        out.append(f"  {x} <-> {y} : {lt}" + (f" x {n}" if n > 1 else ""))
    out += ["}", "", "system fabric : Fabric", ""]
    return "\n".join(out), notes


def _pseudo_hosts(nodes, cables, switches, sharp, unnamed, nic_model, end_of, notes
                  ) -> list[str]:
    """Fabric members and comments for the CAs that are no host's HCA: unnamed HCAs become
    ``hca_<GUID>`` members outside any host (cabled, so switch ports add up, but no host: the
    exports and diff's hosts leave them out); SHARP aggregation nodes, each inside its switch,
    are listed in a comment only (their port is switch-internal, beyond the switch's radix)."""
    lines = []
    port_of = {}
    for a, pa, b, pb, _, _ in cables:
        port_of.setdefault(a, (b, pb))
        port_of.setdefault(b, (a, pa))
    if sharp:
        where = []
        for g in sharp:
            sw, port = port_of.get(g, (None, 0))
            where.append(f"{switches[sw][0]} port {port}" if sw in switches else f"0x{g}")
        lines.append("  # SHARP aggregation nodes (in-network reduction inside the switch, not "
                     "hosts): " + emit.comment(", ".join(where)))
        notes.append(f"{len(sharp)} SHARP aggregation node(s) ('{nodes[sharp[0]][1]}') "
                     "recognised: the switches' reduction engines, not hosts; listed in a "
                     "comment, not cabled")
    if unnamed:
        for g in unnamed:
            end_of[g] = f"hca_{g}"
            lines.append(f"  hca_{g} : {nic_model[g]}  # unnamed HCA, node GUID 0x{g.zfill(16)}")
        notes.append(f"{len(unnamed)} HCA(s) report the adapter's default node description "
                     f"('{nodes[unnamed[0]][1]}'), not a hostname: kept as hca_<GUID> outside "
                     "any host, so exports and diff's hosts leave them out; set their node "
                     "descriptions (/sys/class/infiniband/<device>/node_desc) "
                     "or place them with --guids")
    return lines


def _arrays(shape: tuple) -> list[str]:
    """``nic[8] : CX7`` for HCAs mlx5_0..n-1 of one model, one member per NIC otherwise:
    ``nic0 : CX7`` by position, or ``mlx5_5 : CX7`` by identity when the indices have gaps."""
    if shape and shape[0][0] is not None:
        return [f"mlx5_{i} : {m}" for i, m in shape]
    models = [m for _, m in shape]
    if len(set(models)) == 1:
        return [f"nic[{len(models)}] : {models[0]}"]
    return [f"nic{i} : {m}" for i, m in enumerate(models)]


def _dup(indices: list[int]) -> int:
    return next(i for i in indices if indices.count(i) > 1)


def _natural(text: str) -> tuple:
    """Natural order over ASCII digit runs only: a hostname may hold any character, and
    '2'.isdigit() is also true of '²', which int() refuses."""
    return tuple(int(p) if i % 2 else p for i, p in enumerate(re.split(r"([0-9]+)", text)))
