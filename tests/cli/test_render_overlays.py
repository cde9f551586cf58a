"""Issue 46: every overlay of ``topoc render`` (--ring, --color, --highlight by short name)
on every view of every library cluster file with a parallel block ends in a picture or a
usage message, never a traceback. ``--ring dp:0`` on a folded view died with
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
