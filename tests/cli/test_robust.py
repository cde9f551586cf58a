"""Issue 25 through the command line: outputs written as their target asks, Ctrl-C and I/O
errors answered with an exit code and a message, every number checked, ``-D`` once,
``[tool.topoc.lint]`` validated, lint for CI that keeps every file's results, a byte-order
mark accepted, standard input bounded, NCCL export naming every CPU's vendor."""

from __future__ import annotations

import io
import json
import re
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import topoc
from topoc.cli import common, main

from ..conftest import LIBRARY

DGX = str(LIBRARY / "nvidia" / "dgx_h100.topo")
SMALL = 'device G : gpu { hbm = 80 GB }\ngroup N { g[2] : G }\nsystem n : N\n'


def _small(tmp_path) -> str:
    path = tmp_path / "small.topo"
    path.write_text(SMALL)
    return str(path)


# ---- output targets -------------------------------------------------------------------------

def _device(tmp_path, name: str, minor: int) -> str:
    """A private copy of /dev/null (minor 3) or /dev/full (7): the test never risks the
    machine's own device if the code under test were to replace its target."""
    path = tmp_path / name
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    return str(path)


def test_a_null_device_stays_a_device(tmp_path):
    null = _device(tmp_path, "null", 3)
    assert main(["compile", _small(tmp_path), "-o", null]) == 0
    assert stat.S_ISCHR(os.stat(null).st_mode)


def test_a_fifo_is_written_into(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main(["compile", _small(tmp_path), "-o", str(fifo)]) == 0
    reader.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and b"system n" in got[0]


def test_a_symlink_is_followed_and_kept(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    assert main(["compile", _small(tmp_path), "-o", str(link)]) == 0
    assert link.is_symlink() and "system n" in real.read_text()


def test_mode_is_kept(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old")
    out.chmod(0o600)
    assert main(["compile", _small(tmp_path), "-o", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and "system n" in out.read_text()


def test_fmt_refuses_a_read_only_file(tmp_path, capsys):
    path = tmp_path / "ro.topo"
    path.write_text("device G : gpu {   }\n")
    path.chmod(0o444)
    assert main(["fmt", str(path)]) == 2
    assert "read-only" in capsys.readouterr().err
    assert path.read_text() == "device G : gpu {   }\n" and not path.stat().st_mode & 0o222


@pytest.mark.parametrize("target", ["folder", "full", "missing/x.txt"])
def test_unwritable_outputs_exit_2_with_a_message(tmp_path, capsys, target):
    if target == "folder":
        (tmp_path / "folder").mkdir()
    out = _device(tmp_path, "full", 7) if target == "full" else str(tmp_path / target)
    assert main(["compile", _small(tmp_path), "-o", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("topoc: error: cannot write") and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


_FDOPEN = os.fdopen


class _FullFile:
    """A file whose writes fail as on a full disk (ENOSPC), closing its descriptor."""

    def __init__(self, fd: int, *_):
        self.f = _FDOPEN(fd, "wb")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def write(self, _data):
        import errno
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _fail(err: int):
    def raise_(*_a, **_k):
        raise OSError(err, os.strerror(err))
    return raise_


@pytest.mark.parametrize("where, err, reason", [
    ("mkstemp", "EACCES", "Permission denied"),        # a read-only folder (not as root)
    ("mkstemp", "EROFS", "Read-only file system"),     # a folder on a read-only mount
    ("write", "ENOSPC", "No space left on device"),    # a full disk
    ("replace", "EROFS", "Read-only file system"),
])
@pytest.mark.parametrize("existing", [False, True])
def test_a_read_only_folder_or_a_full_disk_exits_2_and_damages_nothing(
        tmp_path, capsys, monkeypatch, where, err, reason, existing):
    """Issue 25: ``-o`` to a regular file in a read-only folder or on a full disk exits 2 with
    the path and the reason, leaves no temporary file and keeps the old file as it was. The
    failures are injected where the system would raise them (root ignores permission bits,
    and the machine's disks are not to be filled), so the test runs the same as any user."""
    import errno
    src = _small(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "summary.txt"
    if existing:
        target.write_text("old")
        target.chmod(0o640)
    code = getattr(errno, err)
    if where == "mkstemp":
        monkeypatch.setattr(common.tempfile, "mkstemp", _fail(code))
    elif where == "write":
        monkeypatch.setattr(common.os, "fdopen", _FullFile)
    else:
        monkeypatch.setattr(common.os, "replace", _fail(code))
    assert main(["compile", src, "-o", str(target)]) == 2
    out, stderr = capsys.readouterr()
    assert stderr == f"topoc: error: cannot write {target}: {reason}\n"
    assert sorted(p.name for p in folder.iterdir()) == (["summary.txt"] if existing else [])
    if existing:
        assert target.read_text() == "old" and stat.S_IMODE(target.stat().st_mode) == 0o640
    messy = folder / "messy.topo"                     # fmt rewriting a file in place
    messy.write_text("device G : gpu {   }\n")
    assert main(["fmt", str(messy)]) == 2
    assert f"cannot write {messy}: {reason}" in capsys.readouterr().err
    assert messy.read_text() == "device G : gpu {   }\n"
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_ctrl_c_while_writing_exits_130_quietly_and_leaves_no_temp_file(tmp_path, capsys,
                                                                         monkeypatch):
    def interrupt(*_):
        raise KeyboardInterrupt
    monkeypatch.setattr(common.os, "replace", interrupt)
    assert main(["compile", _small(tmp_path), "-o", str(tmp_path / "out.txt")]) == 130
    assert capsys.readouterr().err == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.topo"]


def test_ctrl_c_in_a_process_exits_130_without_a_traceback(tmp_path):
    """Ctrl-C during a verb exits 130 with no traceback. The stub interrupts the main thread
    itself (a signal sent to the process may land on another thread, numpy's for one, and
    reach the interpreter only after the stub returned, so the verb went on with its result:
    the test failed under load) and then blocks on a pipe nothing is written to, so it returns
    only by the KeyboardInterrupt: the outcome no longer depends on timing."""
    code = ("import signal, os, sys, threading\n"
            "from topoc.compiler.lang import pipeline\n"
            "def slow(*a, **k):\n"
            "    r, w = os.pipe()\n"
            "    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)\n"
            "    os.read(r, 1)\n"
            "    raise AssertionError('the interrupt never arrived')\n"
            "pipeline.load = slow\n"
            "from topoc.launch import run\n"
            f"sys.argv = ['topoc', 'compile', {_small(tmp_path)!r}]\nrun()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 130 and "Traceback" not in proc.stderr


def test_ctrl_c_while_the_command_line_is_imported_exits_130(tmp_path):
    """Issue 44: Ctrl-C during start-up printed a KeyboardInterrupt traceback and died by the
    signal: the console script imported the whole command line (half a second) before any of
    topoc's code could catch it. The entry point (topoc.launch) imports it inside its ``try``;
    the interrupt is delivered exactly when that import starts."""
    code = ("import builtins, signal, sys, threading\n"
            "real = builtins.__import__\n"
            "def hook(name, globals=None, locals=None, fromlist=(), level=0):\n"
            "    if name == 'cli' and level == 1:\n"
            "        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)\n"
            "    return real(name, globals, locals, fromlist, level)\n"
            "builtins.__import__ = hook\n"
            "from topoc.launch import run\n"
            f"sys.argv = ['topoc', 'compile', {_small(tmp_path)!r}]\nrun()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 130 and "Traceback" not in proc.stderr, proc.stderr
    light = subprocess.run([sys.executable, "-c", "import sys, topoc.launch; "
                            "print(any(m.startswith('topoc.compiler') for m in sys.modules))"],
                           capture_output=True, text=True, timeout=60)
    assert light.stdout.strip() == "False"       # nothing heavy before the try


# ---- numbers ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["export", "nccl-graph", DGX, "--ranks", "0..7", "--channels", "100000000", "-o", "-"],
    ["export", "nccl-graph", DGX, "--ranks", "0..7", "--channels", "-3", "-o", "-"],
    ["export", "nccl-graph", DGX, "--ranks", "0..7", "--channels", "0", "-o", "-"],
    ["schedule", DGX, "--ranks", "0..7", "--collective", "allreduce", "--chunks", "0"],
    ["schedule", DGX, "--ranks", "0..7", "--collective", "allreduce", "--channels", "9e9"],
    ["plan", DGX, "--model", "llama3-8b", "--batch", "8", "--imbalance", "nan"],
    ["plan", DGX, "--model", "llama3-8b", "--batch", "8", "--imbalance", "inf"],
    ["plan", DGX, "--model", "llama3-8b", "--batch", "8", "--gemm-efficiency", "0"],
    ["plan", DGX, "--model", "llama3-8b", "--batch", "8", "--top", "-1"],
    ["plan", DGX, "--model", "llama3-8b", "--batch", "\u00b2"],
    ["plan", DGX, "--model", "llama3-8b", "--batch", "8", "--jobs", "100000"],
    ["compile", DGX, "-D", "x=1", "-D", "x=2"],
])
def test_bad_numbers_are_usage_errors(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err


def test_define_twice_through_the_api_is_refused():
    with pytest.raises(common.UsageError, match="twice"):
        common.parse_defines(["racks=2", "racks=3"])


# ---- [tool.topoc.lint] ------------------------------------------------------------------------

@pytest.mark.parametrize("config, needle", [
    ("select = 5", "list of codes"),
    ('strict = "no"', "true or false"),
    ("severity = 5", "severity must be a table"),
    ("options = { W405 = 3 }", "table of tables"),
    ('options = { W405 = { ratio = "x" } }', "finite number"),
    ("[tool.topoc.lint.x", "cannot read"),
])
def test_bad_lint_config_exits_2_with_a_clear_message(tmp_path, capsys, config, needle):
    (tmp_path / "pyproject.toml").write_text(f"[tool.topoc.lint]\n{config}\n")
    assert main(["lint", _small(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_non_utf8_pyproject_exits_2(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.topoc.lint]\n# caf\xe9\n")
    assert main(["lint", _small(tmp_path)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_one_code_as_a_string_is_one_code(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.topoc.lint]\nselect = "W506"\n')
    assert main(["lint", _small(tmp_path)]) == 0
    assert "matches no rule" not in capsys.readouterr().err


# ---- lint in CI -------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_one_broken_file_keeps_every_other_result(tmp_path, fmt):
    good = tmp_path / "warn.topo"
    good.write_text('link nv : nvlink { bandwidth = 25 GB/s }\ndevice G : gpu { }\n'
                    'device S : switch { }\ngroup B { g[2] : G  s : S\n'
                    '  g[0] <-> s : nv x 4  g[1] <-> s : nv x 2 }\nsystem b : B\n')
    bad = tmp_path / "bad.topo"
    bad.write_bytes(b"device G : gpu { }\n# \xff\n")
    out = tmp_path / f"out.{fmt}"
    assert main(["lint", str(good), str(bad), str(tmp_path / "gone.topo"), "--format", fmt,
                 "-o", str(out)]) == 1
    text = out.read_text()
    assert "W404" in text and text.count("E105") >= 2
    if fmt == "sarif":
        runs = json.loads(text)["runs"][0]
        assert {r["ruleId"] for r in runs["results"]} >= {"W404", "E105"}


def test_byte_order_mark_is_accepted_by_lint_and_fmt(tmp_path, capsys):
    path = tmp_path / "bom.topo"
    path.write_bytes(b"\xef\xbb\xbf" + SMALL.encode())
    assert main(["lint", str(path)]) == 0
    assert main(["fmt", "--check", str(path)]) in (0, 1)
    assert "E101" not in capsys.readouterr().out


def test_standard_input_is_bounded(monkeypatch, capsys):
    class Endless(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, b):
            b[:] = b"#" * len(b)
            return len(b)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(Endless())))
    assert main(["fmt", "-"]) == 1
    assert "E290" in capsys.readouterr().err


# ---- NCCL export: every CPU's vendor ----------------------------------------------------------

@pytest.mark.parametrize("decl, vendor", [
    ('device EPYC9654 : cpu { cores = 96  vendor = "amd" }', 'vendor="AuthenticAMD"'),
    ("device EPYC9654 : cpu { cores = 96 }", 'vendor="AuthenticAMD"'),
    ("device Xeon6960P : cpu { cores = 72 }", 'vendor="GenuineIntel" familyid="6" modelid="173"'),
    ('device CPU_GenuineIntel_6_143 : cpu { vendor = "GenuineIntel" }',
     'vendor="GenuineIntel" familyid="6" modelid="143"'),
])
def test_nccl_export_writes_every_cpus_vendor(decl, vendor):
    from topoc.backends import nccl_topo
    name = decl.split()[1]
    system = topoc.loads(decl + "\ndevice G : gpu { sm = 90 }\n"
                         "link pc : pcie { bandwidth = 63 GB/s }\n"
                         f"group N {{ c : {name}  g : G  g <-> c : pc }}\nsystem n : N\n")
    assert vendor in nccl_topo.render(system, None)


def test_the_readme_ci_recipe_keeps_every_result_when_one_file_is_broken(tmp_path, capsys):
    """Run the README's lint steps as written on three files, one not UTF-8: every step runs
    (``if: always()`` after the first), the SARIF file holds the good files' findings and the
    broken file's E105."""
    import shlex
    from ..conftest import ROOT
    readme = (ROOT / "README.md").read_text()
    recipe = re.search(r"```yaml\n(lint-topologies:.*?)```", readme, re.S).group(1)
    steps = re.findall(r"- run: (topoc .*)\n(\s+if: always\(\))?", recipe)
    assert [s[0].split()[1] for s in steps] == ["lint", "lint", "fmt"]
    assert all(always for _, always in steps[1:])
    folder = tmp_path / "topologies"
    folder.mkdir()
    (folder / "warn.topo").write_text(
        'link nv : nvlink { bandwidth = 25 GB/s }\ndevice G : gpu { }\ndevice S : switch { }\n'
        'group B { g[2] : G  s : S\n  g[0] <-> s : nv x 4\n  g[1] <-> s : nv x 2\n}\n'
        'system b : B\n')
    (folder / "broken.topo").write_bytes(b"device G : gpu { }\n# \xff\n")
    (folder / "fine.topo").write_text(SMALL)
    files = sorted(str(p) for p in folder.glob("*.topo"))
    codes = []
    for command, _ in steps:
        words = shlex.split(command)[1:]
        words = [w.replace("topoc.sarif", str(tmp_path / "topoc.sarif")) for w in words]
        i = words.index("topologies/*.topo")
        codes.append(main(words[:i] + files + words[i + 1:]))
    assert codes == [1, 1, 2]          # fmt: the broken file is an I/O error, the rest checked
    sarif = json.loads((tmp_path / "topoc.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"W404", "W401", "E105"}
    out, err = capsys.readouterr()
    assert "W404" in out and "would reformat" in err and "warn.topo" in err
