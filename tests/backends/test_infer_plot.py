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


def test_front_labels_do_not_print_over_each_other():
    """On a DGX H100 the front's low-throughput end (tp 8 at concurrency 1 to 32) printed its
    labels on top of one another on a linear axis; on the log axis every kept label has room
    (at least 70 px apart across or 16 px apart up) and the ones in the right quarter are
    written leftwards, inside the frame."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from topoc.backends.infer_plot import _label
    from topoc.compiler.analysis.infer import infer
    dgx = topoc.load(library_file("dgx_h100.topo"))
    result = infer(dgx, find_model(dgx, "llama3-70b"), 1000, 1000, concurrency="sweep")
    front = sorted((r for r in result.rows if r.pareto), key=lambda r: r.tokens_per_s_per_user)
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.plot([r.tokens_per_s_per_user for r in front], [r.throughput_per_gpu for r in front])
    ax.set_yscale("log")
    ax.autoscale_view()
    _label(ax, front)
    texts = ax.texts
    assert len(texts) >= 6
    spots = [ax.transData.transform(t.xy) for t in texts]
    for i, (px, py) in enumerate(spots):
        assert all(abs(px - qx) >= 70 or abs(py - qy) >= 16 for qx, qy in spots[:i])
    assert any(t.get_ha() == "right" for t in texts)
    plt.close(fig)
