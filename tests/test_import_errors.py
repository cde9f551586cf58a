"""Importer inputs that are wrong, not hostile (issue 44): hwloc attributes holding text where
hwloc writes numbers, XML nested past any machine, a `use` of a symbolic link loop; each is a
message and the documented exit (import 1, diff 2), never a traceback."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from topoc.cli import main
from topoc.importers import ImportFailure
from topoc.importers.hwloc import from_hwloc

FIX = Path(__file__).resolve().parent / "fixtures"
DGX2 = FIX / "hwloc" / "nvidiaDGX2.xml"
LIB = "library/nvidia/"


def _dgx2_with(attribute: str, value: str) -> str:
    root = ET.parse(DGX2).getroot()
    for el in root.iter():
        if el.get(attribute) is not None:
            el.set(attribute, value)
    return ET.tostring(root, encoding="unicode")


@pytest.mark.parametrize("attribute", ["local_memory", "osdev_type", "pci_link_speed", "nbobjs"])
@pytest.mark.parametrize("value", ["lots", "1e999", "nan", "-5", "9" * 40])
def test_hwloc_text_where_numbers_belong_is_an_import_failure(attribute, value):
    with pytest.raises(ImportFailure, match=attribute):
        from_hwloc(_dgx2_with(attribute, value), "dgx2.xml")


def _deep(levels: int) -> str:
    inner = "<object type='PCIDev'/>"
    for _ in range(levels):
        inner = f"<object type='Bridge' bridge_type='1-1'>{inner}</object>"
    return (f"<topology version='2.0'><object type='Machine'><object type='Package'>{inner}"
            "</object></object></topology>")


def test_diff_and_import_of_bad_hwloc_exit_with_a_message(tmp_path, capsys):
    cases = {"text.xml": _dgx2_with("pci_link_speed", "fast"), "deep.xml": _deep(5000)}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert main(["diff", LIB + "dgx_h100.topo", str(tmp_path / name)]) == 2
        assert main(["import", "hwloc", str(tmp_path / name), "-o", str(tmp_path / "o")]) == 1
        assert not (tmp_path / "o").exists()
    err = capsys.readouterr().err
    assert "pci_link_speed 'fast'" in err and "nested more than" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("verb", [["compile"], ["lint"], ["render", "-o", "{tmp}/o.svg"],
                                  ["diff", "{file}"]])
def test_a_use_of_a_symlink_loop_is_a_diagnostic(tmp_path, capsys, verb):
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    main_file = tmp_path / "m.topo"
    main_file.write_text('use "a"\ndevice X : gpu { }\n')
    args = [v.format(tmp=tmp_path, file=main_file) for v in verb]
    code = main([args[0], str(main_file), *args[1:]])
    assert code == (2 if verb[0] == "diff" else 1)
    captured = capsys.readouterr()
    assert "E130 error: cannot read 'a': a symbolic link loop" in captured.out + captured.err


def test_an_import_that_does_not_compile_names_the_input_file(tmp_path, capsys):
    lines = ['Switch\t80 "S-00000000000a0000"\t# "MF0;leaf0:QM9700/U1" base port 0 lid 1 lmc 0']
    lines += [f'[{p}]\t"H-{0x100000 + p:016x}"[1]\t# "x" lid 2 4xNDR' for p in range(1, 71)]
    for p in range(1, 71):
        g = f"{0x100000 + p:016x}"
        lines += ["", f'Ca\t1 "H-{g}"\t# "node{p} mlx5_0"',
                  f'[1]({g})\t"S-00000000000a0000"[{p}]\t# lid 2 4xNDR']
    dump = tmp_path / "fabric.txt"
    dump.write_text("\n".join(lines) + "\n")
    assert main(["import", "ibnetdiscover", str(dump), "-o", str(tmp_path / "o.topo")]) == 1
    assert main(["diff", str(dump), str(dump)]) == 2
    err = capsys.readouterr().err
    assert err.count(f"{dump}:1:1: E180 error: this ibnetdiscover") == 3 and "E220" in err
    assert "<input>" not in err and "leaf0 : QM9700" in err


@pytest.mark.parametrize("side", ["--bus-ids", "--guids"])
def test_an_unwritable_side_output_leaves_o_alone(tmp_path, capsys, side):
    kind, source = (("nccl-topo", FIX / "nccl" / "hgx_h200_topo.xml") if side == "--bus-ids"
                    else ("hwloc", DGX2))
    out = tmp_path / "node.topo"
    out.write_text("# mine\n")
    (tmp_path / "plain").write_text("")
    # a folder, and a path below a file: refused for root too (permissions are not)
    for bad in (tmp_path, tmp_path / "plain" / "x.txt"):
        code = main(["import", kind, str(source), "-o", str(out), side, str(bad)])
        assert code == 2 and out.read_text() == "# mine\n"
    err = capsys.readouterr().err
    assert "it is a folder" in err and "Not a directory" in err


def test_a_use_of_a_symlink_loop_is_a_diagnostic_in_the_language_server(tmp_path):
    """The issue's fourth place: the language server gave no diagnostics at all for it."""
    from topoc.lsp import Analysis
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    text = 'use "a"\ndevice X : gpu { }\n'
    found = Analysis(text, str(tmp_path / "m.topo")).diagnostics
    assert [f.code for f in found] == ["E130"] and "symbolic link loop" in found[0].message
    assert found[0].start[0] == 0


@pytest.mark.parametrize("verb", ["compile", "lint", "lsp"])
def test_a_use_of_a_path_with_a_nul_is_a_diagnostic(tmp_path, capsys, verb):
    """Found by the hostile corpus: a NUL in a use's path raised ValueError ('embedded null
    byte') from the path resolution in compile, lint and the language server."""
    text = 'use "links\x00.topo"\ndevice X : gpu { }\n'
    path = tmp_path / "m.topo"
    path.write_text(text)
    if verb == "lsp":
        from topoc.lsp import Analysis
        found = Analysis(text, str(path)).diagnostics
        assert [f.code for f in found] == ["E130"] and "\\x00" in found[0].message
        return
    assert main([verb, str(path)]) == 1
    captured = capsys.readouterr()
    assert "E130 error: cannot read 'links\\x00.topo'" in captured.out + captured.err


@pytest.mark.parametrize("kind, line", [("nccl-topo", "    1 | junk\n      | ^\n"),
                                        ("nvidia-smi", None), ("hwloc", None)])
def test_a_dump_that_is_not_one_is_a_diagnostic_in_the_standard_form(kind, line, tmp_path,
                                                                     capsys):
    # path:line:col: CODE severity: message, like every other diagnostic (docs/errors.md)
    junk = tmp_path / "junk.txt"
    junk.write_text("junk\n")
    assert main(["import", kind, str(junk), "-o", str(tmp_path / "o.topo")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{junk}:1:1: E180 error: "), err
    assert "topoc: error" not in err and not (tmp_path / "o.topo").exists()
    if line:
        assert err.endswith(line)
