"""hwloc 2 XML (``lstopo node.xml``) as a .topo node.

What is read: each Package as a CPU (its ``CPUModel``, the memory of its NUMA nodes); the PCIe
tree below it, where a chain of bridges of one chip (one vendor:device id) is one PCIe switch
and a root port belongs to its CPU; every GPU (an NVML or CUDA OS device, model from
``GPUModel``; where hwloc ran without those plugins, as Debian's stock ``lstopo`` does, an
NVIDIA PCI device of class 3D controller or VGA, model ``GPU``, with a note); every OpenFabrics device (``mlx5_0``: an InfiniBand or RoCE NIC, its
``NodeGUID`` kept in its description, so the host can be matched with its ibnetdiscover ports);
NVSwitches (PCI devices of subtype NVSwitch); and the ``NVLinkBandwidth`` matrix, turned into
NVLink lanes at the GPU generation's lane rate (25 GB/s for NVLink 2-4, 20 GB/s for NVLink 1).
PCIe links take the bandwidth hwloc measured (``pci_link_speed``, GB/s). What hwloc does not
say is a documented default and a note: the socket link (20 GB/s).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..compiler.base.figures import nvlink_nominal
from ..compiler.lang import emit
from .base import Build, ImportFailure, ident, printable, require_gpus
from .guids import normalize
from .smi import GPU_SM

#: hwloc 2 XML osdev_type values (hwloc 3 writes a bitmask instead: GPU 4, COPROC 8,
#: NETWORK 16, OPENFABRICS 32).
V2_GPU, V2_NETWORK, V2_OPENFABRICS, V2_COPROC = 1, 2, 3, 5
#: PCI ids of an NVIDIA GPU when no NVML/CUDA OS device names it: vendor 0x10de, class 0x0302
#: (3D controller: the data-centre GPUs) or 0x0300 (VGA controller).
NVIDIA_VENDOR = "10de"
GPU_CLASSES = ("0302", "0300")
_PCI_TYPE = re.compile(r"^([0-9a-fA-F]{4})\s+\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]")
MAX_DEPTH = 128
_INTEGER = re.compile(r"-?[0-9]{1,19}")
_DECIMAL = re.compile(r"[0-9]{1,6}(?:\.[0-9]{1,12})?")
_TOKEN = re.compile(r"[!-\"$-~]+")    # printable ASCII but space and "#": one field of a line
_SM_MODEL = re.compile(r"\b(" + "|".join(sorted(GPU_SM, key=len, reverse=True)) + r")\b")


def _infos(el: ET.Element) -> dict[str, str]:
    return {i.get("name", ""): i.get("value", "") for i in el.findall("info")}


def _bus(el: ET.Element) -> str:
    """The bus a PCI object sits on: ``0000:2d`` from ``pci_busid="0000:2d:04.0"``."""
    return el.get("pci_busid", "").rsplit(":", 1)[0]


def _secondary(el: ET.Element) -> str:
    """A bridge's secondary bus: ``0000:2d`` from ``bridge_pci="0000:[2d-3b]"``."""
    m = re.match(r"([0-9a-fA-F]{4}):\[([0-9a-fA-F]{2})", el.get("bridge_pci", ""))
    return f"{m.group(1)}:{m.group(2)}" if m else ""


def _cpu_model(text: str) -> str:
    """``Xeon_Platinum_8174`` from ``Intel(R) Xeon(R) Platinum 8174 CPU @ 3.10GHz``."""
    text = re.sub(r"\((R|TM|tm|r)\)|\bCPU\b|\bIntel\b|\bAMD\b|,.*$|@.*$", " ", text)
    return ident("_".join(text.split())) or "CPU"


class _Reader:
    def __init__(self, root: ET.Element, path: str):
        self.path = path
        self.v3 = not root.get("version", "2").startswith(("1", "2"))
        self.b = Build()
        self.by_gp: dict[str, str] = {}        # "OSDev:802" / "PCIDev:703" / "Package:3" -> sel
        self.gpu_sm: int | None = None
        self.notes: list[str] = []
        self.speeds: dict[float, str] = {}
        self.guids: list[tuple[str, int]] = []      # (node GUID, NIC index)
        self.pci_gpus: list[str] = []               # PCI ids of GPUs found by class only
        # GPUs come from PCI ids only when no OS device names any (lstopo without NVML/CUDA)
        self.by_pci = not any(o.get("type") == "OSDev" and self.os_kind(o) == "gpu"
                              for o in root.iter("object"))

    def os_kind(self, osdev: ET.Element) -> str:
        t = self.number(osdev, "osdev_type", -1, 2**32)
        name = osdev.get("name", "")
        backend = _infos(osdev).get("Backend", "")
        if self.v3:
            gpu, of = bool(t & 4) or bool(t & 8), bool(t & 32)
        else:
            gpu, of = t in (V2_GPU, V2_COPROC), t == V2_OPENFABRICS
        if gpu and (backend in ("NVML", "CUDA") or name.startswith(("nvml", "cuda"))):
            return "gpu"
        if of:
            return "nic"
        return ""

    def number(self, el: ET.Element, name: str, default: int, high: int) -> int:
        """Attribute ``name`` of ``el`` as a whole number in [-1, high] (``default`` when
        absent); ImportFailure naming the element and the text when it is anything else."""
        value = el.get(name)
        if value is None:
            return default
        return _integer(value, f"{self.path}: <{el.tag} type=\"{printable(el.get('type', ''))}\">"
                               f" attribute {name}", high)

    def speed(self, el: ET.Element) -> float:
        """A PCI object's ``pci_link_speed`` (GB/s, hwloc writes it as a decimal); 16 when
        absent or 0."""
        text = (el.get("pci_link_speed") or "0").strip()
        if not _DECIMAL.fullmatch(text) or float(text) > 4096:
            raise ImportFailure(f"{self.path}: <{el.tag} pci_busid=\"{printable(el.get('pci_busid', ''))}\"> "
                                f"pci_link_speed '{printable(text[:40])}' is not a speed in "
                                "GB/s (hwloc writes a number such as 15.753846)")
        return float(text) or 16.0

    def pcie(self, gbps: float) -> str:
        if gbps not in self.speeds:
            name = f"pcie_{gbps:.1f}".replace(".", "_")
            self.speeds[gbps] = self.b.link(name, "pcie", gbps * 1e9)
        return self.speeds[gbps]

    def package(self, pkg: ET.Element) -> None:
        info = _infos(pkg)
        model = _cpu_model(info.get("CPUModel", "CPU"))
        memory = sum(self.number(n, "local_memory", 0, 2**60) for n in pkg.iter("object")
                     if n.get("type") == "NUMANode")
        decl = f"device {model} : cpu {{" + (f" memory = {memory} B" if memory else "") + " }"
        self.b.model(model, decl)
        sel = self._add_cpu(model)
        self.by_gp[f"Package:{pkg.get('gp_index')}"] = sel
        for child in pkg:
            self.io(child, sel, None, sel)

    def _add_cpu(self, model: str) -> str:
        # Build wants one model per array: CPUs are members cpu0, cpu1 ... when models differ.
        self.b.instances["cpu"].append(model)
        return f"cpu[{len(self.b.instances['cpu']) - 1}]"

    def io(self, el: ET.Element, parent: str, chip: str | None, cpu: str) -> None:
        """Walk the I/O tree below ``parent`` (a CPU or a PCIe switch selector); ``chip`` is
        the internal bus of the switch ``parent`` (a bridge on that bus is one of its
        downstream ports, any other bridge the upstream port of a switch below it)."""
        kind = el.get("type")
        if kind == "Bridge":
            if el.get("bridge_type", "").startswith("0-"):       # host bridge
                for c in el:
                    self.io(c, cpu, None, cpu)
                return
            this = _secondary(el)
            if parent == cpu and chip is None:                    # a root port of the CPU
                for c in el:
                    self.io(c, cpu, "root", cpu)
                return
            if chip and _bus(el) == chip:                         # a downstream port
                for c in el:
                    self.io(c, parent, chip, cpu)
                return
            self.b.model("PCIeSwitch", "device PCIeSwitch : pcie_switch { }")
            sel = self.b.add("sw", "PCIeSwitch")
            self.b.wires.append(f"{sel} <-> {parent} : "
                                f"{self.pcie(self.speed(el))}")
            for c in el:
                self.io(c, sel, this, cpu)
            return
        if kind == "PCIDev":
            self.pci(el, parent)
            return
        if kind not in ("OSDev",):
            for c in el:
                if c.tag == "object":
                    self.io(c, parent, chip, cpu)

    def pci(self, el: ET.Element, parent: str) -> None:
        speed = self.speed(el)
        if el.get("subtype") == "NVSwitch":
            self.b.model("NVSwitch", "device NVSwitch : switch { }")
            sel = self.b.add("nvswitch", "NVSwitch")
            self.by_gp[f"PCIDev:{el.get('gp_index')}"] = sel
            self.b.wires.append(f"{sel} <-> {parent} : {self.pcie(speed)}")
            return
        for osdev in el.findall("object"):
            if osdev.get("type") != "OSDev":
                continue
            what = self.os_kind(osdev)
            info = _infos(osdev)
            if what == "gpu" and f"PCIDev:{el.get('gp_index')}" in self.by_gp:
                self.by_gp[f"OSDev:{osdev.get('gp_index')}"] = self.by_gp[
                    f"PCIDev:{el.get('gp_index')}"]           # cuda0 beside nvml0: one GPU
                continue
            if what == "gpu":
                text = info.get("GPUModel", "GPU")
                m = _SM_MODEL.search(text)
                model = ident(text.replace("NVIDIA ", "").replace("Tesla ", "")) or "GPU"
                sm = GPU_SM.get(m.group(1)) if m else None
                self.gpu_sm = self.gpu_sm or sm
                self.b.model(model, f"device {model} : gpu {{{f' sm = {sm} ' if sm else ' '}}}")
                sel = self.b.add("gpu", model)
                self.by_gp[f"OSDev:{osdev.get('gp_index')}"] = sel
                self.by_gp[f"PCIDev:{el.get('gp_index')}"] = sel
                self.b.wires.append(f"{sel} <-> {parent} : {self.pcie(speed)}")
                continue
            if what == "nic":
                guid = info.get("NodeGUID", "")
                self.b.model("HCA", "device HCA : nic { }")
                sel = self.b.add("nic", "HCA")
                if guid:
                    self.guids.append((guid, self.b.count("nic") - 1))
                self.b.comments.append(f"{sel} is {osdev.get('name')}"
                                       + (f", node GUID {guid}" if guid else ""))
                self.by_gp[f"PCIDev:{el.get('gp_index')}"] = sel
                self.b.wires.append(f"{sel} <-> {parent} : {self.pcie(speed)}")
                return
        m = _PCI_TYPE.match(el.get("pci_type", ""))
        if m and self.by_pci and f"PCIDev:{el.get('gp_index')}" not in self.by_gp and \
                m.group(2).lower() == NVIDIA_VENDOR and m.group(1) in GPU_CLASSES:
            # No NVML/CUDA OS device (lstopo without those plugins): the PCI ids say GPU.
            self.b.model("GPU", "device GPU : gpu { }")
            sel = self.b.add("gpu", "GPU")
            self.by_gp[f"PCIDev:{el.get('gp_index')}"] = sel
            self.pci_gpus.append(f"{m.group(2)}:{m.group(3)}".lower())
            self.b.wires.append(f"{sel} <-> {parent} : {self.pcie(speed)}")

    def islands(self) -> list[list[int]]:
        """The GPUs (by index) grouped by NVLink reach, through NVSwitches too, when NVLink
        joins some but leaves more than one group; [] otherwise."""
        gpus = self.b.count("gpu")
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            while parent.get(x, x) != x:
                x = parent[x]
            return x
        linked = False
        for w in self.b.wires:
            m = re.match(r"(\S+) <-> (\S+) : nvlink_", w)
            if m:
                linked = True
                parent[find(m.group(1))] = find(m.group(2))
        if not linked:
            return []
        groups: dict[str, list[int]] = {}
        for i in range(gpus):
            groups.setdefault(find(f"gpu[{i}]"), []).append(i)
        return list(groups.values()) if len(groups) > 1 else []

    def nvlinks(self, root: ET.Element) -> None:
        lane_bw, gen = nvlink_nominal(self.gpu_sm)
        for dist in root.iter():
            if dist.tag not in ("distances2", "distances2hetero") or \
                    dist.get("name") != "NVLinkBandwidth":
                continue
            idx = " ".join(i.text or "" for i in dist.findall("indexes")).split()
            vals = [_integer(v, f"{self.path}: NVLinkBandwidth value", 2**40) for v in
                    " ".join(u.text or "" for u in dist.findall("u64values")).split()]
            n = self.number(dist, "nbobjs", 0, 4096)
            if dist.tag == "distances2":
                kind = dist.get("type", "")
                idx = [f"{kind}:{i}" for i in idx]
            if len(idx) != n or len(vals) != n * n:
                raise ImportFailure(f"{self.path}: NVLinkBandwidth matrix of {n} objects has "
                                    f"{len(idx)} indexes and {len(vals)} values")
            link = self.b.link(f"nvlink_{gen.lower().replace('-', '_')}", "nvlink", lane_bw)
            for i in range(n):
                for j in range(i + 1, n):
                    v = max(vals[i * n + j], vals[j * n + i]) * 1e6   # MB/s -> bytes/s
                    a, b = self.by_gp.get(idx[i]), self.by_gp.get(idx[j])
                    if not v or a is None or b is None:
                        continue
                    lanes = round(v / lane_bw)
                    if lanes < 1 or abs(lanes * lane_bw - v) > 0.01 * v:
                        name = self.b.link(f"nvlink_{int(v // 1e6)}mbs", "nvlink", v)
                        self.b.wires.append(f"{a} <-> {b} : {name}")
                    else:
                        self.b.wires.append(f"{a} <-> {b} : {link}"
                                            + (f" x {lanes}" if lanes > 1 else ""))
            self.notes.append(f"{self.path}: NVLink lanes from NVLinkBandwidth at {gen}'s "
                              f"{lane_bw / 1e9:g} GB/s per lane")


def _check_depth(root: ET.Element, path: str) -> None:
    """ImportFailure past ``MAX_DEPTH`` levels: the reader walks the I/O tree recursively, and
    a real machine's tree is a dozen levels deep."""
    stack = [(root, 1)]
    while stack:
        el, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ImportFailure(f"{path}: XML nested more than {MAX_DEPTH} deep; an hwloc "
                                "topology is a few dozen levels at most")
        stack.extend((c, depth + 1) for c in el)


def _integer(text: str, what: str, high: int) -> int:
    """``text`` as a whole number in [-1, high], else ImportFailure saying ``what`` it was."""
    text = text.strip()
    if not _INTEGER.fullmatch(text) or not -1 <= int(text) <= high:
        raise ImportFailure(f"{what} is '{printable(text[:40])}', not a whole number "
                            f"between 0 and {high:,}")
    return int(text)


def from_hwloc(text: str, path: str = "<lstopo.xml>",
               guids: dict[str, tuple[str, int]] | None = None) -> tuple[str, list[str]]:
    """The .topo text (and notes) of one lstopo XML export; ``guids``, when given, is filled
    with each HCA's node GUID -> (hostname, NIC index) (``topoc.importers.guids``)."""
    path = printable(path)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ImportFailure(f"{path}: not XML: {exc}") from None
    _check_depth(root, path)
    if root.tag != "topology":
        raise ImportFailure(f"{path}: not an hwloc topology (the root element is "
                            f"<{root.tag}>, lstopo writes <topology>)")
    r = _Reader(root, path)
    machine = next((o for o in root.iter("object") if o.get("type") == "Machine"), None)
    if machine is None:
        raise ImportFailure(f"{path}: no Machine object")
    packages = [o for o in machine.iter("object") if o.get("type") == "Package"]
    if not packages:
        raise ImportFailure(f"{path}: no Package (CPU) object")
    for pkg in packages:
        r.package(pkg)
    # I/O attached to the machine itself (no locality) goes to the first CPU.
    for child in machine:
        if child.get("type") in ("Bridge", "PCIDev"):
            r.io(child, "cpu[0]", None, "cpu[0]")
    require_gpus(len(r.b.instances.get("gpu", ())), path, "the hwloc topology")
    if r.pci_gpus:
        ids = ", ".join(sorted(set(r.pci_gpus)))
        r.notes.append(f"{path}: {len(r.pci_gpus)} GPU(s) found by PCI ids ({ids}: NVIDIA, "
                       "class 3D/VGA controller) as the XML has no NVML or CUDA OS devices "
                       "(lstopo without those plugins): model 'GPU', compared by count; no "
                       "NVLink without NVML")
    r.nvlinks(root)
    islands = r.islands()
    if islands:
        spans = "; ".join(_span(g) for g in islands)
        r.notes.append(f"warning: {path}: NVLink joins the {sum(map(len, islands))} GPUs in "
                       f"{len(islands)} separate islands ({spans}): pairs across islands go "
                       "through PCIe and the host. hwloc reports the NVLinks it sees; links it "
                       "cannot see (bridges between baseboards' NVSwitches, as on a DGX-2) "
                       "must be added by hand")
    cpus = r.b.instances["cpu"]
    if len(cpus) > 1:
        sock = r.b.link("socket_20", "inter_socket", 20e9)
        r.notes.append(f"{path}: socket link bandwidth is not in hwloc's XML; assumed 20 GB/s")
        for i in range(len(cpus)):
            for j in range(i + 1, len(cpus)):
                r.b.wires.append(f"cpu[{i}] <-> cpu[{j}] : {sock}")
    hostname = _infos(machine).get("HostName", "")
    if guids is not None and hostname and not _TOKEN.fullmatch(hostname):
        # the --guids file is '<GUID> <hostname> <index>' lines: a space or newline in the name
        # would be a second field or a second line
        r.notes.append(f"{path}: HostName '{printable(hostname)}' is not one word; its HCAs "
                       "are left out of --guids")
    elif guids is not None:
        for guid, idx in r.guids:
            try:
                guids[normalize(guid)] = (hostname or "node", idx)
            except ImportFailure:
                r.notes.append(f"{path}: NodeGUID '{guid}' is not a GUID; left out")
    product = _infos(machine).get("DMIProductName", "")
    out = [f"# Imported by topoc from {emit.comment(path)}, an hwloc XML topology"
           + (f" of {emit.comment(product)}" if product else "") + ".",
           "# Defaults for what the input does not say are listed in docs/drift.md.", ""]
    out += sorted(r.b.links.values()) + [""] + sorted(r.b.models.values()) + [""]
    out.append(_group(r.b))
    if hostname:
        out += ["", f"group Machine {{ host {ident(hostname, 'h_')} : Node "
                f"{emit.pattern(hostname)} }}", "",
                "system node : Machine", ""]
    else:
        out += ["", "system node : Node", ""]
    return "\n".join(out), sorted(set(r.notes))


def _group(b: Build) -> str:
    """``Build.group`` with CPUs of different models written one member each."""
    cpus = b.instances.pop("cpu")
    text = b.group("Node")
    head, rest = text.split("\n", 1)
    if len(set(cpus)) == 1:
        members = [f"  cpu[{len(cpus)}] : {cpus[0]}"]
    else:
        members = [f"  cpu{i} : {m}" for i, m in enumerate(cpus)]
        rest = re.sub(r"cpu\[(\d+)\]", r"cpu\1", rest)
    b.instances["cpu"] = cpus
    return "\n".join([head, *members, rest])


def _span(indices: list[int]) -> str:
    """``gpu0-7`` for a run, ``gpu0,2,5`` otherwise."""
    if indices == list(range(indices[0], indices[-1] + 1)) and len(indices) > 1:
        return f"gpu{indices[0]}-{indices[-1]}"
    return "gpu" + ",".join(map(str, indices))
