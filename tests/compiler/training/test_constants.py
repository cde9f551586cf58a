"""The registry of fitted and chosen constants (``compiler.training.constants``, issue 42):
every record says what it is, in which unit, and what it rests on; every one is read by the
code, not only by tests; the GEMM fit rows are the rows tests/training_rows.py marks fit; a
constant fitted on one run or one source says so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from topoc.compiler.training import constants
from topoc.compiler.training.constants import REGISTRY, value
from topoc.compiler.training.gemm import CURVES

ROOT = Path(__file__).resolve().parents[3]


def test_every_record_has_a_unit_a_meaning_and_a_source():
    assert len(REGISTRY) >= 30
    for c in REGISTRY.values():
        assert c.unit and len(c.meaning) > 20 and c.sources, c.name
        assert c.how in ("fitted", "derived", "chosen"), c.name
        if c.how in ("fitted", "derived"):
            assert c.rows, c.name             # the rows it was fitted or derived on
            assert c.documents, c.name        # and at least one published source
        else:
            assert c.caveat, c.name           # what a chosen figure is not fixed by


def test_a_constant_fitted_on_one_run_or_one_source_says_so():
    flagged = {c.name for c in REGISTRY.values() if c.one_source}
    assert {"gemm.blackwell.e_max", "gemm.blackwell.fp8", "gemm.blackwell.moe_layer"} <= flagged
    for name in flagged:
        assert "one" in REGISTRY[name].caveat, name


def _code_sources() -> str:
    """Every source file of the package but the registry itself (never the tests)."""
    files = [p for d in ("compiler", "backends", "topoc") for p in (ROOT / d).rglob("*.py")
             if p.name != "constants.py"]
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def test_every_constant_is_read_by_the_code_not_only_by_tests():
    code = _code_sources()
    for c in REGISTRY.values():
        if c.name.startswith("gemm."):
            _, gen, key = c.name.split(".")
            assert getattr(CURVES[gen], key) == c.value, c.name     # the curve reads it
        else:
            assert f'value("{c.name}")' in code, c.name


def test_the_gemm_fit_rows_are_the_rows_marked_fit():
    sys.path.insert(0, str(ROOT))
    from tests.training_rows import rows
    fit = {gen: {r.id for r in rows() if r.fit and r.generation == gen}
           for gen in ("ampere", "hopper", "blackwell")}
    assert set(constants.AMPERE_ROWS) == fit["ampere"]
    assert set(constants.HOPPER_ROWS) == fit["hopper"]
    assert set(constants.BLACKWELL_ROWS) == fit["blackwell"]
    fp8 = {r.id for r in rows() if r.fit and r.fp8}
    assert set(constants.HOPPER_FP8_ROWS) | set(constants.BLACKWELL_FP8_ROWS) == fp8


def test_an_unknown_name_is_a_key_error():
    with pytest.raises(KeyError):
        value("gemm.hopper.nothing")


def test_no_device_overrides_the_gemm_curve_without_a_source():
    """The H200's `gemm_efficiency = 0.54` was a copy of an H100 override fitted on one
    FlagPerf run, kept after the H100's was removed (issue 42): no device declares one now."""
    devices = (ROOT / "library" / "nvidia" / "devices.topo").read_text(encoding="utf-8")
    assert not [line for line in devices.splitlines()
                if line.strip().startswith("gemm_efficiency")]


def test_serving_constants_rest_on_fit_rows_of_their_sources():
    """Each ``infer.*`` record lists the fit rows of tests/serving_rows.py it rests on (those
    its value moves; benchmarks/infer_validation.py --constants recomputes them) and the
    sources of exactly those rows."""
    import csv
    sys.path.insert(0, str(ROOT))
    from tests import serving_rows as S
    prefix = {"https://nvidia.github.io/TensorRT-LLM/0.19.0/": "trtllm-0.19",
              "https://github.com/NVIDIA/TensorRT-LLM/blob/00f37686": "trtllm-1.0",
              "https://nvidia.github.io/TensorRT-LLM/developer-guide/": "trtllm-1.x",
              "https://docs.nvidia.com/nim/": "nim", "https://github.com/gpustack/": "gpustack"}
    with open(S.CSV, encoding="utf-8") as f:
        source = {r["id"]: next((v for k, v in prefix.items() if r["source"].startswith(k)),
                                None) for r in csv.DictReader(f)}
    fit = {c.row for c in S.checks() if c.fit}
    for name, (rows, sources) in constants.INFER_ROWS.items():
        rec = REGISTRY[f"infer.{name}"]
        assert rows and set(rows) <= fit, name
        assert tuple(rec.rows) == rows
        assert set(sources) == {source[r] for r in rows}, name
        assert rec.one_source == (len(sources) == 1), name
