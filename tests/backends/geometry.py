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


def crossing(boxes, lines) -> list[tuple[str, str, str]]:
    """(a, b, box) for every line that runs through a box it does not join (its drawn path
    sampled every 3 points; boxes looked up in a grid of 100-point cells)."""
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
            for i in range(n + 1):
                p = (x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n)
                for name in grid.get((int(p[0] // 100), int(p[1] // 100)), ()):
                    if name not in (a, b) and _inside(p, boxes[name]):
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
