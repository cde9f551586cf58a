"""NCCL topology XML (``NCCL_TOPO_DUMP_FILE`` dumps and ``NCCL_TOPO_FILE`` inputs) as .topo.

Read as NCCL reads it (src/graph/topo.cc, xml.cc): a ``<pci>`` whose class starts ``0x03`` is a
GPU and ``0x02`` a NIC even when the ``<gpu>``/``<nic>`` child is missing (the flattened files
cloud vendors ship as ``NCCL_TOPO_FILE``); a ``<nic>`` with several ``<net>`` ports is one card
on one PCIe link; CPUs of one host are meshed, as NCCL links every socket to every other;
``<nvlink>`` goes to a GPU, an NVSwitch (by bus id) or, for ``fffffff:ff:ff.0``, an NVLink
fabric outside the dump; one that targets its own GPU is skipped with a note.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict, deque

from ..compiler.base.figures import GT_GEN, nvlink_nominal
from ..compiler.lang import emit
from .base import Build, ImportFailure, finish, gbs, header, ident, printable, require_gpus

MAX_ELEMENTS = 100_000    # a real dump of one node has a few hundred
MAX_DEPTH = 64            # PCIe trees are a handful of switches deep
_DIGITS = re.compile(r"[0-9]{1,9}")
_BUSID = re.compile(r"[0-9a-f]{1,8}:[0-9a-f]{1,2}:[0-9a-f]{1,2}\.[0-7]")

# NCCL's CPU-to-CPU figures (src/graph/topo.h): by (vendor, familyid, modelid) prefix.
SOCKET_BW = [(("GenuineIntel", "6", "143"), 22e9), (("GenuineIntel", "6", "207"), 40e9),
             (("GenuineIntel", "6", None), 10e9), (("AuthenticAMD", "143", None), 16e9),
             (("AuthenticAMD", "23", None), 16e9), (("AuthenticAMD", "175", None), 24e9)]
#: Intel family 6 below model 0x55 is Broadwell to NCCL (topo.cc: "modelId >= 0x55 ? SKL :
#: BDW"), whose socket link it takes at BDW_QPI_BW, 6 GB/s (topo.h).
BROADWELL_BELOW, BROADWELL_BW = 0x55, 6e9
DEFAULT_SOCKET_BW = 20e9
DEFAULT_NET_MBPS = 100000


def _pcie_type(b: Build, el: ET.Element, where: str) -> str:
    """The link type of ``el``'s PCIe link: '16.0 GT/s PCIe', '8 GT/s', '2.5 GT/s' all read."""
    m = re.match(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s", el.get("link_speed") or "")
    gen = GT_GEN.get(float(m.group(1))) if m and len(m.group(1)) <= 6 else None
    width = el.get("link_width") or ""
    width = int(width) if _DIGITS.fullmatch(width) and 0 < int(width) <= 32 else None
    if gen is None or width is None:
        missing = " and ".join(w for w, v in (("speed", gen), ("width", width)) if v is None)
        b.notes.append(f"{where}: PCIe link without a known {missing}; assumed "
                       f"{'Gen4' if gen is None else f'Gen{gen}'} x{width or 16}")
    return b.pcie(gen or 4, width or 16)


def _int(el: ET.Element, name: str, default: int = 0) -> int:
    value = (el.get(name) or "").strip()
    return int(value) if _DIGITS.fullmatch(value) else default


def _parse(text: str, path: str) -> ET.Element:
    """The XML tree, built as it streams in: past ``MAX_ELEMENTS`` elements or ``MAX_DEPTH``
    levels the import stops (an error naming the limit), so no input costs more than its
    bounded size; expat refuses external entities and entity expansion bombs."""
    parser = ET.XMLPullParser(events=("start", "end"))
    count = depth = 0
    root = None
    try:
        for at in range(0, len(text), 1 << 16):
            parser.feed(text[at:at + (1 << 16)])
            for event, el in parser.read_events():
                root = el if root is None else root
                if event == "end":
                    depth -= 1
                    continue
                count, depth = count + 1, depth + 1
                if count > MAX_ELEMENTS:
                    raise ImportFailure(f"{path}: more than {MAX_ELEMENTS:,} XML elements; "
                                        "an NCCL dump of one node has a few hundred")
                if depth > MAX_DEPTH:
                    raise ImportFailure(f"{path}: XML nested more than {MAX_DEPTH} deep")
        parser.close()
        for _ in parser.read_events():
            pass
    except ET.ParseError as exc:
        line, col = exc.position
        msg = re.sub(r": line \d+, column \d+$", "", exc.msg)
        raise ImportFailure(f"{path}:{line}:{col + 1}: not well-formed XML: {msg}") from None
    return root


def from_nccl_xml(text: str, path: str = "<dump>",
                  bus_ids: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """A .topo text (and notes) for an NCCL topology XML file; ``bus_ids``, when given, is
    filled with each imported PCI device's id in the node and its bus id in the dump (for
    ``topoc export nccl-topo --bus-ids``)."""
    path = printable(path)
    root = _parse(text, path)
    if root.tag != "system":
        raise ImportFailure(f"{path}: the root element is <{root.tag}>, expected <system>")
    cpus = root.findall("cpu")
    if not cpus:
        raise ImportFailure(f"{path}: <system> holds no <cpu> element")
    hosts: dict[str, list[ET.Element]] = defaultdict(list)
    for cpu in cpus:
        hosts[cpu.get("host_hash", "")].append(cpu)
    groups, notes = [], []
    models: dict[str, str] = {}
    links: dict[str, str] = {}
    external = []
    for h, host_cpus in enumerate(hosts.values()):
        b = Build(models=models, links=links)
        host = _Host(b, path)
        for cpu in host_cpus:
            host.cpu(cpu)
        _sockets(b, host_cpus, path)
        external += [(h, *e) for e in host.nvlinks()]
        if bus_ids is not None:
            for sel, busid in host.bus.items():
                if _BUSID.fullmatch(busid):
                    bus_ids[f"node.host{h}.{sel.replace('[', '').rstrip(']')}"] = busid
                else:       # one token per line in the --bus-ids file, never two lines
                    notes.append(f"{path}: bus id '{printable(busid)}' of {sel} is not a PCI "
                                 "bus id; left out of --bus-ids")
        notes += b.notes
        groups.append((f"Host{h}", b))
    require_gpus(sum(b.count("gpu") for _, b in groups), path, "the dump")
    out = header(path, "an NCCL topology dump")
    out += sorted(links.values()) + [""] + sorted(models.values()) + [""]
    for name, b in groups:
        out += [b.group(name), ""]
    body = [f"  host{h} : Host{h}" for h in range(len(groups))]
    if external:
        out.insert(out.index("") + 1, "device NVLinkFabric : switch { }")
        body.append("  nvfabric : NVLinkFabric     # NVLink switches outside the dump")
        body += [f"  host{h}.{sel} <-> nvfabric : {kind} x {count}"
                 for h, sel, kind, count in external]
    out += ["group Node {", *body, "}", "", "system node : Node", ""]
    return finish(out), sorted(set(notes))


class _Host:
    """One host's devices, walked from its CPUs down the PCIe tree."""

    def __init__(self, b: Build, path: str):
        self.b, self.path = b, path
        self.gpu_by_bus: dict[str, tuple[str, int]] = {}
        self.pending: list[tuple[str, str, ET.Element, int]] = []   # sel, own bus, nvlink, sm
        self.bus: dict[str, str] = {}                                # selector -> bus id

    def cpu(self, cpu: ET.Element) -> None:
        vendor = cpu.get("vendor", cpu.get("arch", "cpu"))
        family, modelid = cpu.get("familyid"), cpu.get("modelid")
        name = ident("CPU_" + "_".join(x for x in (vendor, family, modelid) if x))
        arch = cpu.get("arch", "x86_64")
        self.b.model(name, f"device {name} : cpu {{ arch = {emit.string(ident(arch))}  "
                           f"vendor = {emit.string(ident(vendor))} }}")
        cpu_sel = self.b.add("cpu", name)
        stack = deque((cpu_sel, child) for child in cpu)   # depth first, in document order
        while stack:
            parent, el = stack.popleft()
            if el.tag == "nic":
                self.nic(parent, el, None)
            elif el.tag == "pci":
                stack.extendleft(reversed(self.pci(parent, cpu_sel, el)))

    def pci(self, parent: str, cpu_sel: str, el: ET.Element):
        """Add what ``el`` is; returns the (parent, child) pairs still to walk."""
        b = self.b
        busid = (el.get("busid") or "?").lower()
        klass = el.get("class", "")
        where = f"{self.path}: pci {busid}"
        gpu_el, nic_el = el.find("gpu"), el.find("nic")
        if gpu_el is not None or (klass.startswith("0x03") and not len(el)):
            sm = _int(gpu_el, "sm") if gpu_el is not None else 0
            if gpu_el is None:
                b.notes.append(f"{where}: class {klass} with no <gpu> inside: a GPU, as NCCL "
                               "reads it; its sm is not given")
            model = f"GPU_sm{sm}" if sm else "GPU"
            b.model(model, f"device {model} : gpu {{{f' sm = {sm} ' if sm else ' '}}}")
            sel = b.add("gpu", model)
            self.gpu_by_bus[busid] = (sel, sm)
            self.bus[sel] = busid
            c2c = gpu_el.find("c2c") if gpu_el is not None else None
            if c2c is not None:
                bw = _int(c2c, "bw") * 1e6
                kind = b.link(f"c2c_{int(bw // 1e6)}", "nvlink_c2c", bw)
                b.wires.append(f"{cpu_sel} <-> {sel} : {kind} x {_int(c2c, 'count', 1)}")
            if c2c is None or parent != cpu_sel:
                b.wires.append(f"{parent} <-> {sel} : {_pcie_type(b, el, where)}")
            if gpu_el is not None:
                self.pending += [(sel, busid, nv, sm) for nv in gpu_el.findall("nvlink")]
            return []
        if nic_el is not None or (klass.startswith("0x02") and not len(el)):
            self.bus[self.nic(parent, nic_el, _pcie_type(b, el, where), where)] = busid
            return []
        if klass.startswith("0x0604") or len(el):
            b.model("PCIeSwitch", "device PCIeSwitch : pcie_switch { }")
            sel = b.add("sw", "PCIeSwitch")
            self.bus[sel] = busid
            b.wires.append(f"{parent} <-> {sel} : {_pcie_type(b, el, where)}")
            return [(sel, child) for child in el]
        b.notes.append(f"{where}: class {klass} with no GPU or NIC below; left out")
        return []

    def nic(self, parent: str, el: ET.Element | None, link: str | None,
            where: str | None = None) -> str:
        """One card: its ports share its PCIe link, so its rate is their sum. Returns its
        selector."""
        b = self.b
        nets = el.findall("net") if el is not None else []
        where = where or f"{self.path}: nic under {parent}"
        speeds = []
        for net in nets or [None]:
            mbps = _int(net, "speed") if net is not None else 0
            if not mbps:
                b.notes.append(f"{where}: net {net.get('name') if net is not None else '(none)'}"
                               f" without a speed; assumed {DEFAULT_NET_MBPS} Mbps")
                mbps = DEFAULT_NET_MBPS
            speeds.append(mbps)
        total = sum(speeds)
        if len(speeds) > 1:
            b.notes.append(f"{where}: {len(speeds)} ports on one card, one PCIe link; "
                           f"declared as one NIC of {total // 1000} Gb/s")
        model = b.model(f"NIC_{total}M", f"device NIC_{total}M : nic {{ rate = {total // 1000} Gb/s }}")
        sel = b.add("nic", model)
        if link is None:
            b.notes.append(f"{where}: a NIC straight under a CPU with no PCI element; "
                           "assumed a Gen4 x16 link")
            link = b.pcie(4, 16)
        b.wires.append(f"{parent} <-> {sel} : {link}")
        return sel

    def nvlinks(self) -> list[tuple[str, str, int]]:
        """Wire NVLink to peers and switches; returns the links to a fabric outside the dump."""
        b, seen, switches, external = self.b, set(), {}, []
        sms = [sm for _, sm in self.gpu_by_bus.values()]
        for sel, own, nv, sm in self.pending:
            target = (nv.get("target") or "").lower()
            count = _int(nv, "count", 1)
            lane, _ = nvlink_nominal(sm) if sm else (25e9, "")
            if not sm:
                b.notes.append(f"{self.path}: NVLink of a GPU without sm; assumed 25 GB/s per lane")
            kind = b.link(f"nvlink_bw{int(lane // 1e9)}", "nvlink", lane)
            if target == own:
                b.notes.append(f"{self.path}: pci {own}: an <nvlink> that targets its own GPU; "
                               "skipped")
            elif target in self.gpu_by_bus and nv.get("tclass", "0x03").startswith("0x03"):
                other = self.gpu_by_bus[target][0]
                pair = tuple(sorted((sel, other)))
                if pair not in seen:
                    seen.add(pair)
                    b.wires.append(f"{pair[0]} <-> {pair[1]} : {kind} x {count}")
            elif target.startswith("fffffff"):
                external.append((sel, kind, count))
            else:
                if target not in switches:
                    nvls = sms and min(sms) >= 90
                    b.model("NVSwitch", "device NVSwitch : switch {"
                            + ("  reduction = true" if nvls else "") + " }")
                    switches[target] = b.add("nvswitch", "NVSwitch")
                    self.bus[switches[target]] = target
                b.wires.append(f"{sel} <-> {switches[target]} : {kind} x {count}")
        return external


def _sockets(b: Build, host_cpus: list[ET.Element], path: str) -> None:
    """Every pair of CPUs of one host linked, at NCCL's figure for the CPU family."""
    for a in range(len(host_cpus)):
        for c in range(a + 1, len(host_cpus)):
            cpu = host_cpus[a]
            key = (cpu.get("vendor"), cpu.get("familyid"), cpu.get("modelid"))
            bw = next((v for k, v in SOCKET_BW if k[0] == key[0] and k[1] == key[1] and
                       (k[2] is None or k[2] == key[2])), None)
            if key[:2] == ("GenuineIntel", "6") and _DIGITS.fullmatch(key[2] or "") and \
                    int(key[2]) < BROADWELL_BELOW:
                bw = BROADWELL_BW
            if bw is None and cpu.get("arch") == "arm64":
                b.notes.append(f"{path}: NCCL's dump does not say how its arm64 CPUs connect; "
                               "no CPU-to-CPU link assumed (GPUs meet over NVLink or C2C)")
                return
            if bw is None:
                bw = DEFAULT_SOCKET_BW
                b.notes.append(f"{path}: socket link bandwidth of {key[0] or cpu.get('arch')} "
                               f"unknown; assumed {gbs(bw)}")
            name = b.link(f"socket_{int(bw // 1e9)}", "inter_socket", bw)
            b.wires.append(f"cpu[{a}] <-> cpu[{c}] : {name}")
