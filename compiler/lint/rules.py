"""The lint rule catalogue: topology findings (W4xx) and strategy findings (W5xx).

Each rule is a function ``(system, config) -> findings`` registered with its code, default
severity and summary; docs/rules.md has a page per rule. Findings are aggregated (one per
pattern, naming an example and a count) so a 1,024-rack cluster gets a readable report, and
every rule is linear in devices plus links.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

import attrs

from . import plausible
from ..base.arrays import unique
from ..base.diagnostics import Span, plural
from ..ir.system import SCALEOUT_CLASSES, Device, System, device_indices
from ..ir.groups import rank_groups
from ..ir.incidence import arrays_in
from ..ir.modelcodes import model_flags
from ..ir.summary import level_array, model_ids


@attrs.frozen
class Rule:
    """A lint rule: code, default severity ('warning', 'note' or 'off'), one-line summary."""

    code: str
    severity: str
    summary: str
    check: Callable
    options: tuple[tuple[str, float], ...] = ()


@attrs.frozen
class Finding:
    """One rule hit: where, what, and the rule's code."""

    code: str
    message: str
    span: Span
    subject: str | None = None     # a device the finding is about: lint finds the user's line
    strategy: str | None = None    # the parallel block a W5xx finding is about
    notes: tuple = ()              # spans the finding cites (Note)


RULES: dict[str, Rule] = {}


def rule(code: str, severity: str, summary: str, **options: float):
    """Register a rule function under ``code``."""
    def register(fn):
        RULES[code] = Rule(code, severity, summary, fn, tuple(sorted(options.items())))
        return fn
    return register


def _many(items: list[str]) -> str:
    """'a' or 'a (and 3 more)'."""
    items = sorted(items)
    return items[0] + (f" (and {len(items) - 1} more)" if len(items) > 1 else "")


# ---- topology -------------------------------------------------------------------------------


@rule("W120", "note", "a declaration of the file shadows a used file's declaration of the same "
      "name")
def shadowing(system: System, opts) -> Iterable[Finding]:
    for diag in system.notes:
        yield Finding(diag.code, diag.message, diag.span, notes=diag.notes)


@rule("W400", "warning", "suppression comment that suppresses nothing")
def unused_suppression(system: System, opts) -> Iterable[Finding]:
    """Reported by the lint runner, which sees the comments; listed here for the catalogue."""
    return ()


@rule("W401", "warning", "isolated device: no link reaches it")
def isolated(system: System, opts) -> Iterable[Finding]:
    import numpy as np

    linked = np.zeros(len(system.devices), np.bool_)
    for column in system.ends.arrays():
        linked[column] = True
    by_stmt: dict[tuple, list[str]] = defaultdict(list)
    devices = system.devices
    for i in np.flatnonzero(~linked).tolist():         # only the unlinked, in device order
        d = devices[i]
        by_stmt[d.span, d.model.name].append(d.id)
    for (span, model), ids in by_stmt.items():
        yield Finding("W401", f"{_many(ids)} ({model}) has no links", span, min(ids))


@rule("W402", "warning", "GPU pair with no peer-to-peer path: traffic staged through host memory")
def no_p2p(system: System, opts) -> Iterable[Finding]:
    import numpy as np

    loc = system.locality
    gpus = system.gpus
    # NVLink, or PCIe switches that never pass a CPU's root complex: each GPU's set, and the
    # islands whose GPUs fall in two sets or more found in numpy; those islands alone in Python
    label = loc.p2p_labels[loc.gpu_index].astype(np.int64)
    island = np.asarray(loc.island, dtype=np.int64)
    width = len(system.devices) + 1
    pairs = unique(island * width + label)
    split = np.flatnonzero(np.bincount(pairs // width) >= 2).tolist() if len(pairs) else []
    islands: dict[int, dict[int, list]] = {}
    for i in split:
        parts: dict[int, list] = defaultdict(list)
        for r in loc.island_ranks[i]:
            parts[int(label[r])].append(gpus[r])
        islands[i] = parts
    for parts in islands.values():
        if len(parts) < 2:
            continue
        sizes = [len(v) for v in parts.values()]
        pairs = (sum(sizes) ** 2 - sum(s * s for s in sizes)) // 2
        first, second = (sorted(v, key=lambda d: d.id)[0] for v in list(parts.values())[:2])
        verb, stage = ("has", "stages") if pairs == 1 else ("have", "stage")
        yield Finding("W402", f"{plural(pairs, 'GPU pair')} {verb} no peer-to-peer path and "
                      f"{stage} through host memory, e.g. {first.id} and {second.id}", first.span,
                      first.id)


@rule("W403", "warning", "GPU whose nearest NIC hangs off another CPU socket")
def remote_nic(system: System, opts) -> Iterable[Finding]:
    # every GPU's socket, NIC and the NIC's socket, searched once per distinct host part
    # (``Locality.gpu_hosts``) instead of once per GPU
    socket, _, nic, nic_socket = system.locality.gpu_hosts
    found: dict[tuple, list[str]] = defaultdict(list)
    gpus = system.gpus
    for r, (mine, theirs) in enumerate(zip(socket, nic_socket)):
        if mine and theirs and mine != theirs and nic[r]:
            found[gpus[r].span, mine, theirs].append(f"{gpus[r].id} -> {nic[r]}")
    for (span, mine, theirs), pairs in found.items():
        yield Finding("W403", f"GPUDirect RDMA crosses the socket link: {_many(pairs)} "
                      f"(GPU on {mine}, NIC on {theirs})", span,
                      min(pairs).split(" -> ")[1])


@rule("W404", "warning", "asymmetric NVLink: GPUs of one NVLink domain with different bandwidth")
def asymmetric(system: System, opts) -> Iterable[Finding]:
    import numpy as np

    loc = system.locality
    ends, gpus = system.ends, system.gpus
    per_lane = np.array([t.bandwidth for t in ends.types], dtype=np.float64)
    # Each GPU's NVLink bandwidth summed in link order, as it was added link by link before:
    # both ends of link i sit at 2i and 2i + 1, and bincount adds its weights in input order.
    src, dst, codes, lanes = ends.arrays(lambda t: t.cls == "nvlink",
                                         ("src", "dst", "type", "lanes"))
    weight = per_lane[codes] * lanes
    both = np.empty(2 * len(weight), np.int64)
    both[0::2] = src
    both[1::2] = dst
    total = np.bincount(both, weights=np.repeat(weight, 2), minlength=len(system.devices))
    bw = total[loc.gpu_index]                   # per rank; non-GPU ends were never read
    # the domains whose GPUs differ, found in numpy (each domain's least and greatest figure
    # over its ranks); those domains alone in Python, in the order of their first rank
    codes: dict[str, int] = {}
    code = np.array([-1 if root is None else codes.setdefault(root, len(codes))
                     for root in loc.domain_root], dtype=np.int64)
    inside = np.flatnonzero(code >= 0)
    domains: dict[int, list[int]] = {}
    if len(inside):
        by_domain = inside[np.argsort(code[inside], kind="stable")]
        starts = np.flatnonzero(np.r_[True, np.diff(code[by_domain]) != 0])
        values = bw[by_domain]
        differ = np.minimum.reduceat(values, starts) != np.maximum.reduceat(values, starts)
        ends = np.r_[starts[1:], len(by_domain)]
        for lo, hi in zip(starts[differ].tolist(), ends[differ].tolist()):
            ranks = by_domain[lo:hi].tolist()
            domains[ranks[0]] = ranks
    bw = bw.tolist()
    for _, ranks in sorted(domains.items()):
        values = {bw[r] for r in ranks}
        if len(values) > 1:
            lo = min(ranks, key=lambda r: (bw[r], gpus[r].id))
            hi = max(ranks, key=lambda r: (bw[r], gpus[r].id))
            yield Finding("W404", f"NVLink bandwidth differs inside one domain: {gpus[lo].id} has "
                          f"{bw[lo] / 1e9:g} GB/s, {gpus[hi].id} {bw[hi] / 1e9:g} GB/s per "
                          "direction", gpus[lo].span, gpus[lo].id)


@rule("W405", "warning", "oversubscribed switch tier: uplinks carry less than downlinks",
      ratio=1.0)
def oversubscribed(system: System, opts) -> Iterable[Finding]:
    import numpy as np

    devices = system.devices
    # every link between two levels adds its bandwidth up from its lower end and down into
    # its higher one; bincount adds in link order, as the sums were made link by link
    a, b, bandwidth = arrays_in(system, SCALEOUT_CLASSES)
    lv = level_array(system)
    keep = (lv[a] >= 0) & (lv[b] >= 0) & (lv[a] != lv[b])
    a, b, bandwidth = a[keep], b[keep], bandwidth[keep]
    a_low = lv[a] < lv[b]
    low, high = np.where(a_low, a, b), np.where(a_low, b, a)
    up = np.bincount(low, weights=bandwidth, minlength=len(devices))
    down = np.bincount(high, weights=bandwidth, minlength=len(devices))
    # the switches in the order each first took a link from below
    switches, first = np.unique(high, return_index=True)
    switches = switches[np.argsort(first, kind="stable")].tolist()
    found: dict[tuple, list] = defaultdict(list)
    ratio = opts.get("ratio", 1.0)
    for i, n, d, u in zip(switches, lv[switches].tolist(), down[switches].tolist(),
                          up[switches].tolist()):
        if u and d / u > ratio:
            device = devices[i]
            found[device.span, n].append((d / u, device.id, d, u))
    for (span, lvl), cases in found.items():
        ratio, sw, d, u = max(cases)
        yield Finding("W405", f"tier-{lvl} switches oversubscribed up to {ratio:.2f}:1, e.g. "
                      f"{sw}: {d / 1e9:g} GB/s down, {u / 1e9:g} GB/s up "
                      f"({plural(len(cases), 'switch')})", span, sw)


@rule("W406", "warning", "rail misalignment: NIC n of a node lands on another rail's switch")
def rails(system: System, opts) -> Iterable[Finding]:
    # NIC n of a node is its n-th NIC among the NICs of the same parent instance (a DGX node,
    # a GB200 compute tray), in declaration order. In device indices: the compute NICs picked
    # by their models in numpy, each NIC's first scale-out neighbour from the links' integer
    # ends (no id of every scale-out link's ends, no pass over every device in Python).
    import numpy as np

    devices = system.devices
    cnic = model_flags(system, lambda m: Device(m.name, m).compute_nic)
    local: dict[int, int] = {}          # compute NIC -> its place among its parent's NICs
    parent_of: dict[int, int] = {}      # compute NIC -> its parent, numbered
    count: dict[str, list[int]] = {}
    for i in np.flatnonzero(cnic).tolist():
        parent = devices[i].id.rpartition(".")[0]
        seen = count.get(parent)
        if seen is None:
            seen = count[parent] = [len(count), 0]
        local[i] = seen[1]
        parent_of[i] = seen[0]
        seen[1] += 1
    a, b, _ = arrays_in(system, SCALEOUT_CLASSES)
    # each link seen from both ends, in link order: (x, y) then (y, x)
    near = np.empty(2 * len(a), dtype=np.int64)
    far = np.empty(2 * len(a), dtype=np.int64)
    near[0::2], near[1::2] = a, b
    far[0::2], far[1::2] = b, a
    mask = cnic[near]
    near, far = near[mask], far[mask]
    _, first = np.unique(near, return_index=True)
    first.sort()                        # the order each NIC first appears: leaf_of's order
    leaf_of = dict(zip(near[first].tolist(), far[first].tolist()))
    rail_votes: dict[int, Counter] = defaultdict(Counter)
    nodes: dict[int, dict[int, set]] = defaultdict(lambda: defaultdict(set))
    for nic, leaf in leaf_of.items():
        rail_votes[leaf][local[nic]] += 1
        nodes[leaf][local[nic]].add(parent_of[nic])
    rails = {leaf: _carried(votes, nodes[leaf]) for leaf, votes in rail_votes.items()}
    if len(set().union(*rails.values())) < 2:
        return           # not a rail-optimised fabric: nothing to align
    wrong = [(devices[nic].id, devices[leaf].id, local[nic], leaf, nic)
             for nic, leaf in leaf_of.items() if local[nic] not in rails[leaf]]
    if wrong:
        nic, leaf, rail, at, index = min(wrong)
        their = "its" if len(wrong) == 1 else "their"
        carried = sorted(rails[at])
        what = f"rail {carried[0]}" if len(carried) == 1 else \
            f"rails {', '.join(map(str, carried))}"
        yield Finding("W406", f"{plural(len(wrong), 'NIC')} off {their} rail, e.g. {nic} (NIC {rail} "
                      f"of its node) on {leaf}, which carries {what}",
                      devices[index].span, nic)


def _carried(votes: Counter, nodes: dict[int, set]) -> set[int]:
    """The rails a leaf carries: its majority rail, or every tied rail when each of them comes
    whole from the same nodes (a leaf that takes NICs 0 and 1 of every node)."""
    top = max(votes.values())
    tied = [r for r, n in votes.items() if n == top]
    if len(tied) > 1 and all(nodes[r] == nodes[tied[0]] for r in tied):
        return set(tied)
    return {votes.most_common(1)[0][0]}


@rule("W407", "off", "port budget fully used: no spare ports (select it to audit headroom)",
      usage=1.0)
def ports_full(system: System, opts) -> Iterable[Finding]:
    from ..lang.verify import port_usage
    found: dict[tuple, list[str]] = defaultdict(list)
    for (dev_id, cls), lanes in port_usage(system).items():
        device = system.device(dev_id)
        budget = device.model.port_budget(cls)
        if budget and lanes >= opts.get("usage", 1.0) * budget:
            found[device.span, device.model.name, cls, budget].append(dev_id)
    for (span, model, cls, budget), ids in found.items():
        yield Finding("W407", f"{_many(ids)} ({model}) uses its {cls} ports up to the budget of "
                      f"{budget}", span, min(ids))


@rule("W408", "warning", "implausible figure: a lane, NIC rate or compute capability no part has")
def implausible(system: System, opts) -> Iterable[Finding]:
    for message, span, subject in plausible.findings(system):
        yield Finding("W408", message, span, subject)


# ---- strategies -----------------------------------------------------------------------------


def _spans_islands(system: System, ranks) -> int:
    return len({system.locality.island[r] for r in ranks})


def spans_domains(system: System, ranks) -> int:
    """How many NVLink domains (an island without NVLink counts as one) the GPUs ``ranks``
    touch: W501's and W504's test, which ``topoc plan`` applies to the tp sizes it searches."""
    loc = system.locality
    return len({loc.domain_root[r] or ("island", loc.island[r]) for r in ranks})


def domain_codes(system: System):
    """Each rank's place as ``spans_domains`` counts places (its NVLink domain, or its island
    when it has none) as a number, a numpy array by rank; once per system. Ranks share a
    place exactly when they share a number, so a search can test every group of a size at
    once (``plan.tp_within_domains``)."""
    found = system.memo.get("rules.domain_codes")
    if found is None:
        import numpy as np

        loc = system.locality
        numbers: dict = {}
        found = system.memo["rules.domain_codes"] = np.fromiter(
            (numbers.setdefault(root or ("island", island), len(numbers))
             for root, island in zip(loc.domain_root, loc.island)),
            dtype=np.int64, count=len(system.gpus))
    return found


def _spanning(system: System, dim: str, spans) -> Iterable[tuple]:
    """(strategy, indices of its ``dim`` groups that ``spans`` counts as more than one place)."""
    for p in system.parallels:
        bad = [i for i, g in enumerate(rank_groups(p, dim)) if len(g) > 1 and spans(system, g) > 1]
        if bad:
            yield p, bad


@rule("W501", "warning", "tensor-parallel group outside one NVLink domain")
def tp_outside(system: System, opts) -> Iterable[Finding]:
    for p, bad in _spanning(system, "tp", spans_domains):
        leave = "leaves" if len(bad) == 1 else "leave"
        yield Finding("W501", f"{plural(len(bad), 'tp group')} of '{p.name}' {leave} one NVLink domain, "
                      f"e.g. tp:{bad[0]}: TP communicates in every layer; keep it on NVLink",
                      p.span, strategy=p.name)


@rule("W502", "warning", "expert-parallel all-to-all crossing the scale-out network")
def ep_scaleout(system: System, opts) -> Iterable[Finding]:
    for p, bad in _spanning(system, "ep", _spans_islands):
        span = "spans" if len(bad) == 1 else "span"
        yield Finding("W502", f"{plural(len(bad), 'ep group')} of '{p.name}' {span} nodes, e.g. ep:"
                      f"{bad[0]}: token all-to-all goes over the network, where it cannot "
                      "aggregate NICs", p.span, strategy=p.name)


@rule("W503", "warning", "pipeline bubble above the threshold", threshold=0.25)
def bubble(system: System, opts) -> Iterable[Finding]:
    from ..training.mapping import bubble as bubble_of
    limit = opts.get("threshold", 0.25)
    for p in system.parallels:
        stages, micro = p.size("pp"), p.microbatches
        if stages > 1:
            fraction = bubble_of(stages, micro, p.training.interleave if p.training else 1)
            if fraction > limit:
                yield Finding("W503", f"'{p.name}': pipeline bubble {fraction:.0%} with {stages} "
                              f"stages and {micro} micro-batches (threshold {limit:.0%}); raise "
                              "microbatches", p.span, strategy=p.name)


@rule("W504", "warning", "inverted mapping: data parallel on the fast links, tensor parallel on "
      "the slow ones")
def inverted(system: System, opts) -> Iterable[Finding]:
    for p in system.parallels:
        tp, dp = rank_groups(p, "tp"), rank_groups(p, "dp")
        if p.size("tp") > 1 and p.size("dp") > 1 and \
                spans_domains(system, tp[0]) > 1 and spans_domains(system, dp[0]) == 1:
            yield Finding("W504", f"'{p.name}': dp groups sit inside one NVLink domain while tp "
                          "groups cross domains; reorder so tp varies fastest (order = tp, ...)",
                          p.span, strategy=p.name)


@rule("W505", "warning", "unused parallel block or group kind")
def unused(system: System, opts) -> Iterable[Finding]:
    for p in system.parallels:
        if not p.flows:
            yield Finding("W505", f"parallel block '{p.name}' declares no traffic: nothing uses "
                          "its groups", p.span, strategy=p.name)
        for f in p.flows:
            if p.size(f.dim) == 1 and not f.overlap:     # derived lines are never idle
                yield Finding("W505", f"'{p.name}' has traffic for {f.dim}, but {f.dim} = 1: "
                              "those groups are single GPUs and move nothing", f.span,
                              strategy=p.name)


@rule("W506", "warning", "a strategy's model does not fit in GPU memory")
def out_of_memory(system: System, opts) -> Iterable[Finding]:
    """Over HBM by more than the memory model's uncertainty (``memory.band``): a strategy a few
    GB over is 'tight' (it may run; ``topoc plan`` answers it), as runs that happened were."""
    from ..ir.gpus import hbm_of
    from ..training.memory import MEMORY_MARGIN, OVER, fit
    for p in system.parallels:
        if p.derived is None:
            continue
        t, mem = p.training, p.derived.memory
        hbm = hbm_of(system)
        if hbm is None:
            continue
        if fit(mem.total, hbm, MEMORY_MARGIN) == OVER:
            gb = 1e9
            yield Finding("W506", f"'{p.name}': {t.model.name} needs {mem.total / gb:.1f} GB per "
                          f"GPU on the {mem.stage} pipeline stage (weights {mem.weights / gb:.1f}, "
                          f"gradients {mem.gradients / gb:.1f}, optimizer "
                          f"{mem.optimizer / gb:.1f}, activations {mem.activations / gb:.1f}), "
                          f"{(mem.total - hbm) / gb:.1f} GB over the {hbm / gb:.0f} GB "
                          f"of HBM, more than the memory model's {MEMORY_MARGIN:.0%} "
                          "uncertainty; try recompute, distributed_optimizer, more tp or pp "
                          "(topoc plan searches them)", p.span, strategy=p.name)


@rule("W507", "warning", "a parallel block that does not fit the -D size is left out")
def misfit(system: System, opts) -> Iterable[Finding]:
    for name, diag in system.skipped:
        yield Finding("W507", diag.message, diag.span, strategy=name)


# ---- single points of failure ---------------------------------------------------------------

def _host_devices(system: System) -> list[tuple[str, list[int]]]:
    """(host id, its devices' indices) as the exports name hosts: marked ``host`` or
    inferred; none when the hosts cannot be named (``HostnameError``); made once per system
    (W409 and W410 both ask)."""
    found = system.memo.get("lint_hosts")
    if found is None:
        from ..ir.hosts import HostnameError, host_members
        try:
            found = host_members(system)
        except HostnameError:
            found = []
        system.memo["lint_hosts"] = found
    return found


def _host_table(system: System, hosts):
    """Each membership as two numpy arrays: the device indices of every host's members, host
    after host, and the host's number beside each."""
    import numpy as np

    sizes = [len(members) for _, members in hosts]
    at = np.fromiter((i for _, members in hosts for i in members), dtype=np.int64,
                     count=sum(sizes))
    return at, np.repeat(np.arange(len(hosts), dtype=np.int64), sizes)


def _one_switch_arrays(system: System, hosts) -> dict[str, list[str]] | None:
    """W409's hosts by switch from the integer ends in numpy (each compute NIC's neighbours
    over every link, no ``Link`` object: the pass over each NIC's links was about a third of
    lint at 1,024 NVL72 racks), hosts in their order; None when a device is in two hosts'
    lists (the pass below then answers)."""
    import numpy as np

    devices = system.devices
    at, number = _host_table(system, hosts)
    if len(at) and np.bincount(at).max() > 1:
        return None
    host_of = np.full(len(devices), -1, dtype=np.int64)
    host_of[at] = number
    # a switch without a port budget stands for a whole fabric (a cloud's), not one box
    nic = model_flags(system, lambda m: Device(m.name, m).compute_nic)
    switch = model_flags(system, lambda m: m.kind == "net_switch" and bool(m.ports))
    counts = np.bincount(host_of[nic & (host_of >= 0)], minlength=len(hosts))
    src, dst = system.ends.arrays()
    a = np.concatenate((src, dst)).astype(np.int64)
    b = np.concatenate((dst, src)).astype(np.int64)
    keep = nic[a] & switch[b] & (host_of[a] >= 0)
    pairs = unique(host_of[a[keep]] * len(devices) + b[keep])
    host, sw = np.divmod(pairs, len(devices))
    per_host = np.bincount(host, minlength=len(hosts))
    alone = (per_host == 1) & (counts >= 2)
    by_switch: dict[str, list[str]] = defaultdict(list)
    for h, w in zip(host[alone[host]].tolist(), sw[alone[host]].tolist()):
        by_switch[devices[w].id].append(hosts[h][0])
    return by_switch


@rule("W409", "note", "single point of failure: every compute NIC of a host on one switch")
def one_switch_host(system: System, opts) -> Iterable[Finding]:
    hosts = _host_devices(system)
    by_switch = _one_switch_arrays(system, hosts)
    if by_switch is None:
        by_switch = _one_switch_pass(system, hosts)
    device = system.device
    for switch, hosts_ in sorted(by_switch.items()):
        yield Finding("W409", f"{plural(len(hosts_), 'host')}, e.g. {_many(hosts_)}, reach the "
                      f"network only through {switch}: its failure cuts them off (spread the "
                      "NICs over several leaves, as a rail-optimised fabric does; topoc blast "
                      "ranks what each failure costs)", device(switch).span, switch)


def _one_switch_pass(system: System, hosts) -> dict[str, list[str]]:
    """W409's hosts by switch, host by host over each compute NIC's links."""
    device = system.device
    by_switch: dict[str, list[str]] = defaultdict(list)
    for host, members in hosts:
        nics = [system.devices[i].id for i in members if system.devices[i].compute_nic]
        if len(nics) < 2:
            continue
        switches = {link.dst if link.src == n else link.src
                    for n in nics for link in system.incidence.get(n, ())}
        # a switch without a port budget stands for a whole fabric (a cloud's), not one box
        switches = {s for s in switches
                    if device(s).kind == "net_switch" and device(s).model.ports}
        if len(switches) == 1:
            by_switch[switches.pop()].append(host)
    return by_switch


@rule("W410", "note", "an NVLink domain that one host's failure leaves too small for TP x EP")
def domain_margin(system: System, opts) -> Iterable[Finding]:
    if not system.parallels:
        return
    import numpy as np

    loc = system.locality
    # each rank's NVLink domain numbered (-1: none), every (domain, host) pair's GPUs counted
    # in numpy over the hosts' member indices
    codes: dict[str, int] = {}
    root = np.array([-1 if x is None else codes.setdefault(x, len(codes))
                     for x in loc.domain_root], dtype=np.int64)
    names = list(codes)
    counted = np.bincount(root[root >= 0], minlength=len(names)).tolist()
    size = dict(zip(names, counted))
    rank = np.full(len(system.devices), -1, dtype=np.int64)
    rank[loc.gpu_index] = np.arange(len(loc.gpu_index))
    hosts = _host_devices(system)
    at, number = _host_table(system, hosts)
    r = rank[at]
    keep = r >= 0
    dom, number = root[r[keep]], number[keep]
    keep = dom >= 0
    width = len(hosts) + 1
    pairs, per = np.unique(dom[keep] * width + number[keep], return_counts=True)
    pair_root = pairs // width
    largest: dict[str, int] = defaultdict(int)
    hosts_in: dict[str, int] = defaultdict(int)
    for code, n in zip(pair_root.tolist(), per.tolist()):
        name = names[code]
        largest[name] = max(largest[name], n)
        hosts_in[name] += 1
    for p in system.parallels:
        need = p.size("tp") * p.size("ep")
        tight = sorted(root for root, n in size.items() if hosts_in[root] > 1
                       and need <= n and need > n - largest[root])
        if tight and need > 1:
            root = tight[0]
            yield Finding("W410", f"'{p.name}' keeps TP x EP = {need} GPUs in one NVLink domain "
                          f"of {size[root]} ({plural(len(tight), 'domain')}, e.g. {root}'s); "
                          f"one host's failure leaves {size[root] - largest[root]}, too few: the "
                          "job cannot go on in that domain until the repair (a smaller TP x EP "
                          "keeps a spare host)", p.span, strategy=p.name)


@rule("W411", "note", "single point of failure: every leaf's uplinks on one spine switch")
def one_spine(system: System, opts) -> Iterable[Finding]:
    import numpy as np

    devices = system.devices
    a, b, _ = arrays_in(system, SCALEOUT_CLASSES)
    lv = level_array(system)
    # a leaf is a tier-1 switch (one hop above the NICs), its uplinks its links to tier 2
    up = ((lv[a] == 1) & (lv[b] == 2)) | ((lv[a] == 2) & (lv[b] == 1))
    low, high = np.where(lv[a] == 1, a, b)[up], np.where(lv[a] == 1, b, a)[up]
    switch = [i for i in unique(low).tolist() if devices[i].kind == "net_switch"]
    spines = {i for i in high.tolist() if devices[i].kind == "net_switch"}
    if len(switch) < 2 or len(spines) != 1:
        return
    spine = devices[spines.pop()]
    # a switch without a port budget stands for a whole fabric (a cloud's), not one box
    if not spine.model.ports:
        return
    leaves = [devices[i].id for i in switch]
    yield Finding("W411", f"all {plural(len(leaves), 'leaf', 'leaves')}, e.g. {_many(leaves)}, "
                  f"uplink only to {spine.id}: its failure partitions the leaves from each other "
                  "(uplink each leaf to two spines or more; topoc blast ranks what each failure "
                  "costs)", spine.span, spine.id)
