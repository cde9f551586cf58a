"""Scopes (compiler.lang.scope): a name the user's file declares shadows a library's, two used
files that disagree are an error only where the name is used, qualified imports, and the
upgrade-safety corpus: user files compile unchanged against a library with their names added."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import topoc
from topoc.backends import REGISTRY
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.lang import pipeline, resolve as resolve_module
from topoc.compiler.lang.parse import parse
from topoc.compiler.lint.lint import lint_file

from ...conftest import ROOT

CORPUS = sorted((ROOT / "tests/fixtures/user_files").glob("*.topo"))


def notes(path) -> list[str]:
    return [d.message for d in pipeline.front_end(Path(path).read_text(), path).notes]


def gpu_hbm(system) -> set[float]:
    return {g.model.attr("hbm") for g in system.gpus}


def test_own_declaration_shadows_the_library_with_a_note(tmp_path):
    f = tmp_path / "x.topo"
    f.write_text('use "nvidia/devices.topo"\nuse "nvidia/links.topo"\n'
                 "device H200 : gpu { hbm = 141 GB }\n"
                 "group G { gpu[2] : H200  gpu[0] <-> gpu[1] : nvlink4 }\nsystem s : G\n")
    system = topoc.load(f)
    assert gpu_hbm(system) == {141e9}
    (note,) = system.notes
    assert note.code == "W120" and note.severity == "note"
    assert "'H200' shadows the device model 'H200' of nvidia/devices.topo" in note.message
    assert "hbm: 141 GB here" in note.message
    assert note.notes[0].span.path.endswith("devices.topo")
    found = lint_file(f)
    assert [d.code for d in found] == ["W120"] and found[0].severity == "note"


def test_a_library_group_keeps_the_library_s_declaration(tmp_path):
    f = tmp_path / "x.topo"
    f.write_text('use "nvidia/dgx_h100.topo"\ndevice H100 : gpu { hbm = 80 GB }\n'
                 "system s : DGXH100\n")
    system = topoc.load(f)
    assert gpu_hbm(system) == {pipeline.front_end(
        'use "nvidia/devices.topo"\n').device_models["H100"].attr("hbm")}
    assert {g.model.name for g in system.gpus} == {"H100@nvidia/devices.topo"}


def test_a_declaration_can_start_from_the_one_it_shadows(tmp_path):
    f = tmp_path / "x.topo"
    f.write_text('use "nvidia/devices.topo"\ndevice H100 : H100 { hbm = 80 GB }\n'
                 "group G { g : H100 }\nsystem s : G\n")
    (gpu,) = topoc.load(f).gpus
    assert gpu.model.attr("hbm") == 80e9
    assert gpu.model.attr("tflops_bf16") > 0          # the rest from the library's H100
    assert gpu.model.kind == "gpu"


def test_two_used_files_that_disagree_are_an_error_only_where_used(tmp_path):
    (tmp_path / "a.topo").write_text("device X : gpu { hbm = 1 GB }\n")
    (tmp_path / "b.topo").write_text("device X : gpu { hbm = 2 GB }\n")
    (tmp_path / "c.topo").write_text("device X : gpu { hbm = 2 GB }\ndevice Y : cpu { }\n")
    unused = tmp_path / "unused.topo"
    unused.write_text('use "a.topo"\nuse "b.topo"\nuse "c.topo"\ngroup G { y : Y }\n'
                      "system s : G\n")
    assert len(topoc.load(unused).devices) == 1
    used = tmp_path / "used.topo"
    used.write_text('use "a.topo"\nuse "b.topo"\ngroup G { x : X }\nsystem s : G\n')
    with pytest.raises(CompileError) as info:
        topoc.load(used)
    (d,) = info.value.diagnostics
    assert d.code == "E123" and d.span.line == 3
    assert {n.span.path.rsplit("/", 1)[-1] for n in d.notes} == {"a.topo", "b.topo"}
    same = tmp_path / "same.topo"                     # b and c agree: one declaration
    same.write_text('use "b.topo"\nuse "c.topo"\ngroup G { x : X }\nsystem s : G\n')
    assert gpu_hbm(topoc.load(same)) == {2e9}


def test_qualified_import(tmp_path):
    f = tmp_path / "x.topo"
    f.write_text('use "nvidia/devices.topo" as nv\nuse "nvidia/links.topo"\n'
                 "device H100 : gpu { hbm = 80 GB }\n"
                 "group G { a : nv.H100  b : H100  a <-> b : nvlink4 }\nsystem s : G\n")
    system = topoc.load(f)
    by_id = {d.id: d for d in system.gpus}
    assert by_id["s.b"].model.attr("hbm") == 80e9
    assert by_id["s.a"].model.attr("hbm") != 80e9
    assert system.notes == ()                         # nothing shadowed: the import is qualified
    assert topoc.load(f).gpus == system.gpus          # deterministic


def test_qualified_import_hides_unqualified_names_and_checks_members(tmp_path):
    f = tmp_path / "x.topo"
    f.write_text('use "nvidia/devices.topo" as nv\ngroup G { a : H100 }\nsystem s : G\n')
    with pytest.raises(CompileError) as info:
        topoc.load(f)
    assert [d.code for d in info.value.diagnostics] == ["E110"]
    f.write_text('use "nvidia/devices.topo" as nv\ngroup G { a : nv.H1000 }\nsystem s : G\n')
    with pytest.raises(CompileError) as info:
        topoc.load(f)
    (d,) = info.value.diagnostics
    assert d.code == "E110" and "declares no 'H1000'; did you mean 'H100'?" in d.message


def test_qualified_names_in_arguments_links_and_parents(tmp_path):
    f = tmp_path / "x.topo"
    f.write_text('use "nvidia/dgx_h100.topo" as lib\nuse "nvidia/links.topo" as l\n'
                 "device Mine : lib.H100 { hbm = 96 GB }\n"
                 "group Two { n : lib.DGXH100(G = Mine)  m : lib.DGXH100(G = lib.H200)\n"
                 "  n.nic[0] <-> m.nic[0] : l.ndr }\nsystem s : Two\n")
    system = topoc.load(f)
    assert gpu_hbm(system) == {96e9, pipeline.front_end(
        'use "nvidia/devices.topo"\n').device_models["H200"].attr("hbm")}


def test_a_duplicate_in_one_file_is_still_an_error(tmp_path):
    f = tmp_path / "x.topo"
    f.write_text("device X : gpu { }\ndevice X : gpu { }\ngroup G { x : X }\nsystem s : G\n")
    with pytest.raises(CompileError) as info:
        topoc.load(f)
    assert [d.code for d in info.value.diagnostics] == ["E120"]


def test_use_as_round_trips_through_fmt():
    from topoc.compiler.lang.fmt import fmt
    text = 'use "nvidia/devices.topo" as nv\n\ngroup G {\n  a : nv.H100\n}\n\nsystem s : G\n'
    assert fmt(text) == text
    assert parse(text).items[0].alias == "nv"


# -- the upgrade-safety corpus ---------------------------------------------------------------

def _compiled(path: Path) -> str:
    return REGISTRY["json"](topoc.load(path))


def _injected_library(tmp_path: Path) -> Path:
    """A copy of the bundled library in which a new file, used by devices.topo and links.topo,
    declares every name the corpus declares (differently) and a few names nobody uses yet: what
    a future library release could add."""
    lib = tmp_path / "library"
    shutil.copytree(resolve_module.library_root(), lib,
                    ignore=shutil.ignore_patterns("__pycache__", "*.py", "*.csv"))
    extra = {"Zeta9000": "device Zeta9000 : gpu { hbm = 1 GB }",
             "zlink": "link zlink : nvlink { bandwidth = 1 GB/s }",
             "ZetaPod": "group ZetaPod { g : Zeta9000 }",
             "llama_user": "model llama_user { layers = 2  hidden = 64  heads = 4  seq = 128  "
                           "vocab = 1000 }"}
    for path in CORPUS:
        for item in parse(path.read_text(), str(path)).items:
            kind = type(item).__name__
            if kind == "DeviceDecl":
                extra[item.name] = f"device {item.name} : cpu {{ cores = 1 }}"
            elif kind == "LinkDecl":
                extra[item.name] = f"link {item.name} : ethernet {{ bandwidth = 1 Gb/s }}"
            elif kind == "GroupDecl":
                extra[item.name] = f"group {item.name} {{ z : Zeta9000 }}"
    (lib / "nvidia/extra.topo").write_text("\n".join(extra[k] for k in sorted(extra)) + "\n")
    for name in ("devices.topo", "links.topo"):
        target = lib / "nvidia" / name
        target.write_text('use "extra.topo"\n' + target.read_text())
    return lib


def test_user_files_compile_unchanged_against_a_library_with_their_names_added(
        tmp_path, monkeypatch):
    assert len(CORPUS) >= 5
    before = {p.name: _compiled(p) for p in CORPUS}
    shadowed_before = {p.name: notes(p) for p in CORPUS}
    assert all(shadowed_before.values())              # each corpus file shadows the library
    lib = _injected_library(tmp_path)
    monkeypatch.setattr(resolve_module, "library_root", lambda: lib)
    for path in CORPUS:
        assert _compiled(path) == before[path.name], path.name
        declared = {i.name for i in parse(path.read_text(), str(path)).items
                    if hasattr(i, "name") and type(i).__name__.endswith("Decl")
                    and type(i).__name__ not in ("SystemDecl", "ParallelDecl")}
        shadowed = {m.split("'")[1] for m in notes(path)}
        assert declared <= shadowed, (path.name, declared - shadowed)


def test_every_library_file_compiles_against_the_injected_library(tmp_path, monkeypatch):
    lib = _injected_library(tmp_path)
    originals = sorted((ROOT / "library/nvidia").glob("*.topo"))
    before = {p.name: pipeline.check(p) for p in originals}
    monkeypatch.setattr(resolve_module, "library_root", lambda: lib)
    for path in originals:
        assert pipeline.check(lib / "nvidia" / path.name) == before[path.name] == [], path.name
