"""Issue 46: ``topoc render --size WxH|slide|poster``. A default picture is for a 1,920 x
1,080 slide (its PNG within it, its texts at least 10 px high there, else a less detailed
view); ``--size`` names a bigger page (a poster), which lifts that cap: the default view is
then the most detailed one legible on that page, and the PNG is scaled to fit it."""

from __future__ import annotations

import shutil
import struct

import pytest

import topoc
from topoc.backends import render as r
from topoc.cli import main

from ..conftest import library_file

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height, from its IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_parse_size_takes_pixels_and_names_and_says_what_it_takes():
    assert r.parse_size("7680x4320") == (7680, 4320)
    assert r.parse_size("slide") == (1920, 1080)
    assert r.parse_size("POSTER") == r.PAGES["poster"]
    for bad in ("12x", "poster2", "10x10", "100000x200"):
        with pytest.raises(ValueError, match="--size"):
            r.parse_size(bad)


def test_a_rack_is_slide_sized_by_default_and_drawn_in_full_on_a_poster(tmp_path, capsys):
    """GB200 NVL72's logical view (72 GPUs, 4,867 px wide) is not legible on a slide: the
    default is the racks view within 1,920 x 1,080; on a poster it is the logical view,
    scaled to the page with its texts still 10 px high."""
    path = str(library_file("gb200_nvl72.topo"))
    slide, poster = tmp_path / "slide.png", tmp_path / "poster.png"
    assert main(["render", path, "-o", str(slide)]) == 0
    assert "drew the racks view" in capsys.readouterr().err
    w, h = png_size(slide.read_bytes())
    assert w <= 1920 and h <= 1080, (w, h)
    assert main(["render", path, "--size", "poster", "-o", str(poster)]) == 0
    assert "drew the logical view" in capsys.readouterr().err
    w, h = png_size(poster.read_bytes())
    assert w <= r.PAGES["poster"][0] and h <= r.PAGES["poster"][1] and w > 1920, (w, h)
    # the same from Python: the page in Options, the texts' height on it
    system = topoc.load(path)
    opts = r.Options(size=r.parse_size("poster"))
    source, view = r.dot_source(system, opts)
    assert view == "logical"
    page = r.page_pt(opts)
    width = max(float(x) for x in __import__("re").findall(r'pos="([\d.]+),', source))
    scale = min(1.0, page[0] / width)
    assert r.smallest_font(source) * 96 / 72 * scale >= r.SLIDE_PX


def test_an_asked_for_view_bigger_than_a_slide_says_so_and_size_fits_it(tmp_path, capsys):
    path = str(library_file("gb200_nvl72.topo"))
    full, fitted = tmp_path / "full.png", tmp_path / "fitted.png"
    assert main(["render", path, "--view", "logical", "-o", str(full)]) == 0
    err = capsys.readouterr().err
    assert "--size" in err and "slide" in err, err
    assert png_size(full.read_bytes())[0] > 1920
    assert main(["render", path, "--view", "logical", "--size", "2400x1400",
                 "-o", str(fitted)]) == 0
    assert "--size" not in capsys.readouterr().err
    w, h = png_size(fitted.read_bytes())
    assert w <= 2400 and h <= 1400, (w, h)


@pytest.mark.parametrize("name", ["dgx_h100.topo", "h100_cluster.topo", "hgx_b300.topo"])
def test_default_pngs_fit_a_slide(tmp_path, name):
    out = tmp_path / "x.png"
    assert main(["render", str(library_file(name)), "-o", str(out)]) == 0
    w, h = png_size(out.read_bytes())
    assert w <= 1920 and h <= 1080, (name, w, h)


def test_a_bad_size_is_a_usage_message(tmp_path, capsys):
    out = tmp_path / "x.png"
    assert main(["render", str(library_file("dgx_h100.topo")), "--size", "huge",
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--size huge" in err and "poster" in err and "Traceback" not in err
    assert not out.exists()
