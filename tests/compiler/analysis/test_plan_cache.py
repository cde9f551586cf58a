"""Issue 25: the plan's disk cache is validated (shape, format, code hash, checksum, every
row's fields); anything else is recomputed; no temporary file survives a failed write. And an
unreachable Ray address is an answer within seconds, not a wait without end."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

import topoc
from topoc.compiler.analysis import plan_cache, remote
from topoc.compiler.analysis.plan import PlanUsageError, plan
from topoc.compiler.lang.derive import find_model
from topoc.compiler.training.model import Training

from ...conftest import LIBRARY


@pytest.fixture(scope="module")
def dgx():
    return topoc.load(str(LIBRARY / "nvidia" / "dgx_h100.topo"))


def _files():
    return list((Path(os.environ["TOPOC_CACHE"]) / "plan").glob("*"))


def _run(dgx):
    m = find_model(dgx, "llama3-8b")
    return plan(dgx, m, Training(m, 32), fixed={"tp": 4})


def test_an_edited_row_is_not_trusted(dgx):
    first = _run(dgx)
    (path,) = _files()
    data = json.loads(path.read_text())
    key = next(k for k, v in data["rows"].items() if v)
    data["rows"][key].update(step_time=1e-6, mfu=9.99)
    path.write_text(json.dumps(data))
    again = _run(dgx)
    assert again.cached == 0 and again.rows == first.rows
    assert again.rows[0].step_time > 1e-3


@pytest.mark.parametrize("content", ["null", "[]", '{"rows": []}', '"x"', "1e999",
                                     '{"format": 2, "code": 5, "rows": {"a": 1}}'])
def test_a_cache_of_the_wrong_shape_is_recomputed(dgx, content):
    first = _run(dgx)
    for f in _files():
        f.write_text(content)
    assert _run(dgx).rows == first.rows
    assert _run(dgx).cached == first.considered     # rewritten, valid again


def test_invalid_rows_are_dropped_one_by_one():
    code = "c"
    good = {"tp": 1, "cp": 1, "ep": 1, "dp": 8, "pp": 1, "microbatch": 1, "recompute": "none",
            "interleave": 1, "sequence_parallel": False, "step_time": 1.0, "compute_time": 0.5,
            "comm_time": 0.1, "bubble_time": 0.0, "memory_per_gpu": 1e9, "fits": True,
            "mfu": 0.4, "tokens_per_s": 1e5, "comm_by_dim": {"dp": 0.1},
            "links_by_dim": {"dp": ["nvlink4"]},
            "largest_memory_term": {"term": "optimizer", "bytes": 5e8}}
    rows = {"good": good, "term": {**good, "largest_memory_term": {"term": 3, "bytes": 1.0}}, "none": None, "nan": {**good, "mfu": float("inf")},
            "mfu": {**good, "mfu": 9.99}, "neg": {**good, "tp": -3}, "str": {**good, "dp": "8"},
            "moved": good}
    rows = {k: v for k, v in rows.items() if k != "nan"}
    path = Path(os.environ["TOPOC_CACHE"]) / "t.json"
    plan_cache.save(path, rows, code)
    loaded = plan_cache.load(path, code, lambda d: "good")
    assert set(loaded) == {"good", "none"}
    assert plan_cache.load(path, "other code", lambda d: "good") == {}


def test_temp_files_are_removed_when_the_target_is_a_folder(tmp_path):
    target = tmp_path / "x.json"
    target.mkdir()
    plan_cache.save(target, {}, "c")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]


def test_temp_files_are_removed_on_ctrl_c(tmp_path, monkeypatch):
    def interrupt(*_, **__):
        raise KeyboardInterrupt
    monkeypatch.setattr(plan_cache.json, "dump", interrupt)
    with pytest.raises(KeyboardInterrupt):
        plan_cache.save(tmp_path / "x.json", {}, "c")
    assert list(tmp_path.iterdir()) == []


def test_unreachable_ray_address_answers_within_seconds(dgx):
    pytest.importorskip("ray")
    with socket.socket() as s:            # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    m = find_model(dgx, "llama3-8b")
    start = time.monotonic()
    with pytest.raises(PlanUsageError, match="no Ray cluster answers"):
        plan(dgx, m, Training(m, 32), fixed={"tp": 4}, ray=f"127.0.0.1:{port}",
             source={"path": "x", "defines": {}, "import_roots": []}, use_cache=False)
    assert time.monotonic() - start < remote.TIMEOUT + 5


def test_ray_address_that_is_not_one():
    with pytest.raises(remote.Unreachable, match="not a Ray address"):
        remote.probe("nonsense")


def test_temp_files_are_removed_on_a_full_disk(tmp_path, monkeypatch):
    """Issue 25: a cache that cannot be written (ENOSPC while writing) leaves neither a temp
    file nor a damaged cache: the old cache stays as it was."""
    import errno
    import os
    target = tmp_path / "x.json"
    plan_cache.save(target, {}, "c")
    before = target.read_bytes()

    def full(*_, **__):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(plan_cache.json, "dump", full)
    plan_cache.save(target, {"k": None}, "c")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]
    assert target.read_bytes() == before
