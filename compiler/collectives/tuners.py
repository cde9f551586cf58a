"""Provider tuner plugins: tables by which a net plugin's tuner picks NCCL's algorithm and
protocol in place of NCCL's own model.

aws-ofi-nccl ships a tuner (src/tuner/nccl_ofi_regions.cpp, "Region" tuner) that NCCL loads with
the net plugin on AWS instances. For a communicator of more than two nodes it looks up the
point (log2 message bytes, log2 ranks) in per-platform polygons, first match wins, and sets that
algorithm and protocol's cost to zero; outside every polygon, at two nodes or fewer, and when
NCCL_ALGO or NCCL_PROTO is set it leaves NCCL's choice alone (nccl_ofi_tuner.cpp). The polygons
below are the all-reduce ones for eight GPUs per node, copied as data from
``region_init_internal_p5_p5e`` and ``region_init_internal_p6`` (aws/aws-ofi-nccl, 2025); the
other collectives and layouts fall back to NCCL's model here, as they do where the plugin has no
table. A NIC model names its tuner with ``tuner`` (devices.topo: EFA100 on p5, EFA400 on
p6-b200).
"""

from __future__ import annotations

import math

from ..ir.system import NIC_TUNERS
from .algos import REGISTRY
from .tuning import PROTOCOLS

#: TUNER_MAX_SIZE and TUNER_MAX_RANKS (include/tuner/nccl_ofi_tuner_region.h).
MAX_SIZE = 100.0 * 1024 ** 3
MAX_RANKS = 1024.0 * 1024
EPS = 1e-10


def _log(p: tuple[float, float]) -> tuple[float, float]:
    """A vertex in the tuner's coordinates: log2 of bytes (0 stays 0) and log2 of ranks."""
    x, y = p
    return (math.log2(x) if x > 0 else 0.0, math.log2(y))


def _extend(a, b, z) -> tuple[float, float]:
    """extend_region: on the line through ``a`` and ``b`` (log2 space), the farthest point
    with ``z``'s x or y; returned in bytes and ranks."""
    (ax, ay), (bx, by), (zx, zy) = _log(a), _log(b), _log(z)
    if ax == bx:
        return (2 ** ax, 2 ** zy)
    if ay == by:
        return (2 ** zx, 2 ** ay)
    m = (ay - by) / (ax - bx)
    c = by - m * bx
    projected = m * zx + c
    if projected < zy:
        return (2 ** zx, 2 ** projected)
    return (2 ** ((zy - c) / m), 2 ** zy)


def _p5_allreduce() -> list[tuple[str, str, list[tuple[float, float]]]]:
    top = (MAX_SIZE, MAX_RANKS)
    tree_ll128 = _extend((402653184, 2048), (402653184, 4096), top)
    nvlstree_1 = _extend((8053063680, 160), (9663676416, 192), top)
    ring_simple = nvlstree_1
    return [
        ("tree", "LL128", [(0, 16), (31457280, 16), (37748736, 32), (117440512, 64),
                           (301989888, 128), (301989888, 256), (335544320, 512),
                           (536870912, 1024), (402653184, 2048), (402653184, 4096), tree_ll128,
                           (0, tree_ll128[1])]),
        ("nvlstree", "Simple", [(31457281, 16), (MAX_SIZE, 16), (31457281, 16)]),
        ("ring", "LL128", [(31457280, 17), (1073741824, 17), (2147483648, 64),
                           (2147483648, 128), (1342177280, 160), (2147483648, 256),
                           (1074790400, 256), (444596224, 160), (301989888, 128),
                           (117440512, 64), (37748736, 32)]),
        ("nvlstree", "Simple", [(2147483648, 128), (6442450944, 128), (8053063680, 160),
                                (9663676416, 192), nvlstree_1, tree_ll128, (402653184, 4096),
                                (402653184, 2048), (536870912, 1024), (335544320, 512),
                                (301989888, 256), (310378496, 160), (444596224, 160),
                                (1074790400, 256), (2684354560, 256), (2147483648, 224),
                                (1342177280, 160)]),
        ("ring", "Simple", [(1073741824, 17), (ring_simple[0], 17), ring_simple,
                            (9663676416, 192), (8053063680, 160), (2684354560, 64),
                            (1610612736, 32)]),
    ]


def _p6_allreduce() -> list[tuple[str, str, list[tuple[float, float]]]]:
    top = (MAX_SIZE, MAX_RANKS)
    tree_ll = _extend((393216, 16), (393216, 1024), top)
    tree_ll128 = _extend((96993280, 1024), (106430464, 2048), top)
    nvlstree = _extend((10737418240, 512), (34359738368, 1500), top)
    return [
        ("tree", "LL", [(0, 16), (393216, 16), tree_ll, (0, MAX_RANKS)]),
        ("tree", "LL128", [tree_ll, (393216, 16), (4718592, 16), (18350080, 32),
                           (40370176, 64), (57147392, 128), (72876032, 256), (96993280, 1024),
                           (106430464, 2048), tree_ll128]),
        ("ring", "LL128", [(90701824, 128), (50855936, 64), (18350080, 32), (133693440, 32),
                           (120061952, 64)]),
        ("nvlstree", "Simple", [tree_ll128, (106430464, 2048), (96993280, 1024),
                                (72876032, 256), (57147392, 128), (40370176, 64),
                                (18350080, 32), (50855936, 64), (90701824, 128),
                                (120061952, 64), (133693440, 32), (18350080, 32),
                                (4718592, 16), (MAX_SIZE, 16), (435159040, 32),
                                (1072693248, 64), (10737418240, 512), (34359738368, 1500),
                                nvlstree]),
        ("ring", "Simple", [nvlstree, (10737418240, 512), (1072693248, 64), (435159040, 32),
                            (MAX_SIZE, 16)]),
    ]


#: tuner name -> collective -> GPUs per node -> regions (algorithm, protocol, polygon).
TABLES = {
    "aws_p5": {"allreduce": {8: _p5_allreduce()}},
    "aws_p6": {"allreduce": {8: _p6_allreduce()}},
}
assert tuple(TABLES) == NIC_TUNERS, "the language's tuner names are the tables'"
assert all(a in REGISTRY and p in REGISTRY[a].protocols and p in PROTOCOLS
           for table in TABLES.values() for layouts in table.values()
           for regions in layouts.values() for a, p, _ in regions), \
    "every tuner region names a registered algorithm and one of its protocols"


def _cross(o, a, b) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _on_segment(p, a, b) -> bool:
    if abs(_cross(a, b, p)) > 1e-9 * max(1.0, math.dist(a, b)):
        return False
    return (min(a[0], b[0]) - EPS <= p[0] <= max(a[0], b[0]) + EPS and
            min(a[1], b[1]) - EPS <= p[1] <= max(a[1], b[1]) + EPS)


def inside(point: tuple[float, float], polygon: list[tuple[float, float]]) -> bool:
    """is_inside_region >= 0: on an edge, or inside by the even-odd rule (log2 space)."""
    p = _log(point)
    vs = [_log(v) for v in polygon]
    n = len(vs)
    if any(_on_segment(p, vs[i], vs[(i + 1) % n]) for i in range(n)):
        return True
    if not (min(v[0] for v in vs) <= p[0] <= max(v[0] for v in vs) and
            min(v[1] for v in vs) <= p[1] <= max(v[1] for v in vs)):
        return False
    crossings = 0
    for i in range(n):
        (x1, y1), (x2, y2) = vs[i], vs[(i + 1) % n]
        if (y1 > p[1]) != (y2 > p[1]):
            x = x1 + (p[1] - y1) * (x2 - x1) / (y2 - y1)
            if x > p[0]:
                crossings += 1
    return crossings % 2 == 1


def choice(tuner: str, collective: str, size: int, ranks: int, nodes: int,
           available: set[tuple[str, str]]) -> tuple[str, str] | None:
    """The (algorithm, protocol) the tuner sets for this call, or None where it leaves NCCL's
    own choice: two nodes or fewer, no table for the collective or layout, no region holding
    the point, or only regions whose combination NCCL cannot run here (``available``)."""
    if nodes <= 2 or ranks % nodes:
        return None
    regions = TABLES.get(tuner, {}).get(collective, {}).get(ranks // nodes)
    if not regions:
        return None
    for algorithm, protocol, polygon in regions:
        if (algorithm, protocol) not in available:
            continue
        if inside((max(1, size), ranks), polygon):
            return algorithm, protocol
    return None
