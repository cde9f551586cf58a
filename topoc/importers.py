"""``topoc import``: NCCL topology dumps and ``nvidia-smi topo -m`` matrices as .topo files.

Both importers write a self-contained file (its own link types and device models) that
compiles; what the input cannot tell is filled with a documented default and reported as a
note: a PCIe link with no speed or width is Gen4 x16; an NVLink lane is 25 GB/s per direction
(50 GB/s for sm 100 and later); a CPU-to-CPU link takes NCCL's model figure for its CPU family,
else 20 GB/s; in a ``topo -m`` matrix, GPUs with the same NV# to every peer beyond what direct
links could carry sit on an NVLink switch. docs/nccl.md lists these.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field

from .compiler.locality import UnionFind

# PCIe x16 bandwidth per direction by generation (R58 in the hardware sheet; Gen6 assumed).
PCIE_X16 = {3: 15.75e9, 4: 31.5e9, 5: 63e9, 6: 121e9}
SPEED_GEN = {"2.5": 1, "5.0": 2, "8.0": 3, "16.0": 4, "32.0": 5, "64.0": 6}
# NCCL's CPU-to-CPU figures (src/graph/topo.h): by (vendor, familyid, modelid) prefix.
SOCKET_BW = [(("GenuineIntel", "6", "143"), 22e9), (("GenuineIntel", "6", "207"), 40e9),
             (("GenuineIntel", "6", None), 10e9), (("AuthenticAMD", "143", None), 16e9),
             (("AuthenticAMD", "175", None), 24e9)]
DEFAULT_SOCKET_BW = 20e9
MAX_DEVICES = 4096


class ImportFailure(ValueError):
    """The input is not a dump this importer understands; the message names where."""


@dataclass
class _Build:
    """A node being assembled: device models, instances, links and notes."""

    models: dict[str, str] = field(default_factory=dict)          # name -> declaration
    links: dict[str, str] = field(default_factory=dict)           # name -> declaration
    instances: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    wires: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, array: str, model: str) -> str:
        """A new element of ``array`` with ``model``; returns its selector text."""
        self.instances[array].append(model)
        if sum(len(v) for v in self.instances.values()) > MAX_DEVICES:
            raise ImportFailure(f"more than {MAX_DEVICES} devices in one node")
        return f"{array}[{len(self.instances[array]) - 1}]"

    def link(self, name: str, cls: str, bandwidth: float, extra: str = "") -> str:
        self.links.setdefault(name, f"link {name} : {cls} {{ bandwidth = {_gbs(bandwidth)}"
                              f"{'  ' + extra if extra else ''} }}")
        return name

    def model(self, name: str, decl: str) -> str:
        self.models.setdefault(name, decl)
        return name

    def group(self, name: str) -> str:
        lines = [f"group {name} {{"]
        for array, models in self.instances.items():
            if len(set(models)) == 1:
                lines.append(f"  {array}[{len(models)}] : {models[0]}")
            else:
                raise ImportFailure(f"internal: mixed models in '{array}'")
        lines += [f"  {w}" for w in self.wires]
        lines.append("}")
        return "\n".join(lines)


def _gbs(value: float) -> str:
    gb = value / 1e9
    return f"{gb:g} GB/s"


def _ident(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _pcie_type(b: _Build, el: ET.Element, where: str) -> str:
    speed = (el.get("link_speed") or "").split(" ")[0]
    width = el.get("link_width")
    gen = SPEED_GEN.get(speed)
    if gen is None or not (width or "").isdigit() or int(width) == 0:
        b.notes.append(f"{where}: PCIe link without {'speed' if gen is None else 'width'}; "
                       "assumed Gen4 x16")
        gen, width = gen or 4, 16 if not (width or "").isdigit() or int(width) == 0 else width
    width = int(width)
    return b.link(f"pcie_g{gen}_x{width}", "pcie", PCIE_X16.get(gen, 31.5e9) * width / 16,
                  f"gen = {gen}  width = {width}")


def _nvlink_type(b: _Build, sm: int) -> str:
    if sm >= 100:
        return b.link("nvlink_bw50", "nvlink", 50e9)
    if sm < 70:
        b.notes.append(f"NVLink bandwidth of sm {sm} unknown; assumed 25 GB/s per lane")
    return b.link("nvlink_bw25", "nvlink", 25e9)


def from_nccl_xml(text: str, path: str = "<dump>") -> tuple[str, list[str]]:
    """A .topo text (and notes) for an NCCL topology dump (``NCCL_TOPO_DUMP_FILE``)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        line, col = exc.position
        raise ImportFailure(f"{path}:{line}:{col + 1}: not well-formed XML: {exc.msg}") from None
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
    for h, (host_hash, host_cpus) in enumerate(hosts.items()):
        b = _Build(models=models, links=links)
        gpu_by_bus: dict[str, tuple[str, int]] = {}
        nvlinks: list[tuple[str, ET.Element, int]] = []
        for cpu in host_cpus:
            vendor = cpu.get("vendor", cpu.get("arch", "cpu"))
            family, modelid = cpu.get("familyid"), cpu.get("modelid")
            name = _ident("CPU_" + "_".join(x for x in (vendor, family, modelid) if x))
            arch = cpu.get("arch", "x86_64")
            b.model(name, f'device {name} : cpu {{ arch = "{arch}"  vendor = "{vendor}" }}')
            cpu_sel = b.add("cpu", name)
            stack = [(cpu_sel, child) for child in cpu]
            while stack:
                parent, el = stack.pop(0)
                if el.tag == "nic":
                    for net in el.findall("net"):
                        _nic(b, parent, net, el, None, path)
                    continue
                if el.tag != "pci":
                    continue
                busid = el.get("busid", "?")
                klass = el.get("class", "")
                where = f"{path}: pci {busid}"
                gpu_el, nic_el = el.find("gpu"), el.find("nic")
                if gpu_el is not None:
                    sm = int(gpu_el.get("sm", "0") or 0)
                    model = b.model(f"GPU_sm{sm}", f"device GPU_sm{sm} : gpu {{ sm = {sm} }}")
                    sel = b.add("gpu", model)
                    gpu_by_bus[busid.lower()] = (sel, sm)
                    c2c = gpu_el.find("c2c")
                    if c2c is not None:
                        bw = int(c2c.get("bw", "0")) * 1e6
                        kind = b.link(f"c2c_{int(bw // 1e6)}", "nvlink_c2c", bw)
                        b.wires.append(f"{cpu_sel} <-> {sel} : {kind} x {int(c2c.get('count', '1'))}")
                        if parent != cpu_sel:
                            b.wires.append(f"{parent} <-> {sel} : {_pcie_type(b, el, where)}")
                    else:
                        b.wires.append(f"{parent} <-> {sel} : {_pcie_type(b, el, where)}")
                    for nv in gpu_el.findall("nvlink"):
                        nvlinks.append((sel, nv, sm))
                elif nic_el is not None:
                    for net in nic_el.findall("net"):
                        _nic(b, parent, net, el, _pcie_type(b, el, where), path)
                elif klass.startswith("0x0604") or len(el):
                    b.model("PCIeSwitch", "device PCIeSwitch : pcie_switch { }")
                    sel = b.add("sw", "PCIeSwitch")
                    b.wires.append(f"{parent} <-> {sel} : {_pcie_type(b, el, where)}")
                    stack[0:0] = [(sel, child) for child in el]
                else:
                    b.notes.append(f"{where}: class {klass} with no GPU or NIC below; left out")
        # CPUs of one host: NCCL's socket figure for the family, in numa order.
        for a, c in zip(range(len(host_cpus)), range(1, len(host_cpus))):
            cpu = host_cpus[a]
            key = (cpu.get("vendor"), cpu.get("familyid"), cpu.get("modelid"))
            bw = next((v for k, v in SOCKET_BW if k[0] == key[0] and k[1] == key[1] and
                       (k[2] is None or k[2] == key[2])), None)
            if bw is None and cpu.get("arch") == "arm64":
                b.notes.append(f"{path}: NCCL's dump does not say how its arm64 CPUs connect; "
                               "no CPU-to-CPU link assumed (GPUs meet over NVLink or C2C)")
                continue
            if bw is None:
                bw = DEFAULT_SOCKET_BW
                b.notes.append(f"{path}: socket link bandwidth of {key[0] or cpu.get('arch')} "
                               f"unknown; assumed {_gbs(bw)}")
            b.wires.append(f"cpu[{a}] <-> cpu[{c}] : {b.link(f'socket_{int(bw // 1e9)}', 'inter_socket', bw)}")
        # NVLink: peers inside the dump, switches by bus id, the rest as one external fabric.
        seen_pairs = set()
        switches: dict[str, str] = {}
        for sel, nv, sm in nvlinks:
            target = (nv.get("target") or "").lower()
            count = int(nv.get("count", "1"))
            kind = _nvlink_type(b, sm)
            if target in gpu_by_bus and nv.get("tclass", "").startswith("0x03"):
                other = gpu_by_bus[target][0]
                pair = tuple(sorted((sel, other)))
                if pair not in seen_pairs:
                    seen_pairs.add(pair)
                    b.wires.append(f"{pair[0]} <-> {pair[1]} : {kind} x {count}")
            elif target.startswith("fffffff"):
                external.append((h, sel, kind, count))
            else:
                if target not in switches:
                    b.model("NVSwitch", "device NVSwitch : switch { }")
                    switches[target] = b.add("nvswitch", "NVSwitch")
                b.wires.append(f"{sel} <-> {switches[target]} : {kind} x {count}")
        notes += b.notes
        groups.append((f"Host{h}", b))
    # One file: link types, models, a group per host, the node (and an external fabric).
    out = [f"# Imported by topoc from {path}, an NCCL topology dump.",
           "# Defaults for what the dump does not say are listed in docs/nccl.md.", ""]
    out += sorted(links.values()) + [""] + sorted(models.values()) + [""]
    for name, b in groups:
        out += [b.group(name), ""]
    body = [f"  host{h} : Host{h}" for h in range(len(groups))]
    if external:
        out.insert(out.index("") + 1, "device NVLinkFabric : switch { }")
        body.append("  nvfabric : NVLinkFabric     # NVLink switches outside the dump")
        body += [f"  host{h}.{sel} <-> nvfabric : {kind} x {count}" for h, sel, kind, count in external]
    out += ["group Node {", *body, "}", "", "system node : Node", ""]
    return "\n".join(out), sorted(set(notes))


def _nic(b: _Build, parent: str, net: ET.Element, el: ET.Element, link: str | None,
         path: str) -> None:
    speed = net.get("speed")
    if not (speed or "").isdigit():
        b.notes.append(f"{path}: net {net.get('name')} without a speed; assumed 100000 Mbps")
        speed = "100000"
    model = b.model(f"NIC_{speed}M", f"device NIC_{speed}M : nic {{ rate = {int(speed) // 1000} Gb/s }}")
    sel = b.add("nic", model)
    if link is None:
        b.notes.append(f"{path}: net {net.get('name')} hangs off a CPU with no PCI element; "
                       "assumed a Gen4 x16 link")
        link = b.link("pcie_g4_x16", "pcie", PCIE_X16[4], "gen = 4  width = 16")
    b.wires.append(f"{parent} <-> {sel} : {link}")


# ---- nvidia-smi topo -m ----------------------------------------------------------------------

_NV = re.compile(r"^NV(\d+)$")
_RELATIONS = {"X", "SYS", "NODE", "PHB", "PXB", "PIX"}


def from_smi(text: str, path: str = "<topo>") -> tuple[str, list[str]]:
    """A .topo text (and notes) for the matrix ``nvidia-smi topo -m`` prints."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    header_at = next((i for i, ln in enumerate(lines) if re.match(r"^\s+GPU0\b", ln)), None)
    if header_at is None:
        raise ImportFailure(f"{path}: no matrix header (a line starting with a tab and GPU0)")
    header = [h.strip() for h in lines[header_at].strip("\n").split("\t")[1:]]
    devices = [h for h in header if re.match(r"^(GPU|NIC)\d+$", h)]
    rows: dict[str, list[str]] = {}
    for n, ln in enumerate(lines[header_at + 1:], start=header_at + 2):
        cells = ln.split("\t")
        name = cells[0].strip()
        if not re.match(r"^(GPU|NIC)\d+$", name):
            break
        values = [c.strip() for c in cells[1:]]
        if len(values) < len(devices):
            raise ImportFailure(f"{path}: row {name} has {len(values)} cells for "
                                f"{len(devices)} devices")
        for v in values[:len(devices)]:
            if v not in _RELATIONS and not _NV.match(v):
                raise ImportFailure(f"{path}: row {name}: unknown relation '{v}' (expected X, "
                                    "NV#, PIX, PXB, PHB, NODE or SYS)")
        rows[name] = values
    gpus = [d for d in devices if d.startswith("GPU")]
    nics = [d for d in devices if d.startswith("NIC")]
    missing = [d for d in devices if d not in rows]
    if missing:
        raise ImportFailure(f"{path}: no row for {missing[0]}")
    rel = {(a, b): rows[a][devices.index(b)] for a in devices for b in devices}
    numa_col = header.index("NUMA Affinity") if "NUMA Affinity" in header else None
    numa = {}
    for g in gpus:
        value = rows[g][numa_col] if numa_col is not None and numa_col < len(rows[g]) else ""
        numa[g] = int(value) if value.isdigit() else 0
    notes = []
    if any(not (rows[g][numa_col] if numa_col is not None else "").isdigit() for g in gpus):
        notes.append(f"{path}: no NUMA affinity for some GPUs; assumed NUMA 0")
    for n_ in nics:   # a NIC sits on the NUMA node of the GPUs it does not reach through SYS
        near = [g for g in gpus if rel[n_, g] in ("PIX", "PXB", "PHB", "NODE")]
        numa[n_] = numa[near[0]] if near else 0
    b = _Build()
    numas = sorted(set(numa.values()))
    b.model("CPU", 'device CPU : cpu { }')
    cpu_of = {v: b.add("cpu", "CPU") for v in numas}
    sock = b.link("socket_20", "inter_socket", DEFAULT_SOCKET_BW)
    if len(numas) > 1:
        notes.append(f"{path}: socket link bandwidth unknown; assumed {_gbs(DEFAULT_SOCKET_BW)}")
    for a in range(len(numas)):
        for c in range(a + 1, len(numas)):
            b.wires.append(f"{cpu_of[numas[a]]} <-> {cpu_of[numas[c]]} : {sock}")
    sel = {}
    b.model("GPU", "device GPU : gpu { }")
    for g in gpus:
        sel[g] = b.add("gpu", "GPU")
    for n_ in nics:
        b.model("NIC", "device NIC : nic { }")
        sel[n_] = b.add("nic", "NIC")
    pcie = b.link("pcie_g4_x16", "pcie", PCIE_X16[4], "gen = 4  width = 16")
    notes.append(f"{path}: PCIe generation and width are not in the matrix; assumed Gen4 x16")
    # PCIe: devices related by PIX or PXB share a switch (tree); the rest hang off their CPU.
    members = gpus + nics
    sets = UnionFind()
    for a in members:
        for c in members:
            if a != c and rel[a, c] in ("PIX", "PXB"):
                sets.union(a, c)
    trees: dict[str, list[str]] = defaultdict(list)
    for d in members:
        trees[sets.find(d)].append(d)
    for ds in trees.values():
        if len(ds) == 1:
            b.wires.append(f"{sel[ds[0]]} <-> {cpu_of[numa[ds[0]]]} : {pcie}")
            continue
        b.model("PCIeSwitch", "device PCIeSwitch : pcie_switch { }")
        switch = b.add("sw", "PCIeSwitch")
        b.wires.append(f"{switch} <-> {cpu_of[numa[ds[0]]]} : {pcie}")
        b.wires += [f"{sel[d]} <-> {switch} : {pcie}" for d in ds]
    # NVLink: NV# to every peer beyond 18 links in total means an NVLink switch.
    counts = {(a, c): int(_NV.match(rel[a, c]).group(1)) for a in gpus for c in gpus
              if a != c and _NV.match(rel[a, c])}
    nv = b.link("nvlink_bw25", "nvlink", 25e9)
    if counts:
        notes.append(f"{path}: NVLink generation unknown; assumed 25 GB/s per lane")
        per_gpu = {g: [counts[g, c] for c in gpus if (g, c) in counts] for g in gpus}
        switched = all(len(set(v)) == 1 and sum(v) > 18 for v in per_gpu.values() if v)
        if switched:
            b.model("NVSwitch", "device NVSwitch : switch { }")
            fabric = b.add("nvswitch", "NVSwitch")
            for g, v in per_gpu.items():
                if v:
                    b.wires.append(f"{sel[g]} <-> {fabric} : {nv} x {v[0]}")
        else:
            for (a, c), k in sorted(counts.items()):
                if a < c:
                    b.wires.append(f"{sel[a]} <-> {sel[c]} : {nv} x {k}")
    out = [f"# Imported by topoc from {path}, the output of nvidia-smi topo -m.",
           "# Defaults for what the matrix does not say are listed in docs/nccl.md.", ""]
    out += sorted(b.links.values()) + [""] + sorted(b.models.values()) + [""]
    out += [b.group("Node"), "", "system node : Node", ""]
    return "\n".join(out), sorted(set(notes))
