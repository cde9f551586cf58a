"""A marked host's members (``ir.hosts._groups``): the devices whose id is the host's id or
lies below it, in device order, as the plain walk over each id's prefixes finds them; the
first two probes are made for all devices at once, so a device-host, a device one level
below its host, one several levels below and one on no host are each checked."""

from __future__ import annotations

import topoc
from topoc.compiler.ir import hosts

from ...conftest import LIBRARY

FILES = sorted(p for p in LIBRARY.rglob("*.topo") if "\nsystem " in p.read_text())
H = 'use "nvidia/links.topo"\nuse "nvidia/devices.topo"\n'


def _walk(system):
    """The plain walk: each device's prefixes from its id up, the first host id wins."""
    by_prefix = {h.id: [] for h in system.hosts}
    for i, d in enumerate(system.devices):
        prefix = d.id
        while prefix not in by_prefix and "." in prefix:
            prefix = prefix.rsplit(".", 1)[0]
        if prefix in by_prefix:
            by_prefix[prefix].append(i)
    return [(h.id, h.indices, h.pattern, by_prefix[h.id]) for h in system.hosts]


def test_library_files():
    marked = 0
    for path in FILES:
        system = topoc.load(path)
        if system.hosts:            # (without marks the hosts are inferred: another path)
            marked += 1
            assert hosts._groups(system) == _walk(system), path.name
    assert marked >= 4


def test_hosts_at_every_depth():
    system = topoc.loads(H + """
group Card { nic : CX7 }
group Node { gpu[2] : H100  card[2] : Card  cpu : Grace }
group Row { host node[2] : Node  host gpu : H100  sw : QM9700  deep[1] : Node }
system s : Row
""")
    groups = hosts._groups(system)
    assert groups == _walk(system)
    members = {host_id: [system.devices[i].id for i in m] for host_id, _, _, m in groups}
    assert members["s.gpu"] == ["s.gpu"]                            # a device that is a host
    assert "s.node1.card0.nic" in members["s.node1"]                # two levels below
    assert all("s.sw" not in m and "s.deep0.cpu" not in m for m in members.values())
