"""Imports: relative, bundled, cycles, depth limit and allowed roots."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.base.limits import LIMITS


def codes(exc):
    return [d.code for d in exc.value.diagnostics]


def test_relative_then_bundled_imports(tmp_path):
    (tmp_path / "mine.topo").write_text('use "nvidia/devices.topo"\n'
                                        'group Pair { g[2] : H100 }\n')
    main = tmp_path / "main.topo"
    main.write_text('use "mine.topo"\nuse "nvidia/links.topo"\n'
                    'group Top { p : Pair  p.g[0] <-> p.g[1] : nvlink4 x 18 }\nsystem t : Top\n')
    system = topoc.load(main)
    assert [d.id for d in system.gpus] == ["t.p.g0", "t.p.g1"]


def test_diamond_imports_load_once(tmp_path):
    (tmp_path / "a.topo").write_text('use "c.topo"\n')
    (tmp_path / "b.topo").write_text('use "c.topo"\n')
    (tmp_path / "c.topo").write_text('device X : gpu { }\n')
    main = tmp_path / "m.topo"
    main.write_text('use "a.topo"\nuse "b.topo"\ngroup G { x : X }\nsystem s : G\n')
    assert len(topoc.load(main).devices) == 1


def test_import_depth_limit(tmp_path):
    n = LIMITS.imports + 3
    for i in range(n):
        (tmp_path / f"f{i}.topo").write_text(f'use "f{i + 1}.topo"\n')
    (tmp_path / f"f{n}.topo").write_text("")
    with pytest.raises(CompileError) as info:
        topoc.load(tmp_path / "f0.topo")
    assert "E294" in codes(info)


def test_import_outside_roots_needs_permission(tmp_path):
    outside = tmp_path / "common"
    outside.mkdir()
    (outside / "x.topo").write_text("device X : gpu { }\n")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "m.topo").write_text('use "../common/x.topo"\ngroup G { x : X }\nsystem s : G\n')
    with pytest.raises(CompileError) as info:
        topoc.load(proj / "m.topo")
    assert codes(info) == ["E132"]
    assert len(topoc.load(proj / "m.topo", import_roots=[outside]).devices) == 1


def test_system_and_parallel_of_imports_are_not_imported(tmp_path):
    main = tmp_path / "m.topo"
    main.write_text('use "nvidia/dgx_h100.topo"\ngroup Two { n[2] : DGXH100 }\nsystem pair : Two\n')
    system = topoc.load(main)
    assert system.name == "pair" and len(system.gpus) == 16


def test_file_size_limit(monkeypatch):
    import attrs

    from topoc.compiler.lang import parse as parse_mod
    monkeypatch.setattr(parse_mod, "LIMITS", attrs.evolve(LIMITS, file_bytes=100))
    with pytest.raises(CompileError) as info:
        parse_mod.parse("#" * 200)
    assert codes(info) == ["E290"]
