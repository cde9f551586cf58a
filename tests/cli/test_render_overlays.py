"""Issue 46: every overlay of ``topoc render`` (--ring, --color, --highlight by short or full
name) on every view (physical, logical, racks, fabric) of every library file with a system
ends in a picture (the highlight outlined, the ring's arcs or a note saying why none) or a
usage message naming the view to draw, never a traceback; a misspelt name is answered with
the name meant. ``--ring dp:0`` on a folded view died with
``KeyError: 'cluster.node1'`` on 6 of the 7 files."""

from __future__ import annotations

import re

import pytest

import topoc
from topoc.backends.style import short, unique_suffixes
from topoc.cli import main

from ..conftest import library_file

#: Each library file with a parallel block, the big ones made small with -D (the folding still
#: happens: several machines or racks, summary boxes past the first).
FILES = {"a100_cluster": [], "a100_superpod": ["-D", "nodes=64"], "h100_cluster": [],
         "nvl72_cluster": [],
         "h100_fourtier": ["-D", "nodes=64"], "h100_superpod": ["-D", "nodes=64"],
         "nvl72_fourtier": ["-D", "racks=2"],
         "nvl72_superpod": ["-D", "racks=2"]}
VIEWS = ("physical", "logical", "racks", "fabric")


def _names(path, defines) -> tuple[str, str]:
    """A leaf switch by the name its box shows and the last GPU by its shortest unique name
    (inside a folded machine or rack in the folded views)."""
    system = topoc.load(path, defines=dict((k, int(v)) for k, v in
                                           (d.split("=") for d in defines[1::2])))
    switches = [d.id for d in system.devices if d.kind == "net_switch"]
    leaf = next((s for s in switches if short(s).startswith("leaf")), switches[0])
    gpu = system.gpus[-1].id
    return short(leaf), unique_suffixes([d.id for d in system.devices])[gpu]


def _outlined(source: str) -> set[str]:
    """The boxes drawn with the highlight's red outline (a box's attributes span lines)."""
    return {m.group(1) for m in re.finditer(r'^\s*"([^"]+)" \[(.*?)\]$', source, re.M | re.S)
            if re.search(r"(^|\s)penwidth=\"?4\b", m.group(2))
            and re.search(r"(^|\s)color=\"?red\b", m.group(2))}


def test_every_library_file_with_a_parallel_block_is_in_the_sweep():
    folder = library_file("h100_cluster.topo").parent
    with_parallel = {p.stem for p in folder.glob("*.topo")
                     if re.search(r"^parallel \w+ on ", p.read_text(), re.M)}
    assert with_parallel == set(FILES)


@pytest.mark.parametrize("name", sorted(FILES))
def test_overlays_on_every_view(name, tmp_path, capsys):
    path = library_file(f"{name}.topo")
    defines = FILES[name]
    leaf, gpu = _names(path, defines)
    for view in VIEWS:
        for overlay in (["--parallel", "train", "--ring", "dp:0"],
                        ["--parallel", "train", "--color", "tp"],
                        ["--highlight", leaf], ["--highlight", gpu]):
            out = tmp_path / f"{view}.dot"
            code = main(["render", str(path), *defines, "--view", view, *overlay,
                         "-o", str(out)])
            err = capsys.readouterr().err
            assert "Traceback" not in err, (view, overlay, err)
            if code == 0:
                assert out.stat().st_size > 0
                text = out.read_text()
                assert "graph" in text.split("{", 1)[0], (view, overlay)
                if overlay[0] == "--highlight":     # the leaf, or the box that holds the GPU
                    assert _outlined(text), (view, overlay)
                if view == "fabric" and overlay[-2] == "--color":    # pod boxes tagged tp:
                    assert 'tp:' in text, overlay
                if view == "fabric" and overlay[-2] == "--ring":     # arcs, or why not
                    assert "dir=\"forward\"" in text or "no ring" in err, (overlay, err)
            else:
                # a usage message naming what it cannot do (a view that does not apply)
                assert code == 2 and err.startswith("topoc: render:"), (view, overlay, err)
            out.unlink(missing_ok=True)


#: Every other library file with a system: machines, racks and clusters without a parallel
#: block (--color needs one; --ring takes world ranks, --highlight any name).
OTHERS = sorted(p.stem for p in library_file("h100_cluster.topo").parent.glob("*.topo")
                if re.search(r"^system ", p.read_text(), re.M) and p.stem not in FILES)


def _outcome(code: int, err: str, out, view: str, overlay: list[str]) -> None:
    """A picture (the highlight outlined), or a usage message naming what it cannot do."""
    assert "Traceback" not in err, (view, overlay, err)
    if code == 0:
        text = out.read_text()
        assert "graph" in text.split("{", 1)[0], (view, overlay)
        if overlay[0] == "--highlight":
            assert _outlined(text), (view, overlay)
        if overlay[0] == "--ring":      # arcs with step numbers, or a note saying why not
            assert re.search(r'dir="?forward', text) or "no ring" in err or "one box" in err, \
                (view, overlay, err)
    else:
        assert code == 2 and err.startswith(("topoc: render:", "topoc: error:")) and "--view" in err, \
            (view, overlay, err)


@pytest.mark.parametrize("name", OTHERS)
def test_overlays_on_every_view_of_every_other_library_file(name, tmp_path, capsys):
    """--ring over the world's first ranks, --highlight by a GPU's short name and by a
    device's full id, on the physical, logical, racks and fabric views."""
    path = library_file(f"{name}.topo")
    system = topoc.load(path)
    gpu = unique_suffixes([d.id for d in system.devices])[system.gpus[-1].id]
    full = next((d.id for d in system.devices if d.kind == "net_switch"),
                system.devices[0].id)
    ranks = f"0..{min(len(system.gpus), 16) - 1}"
    for view in VIEWS:
        for overlay in (["--ring", ranks], ["--highlight", gpu], ["--highlight", full]):
            out = tmp_path / f"{view}.dot"
            code = main(["render", str(path), "--view", view, *overlay, "-o", str(out)])
            _outcome(code, capsys.readouterr().err, out, view, overlay)
            out.unlink(missing_ok=True)


@pytest.mark.parametrize("name", sorted([*FILES, *OTHERS]))
def test_a_misspelt_highlight_is_answered_with_the_name_meant(name, tmp_path, capsys):
    """A name one letter off a GPU's short name (or a leaf's) gets 'did you mean' with it."""
    path = library_file(f"{name}.topo")
    defines = FILES.get(name, [])
    leaf, gpu = _names(path, defines) if name in FILES else ("", "")
    if not gpu:
        system = topoc.load(path)
        gpu = unique_suffixes([d.id for d in system.devices])[system.gpus[-1].id]
    target = leaf or gpu
    wrong = target[:-1] + ("x" if target[-1] != "x" else "y")
    out = tmp_path / "x.dot"
    assert main(["render", str(path), *defines, "--highlight", wrong, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--highlight {wrong}" in err and "did you mean" in err, err
    assert not out.exists()
