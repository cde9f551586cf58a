"""``topoc export nccl-topo``: one node as the XML NCCL reads from ``NCCL_TOPO_FILE``.

The shape follows NCCL's own dumps (``NCCL_TOPO_DUMP_FILE``): ``system > cpu > pci ... > gpu|nic``,
GPUs carrying ``nvlink target count tclass`` and, on Grace Blackwell, ``c2c bw count``. NCCL's
parser (src/graph/xml.h) takes at most 16 attributes per element and strings of 255 characters;
``check_nccl_xml`` enforces those rules (and at most 256 children per element, as older NCCL
releases required) on everything written here, and that every ``<pci>`` has the ``link_speed``
and ``link_width`` NCCL needs (a link type without ``gen`` gets the generation its bandwidth
implies). Bus ids are synthesised from declaration order, so the same node always gets the same
ids, unless ``bus_ids`` gives the machine's own (``topoc import nccl-topo --bus-ids`` writes
them); NCCL matches a topology file to the machine by bus id, so synthesised ids only describe
a machine NCCL is told to trust the file for (docs/nccl.md).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict

from ..compiler.base.figures import PCIE_X16
from ..compiler.ir.system import Device, System, device_indices
from ..compiler.ir.locality import UnionFind, common_prefix

NVSWITCH_CLASS, GPU_CLASS, BRIDGE_CLASS = "0x068000", "0x030200", "0x060400"
IB_CLASS, ETH_CLASS = "0x020700", "0x020000"
EXTERNAL_NVSWITCH = "fffffff:ff:ff.0"       # how NCCL dumps NVLink switches outside the node
MAX_ATTRS, MAX_CHILDREN, MAX_STR = 16, 256, 255
_HOST = ("pcie", "nvlink_c2c", "inter_socket")
# CPU identity as NCCL dumps show it (vendor string, familyid, modelid), by model name.
CPU_IDS = {
    "Xeon8480C": ("GenuineIntel", 6, 143),     # Sapphire Rapids
    "Xeon8570": ("GenuineIntel", 6, 207),      # Emerald Rapids (as in the HGX H200 dump)
    "EPYC7742": ("AuthenticAMD", 143, 49),     # Rome (as in NVIDIA/nccl issue 1505)
    "XeonE52698v4": ("GenuineIntel", 6, 79),   # Broadwell-EP (as in the DGX-1V dump of issue 671)
}
#: The vendor strings NCCL reads (src/graph/topo.cc), by a model's ``vendor`` attribute or
#: the start of its name.
VENDORS = {"intel": "GenuineIntel", "genuineintel": "GenuineIntel", "amd": "AuthenticAMD",
           "authenticamd": "AuthenticAMD"}
NAME_VENDORS = (("xeon", "GenuineIntel"), ("epyc", "AuthenticAMD"))
#: Family and model of CPU generations NCCL tells apart (topo.h), by name pattern. Intel: every
#: Xeon since 2006 is family 6; Granite Rapids (Xeon 6 P-cores) is model 173 (0xAD), as
#: Linux's arch/x86/include/asm/intel-family.h lists INTEL_GRANITERAPIDS_X.
NAME_IDS = ((r"^xeon_?6", ("GenuineIntel", 6, 173)),)


def cpu_identity(model) -> tuple[str | None, int | None, int | None]:
    """(vendor, familyid, modelid) of a CPU model for NCCL: the known table, else the
    ``vendor`` attribute or the name (Xeon, EPYC); familyid 6 for any Intel CPU; ids that are
    not known are left out rather than guessed."""
    if model.name in CPU_IDS:
        return CPU_IDS[model.name]
    name = model.name.lower()
    m = re.fullmatch(r"cpu_(genuineintel|authenticamd)_([0-9]{1,4})_([0-9]{1,4})", name)
    if m:                                   # as topoc import nccl-topo names a dump's CPU
        return VENDORS[m.group(1)], int(m.group(2)), int(m.group(3))
    for pattern, ids in NAME_IDS:
        if re.match(pattern, name):
            return ids
    vendor = VENDORS.get(str(model.attr("vendor", "")).lower()) or next(
        (v for prefix, v in NAME_VENDORS if name.startswith(prefix)), None)
    return vendor, 6 if vendor == "GenuineIntel" else None, None


PCIE_SPEED = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe",
              5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}
BUS_ID = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$")


class ExportError(ValueError):
    """The system cannot be written as an NCCL topology (no node, several nodes, ...)."""


def nodes(system: System) -> dict[str, list[Device]]:
    """Hosts: devices joined by PCIe, C2C or socket links, named by their common id prefix
    (a DGX node, a GB200 compute tray). Parts with one prefix are one host."""
    sets = UnionFind()
    for link in system.links:
        if link.cls in _HOST:
            sets.union(link.src, link.dst)
    parts: dict[str, list[str]] = defaultdict(list)
    for d in system.devices:
        if d.id in sets.parent and d.kind in ("gpu", "cpu", "nic", "pcie_switch"):
            parts[sets.find(d.id)].append(d.id)
    hosts: dict[str, set[str]] = defaultdict(set)
    for ids in parts.values():
        if any(system.device(i).kind == "gpu" for i in ids):
            hosts[common_prefix(ids) or system.name].update(ids)
    out = {}
    for prefix, ids in sorted(hosts.items()):
        inside = {d.id for d in system.devices if d.kind == "switch" and d.id.startswith(prefix + ".")}
        out[prefix] = [d for d in system.devices if d.id in ids or d.id in inside]
    return out


def pick_node(system: System, node: str | None) -> tuple[str, list[Device]]:
    """The node asked for, or the only one; a clear error otherwise."""
    found = nodes(system)
    if not found:
        raise ExportError("the system has no node: no GPU is attached to a CPU")
    if node is None:
        if len(found) > 1:
            # In declaration order (tray0, tray1, tray2 ...), which each list keeps.
            first = device_indices(system)
            names = sorted(found, key=lambda k: first[found[k][0].id])
            raise ExportError(f"the system has {len(found)} nodes; choose one with --node, e.g. "
                              f"--node {names[0]} (nodes: {', '.join(names[:4])}"
                              + (", ..." if len(names) > 4 else "") + ")")
        return next(iter(found.items()))
    if node not in found:
        from ..compiler.base.diagnostics import suggest
        raise ExportError(f"no node '{node}'" + suggest(node, found) + f" ({len(found)} nodes)")
    return node, found[node]


def _affinity(index: int, cores: int) -> str:
    """A CPU mask in NCCL's comma-separated 32-bit groups: ``cores`` bits from index*cores."""
    mask = ((1 << cores) - 1) << (index * cores)
    groups = []
    while mask or not groups:
        groups.append(f"{mask & 0xFFFFFFFF:08x}")
        mask >>= 32
    return ",".join(reversed(groups))


def _generation(link) -> int:
    """The link's PCIe generation: declared, else the one whose x16 rate its bandwidth fits."""
    gen = link.type.attr("gen")
    if gen in PCIE_SPEED:
        return int(gen)
    per_x16 = link.type.bandwidth * 16 / int(link.type.attr("width") or 16)
    return min(PCIE_X16, key=lambda g: abs(PCIE_X16[g] - per_x16))


def build(system: System, node: str | None = None,
          bus_ids: dict[str, str] | None = None) -> ET.Element:
    """The XML tree of one node; ``bus_ids`` maps device ids to the machine's bus ids."""
    prefix, members = pick_node(system, node)
    ids = {d.id for d in members}
    bus = {d.id: f"0000:{0x10 + i:02x}:00.0" for i, d in enumerate(members) if d.kind != "cpu"}
    if len(bus) > 0xEF and not bus_ids:
        raise ExportError(f"node {prefix} has {len(bus)} PCI devices; bus ids run out at 239")
    for device_id, busid in sorted((bus_ids or {}).items()):
        if device_id not in bus:
            from ..compiler.base.diagnostics import suggest
            raise ExportError(f"--bus-ids names {device_id}, which is no PCI device of node "
                              f"{prefix}{suggest(device_id, sorted(bus))}")
        if not BUS_ID.match(busid.lower()):
            raise ExportError(f"--bus-ids: '{busid}' for {device_id} is not a bus id like "
                              "0000:19:00.0")
        bus[device_id] = busid.lower()
    if len(set(bus.values())) != len(bus):
        raise ExportError("--bus-ids gives two devices the same bus id")
    adj: dict[str, list] = defaultdict(list)
    for link in system.links:
        adj[link.src].append(link)
        adj[link.dst].append(link)
    ranks = {g.id: r for r, g in enumerate(system.gpus)}
    root = ET.Element("system", version="1")
    placed: set[str] = set()
    bridges: dict[str, str] = {}        # NICs drawn as bridges: their switch's bus id
    local_gpu = {d.id: i for i, d in enumerate(d for d in members if d.kind == "gpu")}
    # NCCL's NICs are the compute NICs: storage NICs and DPUs are left out of its topology
    local_nic = {d.id: i for i, d in enumerate(d for d in members if d.compute_nic)}

    def bridge_bus(device_id: str) -> str:
        """A bus id for the switch of a NIC drawn as a bridge: the first free one after the
        devices' own."""
        used = set(bus.values()) | set(bridges.values())
        number = next(n for n in range(0x10 + len(bus), 0x10000) if f"0000:{n:02x}:00.0" not in used)
        return bridges.setdefault(device_id, f"0000:{number:02x}:00.0")

    def below(dev: Device) -> list:
        """The (link, device) pairs ``dev`` reaches downstream over PCIe inside the node: the
        GPUs, PCIe switches and compute NICs not yet placed, in link order."""
        out = []
        for link in sorted(adj[dev.id], key=lambda lk: lk.id):
            other = system.device(link.dst if link.src == dev.id else link.src)
            if link.cls == "pcie" and other.id in ids and other.id not in placed and \
                    (other.kind in ("pcie_switch", "gpu") or other.compute_nic):
                out.append((link, other))
        return out

    def pci(parent: ET.Element, dev: Device, via) -> None:
        placed.add(dev.id)
        downstream = below(dev) if dev.kind == "nic" else []
        if downstream:
            # A NIC with devices behind it (ConnectX-8's built-in PCIe switch carries its GPU
            # and the host link) is, to the PCI tree, a Mellanox bridge holding the NIC
            # function and those devices; NCCL then finds the GPU and its NIC one switch apart
            # (PIX), as on the machine.
            bridge = ET.SubElement(parent, "pci", {
                "busid": bridge_bus(dev.id), "class": BRIDGE_CLASS, "vendor": "0x15b3",
                "link_speed": PCIE_SPEED[_generation(via)],
                "link_width": str(via.type.attr("width") or 16)})
            element(bridge, dev, via)           # a NIC's element holds no further devices
            for link, other in downstream:
                if other.id not in placed:      # an earlier one's subtree may hold it
                    pci(bridge, other, link)
            return
        element(parent, dev, via)

    def element(parent: ET.Element, dev: Device, via) -> None:
        """The ``<pci>`` of ``dev`` reached over ``via``, with what it holds."""
        gen, width = _generation(via), via.type.attr("width")
        klass = {"gpu": GPU_CLASS, "pcie_switch": BRIDGE_CLASS}.get(dev.kind)
        if dev.kind == "nic":
            klass = IB_CLASS if dev.model.port_budget("infiniband") or any(
                lk.cls == "infiniband" for lk in adj[dev.id]) else ETH_CLASS
        attrs = {"busid": bus[dev.id], "class": klass,
                 "vendor": "0x10de" if dev.kind == "gpu" else "0x15b3" if dev.kind == "nic"
                 else "0x1000"}
        attrs["link_speed"] = PCIE_SPEED[gen]        # NCCL needs both on every <pci>
        attrs["link_width"] = str(width or 16)
        el = ET.SubElement(parent, "pci", attrs)
        if dev.kind == "gpu":
            gpu(el, dev)
        elif dev.kind == "nic":
            nic_el = ET.SubElement(el, "nic")
            i = local_nic[dev.id]
            ET.SubElement(nic_el, "net", {
                "name": f"mlx5_{i}", "dev": str(i), "latency": "0",
                "speed": str(int(dev.model.attr("rate", 50e9) * 8 // 10**6)), "port": "1",
                "guid": f"0x{0x1000 + i:x}", "maxconn": "131072", "gdr": "1"})
        else:
            for link, other in below(dev):
                if other.id not in placed:
                    pci(el, other, link)

    def gpu(parent: ET.Element, dev: Device) -> None:
        el = ET.SubElement(parent, "gpu", {"dev": str(local_gpu[dev.id]),
                                           "sm": str(dev.model.attr("sm", 90)),
                                           "rank": str(ranks[dev.id]), "gdr": "1"})
        targets: dict[tuple[str, str], int] = defaultdict(int)
        c2c = []
        for link in sorted(adj[dev.id], key=lambda lk: lk.id):
            other = system.device(link.dst if link.src == dev.id else link.src)
            if link.cls == "nvlink":
                if other.id in bus:
                    klass = NVSWITCH_CLASS if other.kind == "switch" else GPU_CLASS
                    targets[bus[other.id], klass] += link.lanes
                else:
                    targets[EXTERNAL_NVSWITCH, NVSWITCH_CLASS] += link.lanes
            elif link.cls == "nvlink_c2c":
                c2c.append(link)
        for (target, klass), count in sorted(targets.items()):
            ET.SubElement(el, "nvlink", target=target, count=str(count), tclass=klass)
        if c2c:
            ET.SubElement(el, "c2c", bw=str(int(c2c[0].type.bandwidth // 10**6)),
                          count=str(sum(lk.lanes for lk in c2c)))

    cpus = [d for d in members if d.kind == "cpu"]
    for index, cpu in enumerate(cpus):
        vendor, family, model = cpu_identity(cpu.model)
        attrs = {"numaid": str(index),
                 "affinity": _affinity(index, int(cpu.model.attr("cores", 32))),
                 "arch": cpu.model.attr("arch", "x86_64")}
        if vendor:
            attrs["vendor"] = vendor
        attrs.update({k: str(v) for k, v in (("familyid", family), ("modelid", model))
                      if v is not None})
        el = ET.SubElement(root, "cpu", attrs)
        for link in sorted(adj[cpu.id], key=lambda lk: lk.id):
            other = system.device(link.dst if link.src == cpu.id else link.src)
            if other.id in ids and other.id not in placed and link.cls in ("pcie", "nvlink_c2c") \
                    and (other.kind in ("pcie_switch", "gpu") or other.compute_nic):
                if link.cls == "nvlink_c2c":
                    # A C2C-attached GPU still has a PCI function under its CPU, as in GB dumps.
                    pci(el, other, next((lk for lk in adj[other.id] if lk.cls == "pcie"), link))
                else:
                    pci(el, other, link)
    missing = [d.id for d in members if (d.kind == "gpu" or d.compute_nic) and d.id not in placed]
    if missing:
        raise ExportError(f"{missing[0]} is not attached to a CPU over PCIe or C2C, so it has no "
                          "place in NCCL's PCI tree" + (f" (and {len(missing) - 1} more)"
                                                        if len(missing) > 1 else ""))
    return root


def check_nccl_xml(text: str) -> list[str]:
    """Breaches of NCCL's XML parser rules in ``text`` ([] when it is fine)."""
    problems = []
    if "\t" in text:
        problems.append("tabs: NCCL's parser takes spaces only")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        return problems + [f"not well-formed XML: {exc}"]
    for el in root.iter():
        if len(el.attrib) > MAX_ATTRS:
            problems.append(f"<{el.tag}> has {len(el.attrib)} attributes (max {MAX_ATTRS})")
        if len(el) > MAX_CHILDREN:
            problems.append(f"<{el.tag}> has {len(el)} children (max {MAX_CHILDREN})")
        if el.tag == "pci" and not {"link_speed", "link_width"} <= set(el.attrib):
            problems.append(f"<pci busid={el.get('busid')}> lacks link_speed or link_width, "
                            "which NCCL reads")
        for key, value in el.attrib.items():
            if len(value) > MAX_STR or len(key) > MAX_STR:
                problems.append(f"<{el.tag} {key}> is longer than {MAX_STR} characters")
    return problems


def serialize(root: ET.Element) -> str:
    """XML text as NCCL writes it (two-space indent, "<x .../>"), checked against its parser's
    rules before anything is returned."""
    ET.indent(root, space="  ")
    text = ET.tostring(root, encoding="unicode").replace(" />", "/>") + "\n"
    problems = check_nccl_xml(text)
    if problems:
        raise ExportError("; ".join(problems))
    return text


def render(system: System, node: str | None = None, bus_ids: dict[str, str] | None = None) -> str:
    """The topology XML text of one node."""
    return serialize(build(system, node, bus_ids))


def read_bus_ids(text: str) -> dict[str, str]:
    """A ``--bus-ids`` file: ``<device id> <bus id>`` a line, ``#`` comments."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ExportError(f"--bus-ids line {n}: expected '<device id> <bus id>'")
        out[parts[0]] = parts[1]
    return out


def write_bus_ids(bus_ids: dict[str, str]) -> str:
    """The ``--bus-ids`` file text for ``bus_ids``, sorted."""
    return "# topoc bus ids: <device id> <bus id>, from the imported dump\n" + "".join(
        f"{k} {v}\n" for k, v in sorted(bus_ids.items()))


__all__ = ["ExportError", "build", "check_nccl_xml", "nodes", "read_bus_ids", "render",
           "serialize", "write_bus_ids"]
