"""What ``topoc render`` draws with: the boxes and lines of a view, the options, and the
colours, shapes and tiers of each kind of device and class of link."""

from __future__ import annotations

import math

import attrs

from ..compiler.ir.kinds import KINDS
from .layout import box_size, parts

#: Boxes that stand for no one device kind (a device kind's style is its record's,
#: ``compiler.ir.kinds``).
DRAWN_STYLE = {
    "fabric": {"shape": "box", "style": "filled,bold", "fillcolor": "#8064a2",
               "fontcolor": "white"},
    "unit": {"shape": "box3d", "fillcolor": "#eeeeee"},
    "netunit": {"shape": "box3d", "fillcolor": "#e6b9b8"},
    "band": {"shape": "box", "fillcolor": "#f4f4f4", "fontsize": "8", "margin": "0.02,0"},
}
CLASS_COLOR = {"nvlink": "#4e9a06", "nvlink_c2c": "#00a3a3", "pcie": "#555555",
               "infiniband": "#1f4e9a", "ethernet": "#e36c09", "inter_socket": "#c00000"}
LEGEND_NAME = {"unit": "rack / node / tray (group of devices)", "netunit": "switch group",
               "fabric": "NVLink fabric (switches of one domain)",
               "band": "full mesh between two rows, folded"}
# Rows from the host down: NICs on a CPU, CPUs, PCIe switches with their NICs, GPUs, NVLink
# switches, the network (a device kind's row is its record's). In the racks view the fabric
# sits above the racks as a Clos is drawn: cores, spines, leaves, then the racks or nodes
# (UNIT_TIER - level).
DRAWN_TIER = {"fabric": 4, "netunit": 7, "unit": 40, "band": 4}
UNIT_TIER = 40
#: A box holding more groups than this shows the first ones' colours and names the count.
MAX_STRIPES = 24
SHAPE_ROOM = {"diamond": (1.6, 1.5), "hexagon": (1.25, 1.1), "octagon": (1.25, 1.15),
              "doubleoctagon": (1.3, 1.2), "box3d": (1.05, 1.05)}


def _palette() -> tuple[str, ...]:
    """36 colours told apart by hue (12 steps, neighbouring groups 150 degrees apart) and
    lightness (3 steps, one per run of 12); 72 groups repeat a colour only 36 groups apart."""
    import colorsys
    out = []
    for i in range(36):
        hue = (i * 5 % 12) / 12
        light, sat = ((0.45, 0.75), (0.72, 0.65), (0.28, 0.70))[i // 12]
        r, g, b = colorsys.hls_to_rgb(hue, light, sat)
        out.append(f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}")
    return tuple(out)


PALETTE = _palette()


def text_color(fill: str) -> str:
    """Black or white, whichever reads better on ``fill`` (WCAG relative luminance)."""
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    rgb = [int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lum = 0.2126 * channel(rgb[0]) + 0.7152 * channel(rgb[1]) + 0.0722 * channel(rgb[2])
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"




@attrs.frozen
class Node:
    """A drawn box: a device, a fabric or an aggregated unit."""

    id: str
    kind: str
    label: str
    cluster: str        # id prefix of the cluster it sits in ('' for the top)
    tier: int | None = None     # drawing tier when not the kind's (a switch box's level)
    anchor: str | None = None   # drawn right after this sibling (a NIC by its PCIe switch)


@attrs.frozen
class Edge:
    """A drawn line: one link or several bundled (lanes and bandwidth summed)."""

    src: str
    dst: str
    cls: str
    lanes: int
    bandwidth: float
    duplex: bool = True
    types: tuple[str, ...] = ()      # the link types it stands for


@attrs.frozen
class Options:
    """What to draw beyond the topology: group colours and highlights."""

    view: str | None = None
    parallel: str | None = None
    color: str = "tp"
    highlight: tuple[str, ...] = ()
    ring: str | None = None      # a group (dp:3, world, or a rank list 0..7) whose ring to draw
    #: a heat map over the boxes: (failure domain id, cost of one failure, tag), as
    #: backends.heat.heat_map makes it from topoc blast's classes; it fills the boxes instead
    #: of the groups' colours
    heat: tuple[tuple[str, float, str], ...] = ()
    #: the page the picture is for, (width, height) in px at 96 px an inch: None for a
    #: 1,920 x 1,080 slide. The default view is the most detailed one whose texts stay
    #: 10 px high on it, and a PNG is scaled down to fit it (never up); a poster lifts the
    #: slide's cap (``render.parse_size``: "WxH", "slide", "poster")
    size: tuple[int, int] | None = None


def short(device_id: str) -> str:
    """The last part of a path: 'rack.tray3.sc0.gpu1' -> 'gpu1'."""
    return parts(device_id)[-1]


def unique_suffixes(ids) -> dict[str, str]:
    """Each path's shortest ending no other path shares, the system name left out:
    'pod0.spine3' where another pod has a spine3, 'leaf7' where only one leaf7 exists."""
    ids = list(ids)
    split = {i: parts(i)[1:] or parts(i) for i in ids}
    out: dict[str, str] = {}
    for k in range(1, max((len(p) for p in split.values()), default=0) + 1):
        todo = [i for i in ids if i not in out]
        if not todo:
            break
        seen: dict[str, int] = {}
        for i in ids:
            tail = ".".join(split[i][-k:])
            seen[tail] = seen.get(tail, 0) + 1
        for i in todo:
            tail = ".".join(split[i][-k:])
            if seen[tail] == 1 or k >= len(split[i]):
                out[i] = tail
    return out


def kind_style(kind: str) -> dict[str, str]:
    """The Graphviz attributes of a box of ``kind`` (a device kind or a drawn-only box)."""
    return KINDS[kind].style() if kind in KINDS else DRAWN_STYLE[kind]


def kind_name(kind: str) -> str:
    """A kind as a person says it ("NVLink switch"); a drawn-only box's own name."""
    return KINDS[kind].label if kind in KINDS else kind


def legend_name(kind: str) -> str:
    """What the legend calls a box of ``kind``."""
    return LEGEND_NAME.get(kind) or kind_name(kind)


def kind_tier(kind: str) -> int:
    """The drawing row of a box of ``kind``."""
    return KINDS[kind].row if kind in KINDS else DRAWN_TIER[kind]


def box(n: Node) -> tuple[float, float]:
    """Points a box needs: its label (two more lines room for a group tag), its shape."""
    w, h = box_size(n.label + "\ntp:00")
    fw, fh = SHAPE_ROOM.get(kind_style(n.kind)["shape"], (1.0, 1.0))
    return w * fw, h * fh


def tier(n: Node) -> int:
    return kind_tier(n.kind) if n.tier is None else n.tier


def penwidth(bandwidth: float) -> float:
    # 1 at <= 25 GB/s, +1 per doubling, capped at 8 so bundles stay readable.
    return min(8.0, 1.0 + max(0.0, math.log2(bandwidth / 25e9)))


RING_COLOR = "#d62728"


