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
    up: dict[str, list[str]] = {}
    tier = {s.name: s.tier for s in fab.switches}
    for c in fab.cables:
        for a, b in ((c.a, c.b), (c.b, c.a)):
            if a in tier and b in tier and tier[b] == tier[a] + 1:
                up.setdefault(a, []).append(b)
    first_leaf: dict[str, str] = {}
    for c in fab.cables:
        for end, other in ((c.a, c.b), (c.b, c.a)):
            if "/" in end and other in tier:
                host, idx = end.split("/", 1)
                prev = first_leaf.get(host)
                if prev is None or int(idx) < int(prev[0]):
                    first_leaf[host] = (idx, other)
    domain = {h: f"nvl{i}" for i, b in enumerate(fab.blocks) for h in b if len(b) > 1}
    chains: dict[str, dict[str, str]] = {}      # a leaf's tier labels, made once per leaf
    out: dict[str, dict[str, str]] = {}
    for h in fab.hosts:
        lab: dict[str, str] = {}
        if h.name in first_leaf:
            leaf = first_leaf[h.name][1]
            chain = chains.get(leaf)
            if chain is None:
                chain, s, n = {}, leaf, 0
                while s is not None:
                    chain[TIER.format(n)] = s
                    nxt = up.get(s)
                    s, n = (min(nxt) if nxt else None), n + 1
                chains[leaf] = chain
            lab.update(chain)
        if h.name in domain:
            lab[DOMAIN] = domain[h.name]
            if clique:
                lab[CLIQUE] = domain[h.name]
        lab[HOSTNAME] = h.name
        out[h.name] = lab
    return out


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
    all_labels = labels(fab, clique)
    for host, lab in all_labels.items():
        lines += ["---", "apiVersion: v1", "kind: Node", "metadata:",
                  f"  name: {json.dumps(host)}", "  labels:"]
        lines += [f"    {k}: {json.dumps(v)}" for k, v in lab.items()]
    levels = [TIER.format(n) for n in reversed(range(fab.tiers()))]
    if any(DOMAIN in lab for lab in all_labels.values()):
        levels.append(DOMAIN)
    levels.append(HOSTNAME)
    lines += ["---", f"apiVersion: kueue.x-k8s.io/{kueue_api}", "kind: Topology", "metadata:",
              f"  name: {json.dumps(topology_name)}", "spec:", "  levels:"]
    lines += [f"  - nodeLabel: {json.dumps(level)}" for level in levels]
    return "\n".join(lines) + "\n"
