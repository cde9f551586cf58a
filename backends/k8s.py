"""Kubernetes node labels for topology-aware schedulers, and a Kueue ``Topology``.

Per host: ``fabric.topograph.run/tier-N`` (N = 0 for the switch closest to the node, as
Topograph writes them; KAI Scheduler, Kueue and NVSentinel read them), the NVLink domain as
``accelerator.topograph.run/domain``, and ``kubernetes.io/hostname``. ``nvidia.com/gpu.clique``
belongs to GPU Feature Discovery, which sets it to ``<ClusterUUID>.<CliqueID>`` from the driver;
it is written only when asked (``clique=True``, for a cluster without GFD). A host with compute
NICs on several leaves (a rail-optimised node) is labelled by its first compute NIC's leaf: rail
0. Tier N+1 is the first switch (by name) cabled above tier N. The Kueue Topology lists the
levels from the top tier down to the hostname, at ``kueue.x-k8s.io/v1beta2`` (served from Kueue
0.14) unless an older API version is asked for.
"""

from __future__ import annotations

import json

from ..compiler.analysis.fabric import Fabric
from ..compiler.base.gcpause import gc_paused
from ..compiler.base.text import visible
from . import names

TIER = "fabric.topograph.run/tier-{}"
DOMAIN = "accelerator.topograph.run/domain"
CLIQUE = "nvidia.com/gpu.clique"
HOSTNAME = "kubernetes.io/hostname"
#: Kueue API versions that serve ``Topology``, newest first (v1beta2 from Kueue 0.14; the
#: schema, ``spec.levels[].nodeLabel``, is the same in each).
KUEUE_APIS = ("v1beta2", "v1beta1", "v1alpha1")


def labels(fab: Fabric, clique: bool = False) -> dict[str, dict[str, str]]:
    """Labels per hostname, in host order; ``clique`` adds ``nvidia.com/gpu.clique`` (GPU
    Feature Discovery's label) with the domain's value."""
    chain_of, domain = _placed(fab)
    out: dict[str, dict[str, str]] = {}
    for h, chain in zip(fab.hosts, chain_of):
        lab: dict[str, str] = dict(chain or ())
        if h.name in domain:
            lab[DOMAIN] = domain[h.name]
            if clique:
                lab[CLIQUE] = domain[h.name]
        lab[HOSTNAME] = h.name
        out[h.name] = lab
    return out


def _placed(fab: Fabric) -> tuple[list[dict[str, str] | None], dict[str, str]]:
    """Per host (in order), its tier labels (one dict per leaf, shared by the leaf's hosts;
    None: no compute NIC cabled), and each host's NVLink domain label by hostname."""
    up, first_leaf = _up_and_leaves(fab)
    chains: dict[str, dict[str, str]] = {}      # a leaf's tier labels, made once per leaf
    out: list[dict[str, str] | None] = []
    for h in fab.hosts:
        leaf = first_leaf.get(h.name)
        if leaf is None:
            out.append(None)
            continue
        chain = chains.get(leaf)
        if chain is None:
            chain, s, n = {}, leaf, 0
            while s is not None:
                chain[TIER.format(n)] = s
                s, n = up.get(s), n + 1
            chains[leaf] = chain
        out.append(chain)
    domain = {h: f"nvl{i}" for i, b in enumerate(fab.blocks) for h in b if len(b) > 1}
    return out, domain


def _up_and_leaves(fab: Fabric) -> tuple[dict[str, str], dict[str, str]]:
    """Per switch, the first switch by name cabled to it one tier up; per host, the leaf of
    its first compute NIC (the lowest index; the first cable on a tie)."""
    t = fab.table
    if not t.natural_order or any("/" in h.name for h in fab.hosts):
        return _up_and_leaves_by_name(fab)
    import numpy as np

    hca_at, switch_at = fab.end_positions
    is_switch = switch_at >= 0
    tier = np.zeros(len(t.names), dtype=np.int64)
    tier[is_switch] = np.array([s.tier for s in fab.switches],
                               dtype=np.int64)[switch_at[is_switch]]
    # both directions of each cable, (a, b) before (b, a), as the cables' order has them
    x = np.stack((t.a, t.b), axis=1).reshape(-1)
    y = np.stack((t.b, t.a), axis=1).reshape(-1)
    higher = is_switch[x] & is_switch[y] & (tier[y] == tier[x] + 1)
    low, high = x[higher], y[higher]
    names = t.names
    up: dict[str, str] = {}
    if len(low):
        # each low switch's upper neighbours by name: the smallest name of each run
        by_name = sorted(set(high.tolist()), key=names.__getitem__)
        rank = np.zeros(len(names), dtype=np.int64)
        rank[by_name] = np.arange(len(by_name))
        order = np.lexsort((rank[high], low))
        low, high = low[order], high[order]
        first = np.flatnonzero(np.r_[True, low[1:] != low[:-1]])
        up = dict(zip(map(names.__getitem__, low[first].tolist()),
                      map(names.__getitem__, high[first].tolist())))
    cabled = (hca_at[x] >= 0) & is_switch[y]
    seq = np.flatnonzero(cabled)                # cable order, both directions
    hca = hca_at[x[seq]]
    hcas = fab.hcas
    host_no = {h.name: k for k, h in enumerate(fab.hosts)}
    host = np.array([host_no[h.host] for h in hcas], dtype=np.int64)[hca] if len(hca) else hca
    index = np.array([h.index for h in hcas], dtype=np.int64)[hca] if len(hca) else hca
    order = np.lexsort((seq, index, host))      # per host: lowest index, then first cable
    host, leaf = host[order], y[seq][order]
    first = np.flatnonzero(np.r_[True, host[1:] != host[:-1]]) if len(host) else host
    hostnames = [h.name for h in fab.hosts]
    first_leaf = dict(zip(map(hostnames.__getitem__, host[first].tolist()),
                          map(names.__getitem__, leaf[first].tolist())))
    return up, first_leaf


def _up_and_leaves_by_name(fab: Fabric) -> tuple[dict[str, str], dict[str, str]]:
    """``_up_and_leaves`` one cable at a time, for a fabric whose cable ends are not the
    view's own (names in natural order) or whose hostnames hold '/'."""
    ups: dict[str, list[str]] = {}
    tier = {s.name: s.tier for s in fab.switches}
    for c in fab.cables:
        for a, b in ((c.a, c.b), (c.b, c.a)):
            if a in tier and b in tier and tier[b] == tier[a] + 1:
                ups.setdefault(a, []).append(b)
    first_leaf: dict[str, tuple[str, str]] = {}
    for c in fab.cables:
        for end, other in ((c.a, c.b), (c.b, c.a)):
            if "/" in end and other in tier:
                host, idx = end.split("/", 1)
                prev = first_leaf.get(host)
                if prev is None or int(idx) < int(prev[0]):
                    first_leaf[host] = (idx, other)
    return ({s: min(v) for s, v in ups.items()},
            {h: leaf for h, (_, leaf) in first_leaf.items()})


@gc_paused()        # a line or more per cable of 18,432 hosts: no collector passes
def render(fab: Fabric, source: str = "", topology_name: str = "default",
           kueue_api: str = KUEUE_APIS[0], clique: bool = False) -> str:
    """A multi-document YAML: one Node metadata patch per host (``kubectl apply``-able labels),
    then the Kueue Topology at ``kueue.x-k8s.io/<kueue_api>``. Values are JSON strings, which
    YAML reads as they are. Hostnames must be RFC 1123 subdomains and switch names label values
    (``names.InvalidName``)."""
    if kueue_api not in KUEUE_APIS:
        raise ValueError(f"Kueue API version '{kueue_api}' is not one of "
                         f"{', '.join(KUEUE_APIS)}")
    names.check(fab, names.K8S_NODE, names.K8S_LABEL)
    lines = [f"# Kubernetes topology labels written by topoc from {visible(source or fab.name)}"]
    chain_of, domain = _placed(fab)
    text: dict[int, str] = {}       # a leaf's tier label lines, made once per leaf
    dumps = json.dumps
    for h, chain in zip(fab.hosts, chain_of):
        name = dumps(h.name)
        tiers = ""
        if chain is not None:
            tiers = text.get(id(chain))
            if tiers is None:
                tiers = text[id(chain)] = "".join(f"\n    {k}: {dumps(v)}"
                                                  for k, v in chain.items())
        mine = domain.get(h.name)
        if mine is not None:
            tiers += f"\n    {DOMAIN}: {dumps(mine)}" + (
                f"\n    {CLIQUE}: {dumps(mine)}" if clique else "")
        lines.append(f"---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n"
                     f"  labels:{tiers}\n    {HOSTNAME}: {name}")
    levels = [TIER.format(n) for n in reversed(range(fab.tiers()))]
    if any(h.name in domain for h in fab.hosts):
        levels.append(DOMAIN)
    levels.append(HOSTNAME)
    lines += ["---", f"apiVersion: kueue.x-k8s.io/{kueue_api}", "kind: Topology", "metadata:",
              f"  name: {json.dumps(topology_name)}", "spec:", "  levels:"]
    lines += [f"  - nodeLabel: {json.dumps(level)}" for level in levels]
    return "\n".join(lines) + "\n"
