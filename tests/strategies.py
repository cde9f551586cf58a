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


# ---- fuzzing --------------------------------------------------------------------------------

_UNITS = ["B", "GB", "GiB", "Gb/s", "GB/s", "us", "ns", "ms", "s", "TB/s", "KiB", "b"]
_NAMES = ["gpu", "sw", "nic", "cpu", "H100", "B200", "G", "nv", "nvlink4", "pcie5", "i", "n", "k",
          "racks", "tp", "dp", "pp", "allreduce", "Node", "Rack", "cluster", "ports", "hbm",
          "bandwidth", "latency", "nvlink", "switch", "order"]
_NUMBERS = ["0", "1", "2", "3", "8", "18", "72", "1.5", "1e3", "1_000", "99999999999999",
            "4096"]


def grammar_programs():
    """Programs drawn from the grammar itself (hypothesis.extra.lark), tokens spaced so that
    keywords and names do not run together."""
    import lark
    from hypothesis.extra.lark import from_lark

    from topoc.grammar import grammar_text

    def spaced(options):
        return st.sampled_from([f" {o} " for o in options])
    parser = lark.Lark(grammar_text(), parser="lalr")
    return from_lark(parser, explicit={
        "UNIT": spaced(_UNITS), "NAME": spaced(_NAMES), "NUMBER": spaced(_NUMBERS),
        "STRING": spaced(['"nvidia/links.topo"', '"nvidia/devices.topo"', '"a"', '"x.topo"']),
        "COMMENT": st.just("# comment\n"), "ARROW": spaced(["<->", "->"])})


_JUNK = ["\x00", "\xff", "é", "{", "}", "[", "]", "(", ")", "*", "..", "x", "<->", "->", ":", "=",
         "999999999999999999", "0", "-1", "GB", "us", "Gb/s", "use", "group", "system",
         "parallel", "let", "auto", '"', "#", "\n", "((((((((((", "1e308", "%", "/", "0..0"]


@st.composite
def mutated_library_files(draw):
    """A bundled library file after one to three token-level mutations: delete, duplicate,
    swap, truncate, insert junk, blow up numbers, change units, nest deeply, import itself."""
    import re

    from topoc import library
    path = draw(st.sampled_from(library.files()))
    tokens = re.findall(r'\s+|"[^"\n]*"|\w+|[^\w\s]', path.read_text())
    for _ in range(draw(st.integers(1, 3))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "truncate", "junk", "number",
                                   "unit", "nest", "self"]))
        if op == "delete":
            del tokens[i]
        elif op == "duplicate":
            tokens.insert(i, tokens[draw(st.integers(0, len(tokens) - 1))])
        elif op == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "truncate":
            tokens = tokens[:i]
        elif op == "junk":
            tokens.insert(i, draw(st.sampled_from(_JUNK)))
        elif op == "number":
            tokens = [draw(st.sampled_from(_NUMBERS)) if t.isdigit() and draw(st.booleans())
                      else t for t in tokens]
        elif op == "unit":
            tokens = [draw(st.sampled_from(_UNITS)) if t in ("GB", "us", "Gb", "TB") else t
                      for t in tokens]
        elif op == "nest":
            depth = draw(st.integers(10, 3000))
            tokens.insert(i, "(" * depth + "1" + ")" * depth)
        else:
            tokens.insert(0, f'use "{path.name}"\n')
    return path, "".join(tokens)


# Extreme spellings of numbers (issue 18): each must be refused or accepted in seconds.
EXTREME_NUMBERS = ["1e99999999", "1e9999999", "1e309", "1e-400", "1" + "0" * 100, "9" * 3000,
                   "-0", "-99999999999999999999", "0", "0e0", "0.0", "1e25", "9.99e24",
                   "1_000_000_000_000", "4294967296", "1e-31", "nan", "inf", "-inf", "1e+6"]
_NUMBER_TOKEN = r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])"


def _blow_up_numbers(draw, text: str) -> str:
    """``text`` with one to three of its number literals replaced by extreme spellings."""
    import re
    spots = [m.span() for m in re.finditer(_NUMBER_TOKEN, text)]
    if not spots:
        return text
    chosen = sorted(set(draw(st.lists(st.sampled_from(spots), min_size=1, max_size=3))),
                    reverse=True)
    for a, b in chosen:
        text = text[:a] + draw(st.sampled_from(EXTREME_NUMBERS)) + text[b:]
    return text


@st.composite
def number_bombs(draw):
    """(verb arguments, library file path, mutated text): a bundled file whose numbers were
    blown up, and the CLI verb to run on it."""
    from topoc import library
    files = [p for p in library.files() if p.name != "nvl72_superpod.topo"]
    path = draw(st.sampled_from(files))
    verb = draw(st.sampled_from([["compile"], ["compile", "--format", "json"], ["lint"],
                                 ["fmt", "--check"], ["render", "-o", "{out}.dot"],
                                 ["cost", "--group", "world", "--sizes", "1MiB"],
                                 ["report", "--parallel", "train"],
                                 ["schedule", "--ranks", "0..1", "--collective", "allreduce",
                                  "--format", "nccl"],
                                 ["export", "nccl-topo", "-o", "{out}.xml"],
                                 ["compile", "-D", "{define}"]]))
    define = draw(st.sampled_from(["racks", "nodes", "pods"])) + "=" + draw(
        st.sampled_from(EXTREME_NUMBERS))
    verb = [a.replace("{define}", define) for a in verb]
    return verb, path, _blow_up_numbers(draw, path.read_text())


@st.composite
def importer_bombs(draw):
    """(format, fixture name, mutated text): a published matrix or dump with numbers blown up."""
    from pathlib import Path
    fixtures = sorted((Path(__file__).parent / "fixtures" / "nccl").glob("*.[tx][xm][tl]"))
    path = draw(st.sampled_from(fixtures))
    kind = "nccl-topo" if path.suffix == ".xml" else "nvidia-smi"
    return kind, path.name, _blow_up_numbers(draw, path.read_text())
