"""The scaling section of ``topoc report --format html --scaling LO..HI``: the plot of
``topoc plan --scaling`` passed to the page as an extra section, as the serving one is."""

from __future__ import annotations

import pytest

import topoc
from topoc.backends import scaling_plot
from topoc.cli import main
from topoc.compiler.analysis.scaling import scaling
from topoc.compiler.lang.derive import find_model
from topoc.compiler.training.model import Training

from ..conftest import library_file

TRAIN = """use "nvidia/gb200_nvl72.topo"
use "models/llama3.topo"
system rack : NVL72
parallel train on rack {
  tp = 4  pp = 1  dp = 18
  model = llama3_8b  batch = 72  recompute = selective
  sequence_parallel = true  distributed_optimizer = true
}
"""


def test_section_has_the_plot_the_knee_and_a_row_per_count_and_mode():
    rack = topoc.load(library_file("gb200_nvl72.topo"))
    m = find_model(rack, "llama3-8b")
    curve = scaling(rack, m, Training(m, 64), 8, 16, fixed={"zero": 1}, use_cache=False)
    html = scaling_plot.section(curve)
    assert html.count("<svg") == 1 and "<polyline" in html
    assert "strong scaling" in html and "weak scaling" in html
    assert html.count("<tr>") == 1 + 2 * len(curve.points)
    assert scaling_plot.section(curve) == html


def test_report_html_shows_the_scaling_section_only_when_asked(tmp_path):
    src = tmp_path / "train.topo"
    src.write_text(TRAIN)
    with_it, without = tmp_path / "with.html", tmp_path / "without.html"
    assert main(["report", str(src), "--format", "html", "--scaling", "8..16",
                 "-o", str(with_it)]) == 0
    assert main(["report", str(src), "--format", "html", "-o", str(without)]) == 0
    page = with_it.read_text()
    assert '<section id="scaling">' in page and "topoc plan --scaling 8..16" in page
    assert page.index('id="scaling"') < page.index('id="warnings"')
    assert '<section id="scaling">' not in without.read_text()


@pytest.mark.parametrize("args, message", [
    (["--scaling", "8..16"], "add --format html"),
    (["--format", "html", "--scaling", "16..8"], "at most HI"),
    (["--format", "html", "--scaling", "8..100000"], "the system has 72 GPUs"),
])
def test_report_scaling_usage_errors(tmp_path, capsys, args, message):
    src = tmp_path / "train.topo"
    src.write_text(TRAIN)
    assert main(["report", str(src), *args, "-o", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err


def test_the_plot_has_a_y_axis_and_a_mark_per_point():
    """The curve had no tokens/s scale (only the GPU counts), and strong and weak lines that
    coincide hid one another."""
    rack = topoc.load(library_file("gb200_nvl72.topo"))
    m = find_model(rack, "llama3-8b")
    curve = scaling(rack, m, Training(m, 64), 8, 16, fixed={"zero": 1, "tp": 1, "pp": 1,
                                                           "microbatch": 1},
                    use_cache=False)
    svg = scaling_plot.svg(curve)
    assert "tokens/s (log)" in svg and "GPUs (log)" in svg
    assert svg.count("<circle") == sum(bool(p.strong) + bool(p.weak) for p in curve.points)
    assert scaling_plot._tokens(12193) == "12.2K" and scaling_plot._tokens(1.5e6) == "1.5M"
