"""The plan cache is opened only as a regular file (issue 44: a symlink to /dev/zero was a
MemoryError, a FIFO hung plan, 200,000 nested '[' made every later plan fail until the file
was deleted). Each is ignored with a note, and the next run rewrites a valid cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import topoc
from topoc.compiler.analysis import plan_cache
from topoc.compiler.analysis.plan import plan
from topoc.compiler.lang.derive import find_model
from topoc.compiler.training.model import Training

from ...conftest import LIBRARY, deadline


@pytest.fixture(scope="module")
def dgx():
    return topoc.load(str(LIBRARY / "nvidia" / "dgx_h100.topo"))


def _run(dgx):
    m = find_model(dgx, "llama3-8b")
    return plan(dgx, m, Training(m, 32), fixed={"tp": 4})


def _cache(dgx) -> Path:
    _run(dgx)
    (path,) = (Path(os.environ["TOPOC_CACHE"]) / "plan").glob("*.json")
    return path


@pytest.mark.parametrize("kind", ["zero", "fifo", "nested", "symlink"])
def test_a_cache_that_is_no_regular_cache_file_is_ignored_with_a_note(dgx, tmp_path, kind):
    path = _cache(dgx)
    first = _run(dgx)
    path.unlink()
    if kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "nested":
        path.write_text("[" * 200_000)
    else:
        target = tmp_path / "elsewhere.json"
        target.write_bytes(b"{}")
        path.symlink_to(target)
    with deadline(60):
        again = _run(dgx)
    assert again.rows == first.rows and again.cached == 0
    assert again.cache_note and str(path) in again.cache_note
    if kind in ("nested",):
        assert _run(dgx).cached == first.considered      # rewritten, valid again


def test_a_missing_cache_has_no_note(tmp_path):
    rows, note = plan_cache.load_noted(tmp_path / "none.json", "c", lambda r: "")
    assert rows == {} and note is None
    nested = tmp_path / "n.json"
    nested.write_text('{"rows": ' + "[" * 100_000)
    assert plan_cache.load_noted(nested, "c", lambda r: "")[1].endswith("nested too deeply)")
