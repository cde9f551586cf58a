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

from ..ir.alike import alike, model_codes
from ..ir.hosts import HostInfo
from ..ir.system import System, device_indices
from ..ir.locality import natural
from ..base.arrays import unique
from ..base.gcpause import gc_paused
from .fabric import Cable, CableTable, Fabric, Hca, fabric
from .host_facts import by_kind, gpu_facts, nic_facts


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


@gc_paused()        # per-host facts of 18,432 hosts a side: no collector passes over them
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
    difference.

    Two systems alike (``ir.alike``: the same devices, links and hosts, say two compiles of
    one design) are compared as one: their views are made once and nothing that cannot
    differ is compared item by item; the result is the same."""
    if b is not a and alike(a, b):
        b = a
    # The NVLink domains are not compared from here; a system against itself compares no
    # cable (one fabric: every cable is itself), so its view has none.
    fa = fabric(a, blocks=False, cables=b is not a or host is not None)
    fb = fa if b is a else fabric(b, blocks=False)
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
        cabled_a = _Cabled(fa) if fabrics and only_a else None
        cabled_b = _Cabled(fb) if fabrics and only_b else None
        for h in only_a:
            found.append(Finding("hosts", h.name, "present", "missing",
                                 f"host '{h.name}' is in A but not in B"
                                 + (cabled_a.host(h.name) if cabled_a else "")))
        for h in only_b:
            found.append(Finding("hosts", h.name, "missing", "present",
                                 f"host '{h.name}' is in B but not in A"
                                 + (cabled_b.host(h.name) if cabled_b else "")))
    loose = _loose_nics(b, fb)
    if loose:
        notes.append(f"B has {loose} NIC(s) cabled to the fabric outside any host (HCAs "
                     "without a hostname in their node description, or of management and "
                     "storage hosts): not compared")
    gone: dict[str, Counter] = defaultdict(Counter)     # host -> models of HCAs only A has
    new: dict[str, Counter] = defaultdict(Counter)      # host -> models of HCAs only B has
    if fabrics:
        fb, only = _match_hcas(fa, fb, pairs)
        peers = {"a": _Cabled(fa), "b": _Cabled(fb)} if only else {}
        for side, h in only:
            (gone if side == "a" else new)[h.host][h.model] += 1
            found.append(_hca_finding(side, h, peers[side]))
        notes += _plane_hint(fa, pairs, only)
    kinds_a = {m.kind for m in model_codes(a)[0]}
    kinds_b = {m.kind for m in model_codes(b)[0]}
    both = kinds_a & kinds_b
    for k in sorted((kinds_a | kinds_b) - both):
        side = "A" if k in kinds_a else "B"
        notes.append(f"only {side} describes {k} devices: not compared")
    # A system against itself: each pair is one host, whose models, GPU and NIC facts agree
    # with themselves and whose HCAs all matched (no finding can come of it).
    for ha, hb in pairs if b is not a or host is not None else ():
        where = ha.name if ha.name == hb.name else f"{ha.name}|{hb.name}"
        ka, kb = by_kind(a, ha.devices), by_kind(b, hb.devices)
        for kind in sorted(both):
            if kind in ("switch", "net_switch"):
                continue
            if [d.model.name for d in ka.get(kind, ())] == \
                    [d.model.name for d in kb.get(kind, ())] and \
                    (kind != "nic" or not (gone.get(ha.name) or new.get(ha.name))):
                continue        # the same models in the same order: the counts agree
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
            _compare_gpus(a, b, ka, kb, where, both, found)
        if "nic" in both and "cpu" in both:
            _compare_nics(a, b, ka, kb, where, both, found)
    if "gpu" in both:
        compared += ["devices", "nvlink"] + [c for c, k in (("nic", "nic"), ("pcie",
                                                                        "pcie_switch"),
                                                            ("numa", "cpu")) if k in both]
    if any(not known(m.name) for s in (a, b) for m in model_codes(s)[0]):
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


def _compare_gpus(a, b, ka, kb, where, both, found) -> None:
    """Per GPU: the GPUs one side lacks named (the alignment that leaves the fewest other
    differences decides which), then each aligned pair's model, NVLink, NIC, PCIe switch and
    NUMA node; B's NVLink peers are renumbered as A's GPUs."""
    ga, gb = gpu_facts(a, ka), gpu_facts(b, kb)
    if ga == gb:
        return          # paired by position, B's peers are A's: nothing differs
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


def _compare_nics(a, b, ka, kb, where, both, found) -> None:
    """Each NIC's NUMA node (CPU) and PCIe switch, NICs aligned as GPUs are: a NIC moved to
    the other socket is a NUMA finding naming it and both nodes."""
    na, nb = nic_facts(a, ka), nic_facts(b, kb)
    if len(na) != len(nb) or na == nb:
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
    if fa is fb:
        return fb, []           # every HCA of every host is itself
    peers: list[dict[str, frozenset]] = []     # A's and B's, made when first needed
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
        if order != same and not peers:
            peers += [_peers(fa), _peers(fb)]

        def agree(matched) -> int:
            peers_a, peers_b = peers
            return sum(peers_b.get(f"{hb.name}/{j}") == peers_a.get(f"{ha.name}/{i}")
                       for j, i in matched)
        # the same pairs either way (every HCA's identity on both sides): nothing to weigh
        matched = order if order != same and agree(order) > agree(same) else same
        for j, i in matched:
            rename[f"{hb.name}/{j}"] = f"{ha.name}/{i}"
        used_a = {i for _, i in matched}
        used_b = {j for j, _ in matched}
        only += [("a", xa[i]) for i in sorted(xa) if i not in used_a]
        only += [("b", xb[j]) for j in sorted(xb) if j not in used_b]
    leftover = {f"{x.host}/{x.index}" for side, x in only if side == "b"}
    for e in leftover:
        rename[e] = e + _LEFTOVER
    # HCAs matched to themselves (the same name on both sides) keep their cables as they are
    rename = {e: to for e, to in rename.items() if e != to}
    if not rename:
        return fb, only
    cables = []
    for c in fb.cables:
        a, b = rename.get(c.a, c.a), rename.get(c.b, c.b)
        if a is c.a and b is c.b:
            cables.append(c)        # the fabric has its ends in natural order already
            continue
        if natural(b) < natural(a):
            a, b = b, a
        cables.append(Cable(a, b, c.cls, c.rate, c.count, c.link_type))
    return attrs.evolve(fb, table=CableTable.of(cables)), only


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
    indices: dict[str, set[int]] = defaultdict(set)      # one pass, not one per host
    for x in fa.hcas:
        indices[x.host].add(x.index)
    have = {frozenset(indices.get(ha.name, ())) - next(iter(sets)) for ha, _ in pairs}
    if len(sets) != 1 or len(have) != 1 or not next(iter(have)):
        return []
    kept = ", ".join(f"mlx5_{i}" for i in sorted(next(iter(have))))
    return [f"B holds only {kept} of every host: the dump of one subnet? ibnetdiscover sees "
            "the subnet of the HCA it runs on; dump each subnet (ibnetdiscover -C mlx5_N) and "
            "give every dump as B: topoc diff A plane0.txt plane1.txt ... (docs/drift.md)"]


def _hca_finding(side: str, h: Hca, cabled: _Cabled) -> Finding:
    """One HCA only one side has, named with its model and what it is cabled to there."""
    peers = sorted(cabled.peers(f"{h.host}/{h.index}"), key=natural)
    there, other = ("A", "B") if side == "a" else ("B", "A")
    cabled = f", cabled to {', '.join(peers)} there" if peers else ""
    return Finding("devices", f"{h.host} mlx5_{h.index}",
                   h.model if side == "a" else "missing", "missing" if side == "a" else h.model,
                   f"{h.host}: NIC mlx5_{h.index} ({h.model}) is in {there} but not in "
                   f"{other}{cabled}")


class _Cabled:
    """What a fabric's cables say of each end and host, tabled in one pass over them when
    first asked (a pass over every cable per missing host, HCA or switch was quadratic: B
    one rack short of A's 1,024)."""

    def __init__(self, fab: Fabric):
        self.fab = fab
        self._count: dict[str, int] | None = None
        self._hosts: dict[str, int] | None = None
        self._peers: dict[str, set[str]] | None = None
        self._rates: dict[tuple[str, str], list[str]] | None = None

    def end(self, name: str) -> int:
        """How many cables have ``name`` (a switch) at an end."""
        if self._count is None:
            self._count = defaultdict(int)
            for c in self.fab.cables:
                for e in {c.a, c.b}:
                    self._count[e] += c.count
        return self._count.get(name, 0)

    def host(self, host: str) -> str:
        """", with its N cable(s)" of a host: the cables with an end that starts with
        ``host/`` (every prefix of an end before a '/' is a host it may be)."""
        if self._hosts is None:
            self._hosts = defaultdict(int)
            for c in self.fab.cables:
                for h in {e[:k] for e in (c.a, c.b) for k, ch in enumerate(e) if ch == "/"}:
                    self._hosts[h] += c.count
        n = self._hosts.get(host, 0)
        return f", with its {n} cable(s)" if n else ""

    def peers(self, end: str) -> set[str]:
        """The other ends of ``end``'s cables."""
        if self._peers is None:
            self._peers = defaultdict(set)
            for c in self.fab.cables:
                self._peers[c.a].add(c.b)
                self._peers[c.b].add(c.a)
        return self._peers.get(end, set())

    def rates(self, x: str, y: str) -> str:
        """The cables between ``x`` and ``y`` (in that order) as counts and rates."""
        if self._rates is None:
            self._rates = defaultdict(list)
            for c in self.fab.cables:
                self._rates[(c.a, c.b)].append(f"{c.count} x {c.rate / 1e9:g} Gb/s")
        return ", ".join(self._rates.get((x, y), ()))


def _loose_nics(system: System, fab: Fabric) -> int:
    """How many NICs of ``system`` are cabled to its fabric's switches but in no host (over
    the link arrays: no Link object made)."""
    if not fab.switches:
        return 0
    import numpy as np

    n = len(system.devices)
    models, codes = model_codes(system)
    loose = np.array([m.kind == "nic" for m in models], dtype=np.bool_)[codes]
    switch = np.zeros(n, dtype=np.bool_)
    at = fab.device_at
    if at is not None and at[0] is fab.hosts and at[1] is fab.switches and len(at[2]) == n:
        _, _, host_at, switch_at = at           # the view's own indices: no id looked up
        loose[host_at >= 0] = False
        switch[switch_at] = True
    else:
        index = device_indices(system)
        loose[[index[d] for h in fab.hosts for d in h.devices]] = False
        switch[[index[s.device] for s in fab.switches]] = True
    src, dst = system.ends.arrays()
    return len(unique(np.concatenate((src[loose[src] & switch[dst]],
                                         dst[loose[dst] & switch[src]]))))


def _compare_fabric(fa: Fabric, fb: Fabric, found: list[Finding],
                    skip_a: frozenset[str] = frozenset(),
                    skip_b: frozenset[str] = frozenset()) -> None:
    if fa is fb and not skip_a and not skip_b:
        return                  # one fabric: every switch and cable is itself
    sa = {s.name: s for s in fa.switches}
    sb = {s.name: s for s in fb.switches}
    # A switch only one side has is one finding: its cables are not listed again.
    skip_a = skip_a | (sa.keys() - sb.keys())
    skip_b = skip_b | (sb.keys() - sa.keys())
    cabled_a, cabled_b = _Cabled(fa), _Cabled(fb)
    for name in sorted(sa.keys() | sb.keys()):
        if name not in sb:
            n = cabled_a.end(name)
            found.append(Finding("switches", name, sa[name].model, "missing",
                                 f"switch '{name}' ({sa[name].model}) is in A but not in B, "
                                 f"with its {n} cable(s)"))
        elif name not in sa:
            n = cabled_b.end(name)
            found.append(Finding("switches", name, "missing", sb[name].model,
                                 f"switch '{name}' ({sb[name].model}) is in B but not in A, "
                                 f"with its {n} cable(s)"))
        elif sa[name].model != sb[name].model and known(sa[name].model) and \
                known(sb[name].model):
            found.append(Finding("switches", name, sa[name].model, sb[name].model,
                                 f"switch '{name}' is {sa[name].model} in A, "
                                 f"{sb[name].model} in B"))
    ca = {(c.a, c.b, c.rate): c.count for c in fa.cables
          if not skip_a or not {c.a, c.b} & skip_a}
    cb = {(c.a, c.b, c.rate): c.count for c in fb.cables
          if not c.a.endswith(_LEFTOVER) and not c.b.endswith(_LEFTOVER) and
          (not skip_b or not {c.a, c.b} & skip_b)}
    if ca == cb:
        return              # every cable the same on both sides
    ends_a = {(c.a, c.b) for c in fa.cables}
    ends_b = {(c.a, c.b) for c in fb.cables}
    for key in sorted(ca.keys() | cb.keys(), key=lambda k: (k[0], k[1], k[2])):
        na, nb = ca.get(key, 0), cb.get(key, 0)
        if na == nb:
            continue
        x, y, rate = key
        where = f"{x} <-> {y}"
        if (x, y) in ends_a and (x, y) in ends_b and (na == 0 or nb == 0):
            ra = cabled_a.rates(x, y)
            rb = cabled_b.rates(x, y)
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

