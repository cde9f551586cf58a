"""The text report's memory verdict (``backends.report.memory_verdict``): green 'fits' only
outside the memory model's uncertainty, 'tight' inside it either side of HBM, 'does NOT fit'
only beyond it (issue 42: a run predicted a few GB over HBM ran)."""

from __future__ import annotations

import pytest

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


def test_the_compute_split_names_every_term_of_the_total():
    # 'compute per step and GPU: 23.56 s = GEMMs 16.09 s (...) + element-wise 5.25 s' left
    # attention's 2.22 s out of the sum
    import re
    import topoc
    from topoc.backends.report import render, seconds
    from topoc.compiler.analysis.strategy import analyse
    system = topoc.loads('use "nvidia/gb200_nvl72.topo"\nuse "models/llama3.topo"\n'
                         'system rack : NVL72\nparallel train on rack {\n'
                         '  model = llama3_70b  batch = 512\n  tp = 8  pp = 9  dp = auto\n'
                         '  order = tp, pp, dp\n}\n')
    r = analyse(system, "train")
    d = r.detail
    assert d.attention_time > 0
    line = next(x for x in render(r, system.name).splitlines()
                if x.startswith("compute per step and GPU"))
    assert f"+ attention {seconds(d.attention_time)}" in line
    terms = re.findall(r"(?:= |\+ )[a-zA-Z -]+ ([\d.]+) (m?s)\b", line)
    total = sum(float(v) * (1e-3 if u == "ms" else 1) for v, u in terms)
    assert total == pytest.approx(d.time, rel=2e-3)
