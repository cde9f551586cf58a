"""Geometry of a rendered SVG, read back from what Graphviz drew: the device boxes, the lines
with the boxes they join, and the picture's size; and the checks issue 28 asks of a picture."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
NUM = re.compile(r"-?\d+(?:\.\d+)?")


def _points(shape) -> list[tuple[float, float]]:
    text = shape.get("points") or shape.get("d", "")
    nums = [float(v) for v in NUM.findall(text)]
    return list(zip(nums[0::2], nums[1::2]))


def read(svg: bytes):
    """(boxes {id: (x0, y0, x1, y1)}, lines [(a, b, [points])], width, height) in SVG
    coordinates; the legend and rings are left out."""
    root = ET.fromstring(svg)
    width = float(root.get("width").rstrip("pt"))
    height = float(root.get("height").rstrip("pt"))
    boxes, lines = {}, []
    for g in root.iter(f"{SVG}g"):
        kind = g.get("class")
        title = g.find(f"{SVG}title")
        if title is None or kind not in ("node", "edge"):
            continue
        name = title.text
        if kind == "node":
            if name == "legend":
                continue
            pts = [p for shape in g.iter() if shape.tag in (f"{SVG}polygon", f"{SVG}path")
                   for p in _points(shape)]
            if pts:
                xs, ys = zip(*pts)
                boxes[name] = (min(xs), min(ys), max(xs), max(ys))
        else:
            a, _, b = name.partition("--")
            path = next(g.iter(f"{SVG}path"), None)
            if path is None or "#d62728" in (path.get("stroke") or ""):
                continue
            lines.append((a, b, _points(path)))
    return boxes, lines, width, height


def _inside(p, box, margin: float = 2.0) -> bool:
    return box[0] + margin < p[0] < box[2] - margin and box[1] + margin < p[1] < box[3] - margin


def bar_texts(svg: bytes) -> dict[str, tuple[float, float]]:
    """The x extent of the text of each bar (a folded bus: the NVLink fabric bar, a folded
    mesh's grey bar), by bar: a line may cross a bar at right angles away from its text
    (lines crossing), never through its text (0.62 em a character: wider than Helvetica's
    mean, so the check errs towards a crossing)."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(f"{SVG}g"):
        title = g.find(f"{SVG}title")
        if g.get("class") != "node" or title is None or not (
                title.text.endswith("nvlink_fabric") or title.text.startswith("mesh/")):
            continue
        spans = []
        for t in g.iter(f"{SVG}text"):
            text = "".join(t.itertext()).strip()
            w = len(text) * float(t.get("font-size", "14")) * 0.62
            x = float(t.get("x"))
            x0 = {"start": x, "end": x - w}.get(t.get("text-anchor"), x - w / 2)
            spans.append((x0, x0 + w))
        if spans:
            out[title.text] = (min(a for a, _ in spans), max(b for _, b in spans))
    return out


def crossing(boxes, lines, bars: dict[str, tuple[float, float]] | None = None) \
        -> list[tuple[str, str, str]]:
    """(a, b, box) for every line that runs through a box it does not join (its drawn path
    sampled every 3 points; boxes looked up in a grid of 100-point cells). With ``bars``
    (``bar_texts``), a vertical run across a bar outside its text is a crossing of lines,
    not a line through a box (an NVL72 rack's NIC uplinks climbing across its spine)."""
    bars = bars or {}
    grid: dict[tuple[int, int], list[str]] = {}
    for name, (x0, y0, x1, y1) in boxes.items():
        for cx in range(int(x0 // 100), int(x1 // 100) + 1):
            for cy in range(int(y0 // 100), int(y1 // 100) + 1):
                grid.setdefault((cx, cy), []).append(name)
    out = []
    for a, b, pts in lines:
        hit = None
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            n = max(1, int(max(abs(x1 - x0), abs(y1 - y0)) // 3))
            upright = abs(x1 - x0) < 0.5
            for i in range(n + 1):
                p = (x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n)
                for name in grid.get((int(p[0] // 100), int(p[1] // 100)), ()):
                    if name not in (a, b) and _inside(p, boxes[name]):
                        text = bars.get(name)
                        if upright and text is not None and not text[0] < p[0] < text[1]:
                            continue
                        hit = name
                        break
                if hit:
                    break
            if hit:
                break
        if hit:
            out.append((a, b, hit))
    return out


def frame_titles(svg: bytes) -> dict[str, tuple[float, float, float, float]]:
    """Each frame's title box (Helvetica 12: about 7 pt a character, 12 pt tall), by frame."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class") != "cluster":
            continue
        text = g.find(f"{SVG}text")
        if text is None or not text.text:
            continue
        x, y = float(text.get("x")), float(text.get("y"))
        w = len(text.text) * 7.0
        x0 = {"start": x, "end": x - w}.get(text.get("text-anchor"), x - w / 2)
        out[g.find(f"{SVG}title").text.removeprefix("cluster_")] = (x0, y - 10, x0 + w, y + 1)
    return out


def frames(svg: bytes) -> dict[str, tuple[float, float, float, float]]:
    """Each frame's outline (x0, y0, x1, y1; SVG coordinates, y down), by frame."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class") != "cluster":
            continue
        pts = [p for shape in g if shape.tag in (f"{SVG}polygon", f"{SVG}path")
               for p in _points(shape)]
        if pts:
            xs, ys = zip(*pts)
            out[g.find(f"{SVG}title").text.removeprefix("cluster_")] = \
                (min(xs), min(ys), max(xs), max(ys))
    return out


def lines_through_titles(svg: bytes) -> list[tuple[str, str, str]]:
    """(a, b, frame) for every line drawn through a frame's title."""
    _, lines, _, _ = read(svg)
    out = []
    for frame, box in frame_titles(svg).items():
        for a, b, pts in lines:
            for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
                n = max(1, int(max(abs(x1 - x0), abs(y1 - y0)) // 2))
                if any(_inside((x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n), box, 0.0)
                       for i in range(n + 1)):
                    out.append((a, b, frame))
                    break
            else:
                continue
            break
    return out


def texts(svg: bytes) -> list[tuple[str, str, tuple[float, float, float, float]]]:
    """(owner, text, box) for every text Graphviz drew outside the legend: frame titles, box
    labels (one entry a line), line labels and the picture's title. The box is estimated
    from the font size: 0.55 em a character (Helvetica's mean for lower case and digits),
    from 0.75 em above the baseline to 0.2 em below."""
    root = ET.fromstring(svg)
    out = []
    for g in root.iter(f"{SVG}g"):
        kind = g.get("class")
        if kind not in ("node", "edge", "cluster", "graph"):
            continue
        title = g.find(f"{SVG}title")
        owner = f"{kind}:{title.text if title is not None else ''}"
        if owner == "node:legend":
            continue
        shapes = g.findall(f"{SVG}text") + [t for a in g.findall(f"{SVG}g") for t in
                                              a.iter(f"{SVG}text")] if kind != "graph" \
            else g.findall(f"{SVG}text")
        for t in shapes:
            text = "".join(t.itertext()).strip()
            if not text:
                continue
            size = float(t.get("font-size", "14"))
            x, y, w = float(t.get("x")), float(t.get("y")), len(text) * size * 0.55
            x0 = {"start": x, "end": x - w}.get(t.get("text-anchor"), x - w / 2)
            out.append((owner, text, (x0, y - 0.75 * size, x0 + w, y + 0.2 * size)))
    return out


def overlapping_texts(svg: bytes, margin: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of texts from different owners whose boxes overlap by more than ``margin`` pt
    each way (looked up in a grid of 100-point cells)."""
    items = texts(svg)
    grid: dict[tuple[int, int], list[int]] = {}
    out = []
    for i, (owner, text, (x0, y0, x1, y1)) in enumerate(items):
        seen = set()
        for cx in range(int(x0 // 100), int(x1 // 100) + 1):
            for cy in range(int(y0 // 100), int(y1 // 100) + 1):
                for j in grid.get((cx, cy), ()):
                    if j in seen:
                        continue
                    seen.add(j)
                    o, t, (a0, b0, a1, b1) = items[j]
                    if o != owner and min(x1, a1) - max(x0, a0) > margin \
                            and min(y1, b1) - max(y0, b0) > margin:
                        out.append((f"{owner} {text!r}", f"{o} {t!r}"))
                grid.setdefault((cx, cy), []).append(i)
    return out


def _samples(pts, step: float = 1.0):
    """Points along a drawn path every ``step`` points. Graphviz writes a path as cubic
    Bézier pieces (M p0 C c1 c2 p1 ...); topoc's lines are straight pieces whose control
    points sit on their ends, so sampling the curve is sampling the segments."""
    out = []
    for i in range(0, len(pts) - 3, 3):
        p0, c1, c2, p1 = pts[i:i + 4]
        length = sum(abs(a[0] - b[0]) + abs(a[1] - b[1]) for a, b in ((p0, c1), (c1, c2), (c2, p1)))
        n = max(1, int(length // step))
        for k in range(n + 1):
            t = k / n
            u = 1 - t
            out.append((u ** 3 * p0[0] + 3 * u * u * t * c1[0] + 3 * u * t * t * c2[0] + t ** 3 * p1[0],
                        u ** 3 * p0[1] + 3 * u * u * t * c1[1] + 3 * u * t * t * c2[1] + t ** 3 * p1[1]))
    return out


def overlapping_lines(lines, run: float = 8.0, cell: float = 2.0) -> list[tuple[str, str, str, str]]:
    """(a, b, c, d) for every pair of lines a-b and c-d with no box in common that are drawn
    on top of each other for more than ``run`` points: both pass through more than
    run / cell of the same ``cell``-point squares (two lines crossing share one or two; two
    lines crossing at less than about 20 degrees count as running along each other)."""
    cells: dict[tuple[int, int], list[int]] = {}
    for i, (_a, _b, pts) in enumerate(lines):
        for x, y in {(int(x // cell), int(y // cell)) for x, y in _samples(pts)}:
            cells.setdefault((x, y), []).append(i)
    shared: dict[tuple[int, int], int] = {}
    for members in cells.values():
        if len(members) < 2:
            continue
        for k, i in enumerate(members):
            ends = {lines[i][0], lines[i][1]}
            for j in members[k + 1:]:
                if lines[j][0] not in ends and lines[j][1] not in ends:
                    shared[i, j] = shared.get((i, j), 0) + 1
    return [(lines[i][0], lines[i][1], lines[j][0], lines[j][1])
            for (i, j), n in sorted(shared.items()) if n * cell > run]


#: A slide: 1,920 x 1,080 px; Graphviz draws PNG at 96 px an inch (4/3 px a point).
SLIDE = (1920.0, 1080.0)
PX_PER_PT = 96 / 72


def slide_fit(svg: bytes) -> tuple[float, float, float]:
    """(width px, height px, smallest text height in px) of the PNG Graphviz draws from this
    SVG when shown on a 1,920 x 1,080 slide: scaled down to fit it if larger (never up), the
    height of a text its font size. Every text counts, the legend's too."""
    root = ET.fromstring(svg)
    width = float(root.get("width").rstrip("pt")) * PX_PER_PT
    height = float(root.get("height").rstrip("pt")) * PX_PER_PT
    scale = min(1.0, SLIDE[0] / width, SLIDE[1] / height)
    sizes = [float(t.get("font-size", "14")) for t in root.iter(f"{SVG}text")
             if "".join(t.itertext()).strip()]
    return width, height, min(sizes, default=14.0) * PX_PER_PT * scale


def labels_under_lines(svg: bytes, margin: float = 1.0) -> list[tuple[str, str, str]]:
    """(label, owner, line) for every line label some line runs through (the label's box,
    0.55 em a character from 0.75 em above its baseline to 0.2 em below, shrunk by
    ``margin``): a label under a line is half hidden. Its own line counts too."""
    _, lines, _, _ = read(svg)
    grid: dict[tuple[int, int], set[int]] = {}
    sampled = []
    for i, (_a, _b, pts) in enumerate(lines):
        sampled.append(_samples(pts))
        for x, y in sampled[-1]:
            grid.setdefault((int(x // 50), int(y // 50)), set()).add(i)
    out = []
    for owner, text, (x0, y0, x1, y1) in texts(svg):
        if not owner.startswith("edge:"):
            continue
        x0, y0, x1, y1 = x0 + margin, y0 + margin, x1 - margin, y1 - margin
        near = set().union(*(grid.get((cx, cy), set())
                             for cx in range(int(x0 // 50), int(x1 // 50) + 1)
                             for cy in range(int(y0 // 50), int(y1 // 50) + 1)))
        for i in sorted(near):
            if any(x0 < x < x1 and y0 < y < y1 for x, y in sampled[i]):
                out.append((text, owner[5:], f"{lines[i][0]}--{lines[i][1]}"))
                break
    return out
