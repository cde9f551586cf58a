"""Issue 25: nothing a file or a pipe sends can hang topoc, eat memory or turn into code.
One bounded reader for every input; importers with limits and linear parsing; importers that
write usable files; imports that answer the same for every path outside the project."""

from __future__ import annotations

import io
import os
import time
import tracemalloc
from pathlib import Path

import pytest

import topoc
from topoc.compiler.base import reading
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.base.limits import LIMITS
from topoc.compiler.lang import pipeline
from topoc.compiler.lang.fmt import fmt
from topoc.importers import ImportFailure, from_nccl_xml, from_smi
from topoc.importers import nccl_xml, smi

from .conftest import deadline

FIXTURES = Path(__file__).parent / "fixtures" / "nccl"




def codes(info) -> list[str]:
    return [d.code for d in info.value.diagnostics]


# ---- the bounded reader ---------------------------------------------------------------------

def test_dev_zero_stops_at_the_limit():
    tracemalloc.start()
    try:
        with pytest.raises(CompileError) as info:
            pipeline.read("/dev/zero")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert codes(info) == ["E290"]
    assert peak < 3 * LIMITS.file_bytes, f"{peak / 2**20:.0f} MiB read for an endless input"


def test_sparse_file_through_use_is_e290_at_the_use_line(tmp_path):
    big = tmp_path / "big.topo"
    with open(big, "wb") as f:
        f.truncate(3 * 2**30)                     # 3 GB of holes: nothing on disk
    (tmp_path / "main.topo").write_text('device X : gpu { }\nuse "big.topo"\n')
    tracemalloc.start()
    try:
        with pytest.raises(CompileError) as info:
            topoc.load(tmp_path / "main.topo")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert codes(info) == ["E290"]
    assert info.value.diagnostics[0].span.line == 2
    assert peak < 3 * LIMITS.file_bytes


def test_stream_reader_stops_at_limit_plus_one():
    class Endless(io.RawIOBase):
        asked = 0

        def read(self, n=-1):
            self.asked += n
            return b"#" * n

    stream = Endless()
    with pytest.raises(reading.TooLarge):
        reading.read_stream(stream, "<pipe>", limit=1000)
    assert stream.asked == 1001
    assert reading.read_stream(io.BytesIO(b"abc"), limit=3) == b"abc"


def test_byte_order_mark_is_accepted(tmp_path):
    text = (FIXTURES.parent.parent.parent / "library" / "nvidia" / "dgx_h100.topo").read_text()
    bom = tmp_path / "dgx.topo"
    bom.write_bytes(b"\xef\xbb\xbf" + text.replace('use "', 'use "nvidia/').encode())
    plain = topoc.load(FIXTURES.parent.parent.parent / "library" / "nvidia" / "dgx_h100.topo")
    assert len(topoc.load(bom).devices) == len(plain.devices)
    assert topoc.compile("\ufeff" + 'device X : gpu { }\ngroup G { g : X }\nsystem s : G\n')


# ---- imports: one answer outside the project ------------------------------------------------

@pytest.mark.parametrize("exists", [True, False])
def test_outside_the_project_is_e132_whether_or_not_the_file_exists(tmp_path, exists):
    outside = tmp_path / "secret.topo"
    if exists:
        outside.write_text("device S : gpu { }\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.topo").write_text('use "../secret.topo"\n')
    with pytest.raises(CompileError) as info:
        topoc.load(project / "main.topo")
    assert codes(info) == ["E132"]


# ---- importers: limits, linear parsing, numbers ----------------------------------------------

def _dump(pcis: str) -> str:
    return f'<system version="1"><cpu numaid="0" arch="x86_64">{pcis}</cpu></system>'


def test_nccl_xml_element_limit():
    text = _dump('<pci class="0x0100"/>' * (nccl_xml.MAX_ELEMENTS + 1))
    with pytest.raises(ImportFailure, match="XML elements"):
        from_nccl_xml(text, "big.xml")


def test_nccl_xml_depth_limit():
    depth = nccl_xml.MAX_DEPTH + 1
    text = _dump('<pci class="0x0604">' * depth + '</pci>' * depth)
    with pytest.raises(ImportFailure, match="nested"):
        from_nccl_xml(text, "deep.xml")


def test_nccl_xml_siblings_at_the_limit_are_linear():
    """Siblings at the element limit: walking them was quadratic (``stack.pop(0)``)."""
    gpu = '<pci busid="0000:{:02x}:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" ' \
          'link_width="16"><gpu sm="90"/></pci>'
    others = '<pci busid="0000:ff:00.0" class="0x010000"/>' * (nccl_xml.MAX_ELEMENTS - 100)
    text = _dump(gpu.format(1) + others)
    start = time.perf_counter()
    with deadline(20):
        topo, notes = from_nccl_xml(text, "wide.xml")
    assert "gpu[1]" in topo
    assert time.perf_counter() - start < 20


def test_superscript_digit_in_a_number_is_a_default_not_a_crash():
    text = _dump('<pci busid="0000:01:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" '
                 'link_width="1\u00b2"><gpu sm="9\u00b2"/></pci>')
    topo, notes = from_nccl_xml(text, "odd.xml")
    assert "gpu[1]" in topo and any("width" in n for n in notes)


def test_xml_error_gives_its_location_once():
    with pytest.raises(ImportFailure) as info:
        from_nccl_xml("<system>\n  <cpu>&</system>", "bad.xml")
    message = str(info.value)
    assert message.startswith("bad.xml:2:")
    assert "line" not in message and "column" not in message


def test_smi_column_limit():
    n = smi.MAX_COLUMNS + 1
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n))
    rows = [f"GPU{i}\t" + "\t".join("X" if i == j else "SYS" for j in range(n)) for i in range(n)]
    with pytest.raises(ImportFailure, match="columns"):
        from_smi("\n".join([head, *rows]), "big.txt")


def test_smi_matrix_at_the_limit_is_fast():
    n = smi.MAX_COLUMNS
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n))
    rows = [f"GPU{i}\t" + "\t".join("X" if i == j else "NV18" if i % 7 and j % 7 else "NODE"
                                    for j in range(n)) for i in range(n)]
    with deadline(30):
        topo, _ = from_smi("\n".join([head, *rows]), "wide.txt")
    assert f"gpu[{n}]" in topo and "nvswitch[1]" in topo


def test_smi_direct_nvlink_to_more_peers_than_lanes_is_refused():
    n = 40
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n))
    rows = [f"GPU{i}\t" + "\t".join("X" if i == j else "NV1" if (i + j) % 2 else "NODE"
                                    for j in range(n)) for i in range(n)]
    with pytest.raises(ImportFailure, match="NVLink lanes"):
        from_smi("\n".join([head, *rows]), "mesh.txt")


def test_smi_numa_limit():
    n = smi.MAX_NUMA + 1
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n))
    rows = [f"GPU{i}\t" + "\t".join("X" if i == j else "SYS" for j in range(n)) for i in range(n)]
    with pytest.raises(ImportFailure, match="NUMA"):
        from_smi("\n".join([head, *rows]), "sys.txt")


# ---- importers write usable files ------------------------------------------------------------

def test_named_gpu_gets_the_library_figures():
    text = (FIXTURES / "dgx_h100_spaces_topo_m.txt").read_text()
    topo, notes = from_smi(text, "m.txt", gpu="H100")
    system = topoc.compile(topo)
    assert all(g.model.attr("hbm", 0) == 81559 * 2**20 for g in system.gpus)   # 81,559 MiB
    assert all(g.model.attr("tflops_bf16", 0) == 989 for g in system.gpus)
    assert "# H100 SXM5" in topo          # the library's citation comes along


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()
                                        if p.suffix in (".txt", ".xml")))
def test_imported_files_pass_fmt_check(name):
    text = (FIXTURES / name).read_text()
    topo, _ = (from_nccl_xml if name.endswith(".xml") else from_smi)(text, name)
    assert fmt(topo) == topo


def test_file_name_never_becomes_code():
    text = (FIXTURES / "dgx_h100_spaces_topo_m.txt").read_text()
    topo, _ = from_smi(text, 'x.txt\ndevice Evil : gpu { }\n#')
    assert "x.txt\\ndevice Evil" in topo
    assert not any(line.startswith("device Evil") for line in topo.splitlines())


# ---- fmt never moves a comment onto another line's code -------------------------------------

@pytest.mark.parametrize("text", [
    "device X : gpu {  # topoc: ignore[W501] about the header\n  sm = 90\n}\n",
    "device X : gpu {\n  sm = 90\n}  # topoc: ignore[W501] about the closing line\n",
])
def test_fmt_never_joins_a_commented_line_with_the_next(text):
    out = fmt(text)
    assert out == text and fmt(out) == out


def test_importers_stop_reading_dev_zero_at_the_limit(tmp_path, capsys):
    """Issue 25: ``topoc import nvidia-smi /dev/zero`` (and nccl-topo) stops at the size limit
    with E290 and writes nothing."""
    from topoc.cli import main
    for kind in ("nvidia-smi", "nccl-topo"):
        out = tmp_path / f"{kind}.topo"
        with deadline(60):
            assert main(["import", kind, "/dev/zero", "-o", str(out)]) == 1
        assert "E290" in capsys.readouterr().err and not out.exists()


def test_the_language_server_refuses_a_document_past_the_limit():
    """Issue 25: a document larger than the limit gets E290 at its start, not gigabytes held."""
    from topoc.compiler.base.limits import LIMITS
    from topoc.lsp import Analysis
    found = Analysis("#" * (LIMITS.file_bytes + 1), "/tmp/big.topo").diagnostics
    assert [(f.code, f.start) for f in found] == [("E290", (0, 0))]
