"""Shared hypothesis strategies: small random .topo programs with known expected shapes."""

from __future__ import annotations

from hypothesis import strategies as st

HEADER = '''link nv : nvlink { bandwidth = 50 GB/s }
link pc : pcie { bandwidth = 63 GB/s }
device G : gpu { hbm = 80 GB }
device S : switch { }
device C : cpu { }
'''


@st.composite
def node_programs(draw):
    """A node group with ``g`` GPUs, ``s`` switches and ``c`` CPUs wired three ways, inside a
    cluster of ``n`` nodes. Returns (text, expected device count, expected link count)."""
    g = draw(st.integers(1, 12))
    s = draw(st.integers(1, 6))
    c = draw(st.integers(1, 4))
    n = draw(st.integers(1, 5))
    lanes = draw(st.integers(1, 9))
    div = draw(st.integers(1, g))
    text = HEADER + f'''
group Node(gpus: int = {g}) {{
  gpu[gpus] : G
  sw[{s}] : S
  cpu[{c}] : C
  gpu[*] <-> sw[*] : nv x {lanes}
  gpu[i] <-> cpu[(i / {div}) % {c}] : pc
}}
group Cluster(nodes: int = {n}) {{
  node[nodes] : Node
  node[k].cpu[0] <-> node[(k + 1) % nodes].cpu[0] : pc
}}
system cl : Cluster
'''
    ring = n if n > 2 else (1 if n == 2 else 0)   # n=2 wires one pair twice; n=1 self-loops
    return text, n * (g + s + c), n * (g * s + g) + ring, n


@st.composite
def cluster_programs(draw):
    """A random cluster: 1-4 islands (nodes) of 1-16 GPUs each, every island either an NVSwitch
    node (reducing or not) or a PCIe tree over two sockets; a NIC per GPU on a shared leaf.
    Returns the program text and its GPU count."""
    islands = draw(st.integers(1, 4))
    per = draw(st.integers(1, 16))
    fabric = draw(st.sampled_from(["nvswitch", "nvswitch_noreduce", "pcie"]))
    switches = draw(st.integers(1, 4))
    reduce = "true" if fabric == "nvswitch" else "false"
    body = [f"device NS : switch {{ reduction = {reduce} }}", "device PS : pcie_switch { }",
            "device N : nic { }", "device L : net_switch { }",
            "link ib : infiniband { bandwidth = 50 GB/s }",
            "link sock : inter_socket { bandwidth = 20 GB/s }",
            f"group Node {{ gpu[{per}] : G  cpu[2] : C  sw[{per}] : PS  nic[{per}] : N"]
    body.append("  gpu[i] <-> sw[i] : pc  nic[i] <-> sw[i] : pc"
                f"  sw[i] <-> cpu[i * 2 / {per}] : pc  cpu[0] <-> cpu[1] : sock")
    if fabric != "pcie":
        body.append(f"  ns[{switches}] : NS  gpu[*] <-> ns[*] : nv x 2")
    body.append("}")
    body.append(f"group Cluster {{ node[{islands}] : Node  leaf : L  node[*].nic[*] <-> leaf : ib }}")
    body.append("system c : Cluster")
    return HEADER + "\n".join(body) + "\n", islands * per


@st.composite
def group_requests(draw, world: int):
    """A group of world ranks (a random subset in random order) of size 1..min(world, 64)."""
    size = draw(st.integers(1, min(world, 64)))
    ranks = draw(st.permutations(range(world)))[:size]
    return ",".join(map(str, ranks))
