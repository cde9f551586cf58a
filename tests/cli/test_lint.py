"""``topoc lint`` in CI: the same broken file at the same line in every format, config from
pyproject.toml, exit codes, and ``topoc fmt``."""

from __future__ import annotations

import json

import pytest

from topoc.cli import main

BROKEN = ('use "nvidia/devices.topo"\nuse "nvidia/links.topo"\ngroup G {\n  gpu[2] : H100\n'
          '  gpu[0] <-> gpu[1] : nvlnk4\n}\nsystem s : G\n')
WARNED = ('use "nvidia/devices.topo"\nuse "nvidia/links.topo"\ngroup G {\n  gpu[2] : H100\n'
          '  spare : H100\n  gpu[0] <-> gpu[1] : nvlink4 x 18\n}\nsystem s : G\n')


@pytest.fixture
def files(tmp_path):
    (tmp_path / "broken.topo").write_text(BROKEN)
    (tmp_path / "warned.topo").write_text(WARNED)
    return tmp_path


def test_broken_file_at_the_right_line_in_every_format(files, capsys):
    path = str(files / "broken.topo")
    assert main(["lint", path]) == 1
    assert f"{path}:5:23: E111 error" in capsys.readouterr().out
    assert main(["lint", path, "--format", "json"]) == 1
    d = json.loads(capsys.readouterr().out)["diagnostics"][0]
    assert (d["line"], d["col"], d["code"]) == (5, 23, "E111")
    assert main(["lint", path, "--format", "github"]) == 1
    assert capsys.readouterr().out.startswith(f"::error file={path},line=5,col=23,")
    assert main(["lint", path, "--format", "sarif"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    assert sarif["version"] == "2.1.0"
    result = sarif["runs"][0]["results"][0]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert result["ruleId"] == "E111" and region["startLine"] == 5 and region["startColumn"] == 23
    assert sarif["runs"][0]["tool"]["driver"]["rules"][0]["id"] == "E111"


def test_warnings_pass_unless_strict(files, capsys):
    path = str(files / "warned.topo")
    assert main(["lint", path]) == 0
    assert "W401 warning" in capsys.readouterr().out
    assert main(["lint", path, "--strict"]) == 1
    assert main(["lint", path, "--ignore", "W401", "--strict"]) == 0
    assert main(["lint", path, "--select", "W5", "--strict"]) == 0
    assert main(["lint", path, "--select", "W99"]) == 2


def test_pyproject_configuration(files, capsys):
    path = str(files / "warned.topo")
    (files / "pyproject.toml").write_text('[tool.topoc.lint]\nstrict = true\n'
                                          '[tool.topoc.lint.severity]\nW401 = "error"\n')
    assert main(["lint", path]) == 1
    assert "W401 error" in capsys.readouterr().out
    (files / "pyproject.toml").write_text('[tool.topoc.lint]\nignore = ["W401"]\nstrict = true\n')
    assert main(["lint", path]) == 0
    (files / "pyproject.toml").write_text('[tool.topoc.lint.options]\nW503 = { treshold = 1 }\n')
    assert main(["lint", path]) == 2
    assert "did you mean 'threshold'" in capsys.readouterr().err


def test_fmt_check_and_rewrite(files, capsys):
    path = files / "warned.topo"
    path.write_text(WARNED.replace("gpu[2] : H100", "gpu[ 2 ]:H100"))
    assert main(["fmt", str(path), "--check"]) == 1
    assert "would reformat" in capsys.readouterr().err
    assert main(["fmt", str(path)]) == 0
    assert "gpu[2] : H100" in path.read_text()
    assert main(["fmt", str(path), "--check"]) == 0
    assert main(["fmt", str(files / "broken.topo")]) == 0   # it parses: formatting works
    (files / "bad.topo").write_text("group {")
    assert main(["fmt", str(files / "bad.topo")]) == 1


def test_library_is_formatted_and_lints_clean(capsys):
    from topoc import library
    paths = [str(p) for p in library.files()]
    assert main(["fmt", "--check", *paths]) == 0
    assert main(["lint", "--strict", *paths]) == 0


def test_lint_reports_a_non_utf8_file_as_e104_at_the_byte(tmp_path, capsys):
    """Lint keeps going past an unreadable file (issue 25): E105 at the bad byte, exit 1."""
    bad = tmp_path / "latin1.topo"
    bad.write_bytes(b'device G : gpu { }\n# caf\xe9\ngroup N { g[2] : G }\nsystem n : N\n')
    assert main(["lint", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:2:6: E105 error: cannot read the file: not UTF-8 text (byte 0xe9)" in out


@pytest.mark.parametrize("verb", [["compile"], ["fmt", "--check"], ["render", "-o", "x.dot"]])
def test_non_utf8_file_names_the_byte(verb, tmp_path, capsys):
    bad = tmp_path / "latin1.topo"
    bad.write_bytes(b'device G : gpu { }\n# caf\xe9\ngroup N { g[2] : G }\nsystem n : N\n')
    args = [verb[0], str(bad), *[a.replace("x.dot", str(tmp_path / "x.dot")) for a in verb[1:]]]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2:6: not UTF-8 text (byte 0xe9)" in err and "Traceback" not in err


def test_counts_agree_with_their_nouns():
    from topoc.compiler.base.diagnostics import plural
    assert plural(1, "GPU pair") == "1 GPU pair" and plural(24, "GPU pair") == "24 GPU pairs"
    assert plural(2, "switch") == "2 switches" and plural(1, "NIC") == "1 NIC"


USER_FILE = '''use "nvidia/links.topo"
use "nvidia/devices.topo"
use "nvidia/dgx_h100.topo"
group C {
  node[2] : DGXH100
  leaf[8] : QM9700
  node[0].nic[n] <-> leaf[n] : ndr
  node[1].nic[n] <-> leaf[(n + 1) % 8] : ndr{comment}
  spare : H100
}
system c : C
'''


def test_findings_land_on_the_users_line(tmp_path, capsys):
    """A finding about a library device the user wired or placed is reported at the user's
    line (their connection, or their instance), the library line kept as a note; a
    suppression on the user's line works and GitHub annotations point at the user's file."""
    path = tmp_path / "c.topo"
    path.write_text(USER_FILE.replace("{comment}", ""))
    assert main(["lint", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{path}:8:3: W406 warning" in out            # the misaligned connection
    assert f"{path}:9:3: W401 warning" in out            # the spare GPU
    assert "note: the library line it comes from" in out and "dgx_h100.topo" in out
    assert main(["lint", "--format", "github", str(path)]) == 0
    gh = capsys.readouterr().out
    assert f"file={path},line=8" in gh and "dgx_h100.topo,line" not in gh
    path.write_text(USER_FILE.replace("{comment}", "  # topoc: ignore[W406] being rewired"))
    assert main(["lint", str(path)]) == 0
    out = capsys.readouterr().out
    assert "W406" not in out and "W400" not in out


OVERWIRED = ('use "nvidia/dgx_h100.topo"\ngroup Two {\n  a : DGXH100\n  b : DGXH100\n'
             "  a.gpu[0] <-> b.gpu[0] : nvlink4 x 4\n}\nsystem two : Two\n")


def test_e220_about_a_library_device_is_at_the_users_line_in_every_verb(tmp_path, capsys):
    """Issue 25: the port budget of a library GPU the user over-wired is reported at the user's
    connection (line 5) by compile, check, lint in every format and the language server; the
    library line is a note, never the location."""
    import topoc
    from topoc.lsp import Analysis
    path = tmp_path / "two.topo"
    path.write_text(OVERWIRED)
    assert main(["compile", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:5:3: E220 error: port budget exceeded")
    assert "dgx_h100.topo:7:3: note: the library line it comes from" in err
    (d,) = topoc.check(path)
    assert (d.code, d.span.path, d.span.line) == ("E220", str(path), 5)
    assert main(["lint", str(path)]) == 1
    assert f"{path}:5:3: E220 error" in capsys.readouterr().out
    assert main(["lint", str(path), "--format", "json"]) == 1
    (d,) = [d for d in json.loads(capsys.readouterr().out)["diagnostics"] if d["code"] == "E220"]
    assert (d["path"], d["line"]) == (str(path), 5)
    assert main(["lint", str(path), "--format", "github"]) == 1
    gh = capsys.readouterr().out
    assert f"::error file={path},line=5," in gh and "dgx_h100.topo,line" not in gh
    assert main(["lint", str(path), "--format", "sarif"]) == 1
    (result,) = [r for r in json.loads(capsys.readouterr().out)["runs"][0]["results"]
                 if r["ruleId"] == "E220"]
    where = result["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"].endswith("two.topo")
    assert where["region"]["startLine"] == 5
    (found,) = [f for f in Analysis(OVERWIRED, str(path)).diagnostics if f.code == "E220"]
    assert found.start == (4, 2)
