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
