"""``nvidia-smi topo -m`` (and ``-mp``) matrices as .topo files.

The matrix is read as people paste it: cells separated by tabs or by runs of spaces, the whole
block indented or not, NIC columns named ``NIC#`` (with a NIC legend) or, in older drivers,
``mlx5_#``; rows may lack trailing cells (the matrix is symmetric, so the mirror cell fills in).
What the matrix says is kept apart as it is written: PIX (one PCIe switch), PXB (a switch tree
below one host bridge), PHB/NODE (the same NUMA node's CPU), SYS (another NUMA node), NV# (# bonded
NVLink lanes). What it does not say (the GPU generation, PCIe widths, NIC rates, socket links)
is taken from ``gpu=`` or the ``NVIDIA <model>`` lines nvidia-smi prints beside it, else a
default, and each assumption is a note.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict

from ..compiler.base.figures import nvlink_nominal
from ..compiler.ir.locality import UnionFind
from .base import Build, ImportFailure, finish, gbs, header, library_gpu, printable, require_gpus

_NV = re.compile(r"^NV(\d{1,3})$")
_RELATIONS = ("X", "PIX", "PXB", "PHB", "NODE", "SYS")
_PCIE_LOCAL = {"PIX", "PXB", "PHB", "NODE"}        # same NUMA node
_LABELS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID", "NUMA")
_HEADER_TOKEN = re.compile(r"CPU Affinity|NUMA Affinity|GPU NUMA ID|NUMA\b|GPU\d+|NIC\d+|\S+")
_DEVICE = re.compile(r"^(GPU\d+|NIC\d+|[A-Za-z][A-Za-z0-9]*_\d+)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LEGEND = re.compile(r"[ \t]*(NIC\d+):[ \t]*(\S+)\s*")
# GPU product names as nvidia-smi prints them ("NVIDIA H100 80GB HBM3", "NVIDIA GB200") -> sm.
GPU_SM = {"GB300": 103, "B300": 103, "GB200": 100, "B200": 100, "B100": 100, "GH200": 90,
          "H200": 90, "H100": 90, "H800": 90, "H20": 90, "A100": 80, "A800": 80, "A30": 80,
          "V100": 70, "P100": 60}
_PRODUCT = re.compile(r"\bNVIDIA\s+(?:Tesla\s+)?(" + "|".join(sorted(GPU_SM, key=len, reverse=True))
                      + r")\b")
MAX_DIRECT_LANES = 18    # no GPU has more NVLink lanes than this (H100, B200: 18)
MAX_COLUMNS = 512        # nvidia-smi shows one node: 8 GPUs and a few NICs, 72 at most
MAX_NUMA = 64            # NUMA nodes (CPUs) of one node; each pair gets a socket link


def from_smi(text: str, path: str = "<topo>", gpu: str | None = None) -> tuple[str, list[str]]:
    """A .topo text (and notes) for the matrix ``nvidia-smi topo -m`` prints.

    ``gpu`` names the GPU model (``B200``, ``H100``...) when the paste does not show it; it
    sets the NVLink generation and so the per-lane bandwidth.
    """
    path = printable(path)
    lines = [_ANSI.sub("", ln) for ln in text.splitlines()]
    lines = [ln for ln in lines if not ln.lstrip().startswith("#")]
    devices, labels, rows, notes, start = _read_matrix(lines, path)
    gpus = [d for d in devices if d.startswith("GPU")]
    require_gpus(len(gpus), path, "the matrix")
    nics = [d for d in devices if not d.startswith("GPU")]
    rel = _relations(devices, rows, path, notes)
    numa_label = {}
    for g in gpus:
        cells = dict(zip(labels, rows[g][len(devices):]))
        value = cells.get("NUMA Affinity", cells.get("NUMA", ""))
        numa_label[g] = value if value not in ("", "N/A") else None
    sm, model = _gpu_model(gpu, lines, path, notes)

    b = Build()
    # One line at a time: a multi-line pattern's \s* crossed blank lines, quadratic in them.
    legend = dict(m.groups() for m in map(_LEGEND.fullmatch, lines[start:]) if m)
    domains = _numa_domains(devices, rel, numa_label)
    if len(domains) > MAX_NUMA:
        raise ImportFailure(f"{path}: the matrix puts its devices on {len(domains)} NUMA nodes; "
                            f"one node has at most {MAX_NUMA} (SYS between every pair?)")
    b.model("CPU", "device CPU : cpu { }")
    cpu_of = {}
    for members in domains:
        sel = b.add("cpu", "CPU")
        labels_here = sorted({numa_label[m] for m in members if numa_label.get(m)})
        b.comments.append(f"{sel}: NUMA {', '.join(labels_here) or 'unknown'}: "
                          + " ".join(members))
        cpu_of.update({m: sel for m in members})
    if len(domains) > 1:
        sock = b.link("socket_20", "inter_socket", 20e9)
        notes.append(f"{path}: socket link bandwidth is not in the matrix; assumed 20 GB/s, "
                     "every pair of NUMA nodes linked")
        for i in range(len(domains)):
            for j in range(i + 1, len(domains)):
                b.wires.append(f"cpu[{i}] <-> cpu[{j}] : {sock}")
    known = library_gpu(model)
    if known is not None:
        model = known[0]
        notes.append(f"{path}: GPU figures (HBM, bandwidth, peak FLOP/s) from the library's "
                     f"{model} (library/nvidia/devices.topo)")
    gpu_model = b.model(model, known[1] if known else
                        f"device {model} : gpu {{{f' sm = {sm} ' if sm else ' '}}}")
    sel = {g: b.add("gpu", gpu_model) for g in gpus}
    if nics:
        b.model("NIC", "device NIC : nic { }")
        notes.append(f"{path}: NIC rates are not in the matrix; NICs are declared without one")
    for n in nics:
        sel[n] = b.add("nic", "NIC")
        name = legend.get(n, n if not n.startswith("NIC") else None)
        if name:
            b.comments.append(f"{sel[n]} is {name}")
    gen = 5 if sm and sm >= 90 else 4
    pcie = b.pcie(gen, 16)
    notes.append(f"{path}: PCIe generation and width are not in the matrix; assumed Gen{gen} x16")
    _pcie(b, devices, rel, sel, cpu_of, pcie)
    _nvlink(b, gpus, rel, sel, sm, path, notes)
    out = header(path, "the output of nvidia-smi topo -m")
    out += sorted(b.links.values()) + [""] + sorted(b.models.values()) + [""]
    out += [b.group("Node"), "", "system node : Node", ""]
    return finish(out), sorted(set(notes))


def _read_matrix(lines: list[str], path: str):
    """Device columns, label columns, cells per row, notes, and the line after the matrix."""
    start = None
    for i, ln in enumerate(lines):
        tokens = ln.split()
        if tokens[:1] == ["GPU0"] and any(t.startswith("GPU0") or t == "X"
                                          for t in _next_row(lines, i)):
            start = i
            break
    if start is None:
        raise ImportFailure(f"{path}: no matrix header (a line of column names starting with "
                            "GPU0, followed by the GPU0 row)")
    tokens = _HEADER_TOKEN.findall(lines[start])
    first_label = next((k for k, t in enumerate(tokens) if t in _LABELS), len(tokens))
    devices, labels = tokens[:first_label], tokens[first_label:]
    bad = [t for t in devices if not _DEVICE.match(t)]
    if bad:
        raise ImportFailure(f"{path}:{start + 1}: column '{bad[0]}' is neither a device (GPU#, "
                            f"NIC#, mlx5_#) nor one of {', '.join(_LABELS[:3])}")
    if len(devices) > MAX_COLUMNS:
        raise ImportFailure(f"{path}:{start + 1}: {len(devices)} columns; a matrix of one node "
                            f"has at most {MAX_COLUMNS}")
    if len(set(devices)) != len(devices):
        raise ImportFailure(f"{path}:{start + 1}: a column name repeats")
    rows: dict[str, list[str]] = {}
    notes: list[str] = []
    end = start + 1
    for k in range(start + 1, len(lines)):
        cells = lines[k].split()
        if not cells:
            if rows:
                end = k
                break
            continue
        if cells[0] not in devices:
            end = k
            break
        if cells[0] in rows:
            raise ImportFailure(f"{path}:{k + 1}: a second row for {cells[0]}")
        rows[cells[0]] = _repair(cells[0], cells[1:], len(devices), path, k + 1, notes)
        end = k + 1
    missing = [d for d in devices if d not in rows]
    if missing:
        raise ImportFailure(f"{path}: the matrix has a column {missing[0]} but no row for it")
    return devices, labels, rows, notes, end


def _next_row(lines: list[str], i: int) -> list[str]:
    for ln in itertools.islice(lines, i + 1, None):
        if ln.strip():
            return ln.split()[1:2]
    return []


def _is_relation(cell: str) -> bool:
    return cell in _RELATIONS or bool(_NV.match(cell))


def _repair(name, cells, n, path, line, notes):
    """Split a last device cell that ran into the next column (``PH0-115``: PHB + '0-115')."""
    if len(cells) >= n and not _is_relation(cells[n - 1]):
        m = re.match(r"^([A-Z]+?)(\d[\d,\-]*)$", cells[n - 1])
        if m:
            full = [r for r in _RELATIONS if r.startswith(m.group(1))]
            if len(full) == 1:
                notes.append(f"{path}: cell '{cells[n - 1]}' (first in row {name}, line "
                             f"{line}) read as '{full[0]}' then '{m.group(2)}': the columns "
                             "ran together")
                cells = cells[:n - 1] + [full[0], m.group(2)] + cells[n:]
    return cells


def _relations(devices, rows, path, notes):
    """The relation of every ordered pair; short rows are filled from the mirror cell."""
    n = len(devices)
    rel = {}
    for a in devices:
        for j, c in enumerate(devices):
            cell = rows[a][j] if j < len(rows[a]) else None
            if cell is not None and not _is_relation(cell):
                raise ImportFailure(f"{path}: row {a}, column {c}: unknown relation '{cell}' "
                                    "(expected X, NV#, PIX, PXB, PHB, NODE or SYS)")
            rel[a, c] = cell
    for a in devices:
        if len([x for x in rows[a][:n] if _is_relation(x)]) < n:
            notes.append(f"{path}: row {a} has fewer cells than columns; the rest are read "
                         "from the mirror cells")
        for c in devices:
            if rel[a, c] is None:
                rel[a, c] = "X" if a == c else rel[c, a]
            if rel[a, c] is None:
                raise ImportFailure(f"{path}: no cell for {a} and {c} in either row")
            if (a == c) != (rel[a, c] == "X"):
                raise ImportFailure(f"{path}: row {a}, column {c}: 'X' belongs on the diagonal "
                                    f"only (found '{rel[a, c]}')")
    for a in devices:
        for c in devices:
            if rel[a, c] != rel[c, a]:
                raise ImportFailure(f"{path}: {a}-{c} is '{rel[a, c]}' but {c}-{a} is "
                                    f"'{rel[c, a]}'; the matrix must be symmetric")
    return rel


def _gpu_model(gpu, lines, path, notes):
    if gpu:
        key = next((k for k in sorted(GPU_SM, key=len, reverse=True) if k in gpu.upper()), None)
        if key is None:
            raise ImportFailure(f"gpu '{gpu}' is not a model topoc knows "
                                f"(one of {', '.join(sorted(GPU_SM))})")
        return GPU_SM[key], key
    found = sorted({m for ln in lines for m in _PRODUCT.findall(ln)})
    if len(found) == 1:
        notes.append(f"{path}: GPU model {found[0]} read from the nvidia-smi lines beside "
                     "the matrix")
        return GPU_SM[found[0]], found[0]
    notes.append(f"{path}: the GPU model is not in the paste; NVLink lanes assumed 25 GB/s "
                 "(give --gpu, e.g. --gpu B200 for NVLink5 at 50 GB/s)"
                 + (f"; it names several: {', '.join(found)}" if found else ""))
    return None, "GPU"


def _numa_domains(devices, rel, numa_label):
    """Devices that reach each other without crossing SYS share a NUMA node (its CPU)."""
    sets = UnionFind()
    for a in devices:
        sets.find(a)
        for c in devices:
            if a != c and rel[a, c] in _PCIE_LOCAL:
                sets.union(a, c)
    by_label: dict[str, str] = {}
    for d, label in numa_label.items():   # GPUs alone in their node: joined by their label
        if label is not None:
            if label in by_label:
                sets.union(by_label[label], d)
            by_label.setdefault(label, d)
    groups: dict[str, list[str]] = defaultdict(list)
    for d in devices:
        groups[sets.find(d)].append(d)
    return list(groups.values())


def _pcie(b, devices, rel, sel, cpu_of, pcie):
    """PIX groups share a switch; a PXB tree of several units gets a root switch above them."""
    leaves, trees = UnionFind(), UnionFind()
    for a in devices:
        leaves.find(a), trees.find(a)
        for c in devices:
            if a != c and rel[a, c] == "PIX":
                leaves.union(a, c)
            if a != c and rel[a, c] in ("PIX", "PXB"):
                trees.union(a, c)
    tree_units: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for d in devices:
        tree_units[trees.find(d)][leaves.find(d)].append(d)
    for units in tree_units.values():
        first = next(iter(units.values()))[0]
        up = cpu_of[first]
        if len(units) > 1:
            b.model("PCIeSwitch", "device PCIeSwitch : pcie_switch { }")
            root = b.add("sw", "PCIeSwitch")
            b.wires.append(f"{root} <-> {up} : {pcie}")
            up = root
        for members in units.values():
            if len(members) == 1 and len(units) == 1:
                b.wires.append(f"{sel[members[0]]} <-> {up} : {pcie}")
                continue
            b.model("PCIeSwitch", "device PCIeSwitch : pcie_switch { }")
            leaf = b.add("sw", "PCIeSwitch")
            b.wires.append(f"{leaf} <-> {up} : {pcie}")
            b.wires += [f"{sel[d]} <-> {leaf} : {pcie}" for d in members]


def _nvlink(b, gpus, rel, sel, sm, path, notes):
    """NV# to every NVLink peer, beyond what direct lanes could carry, means NVLink switches."""
    counts = {(a, c): int(_NV.match(rel[a, c]).group(1)) for a in gpus for c in gpus
              if a != c and _NV.match(rel[a, c])}
    if not counts:
        return
    lane, name = nvlink_nominal(sm) if sm else (25e9, "unknown")
    nv = b.link(f"nvlink_bw{int(lane // 1e9)}", "nvlink", lane)
    per_gpu = {g: [counts[g, c] for c in gpus if (g, c) in counts] for g in gpus}
    linked = [g for g, v in per_gpu.items() if v]
    switched = all(len(set(per_gpu[g])) == 1 and len(per_gpu[g]) == len(linked) - 1
                   and sum(per_gpu[g]) > MAX_DIRECT_LANES for g in linked)
    if not switched:
        crowded = next((g for g in linked if len(per_gpu[g]) > MAX_DIRECT_LANES), None)
        if crowded is not None:
            raise ImportFailure(f"{path}: {crowded} has NVLink to {len(per_gpu[crowded])} GPUs "
                                f"without a switch fabric; no GPU has more than "
                                f"{MAX_DIRECT_LANES} NVLink lanes")
    if sm:
        notes.append(f"{path}: NVLink lanes at {gbs(lane)} per direction ({name}, sm {sm})")
    if switched:
        reduction = "  reduction = true" if sm and sm >= 90 else ""
        b.model("NVSwitch", f"device NVSwitch : switch {{{reduction} }}")
        fabric = b.add("nvswitch", "NVSwitch")
        notes.append(f"{path}: every NVLink GPU has NV{per_gpu[linked[0]][0]} to every other, "
                     "more lanes than direct links carry: one NVLink switch fabric"
                     + (" with in-switch reduction (NVLS, sm >= 90)" if reduction else ""))
        b.wires += [f"{sel[g]} <-> {fabric} : {nv} x {per_gpu[g][0]}" for g in linked]
        return
    order = {g: i for i, g in enumerate(gpus)}
    b.wires += [f"{sel[a]} <-> {sel[c]} : {nv} x {k}" for (a, c), k in sorted(counts.items())
                if order[a] < order[c]]
