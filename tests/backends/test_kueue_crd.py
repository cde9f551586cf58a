"""topoc's Kueue Topology against Kueue's own CRD (tests/fixtures/kueue, issue 47): the
document ``export k8s`` writes is read by a YAML parser and validated against the
``openAPIV3Schema`` of the version Kueue serves today, as the API server would."""

from __future__ import annotations

from pathlib import Path

import pytest

import topoc
from topoc.backends import k8s
from topoc.cli import main
from topoc.compiler.analysis.fabric import fabric

yaml = pytest.importorskip("yaml")
jsonschema = pytest.importorskip("jsonschema")

CRD = Path(__file__).resolve().parent.parent / "fixtures/kueue/kueue.x-k8s.io_topologies.yaml"
LIB = "library/nvidia/"


@pytest.fixture(scope="module")
def crd() -> dict:
    return yaml.safe_load(CRD.read_text())


def _version(crd: dict, name: str) -> dict | None:
    return next((v for v in crd["spec"]["versions"] if v["name"] == name), None)


def _topology(text: str) -> dict:
    docs = [d for d in yaml.safe_load_all(text) if d]
    topo = [d for d in docs if d.get("kind") == "Topology"]
    assert len(topo) == 1
    return topo[0]


def _cel_rules(doc: dict) -> list[str]:
    """The CRD's x-kubernetes-validations on spec.levels that a new object meets or fails
    (the immutability rule compares with oldSelf, only on update)."""
    labels = [lv["nodeLabel"] for lv in doc["spec"]["levels"]]
    broken = []
    # "must be unique": size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0
    if len(set(labels)) != len(labels):
        broken.append("must be unique")
    # "the kubernetes.io/hostname label can only be used at the lowest level of topology"
    if "kubernetes.io/hostname" in labels[:-1]:
        broken.append("hostname not lowest")
    return broken


def _validate(crd: dict, doc: dict) -> None:
    group = crd["spec"]["group"]
    api_group, _, version = doc["apiVersion"].partition("/")
    assert api_group == group and doc["kind"] == crd["spec"]["names"]["kind"]
    served = _version(crd, version)
    assert served is not None and served["served"], f"Kueue does not serve {version}"
    jsonschema.validate(doc, served["schema"]["openAPIV3Schema"])
    assert _cel_rules(doc) == []


@pytest.mark.parametrize("file,defines,pattern", [
    ("nvl72_cluster.topo", {"racks": 2}, "gb-{rack:02}-{tray:02}"),
    ("h100_cluster.topo", {"nodes": 8}, None),
    ("h100_superpod.topo", {}, None),
])
def test_default_export_validates_against_kueue_crd(crd, file, defines, pattern):
    fab = fabric(topoc.load(LIB + file, defines=defines), pattern)
    doc = _topology(k8s.render(fab))
    # the default is the version Kueue stores, and it is not deprecated
    version = _version(crd, doc["apiVersion"].split("/")[1])
    assert version["storage"] and not version.get("deprecated", False)
    _validate(crd, doc)


def test_older_apis_as_kueue_serves_them(crd, tmp_path):
    fab = fabric(topoc.load(LIB + "nvl72_cluster.topo", defines={"racks": 1}))
    for api in k8s.KUEUE_APIS:
        doc = _topology(k8s.render(fab, kueue_api=api))
        if _version(crd, api) is None:
            # v1alpha1 is gone from today's CRD: only for Kueue before 0.14
            assert api == "v1alpha1"
            continue
        _validate(crd, doc)
    out = tmp_path / "k8s.yaml"
    assert main(["export", "k8s", LIB + "nvl72_cluster.topo", "-D", "racks=1", "-o",
                 str(out)]) == 0
    _validate(crd, _topology(out.read_text()))


def test_the_validator_rejects_what_kueue_rejects(crd):
    """The schema check can fail: the documents Kueue's API server refuses are refused."""
    fab = fabric(topoc.load(LIB + "nvl72_cluster.topo", defines={"racks": 1}))
    good = _topology(k8s.render(fab))
    schema = _version(crd, "v1beta2")["schema"]["openAPIV3Schema"]
    for bad in ({"levels": []}, {"levels": [{"nodeLabel": "Bad Label!"}]},
                {"levels": [{"nodeLabel": f"l{i}"} for i in range(17)]}, {}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**good, "spec": bad}, schema)
    swapped = {**good, "spec": {"levels": list(reversed(good["spec"]["levels"]))}}
    assert _cel_rules(swapped) == ["hostname not lowest"]
