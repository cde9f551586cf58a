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


def _names(kind: str) -> set[str]:
    from topoc.compiler.lang import pipeline
    path = ROOT / "library" / "nvidia" / f"{kind}.topo"
    program = pipeline.front_end(path.read_text(), path)
    return set(program.link_types) if kind == "links" else set(program.device_models)


def test_link_types_device_models_collectives_settings_and_suppressions():
    """Every link type and device model of the library, every collective and parallel setting
    of the compiler, and a suppression comment get their own scope."""
    from topoc.compiler.ir.system import COLLECTIVES
    from topoc.compiler.lang.ranks import SETTINGS
    for name in _names("links"):
        assert re.fullmatch(REPO["linktype"]["match"], name), name
    assert re.search(REPO["linktype"]["match"], "a <-> b : mylink x 4").group(2) == "mylink"
    for name in _names("devices"):
        assert re.fullmatch(REPO["devicemodel"]["match"], name), name
    for name in COLLECTIVES:
        assert re.fullmatch(REPO["collective"]["match"], name), name
    for name in SETTINGS:
        assert re.search(REPO["setting"]["match"], f"  {name} = 1"), name
    assert not re.search(REPO["setting"]["match"], "tp allreduce 1 GiB")   # a group, not a setting
    m = re.search(REPO["suppression"]["match"], "x # topoc: ignore[W402, W403] alone here")
    assert m.group(2) == "W402, W403" and m.group(3).strip() == "alone here"
    order = [p["include"].lstrip("#") for p in GRAMMAR["patterns"]]
    assert order.index("suppression") < order.index("comment")
