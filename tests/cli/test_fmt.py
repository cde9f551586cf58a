"""``topoc fmt FILE`` writes only regular files (issue 44: on a FIFO it blocked forever; on a
hard-linked file it broke the link, the other name keeping the old text)."""

from __future__ import annotations

import os

from topoc.cli import main

from ..conftest import deadline

UGLY = "device   X : gpu {  }\n"
PRETTY = "device X : gpu { }\n"


def test_fmt_refuses_a_fifo_and_goes_on(tmp_path, capsys):
    fifo = tmp_path / "pipe.topo"
    os.mkfifo(fifo)
    other = tmp_path / "ok.topo"
    other.write_text(UGLY)
    with deadline(20):
        assert main(["fmt", str(fifo), str(other)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert other.read_text() == PRETTY


def test_fmt_rewrites_a_hard_linked_file_in_place(tmp_path):
    a, b = tmp_path / "a.topo", tmp_path / "b.topo"
    a.write_text(UGLY)
    os.link(a, b)
    inode = a.stat().st_ino
    assert main(["fmt", str(a)]) == 0
    assert a.stat().st_ino == inode and a.stat().st_nlink == 2
    assert b.read_text() == PRETTY == a.read_text()


def test_fmt_still_replaces_a_single_file_atomically(tmp_path):
    a = tmp_path / "a.topo"
    a.write_text(UGLY)
    inode = a.stat().st_ino
    assert main(["fmt", str(a)]) == 0
    assert a.read_text() == PRETTY and a.stat().st_ino != inode


def test_diff_reports_and_check_gates(tmp_path, capsys):
    # the documented contract (docs/contracts.md): --diff alone is a report (exit 0), the exit
    # status is --check's (1 when a file would change, with or without --diff); neither writes
    f = tmp_path / "a.topo"
    f.write_text(UGLY)
    assert main(["fmt", "--diff", str(f)]) == 0
    assert "-device   X : gpu {  }" in capsys.readouterr().out and f.read_text() == UGLY
    assert main(["fmt", "--check", "--diff", str(f)]) == 1
    assert "+device X : gpu { }" in capsys.readouterr().out and f.read_text() == UGLY
    f.write_text(PRETTY)
    assert main(["fmt", "--check", "--diff", str(f)]) == 0
