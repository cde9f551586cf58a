"""The TextMate grammar in editors/ highlights every keyword of the Lark grammar, and its
patterns are valid regular expressions that match what they claim."""

from __future__ import annotations

import json
import re

from .conftest import ROOT

GRAMMAR = json.loads((ROOT / "editors" / "topo.tmLanguage.json").read_text())
REPO = GRAMMAR["repository"]


def _lark_keywords() -> set[str]:
    text = (ROOT / "grammar" / "topo.lark").read_text()
    text = re.sub(r"//[^\n]*", "", text)
    return {w for w in re.findall(r'"([A-Za-z_]+)"', text)}


def _highlighted(word: str) -> bool:
    for key in ("keyword", "constant", "declaration", "operator"):
        if re.search(REPO[key]["match"], f" {word} "):
            return True
    return False


def test_every_lark_keyword_is_highlighted():
    words = _lark_keywords()
    assert {"use", "link", "device", "model", "group", "system", "parallel", "traffic",
            "auto", "true", "false"} <= words
    missing = sorted(w for w in words if not _highlighted(w))
    assert not missing, missing


def test_patterns_compile_and_match_the_language():
    for key, rule in REPO.items():
        re.compile(rule["match"])
    q = re.search(REPO["quantity"]["match"], "bandwidth = 400 Gb/s")
    assert q.group(1) == "400" and q.group(2) == "Gb/s"
    assert not re.search(REPO["quantity"]["match"], "gpu8")      # an index, not a quantity
    d = re.search(REPO["declaration"]["match"], "device H100 : gpu {")
    assert d.group(2) == "H100"
    assert re.search(REPO["kind"]["match"], "link x : nvlink_c2c").group(1) == "nvlink_c2c"
    assert re.fullmatch(REPO["comment"]["match"], "# a comment")
