"""The HTML report's serving section: topoc infer's Pareto plot for the strategy's model."""

import pytest

import topoc
from topoc.backends.infer_plot import section as _section
from topoc.backends.report_html import _pyplot, _svg
from topoc.compiler.analysis.infer import serving_view
from topoc.compiler.lang.derive import find_model

from ..conftest import library_file

pytest.importorskip("matplotlib")


def section(system, model, gpus):
    return _section(serving_view(system, model, gpus), _pyplot, _svg)


def test_section_plots_the_front_and_is_deterministic():
    rack = topoc.load(library_file("gb200_nvl72.topo"))
    model = find_model(rack, "llama3-70b")
    html = section(rack, model, 72)
    assert html.startswith("<figure>")
    assert html.count("<svg") == 1 and "Pareto front" in html and "tokens/s per GPU" in html
    assert section(rack, model, 72) == html
    assert section(rack, None, 72) is None


def test_section_says_when_the_model_does_not_fit():
    dgx = topoc.load(library_file("dgx_h100.topo"))
    html = section(dgx, find_model(dgx, "llama3-405b"), 1)
    assert "does not fit on 1 GPU for" in html
