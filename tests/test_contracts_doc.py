"""docs/contracts.md names every field the JSON documents carry, and every field it lists in a
table is one the documents carry: each document is made by the CLI on bundled files and its
keys (top level, rows, nested objects) are compared with its section of the page."""

from __future__ import annotations

import json
import re

import pytest

from topoc.cli import main

from .conftest import LIBRARY, ROOT

DOC = (ROOT / "docs/contracts.md").read_text()
DGX = str(LIBRARY / "nvidia/dgx_h100.topo")
CLUSTER = str(LIBRARY / "nvidia/h100_cluster.topo")
MODEL_BLOCK = """use "nvidia/dgx_h100.topo"
use "models/llama3.topo"
system node : DGXH100

parallel train on node {
  tp = 8
  model = llama3_8b  batch = 8
}
"""


def _section(schema: str) -> str:
    start = DOC.index(f"### {schema}\n")
    end = DOC.find("\n### ", start + 1)
    return DOC[start:end if end > 0 else None]


def _run(tmp_path, *argv: str) -> dict:
    out = tmp_path / "out.json"
    code = main([*argv, "-o", str(out)])
    assert code in (0, 1), (argv, code)
    return json.loads(out.read_text())


def _keys(*objects) -> set[str]:
    found: set[str] = set()
    for obj in objects:
        found |= set(obj)
    return found


def _documents(tmp_path) -> dict[str, set[str]]:
    """schema -> every key its documents hold (maps keyed by data, such as device counts per
    kind or a parallel block's sizes, are left out: their keys are values)."""
    model = tmp_path / "model.topo"
    model.write_text(MODEL_BLOCK)
    system = _run(tmp_path, "compile", DGX, "--format", "json")
    derived = _run(tmp_path, "compile", str(model), "--format", "json")
    out = {"topoc.system/1": _keys(system, *system["devices"], *system["links"],
                                   system["summary"], system["summary"]["nvlink_lanes_per_gpu"],
                                   *derived["parallel"], *derived["parallel"][0]["traffic"])}
    cost = _run(tmp_path, "cost", DGX, "--ranks", "0..7", "--sizes", "1MiB", "--format", "json")
    out["topoc.cost/1"] = _keys(cost, *cost["rows"])
    sched = _run(tmp_path, "schedule", DGX, "--ranks", "0..3", "--collective", "allreduce",
                 "--size", "1MiB")
    out["topoc.schedule/1"] = _keys(sched, *[t for r in sched["rounds"] for t in r])
    infer = _run(tmp_path, "infer", DGX, "--model", "llama3-8b", "--isl", "100", "--osl", "10",
                 "--tp", "8", "--top", "2", "--format", "json")
    rate = _run(tmp_path, "infer", DGX, "--model", "llama3-8b", "--isl", "100", "--osl", "10",
                "--tp", "8", "--request-rate", "1", "--top", "2", "--format", "json")
    out["topoc.infer/1"] = _keys(infer, *infer["rows"], rate, *rate["rows"])
    plan = ("plan", DGX, "--model", "llama3-8b", "--batch", "8", "--top", "2", "--format", "json")
    ranked = _run(tmp_path, *plan)
    compare = _run(tmp_path, *plan, "--compare", "tp=8")
    out["topoc.plan/1"] = _keys(ranked, *ranked["rows"], compare, *compare["terms"])
    scaling = _run(tmp_path, "plan", CLUSTER, "-D", "nodes=2", "--model", "llama3-8b",
                   "--batch", "16", "--scaling", "8..16", "--format", "json")
    out["topoc.scaling/1"] = _keys(scaling, scaling["stops_paying"], *scaling["points"])
    other = tmp_path / "other.topo"
    other.write_text(model.read_text().replace('"nvidia/dgx_h100.topo"',
                                               '"nvidia/hgx_h200.topo"').replace("DGXH100",
                                                                                "HGXH200"))
    diff = _run(tmp_path, "diff", str(model), str(other), "--format", "json")
    assert diff["differences"]
    out["topoc.diff/1"] = _keys(diff, *diff["differences"])
    broken = tmp_path / "broken.topo"
    broken.write_text("device G : gpu { }\ndevice G : gpu { }\ngroup N { g : G }\nsystem n : N\n")
    lint = _run(tmp_path, "lint", str(broken), "--format", "json")
    notes = [n for d in lint["diagnostics"] for n in d["notes"]]
    assert notes                                  # E120 cites the first declaration
    out["topoc.lint/1"] = _keys(lint, *lint["diagnostics"], *notes)
    blast = _run(tmp_path, "blast", CLUSTER, "-D", "nodes=2", "--parallel", "train",
                 "--format", "json")
    out["topoc.blast/1"] = _keys(blast, *blast["domains"])
    rel = _run(tmp_path, "reliability", CLUSTER, "--checkpoint-cost", "60", "--format", "json")
    out["topoc.reliability/1"] = _keys(rel, rel["rates"], rel["rates"]["fleet"], rel["job"],
                                       *rel["terms"])
    return out


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    return _documents(tmp_path_factory.mktemp("contracts"))


SCHEMAS = ("topoc.system/1", "topoc.cost/1", "topoc.schedule/1", "topoc.infer/1",
           "topoc.plan/1", "topoc.scaling/1", "topoc.diff/1", "topoc.lint/1", "topoc.blast/1",
           "topoc.reliability/1")


@pytest.mark.parametrize("schema", SCHEMAS)
def test_every_emitted_field_is_documented(documents, schema):
    section = _section(schema)
    assert [k for k in sorted(documents[schema]) if f"`{k}`" not in section] == []


@pytest.mark.parametrize("schema", SCHEMAS)
def test_every_field_a_table_lists_is_emitted(documents, schema):
    listed = set()
    for row in re.findall(r"^\| ([^|]+) \|", _section(schema), re.M):
        listed |= set(re.findall(r"`([a-z_]+)`", row))
    assert [k for k in sorted(listed) if k not in documents[schema]] == []


def test_every_json_schema_the_code_writes_has_a_section():
    source = "\n".join(p.read_text() for p in (ROOT / "backends").glob("*.py"))
    written = set(re.findall(r'"(topoc\.[a-z]+/\d+)"', source))
    assert written == set(SCHEMAS)
    assert all(f"### {s}\n" in DOC for s in SCHEMAS)


def test_the_documented_exit_codes_are_the_clis():
    import topoc.cli as cli
    part = DOC[DOC.index("**Exit codes**"):DOC.index("**Diagnostics**")]
    table = re.findall(r"^\| (\d+) \|", part, re.M)
    assert table == [str(c) for c in (cli.EXIT_OK, cli.EXIT_INPUT, cli.EXIT_USAGE,
                                      cli.EXIT_INTERRUPTED)]
