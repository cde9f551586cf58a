"""The text report's memory verdict (``backends.report.memory_verdict``): green 'fits' only
outside the memory model's uncertainty, 'tight' inside it either side of HBM, 'does NOT fit'
only beyond it (issue 42: a run predicted a few GB over HBM ran)."""

from __future__ import annotations

from topoc.backends.report import memory_verdict
from topoc.compiler.training.memory import MEMORY_MARGIN


def test_the_verdict_follows_the_band():
    hbm = 80e9
    assert memory_verdict(40e9, hbm) == "fits (50%)"
    assert memory_verdict(75e9, hbm) == \
        f"fits (94%), tight: within the memory model's {MEMORY_MARGIN:.0%} uncertainty"
    assert memory_verdict(88.2e9, hbm) == (f"tight: 8.2 GB over HBM, within the memory model's "
                                           f"{MEMORY_MARGIN:.0%} uncertainty, so it may run")
    over = hbm / (1 - MEMORY_MARGIN) + 1e9
    assert memory_verdict(over, hbm).startswith(f"does NOT fit, {(over - hbm) / 1e9:.1f} GB over")


def test_one_stage_and_one_micro_batch_are_singular_in_the_report_and_the_summary():
    import topoc
    from topoc.backends import summary
    from topoc.backends.report import render
    from topoc.compiler.analysis.strategy import analyse
    from tests.conftest import LIBRARY
    system = topoc.load(str(LIBRARY / "nvidia" / "h100_fourtier.topo"), defines={"nodes": 8})
    text = render(analyse(system, "train"), system.name)
    assert "(P = 1 stage, M = 1 micro-batch)" in text and "1 stages" not in text
    assert "1 micro-batch)" in summary.render(system) and "1 micro-batches" not in \
        summary.render(system)


def test_one_lane_is_singular_in_the_summary():
    import topoc
    from topoc.backends import summary
    pair = topoc.loads('use "nvidia/devices.topo"\nuse "nvidia/links.topo"\n'
                       'group P {\n  a : H100\n  b : H100\n  a <-> b : nvlink4\n}\n'
                       'system pair : P\n')
    text = summary.render(pair)
    assert "links      1 (1 lane)" in text and "(50 GB/s and 1 lane per GPU)" in text
