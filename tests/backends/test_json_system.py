"""``compile --format json`` written in pieces (backends.json_system.chunks): the same bytes as
the document built whole, on every library file and on the paths that do not read the compact
links; a failure while writing leaves ``-o`` as it was."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import topoc
from topoc.backends import json_system
from topoc.compiler.ir.links import Links

ROOT = Path(__file__).resolve().parents[2]


def _whole(system) -> str:
    """What the backend wrote before it was streamed: one json.dumps of the whole document."""
    return json.dumps(json_system.document(system), indent=1, ensure_ascii=False) + "\n"


def _systems():
    return sorted(p for p in (ROOT / "library").rglob("*.topo")
                  if re.search(r"^system ", p.read_text(), re.M))


@pytest.mark.parametrize("path", _systems(), ids=lambda p: p.name)
def test_the_pieces_are_the_whole_document(path, monkeypatch):
    system = topoc.load(path)
    whole = _whole(system)
    monkeypatch.setattr(json_system, "CHUNK", 7)        # many pieces, joined at every seam
    assert json_system.render(topoc.load(path)) == whole


def test_a_large_system_reads_no_link_object():
    system = topoc.load(ROOT / "library/nvidia/nvl72_fourtier.topo", {"racks": 3})
    assert isinstance(system.links, Links)
    text = json_system.render(system)
    assert not system.links._made and system.links._all is None
    assert text == _whole(topoc.load(ROOT / "library/nvidia/nvl72_fourtier.topo",
                                      {"racks": 3}))


def test_ids_that_do_not_sort_as_their_parts_and_links_off_the_compact_form():
    """Ids where one is a prefix of another (gpu1, gpu10), one-way links beside duplex ones
    between the same devices, and a system whose links are objects (a failure applied)."""
    text = """
link fast : nvlink { bandwidth = 50 GB/s  latency = 1 us }
link slow : pcie { bandwidth = 16 GB/s  latency = 2 us }
device G : gpu { hbm = 80 GB }
group N {
  gpu[12] : G
  gpu[0] <-> gpu[1] : fast
  gpu[1] <-> gpu[10] : fast
  gpu[10] -> gpu[1] : slow
  gpu[1] -> gpu[11] : slow
  gpu[11] <-> gpu[2] : fast x 2
}
system s : N
"""
    system = topoc.loads(text)
    assert isinstance(system.links, Links)              # the compact path's own order
    assert json_system.render(system) == _whole(topoc.loads(text))
    from topoc.compiler.ir.degrade import apply
    degraded = apply(system, ["s.gpu0"]).system        # kept rows of the compact arrays
    assert json_system.render(degraded) == _whole(degraded)
    import attrs
    objects = attrs.evolve(degraded, links=tuple(degraded.links))
    assert not isinstance(objects.links, Links)         # the path over Link objects
    assert json_system.render(objects) == _whole(objects)


def test_a_failure_while_writing_leaves_the_output_as_it_was(tmp_path, monkeypatch, capsys):
    from topoc.cli import main
    out = tmp_path / "keep.json"
    out.write_text("keep")
    f = str(ROOT / "library/nvidia/nvl72_fourtier.topo")

    def broken(system):
        yield "{\n"
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(json_system, "chunks", broken)
    assert main(["compile", f, "--format", "json", "-o", str(out)]) == 2
    assert "No space left" in capsys.readouterr().err
    assert out.read_text() == "keep" and sorted(tmp_path.iterdir()) == [out]
