"""Every file under golden/invalid/ fails with exactly the diagnostics in its .expected file.

The first line of an input may carry extra command-line options: ``# topoc-test: -D n=4``.
Regenerate with ``pytest tests/test_invalid_inputs.py --update-goldens`` and review the diff.
"""

from __future__ import annotations

import re

import pytest

from topoc.cli import main

from .conftest import GOLDEN

INVALID = GOLDEN / "invalid"
CASES = sorted(INVALID.glob("*.topo"))


def test_corpus_covers_many_codes():
    codes = {re.match(r"e(\d{3})", p.name).group(1) for p in CASES if p.name.startswith("e")}
    assert len(CASES) >= 30 and len(codes) >= 30


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_invalid_file_gives_golden_diagnostics(case, capsys, monkeypatch, update_goldens):
    monkeypatch.chdir(INVALID)
    monkeypatch.setenv("NO_COLOR", "1")
    first = case.read_text().splitlines()[0]
    extra = first.split("topoc-test:", 1)[1].split() if "topoc-test:" in first else []
    code = main(["compile", case.name, *extra])
    out, err = capsys.readouterr()
    expected_file = case.with_suffix(".expected")
    if update_goldens:
        expected_file.write_text(err)
    assert code == 1
    assert out == ""
    assert "Traceback" not in err
    header = re.compile(r"^\S+:\d+:\d+: E\d{3} error: ", re.M)
    assert header.search(err), err
    stem_code = re.match(r"e(\d{3})", case.name)
    if stem_code:
        assert f"E{stem_code.group(1)} error" in err
    assert err == expected_file.read_text()
