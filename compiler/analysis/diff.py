"""Drift: what differs between two systems, say a declared .topo and what the machines report.

Names are aligned first: hosts by hostname (``compiler.ir.hosts``; when the two sides share no
hostname and have as many hosts, in order, and one host each always pairs), HCAs by identity
(``mlx5_3``, ``fabric.hca_indices``) then by order, devices inside a host by kind and position
(GPU 3 of a host is GPU 3 of the same host on the other side; when one side has fewer, the
ones it lacks are those whose absence explains the rest best), switches by name. Then, per
aligned host: devices by kind and model; NVLink lanes per GPU (and per directly wired GPU
pair); each GPU's NIC, PCIe switch sharing and NUMA node (CPU); each NIC's PCIe switch and NUMA
node; and over the fabric: switches with their models and every cable with its rate. A host,
HCA, GPU or switch only one side has is one finding that names it; its cables are not listed
again.

A side that describes nothing of a kind (an ibnetdiscover dump has no GPUs, an nvidia-smi
matrix no switches) is not compared on it; the ``notes`` say what was skipped, so a dump of the
fabric can be checked against a full design without reporting every GPU as missing.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping

import attrs

from ..ir.hosts import HostInfo
from ..ir.system import System
from ..ir.locality import natural
from .fabric import Fabric, Hca, fabric


#: Model names an importer writes when the input does not say the model (nvidia-smi matrices,
#: NCCL dumps without a GPU name, ibnetdiscover HCAs without a device id): not compared.
#: The NCCL XML importer's CPUs and NICs (``CPU_GenuineIntel_6_143``, ``NIC_400000M``: the
#: dump gives a CPU's family and a NIC's speed, not the product) are placeholders too.
_PLACEHOLDER = re.compile(r"^(GPU(_sm\d+)?|CPU(_[A-Za-z0-9]+(_\d+)*)?|NIC(_\d+M)?|HCA(_[\d_]+G)?|"
                          r"PCIeSwitch|Switch)$")


def known(model: str) -> bool:
    """Whether a model name says the model (not an importer's placeholder)."""
    return not _PLACEHOLDER.match(model)


class DiffError(ValueError):
    """The comparison cannot be made as asked (``host`` names no host of A)."""


@attrs.frozen
class Finding:
    """One difference: its category, where (host, device or cable) and the two values."""

    category: str       # hosts | devices | nvlink | nic | pcie | numa | switches | cabling | ports
    where: str
    a: str
    b: str
    message: str
    #: which subnet's dump (plane) of B the finding's switch came from, when B is several
    plane: str = ""


@attrs.frozen
class Diff:
    """Every difference in a stable order, and notes on what was not compared."""

    findings: tuple[Finding, ...]
    notes: tuple[str, ...]
    compared: tuple[str, ...]

    @property
    def equal(self) -> bool:
        """True when nothing differs."""
        return not self.findings


def _align(ha: tuple[HostInfo, ...], hb: tuple[HostInfo, ...], notes: list[str]):
    names_a, names_b = [h.name for h in ha], [h.name for h in hb]
    if len(ha) == len(hb) and not set(names_a) & set(names_b) and ha:
        if len(ha) > 1:
            notes.append("no hostname in common: hosts paired in declaration order")
        return list(zip(ha, hb)), [], []
    b_by = {h.name: h for h in hb}
    pairs = [(h, b_by[h.name]) for h in ha if h.name in b_by]
    only_a = [h for h in ha if h.name not in b_by]
    a_names = set(names_a)
    only_b = [h for h in hb if h.name not in a_names]
    return pairs, only_a, only_b


def _named(system: System) -> bool:
    """Whether the system names its hosts (a hostname pattern in the file, or the hostnames a
    dump reported), rather than by their path."""
    return any(h.pattern for h in system.hosts)


def _by_kind(system: System, host: HostInfo) -> dict[str, list]:
    out: dict[str, list] = defaultdict(list)
    for d in host.devices:
        dev = system.device(d)
        out[dev.kind].append(dev)
    return out


def _gpu_facts(system: System, host: HostInfo) -> list[dict]:
    """Per GPU of the host in order: model, NVLink lanes, direct GPU peers, NIC, PCIe switch
    sharing, CPU, each as host-relative positions."""
    rank_of = system.memo.get("diff_rank_of")
    if rank_of is None:             # once per system, not once per host
        rank_of = system.memo["diff_rank_of"] = {g.id: r for r, g in enumerate(system.gpus)}
    kinds = _by_kind(system, host)
    pos = {d.id: i for k in kinds for i, d in enumerate(kinds[k])}
    loc = system.locality
    out = []
    for g in kinds.get("gpu", ()):
        # the GPU's own links (every link of the system per host was quadratic in hosts:
        # diff of 1,024 NVL72 racks against itself ran past 500 s)
        lanes, pair = 0, Counter()
        for link in system.links_of(g.id):
            if link.cls != "nvlink":
                continue
            lanes += link.lanes
            other = link.dst if link.src == g.id else link.src
            if other in rank_of:
                pair[other] += link.lanes
        r = rank_of[g.id]
        nic, sw, cpu = loc.nic(r), loc.pcie_switch(r), loc.socket(r)
        peers = sorted((pos[o], n) for o, n in pair.items() if o in pos)
        out.append({"model": g.model.name, "lanes": lanes, "peers": peers,
                    "nic": pos.get(nic), "switch": pos.get(sw), "cpu": pos.get(cpu)})
    return out


def diff(a: System, b: System, host: str | None = None,
         planes: Mapping[str, str] | None = None,
         ports: tuple[Mapping, Mapping] | None = None) -> Diff:
    """The differences between ``a`` (say, the declared design) and ``b`` (what was found).
    ``host`` compares one host of ``a`` (by hostname) with ``b``'s only host: a node's dump
    against the cluster's design. ``planes`` (switch name -> label, say ``plane 2:
    dump2.txt``), for a B imported from several subnets' dumps: each switch, cabling and HCA
    finding says the plane of its switch (an HCA's: of the switches it is cabled to).
    ``ports`` (A's and B's cable ports, ``topoc.importers.ports`` maps, as dumps report them)
    compares the ports of the cables both sides have: one moved to another port is a
    difference."""
    fa, fb = fabric(a), fabric(b)
    notes: list[str] = []
    found: list[Finding] = []
    compared: list[str] = []
    if host is not None:
        mine = [h for h in fa.hosts if h.name == host]
        if not mine:
            raise DiffError(f"A has no host '{host}'" + (
                f"; its hosts are {', '.join(h.name for h in fa.hosts[:5])}"
                + (", ..." if len(fa.hosts) > 5 else "") if fa.hosts else ""))
        if len(fb.hosts) != 1:
            raise DiffError(f"--host compares one host with B's only host, but B has "
                            f"{len(fb.hosts)} hosts")
        fa = attrs.evolve(fa, hosts=tuple(mine))
        fb = attrs.evolve(fb, hosts=(attrs.evolve(fb.hosts[0], name=host),))
    pairs, only_a, only_b = _align(fa.hosts, fb.hosts, notes)
    fabrics = bool(fa.switches and fb.switches and host is None)
    if fa.hosts and fb.hosts:
        compared.append("hosts")
        renamed = [(x, y) for x, y in pairs if x.name != y.name]
        if renamed and host is None:
            if _named(a) and _named(b):     # both name their hosts: a rename is drift
                for x, y in renamed:
                    found.append(Finding("hosts", f"{x.name}|{y.name}", x.name, y.name,
                                         f"host '{x.name}' in A is named '{y.name}' in B"))
            else:
                notes.append("hosts paired by position, a side names them by their path: "
                             + ", ".join(f"A's '{x.name}' is B's '{y.name}'"
                                         for x, y in renamed[:3])
                             + (f" and {len(renamed) - 3} more" if len(renamed) > 3 else ""))
        for h in only_a:
            found.append(Finding("hosts", h.name, "present", "missing",
                                 f"host '{h.name}' is in A but not in B"
                                 + (_cabled(fa, h.name) if fabrics else "")))
        for h in only_b:
            found.append(Finding("hosts", h.name, "missing", "present",
                                 f"host '{h.name}' is in B but not in A"
                                 + (_cabled(fb, h.name) if fabrics else "")))
    loose = _loose_nics(b, fb)
    if loose:
        notes.append(f"B has {loose} NIC(s) cabled to the fabric outside any host (HCAs "
                     "without a hostname in their node description, or of management and "
                     "storage hosts): not compared")
    gone: dict[str, Counter] = defaultdict(Counter)     # host -> models of HCAs only A has
    new: dict[str, Counter] = defaultdict(Counter)      # host -> models of HCAs only B has
    if fabrics:
        fb, only = _match_hcas(fa, fb, pairs)
        for side, h in only:
            (gone if side == "a" else new)[h.host][h.model] += 1
            found.append(_hca_finding(side, h, fa if side == "a" else fb))
        notes += _plane_hint(fa, pairs, only)
    kinds_a = {d.kind for d in a.devices}
    kinds_b = {d.kind for d in b.devices}
    both = kinds_a & kinds_b
    for k in sorted((kinds_a | kinds_b) - both):
        side = "A" if k in kinds_a else "B"
        notes.append(f"only {side} describes {k} devices: not compared")
    for ha, hb in pairs:
        where = ha.name if ha.name == hb.name else f"{ha.name}|{hb.name}"
        ka, kb = _by_kind(a, ha), _by_kind(b, hb)
        for kind in sorted(both):
            ma = Counter(d.model.name for d in ka.get(kind, ()))
            mb = Counter(d.model.name for d in kb.get(kind, ()))
            if kind == "nic":       # HCAs named missing or extra above are not counted again
                ma -= gone[ha.name]
                mb -= new[ha.name]
            if not all(map(known, (*ma, *mb))):     # a side that cannot name models: counts
                ma = Counter({f"{kind}": sum(ma.values())})
                mb = Counter({f"{kind}": sum(mb.values())})
            if kind in ("switch", "net_switch") or ma == mb:
                continue
            if kind == "gpu" and sum(ma.values()) != sum(mb.values()):
                continue        # the GPUs one side lacks are named one by one below
            found.append(Finding("devices", f"{where} {kind}", _count(ma), _count(mb),
                                 f"{where}: {kind} devices differ: {_count(ma)} in A, "
                                 f"{_count(mb)} in B"))
        if "gpu" in both:
            _compare_gpus(a, b, ha, hb, where, both, found)
        if "nic" in both and "cpu" in both:
            _compare_nics(a, b, ha, hb, where, both, found)
    if "gpu" in both:
        compared += ["devices", "nvlink"] + [c for c, k in (("nic", "nic"), ("pcie",
                                                                        "pcie_switch"),
                                                            ("numa", "cpu")) if k in both]
    if any(not known(m) for s in (a, b) for m in {d.model.name for d in s.devices}):
        notes.append("a side names some models only by kind (GPU, CPU, NIC...): those are "
                     "compared by count")
    if fabrics:
        compared += ["switches", "cabling"]
        # A host, HCA or switch only one side has is one finding: its cables are not listed.
        gone_hosts = {h.name for h in only_a}
        new_hosts = {h.name for h in only_b}
        _compare_fabric(fa, fb, found, frozenset(
            [f"{x.host}/{x.index}" for side, x in only if side == "a"]
            + [f"{x.host}/{x.index}" for x in fa.hcas if x.host in gone_hosts]),
            frozenset(f"{x.host}/{x.index}" for x in fb.hcas if x.host in new_hosts))
        if ports is not None:
            compared.append("ports")
            _compare_ports(*ports, found)
    elif (fa.switches or fb.switches) and host is None:
        notes.append(f"only {'A' if fa.switches else 'B'} has a scale-out fabric: cabling not "
                     "compared")
    if planes:
        found = _on_planes(found, planes, fa, fb)
    return Diff(tuple(found), tuple(notes), tuple(dict.fromkeys(compared)))


def _on_planes(found: list[Finding], planes: Mapping[str, str], fa: Fabric,
               fb: Fabric) -> list[Finding]:
    """Each finding on a switch, a cable or an HCA with the plane(s) of B its switches came
    from: ``(plane 2: dump2.txt)`` after the message, and in ``plane``."""
    near: dict[str, set[str]] = defaultdict(set)   # HCA end -> switches cabled to it
    for fab in (fa, fb):
        for c in fab.cables:
            for x, y in ((c.a, c.b), (c.b, c.a)):
                if y in planes:
                    near[x.removesuffix(_LEFTOVER)].add(y)
    out = []
    for f in found:
        if f.category in ("switches", "cabling", "ports"):
            ends = f.where.split(" <-> ")
        elif f.category == "devices" and " mlx5_" in f.where:
            host, _, idx = f.where.rpartition(" mlx5_")
            ends = sorted(near.get(f"{host}/{idx}", ()), key=natural)
        else:
            ends = []
        label = "; ".join(dict.fromkeys(planes[e] for e in ends if e in planes))
        out.append(attrs.evolve(f, message=f"{f.message} ({label})", plane=label)
                   if label else f)
    return out


def _count(c: Counter) -> str:
    return ", ".join(f"{n} {m}" for m, n in sorted(c.items())) or "none"


def _compare_gpus(a, b, ha, hb, where, both, found) -> None:
    """Per GPU: the GPUs one side lacks named (the alignment that leaves the fewest other
    differences decides which), then each aligned pair's model, NVLink, NIC, PCIe switch and
    NUMA node; B's NVLink peers are renumbered as A's GPUs."""
    ga, gb = _gpu_facts(a, ha), _gpu_facts(b, hb)
    checks = [("nvlink", "lanes", "NVLink lanes"), ("nvlink", "peers", "NVLink peers (GPU, lanes)")]
    if "nic" in both:
        checks.append(("nic", "nic", "local NIC"))
    if "pcie_switch" in both:
        checks.append(("pcie", "switch", "PCIe switch"))
    if "cpu" in both:
        checks.append(("numa", "cpu", "NUMA node (CPU)"))
    keys = ("model", "lanes", "nic", "switch", "cpu")
    matched = _align_items(ga, gb, keys)
    b_to_a = {j: i for i, j in matched if i is not None and j is not None}
    for i, j in matched:
        if j is None or i is None:
            side, k, x = ("A", i, ga[i]) if j is None else ("B", j, gb[j])
            other = "B" if side == "A" else "A"
            place = ", ".join(f"{label} {_show(x[key])}" for cat, key, label in checks[2:])
            found.append(Finding("devices", f"{where} gpu{k}",
                                 x["model"] if side == "A" else "missing",
                                 "missing" if side == "A" else x["model"],
                                 f"{where}: gpu{k} ({x['model']}"
                                 + (f"; {place}" if place else "")
                                 + f") is in {side} but not in {other}"))
            continue
        x, y = ga[i], dict(gb[j])
        y["peers"] = sorted((b_to_a.get(p, -1 - p), n) for p, n in y["peers"])
        if x["model"] != y["model"] and known(x["model"]) and known(y["model"]):
            found.append(Finding("devices", f"{where} gpu{i}", x["model"], y["model"],
                                 f"{where}: gpu{i} is {x['model']} in A, {y['model']} in B"))
        for cat, key, label in checks:
            if x[key] != y[key]:
                va, vb = _show(x[key]), _show(y[key])
                found.append(Finding(cat, f"{where} gpu{i}", va, vb,
                                     f"{where}: gpu{i} {label}: {va} in A, {vb} in B"))


def _align_items(xa: list[dict], xb: list[dict], keys) -> list[tuple[int | None, int | None]]:
    """Pairs (A index, B index) of two hosts' devices of one kind, in order; a device only one
    side has is paired with None. With equal counts, by position; else the surplus side loses,
    one at a time, the device whose removal leaves the fewest differing ``keys`` between the
    rest (the first such on a tie), so one missing GPU is that GPU, not a shift of all after;
    past four missing, the rest from the end."""
    ia, ib = list(range(len(xa))), list(range(len(xb)))

    def cost(la, lb) -> int:
        return sum(xa[i][k] != xb[j][k] for i, j in zip(la, lb) for k in keys)
    dropped_a, dropped_b = [], []
    # Beyond a few missing devices the search (cubic in the host's devices) is not worth it:
    # the surplus past the last four compared goes from the end.
    while abs(len(ia) - len(ib)) > 4:
        (dropped_a if len(ia) > len(ib) else dropped_b).append((ia if len(ia) > len(ib)
                                                                else ib).pop())
    while len(ia) != len(ib):
        if len(ia) > len(ib):
            k = min(range(len(ia)), key=lambda n: cost(ia[:n] + ia[n + 1:], ib))
            dropped_a.append(ia.pop(k))
        else:
            k = min(range(len(ib)), key=lambda n: cost(ia, ib[:n] + ib[n + 1:]))
            dropped_b.append(ib.pop(k))
    out: list[tuple[int | None, int | None]] = list(zip(ia, ib))
    out += [(i, None) for i in dropped_a] + [(None, j) for j in dropped_b]
    return sorted(out, key=lambda p: (p[0] if p[0] is not None else p[1], p[0] is None))


def _nic_facts(system: System, host: HostInfo) -> list[dict]:
    """Per NIC of the host in order: model, its PCIe switch and its CPU (NUMA node), as
    host-relative positions, found over the host's PCIe links."""
    kinds = _by_kind(system, host)
    pos = {d.id: i for k in kinds for i, d in enumerate(kinds[k])}
    adj: dict[str, list[str]] = defaultdict(list)
    for d in pos:                   # the host's own links, each seen from both its ends
        for ln in system.links_of(d):
            other = ln.dst if ln.src == d else ln.src
            if ln.cls == "pcie" and other in pos:
                adj[d].append(other)
    kind = {d.id: d.kind for k in kinds for d in kinds[k]}
    out = []
    for n in kinds.get("nic", ()):
        switch = cpu = None
        seen, frontier = {n.id}, [n.id]
        while frontier and cpu is None:      # nearest CPU through PCIe switches only
            nxt = []
            for x in frontier:
                for y in sorted(adj[x], key=natural):
                    if y in seen:
                        continue
                    seen.add(y)
                    if kind[y] == "cpu" and cpu is None:
                        cpu = pos[y]
                    elif kind[y] == "pcie_switch":
                        switch = pos[y] if switch is None else switch
                        nxt.append(y)
            frontier = nxt
        out.append({"model": n.model.name, "switch": switch, "cpu": cpu})
    return out


def _compare_nics(a, b, ha, hb, where, both, found) -> None:
    """Each NIC's NUMA node (CPU) and PCIe switch, NICs aligned as GPUs are: a NIC moved to
    the other socket is a NUMA finding naming it and both nodes."""
    na, nb = _nic_facts(a, ha), _nic_facts(b, hb)
    if len(na) != len(nb):
        return                  # the count (or the fabric's HCA findings) says so already
    for i, (x, y) in enumerate(zip(na, nb)):
        moved = [(key, label) for key, label, kind in (
            ("cpu", "NUMA node (CPU)", "cpu"), ("switch", "PCIe switch", "pcie_switch"))
            if kind in both and x[key] != y[key] and None not in (x[key], y[key])]
        if not moved:
            continue
        # one finding per moved NIC: NUMA when it changed socket, else PCIe
        cat = "numa" if moved[0][0] == "cpu" else "pcie"
        found.append(Finding(cat, f"{where} nic{i}", str(x[moved[0][0]]), str(y[moved[0][0]]),
                             f"{where}: nic{i} ({x['model']}) moved: " + ", ".join(
                                 f"{label} {x[key]} in A, {y[key]} in B"
                                 for key, label in moved)))


def _show(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, list):
        return ", ".join(f"gpu{p} x{n}" for p, n in v) or "none"
    return str(v)


#: Marks a cable end of B's HCAs left over (no A HCA to pair with): an HCA end is
#: ``host/<digits>`` and a switch's an identifier, so none ends so, whatever a host is named (a
#: leading NUL was the mark, and a host named '\x00' lost its cables from the comparison).
_LEFTOVER = "/\0"


def _match_hcas(fa: Fabric, fb: Fabric, pairs) -> tuple[Fabric, list[tuple[str, Hca]]]:
    """B's fabric with its HCAs (and their cables) named as A's, and the HCAs left over on
    either side as ("a" or "b", HCA). Per paired host, HCAs match by identity (``mlx5_3`` is
    ``host/3`` on both sides), the rest in order of identity; when matching all of them by
    position instead agrees with more of the host's cabling (a design's four positional NICs
    against a subnet's mlx5_1, 2, 5, 6), by position. Cables of a left-over HCA are left out
    of the comparison (the HCA's finding names them)."""
    peers_a, peers_b = _peers(fa), _peers(fb)
    rename: dict[str, str] = {}
    only: list[tuple[str, Hca]] = []
    by_host_a: dict[str, dict[int, Hca]] = defaultdict(dict)
    by_host_b: dict[str, dict[int, Hca]] = defaultdict(dict)
    for x in fa.hcas:
        by_host_a[x.host][x.index] = x
    for x in fb.hcas:
        by_host_b[x.host][x.index] = x
    for ha, hb in pairs:
        xa, xb = by_host_a.get(ha.name, {}), by_host_b.get(hb.name, {})
        same = [(i, i) for i in sorted(xa.keys() & xb.keys())]
        same += zip(sorted(xb.keys() - xa.keys()), sorted(xa.keys() - xb.keys()))
        order = list(zip(sorted(xb), sorted(xa)))

        def agree(matched) -> int:
            return sum(peers_b.get(f"{hb.name}/{j}") == peers_a.get(f"{ha.name}/{i}")
                       for j, i in matched)
        matched = order if agree(order) > agree(same) else same
        for j, i in matched:
            rename[f"{hb.name}/{j}"] = f"{ha.name}/{i}"
        used_a = {i for _, i in matched}
        used_b = {j for j, _ in matched}
        only += [("a", xa[i]) for i in sorted(xa) if i not in used_a]
        only += [("b", xb[j]) for j in sorted(xb) if j not in used_b]
    leftover = {f"{x.host}/{x.index}" for side, x in only if side == "b"}
    cables = []
    for c in fb.cables:
        a, b = (rename.get(e, e) if e not in leftover else e + _LEFTOVER for e in (c.a, c.b))
        a, b = sorted((a, b), key=natural)
        cables.append(attrs.evolve(c, a=a, b=b))
    return attrs.evolve(fb, cables=tuple(cables)), only


def _peers(fab: Fabric) -> dict[str, frozenset]:
    """Per HCA end, what it is cabled to: (switch, rate, count) triples."""
    out: dict[str, set] = defaultdict(set)
    for c in fab.cables:
        for end, other in ((c.a, c.b), (c.b, c.a)):
            if "/" in end:
                out[end].add((other, c.rate, c.count))
    return {k: frozenset(v) for k, v in out.items()}


def _plane_hint(fa: Fabric, pairs, only) -> list[str]:
    """A note when B holds the same HCAs of every paired host and lacks the same others: the
    dump of one subnet (rail, plane) of a fabric that has several."""
    missing: dict[str, set[int]] = defaultdict(set)
    for side, x in only:
        if side == "a":
            missing[x.host].add(x.index)
    if not pairs or len(missing) != len(pairs):
        return []
    sets = {frozenset(v) for v in missing.values()}
    have = {frozenset(x.index for x in fa.hcas if x.host == ha.name) - next(iter(sets))
            for ha, _ in pairs}
    if len(sets) != 1 or len(have) != 1 or not next(iter(have)):
        return []
    kept = ", ".join(f"mlx5_{i}" for i in sorted(next(iter(have))))
    return [f"B holds only {kept} of every host: the dump of one subnet? ibnetdiscover sees "
            "the subnet of the HCA it runs on; dump each subnet (ibnetdiscover -C mlx5_N) and "
            "give every dump as B: topoc diff A plane0.txt plane1.txt ... (docs/drift.md)"]


def _hca_finding(side: str, h: Hca, fab: Fabric) -> Finding:
    """One HCA only one side has, named with its model and what it is cabled to there."""
    end = f"{h.host}/{h.index}"
    peers = sorted({c.b if c.a == end else c.a for c in fab.cables if end in (c.a, c.b)},
                   key=natural)
    there, other = ("A", "B") if side == "a" else ("B", "A")
    cabled = f", cabled to {', '.join(peers)} there" if peers else ""
    return Finding("devices", f"{h.host} mlx5_{h.index}",
                   h.model if side == "a" else "missing", "missing" if side == "a" else h.model,
                   f"{h.host}: NIC mlx5_{h.index} ({h.model}) is in {there} but not in "
                   f"{other}{cabled}")


def _cabled(fab: Fabric, host: str) -> str:
    n = sum(c.count for c in fab.cables if c.a.startswith(host + "/") or
            c.b.startswith(host + "/"))
    return f", with its {n} cable(s)" if n else ""


def _loose_nics(system: System, fab: Fabric) -> int:
    """How many NICs of ``system`` are cabled to its fabric's switches but in no host."""
    hosted = {d for h in fab.hosts for d in h.devices}
    switches = {s.device for s in fab.switches}
    ends = set()
    for ln in system.links:
        for x, y in ((ln.src, ln.dst), (ln.dst, ln.src)):
            if y in switches and x not in hosted and system.device(x).kind == "nic":
                ends.add(x)
    return len(ends)


def _compare_fabric(fa: Fabric, fb: Fabric, found: list[Finding],
                    skip_a: frozenset[str] = frozenset(),
                    skip_b: frozenset[str] = frozenset()) -> None:
    sa = {s.name: s for s in fa.switches}
    sb = {s.name: s for s in fb.switches}
    # A switch only one side has is one finding: its cables are not listed again.
    skip_a = skip_a | (sa.keys() - sb.keys())
    skip_b = skip_b | (sb.keys() - sa.keys())
    for name in sorted(sa.keys() | sb.keys()):
        if name not in sb:
            n = sum(c.count for c in fa.cables if name in (c.a, c.b))
            found.append(Finding("switches", name, sa[name].model, "missing",
                                 f"switch '{name}' ({sa[name].model}) is in A but not in B, "
                                 f"with its {n} cable(s)"))
        elif name not in sa:
            n = sum(c.count for c in fb.cables if name in (c.a, c.b))
            found.append(Finding("switches", name, "missing", sb[name].model,
                                 f"switch '{name}' ({sb[name].model}) is in B but not in A, "
                                 f"with its {n} cable(s)"))
        elif sa[name].model != sb[name].model and known(sa[name].model) and \
                known(sb[name].model):
            found.append(Finding("switches", name, sa[name].model, sb[name].model,
                                 f"switch '{name}' is {sa[name].model} in A, "
                                 f"{sb[name].model} in B"))
    ca = {(c.a, c.b, c.rate): c.count for c in fa.cables if not {c.a, c.b} & skip_a}
    cb = {(c.a, c.b, c.rate): c.count for c in fb.cables
          if not c.a.endswith(_LEFTOVER) and not c.b.endswith(_LEFTOVER) and
          not {c.a, c.b} & skip_b}
    ends_a = {(c.a, c.b) for c in fa.cables}
    ends_b = {(c.a, c.b) for c in fb.cables}
    for key in sorted(ca.keys() | cb.keys(), key=lambda k: (k[0], k[1], k[2])):
        na, nb = ca.get(key, 0), cb.get(key, 0)
        if na == nb:
            continue
        x, y, rate = key
        where = f"{x} <-> {y}"
        if (x, y) in ends_a and (x, y) in ends_b and (na == 0 or nb == 0):
            ra = _rates(fa, x, y)
            rb = _rates(fb, x, y)
            if na:      # report a rate change once, from A's side
                found.append(Finding("cabling", where, ra, rb,
                                     f"{where}: cables at {ra} in A, {rb} in B"))
            continue
        found.append(Finding("cabling", where, f"{na} x {rate / 1e9:g} Gb/s",
                             f"{nb} x {rate / 1e9:g} Gb/s",
                             f"{where}: {na} cable(s) of {rate / 1e9:g} Gb/s in A, {nb} in B"))


def _compare_ports(pa: Mapping, pb: Mapping, found: list[Finding]) -> None:
    """Cables both sides have, as many on each, on other ports: one finding per pair of ends
    (the cabling findings already count cables one side lacks)."""
    for x, y in sorted(pa.keys() & pb.keys()):
        a, b = pa[(x, y)], pb[(x, y)]
        if a == b or len(a) != len(b):
            continue
        where = f"{x} <-> {y}"
        show_a = ", ".join(f"{x} port {p} - {y} port {q}" for p, q in a if (p, q) not in b)
        show_b = ", ".join(f"{x} port {p} - {y} port {q}" for p, q in b if (p, q) not in a)
        found.append(Finding("ports", where, show_a, show_b,
                             f"{where}: cabled {show_a} in A, {show_b} in B"))


def _rates(fab: Fabric, x: str, y: str) -> str:
    return ", ".join(f"{c.count} x {c.rate / 1e9:g} Gb/s" for c in fab.cables
                     if (c.a, c.b) == (x, y))
