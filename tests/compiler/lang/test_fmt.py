"""fmt(fmt(x)) == fmt(x), and fmt(x) compiles to the same system as x."""

from __future__ import annotations

from hypothesis import assume, given

import topoc
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.lang.fmt import _comments, fmt

from ...strategies import grammar_programs, node_programs


def same_system(a: str, b: str) -> None:
    try:
        first = topoc.loads(a)
    except CompileError as exc:
        codes = [d.code for d in exc.diagnostics]
        try:
            topoc.loads(b)
        except CompileError as again:
            assert [d.code for d in again.diagnostics] == codes
            return
        raise AssertionError("formatting made an invalid program valid") from None
    second = topoc.loads(b)
    assert (first.devices, first.links, first.parallels) == \
        (second.devices, second.links, second.parallels)


@given(node_programs())
def test_fmt_of_generated_systems(program):
    text = program[0]
    once = fmt(text)
    assert fmt(once) == once
    same_system(text, once)


@given(grammar_programs())
def test_fmt_of_grammar_programs(text):
    try:
        once = fmt(text)
    except CompileError:
        assume(False)
        return
    assert fmt(once) == once
    assert sorted(c[2] for c in _comments(text)) == sorted(c[2] for c in _comments(once))
    same_system(text, once)


def test_comments_survive():
    text = '# head\nlink l : nvlink { bandwidth = 1 GB/s  # inside\n  latency = 1 us }  # tail\n'
    out = fmt(text)
    for comment in ("# head", "# inside", "# tail"):
        assert comment in out
    assert fmt(out) == out


def test_a_statement_on_the_header_line_keeps_its_comment():
    text = 'device G : gpu { }\ngroup N { g[2] : G # two\n}\nsystem n : N\nparallel p on n { tp = 2 # tp\n}\n'
    out = fmt(text)
    assert "  g[2] : G  # two" in out and "group N {\n" in out
    assert "  tp = 2  # tp" in out and "parallel p on n {\n" in out
    assert fmt(out) == out


def test_fmt_diff_stdout_and_stdin(tmp_path, capsys, monkeypatch):
    import io
    from topoc.cli import main
    path = tmp_path / "x.topo"
    messy = "device G : gpu {   }\ngroup N { g[2] : G }\nsystem n:N\n"
    path.write_text(messy)
    assert main(["fmt", "--diff", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"--- {path} (original)") and "+system n : N" in out
    assert path.read_text() == messy                       # --diff changes nothing
    assert main(["fmt", "--diff", "--check", str(path)]) == 1
    capsys.readouterr()
    assert main(["fmt", "--stdout", str(path)]) == 0
    assert capsys.readouterr().out == fmt(messy) and path.read_text() == messy
    monkeypatch.setattr("sys.stdin", io.StringIO(messy))
    assert main(["fmt", "-"]) == 0
    assert capsys.readouterr().out == fmt(messy)
