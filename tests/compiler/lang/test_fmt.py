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


def test_settings_on_one_line_stay_on_one_line():
    """The docs' style, ``tp = 8  pp = 4  dp = auto``, passes ``fmt --check`` as written; the
    spacing between settings becomes two spaces and a comment stays at the line's end."""
    canonical = ('parallel p on n {\n  tp = 8  pp = 4  dp = auto  # sizes\n'
                 '  order = tp, dp, pp\n  traffic {\n    tp allreduce 64 MiB x 160\n  }\n}\n')
    assert fmt(canonical) == canonical
    messy = canonical.replace("tp = 8  pp = 4", "tp=8 pp   =  4").replace("  # sizes", " # sizes")
    assert fmt(messy) == canonical
    model = "model m {\n  layers = 2  hidden = 64  heads = 4  # shape\n  seq = 8  vocab = 10\n}\n"
    assert fmt(model) == model


def test_a_one_line_parallel_block_stays_one_line():
    one = "parallel p on n { tp = 8  dp = 2 }  # good\n"
    assert fmt(one) == one
    assert fmt("parallel p on n {tp=8 dp=2}") == "parallel p on n { tp = 8  dp = 2 }\n"
    # a block with traffic, or written on several lines, keeps the block layout
    assert fmt("parallel p on n { dp = 8  traffic { dp allreduce 1 GB } }") == \
        "parallel p on n {\n  dp = 8\n  traffic { dp allreduce 1 GB }\n}\n"
    assert fmt("parallel p on n {\n  tp = 8  dp = 2 }\n") == \
        "parallel p on n {\n  tp = 8  dp = 2\n}\n"


def test_a_run_of_settings_wider_than_a_line_is_split_one_a_line():
    names = [f"setting_number_{i} = {i}" for i in range(8)]
    text = "parallel p on n {\n  " + "  ".join(names) + "  # why\n}\n"
    out = fmt(text)
    assert out == "parallel p on n {\n" + "".join(f"  {s}\n" for s in names).replace(
        "= 0\n", "= 0  # why\n", 1) + "}\n"
    assert fmt(out) == out
    one = "parallel p on n { " + "  ".join(names) + " }\n"     # too wide for one line
    assert fmt(one) == fmt(out.replace("  # why", ""))


def test_settings_do_not_move_past_a_traffic_block():
    text = "parallel p on n {\n  tp = 2  traffic { tp allreduce 1 MiB }  dp = 4\n}\n"
    out = fmt(text)
    assert out.index("tp = 2") < out.index("traffic") < out.index("dp = 4")
    assert fmt(out) == out


def test_a_comment_keeps_its_column_when_its_line_keeps_its_code():
    aligned = ('use "a.topo"          # links\nuse "models/b.topo"   # models\n\n'
               'group G {\n  cpu    : Grace      # one\n  gpu[2] : B200       # two\n}\n')
    out = fmt(aligned)
    assert [line.index("#") for line in out.splitlines() if "#" in line] == [22, 22, 22, 22]
    assert "  cpu : Grace         # one" in out and fmt(out) == out
    # a comment too close to its code gets two spaces; one on a line laid out anew, two
    moved = fmt("group G { g[2] : G                        # two\n}\n")
    assert moved == "group G {\n  g[2] : G  # two\n}\n" and fmt(moved) == moved
    assert fmt("use \"a.topo\"# x\n") == "use \"a.topo\"  # x\n"


def test_one_line_parallel_blocks_stay_together():
    pair = ("parallel p on two { tp = 16 }         # bad on 8-GPU NVLink nodes\n"
            "parallel p on two { tp = 8  dp = 2 }  # good\n")
    assert fmt(pair) == pair
    mixed = "parallel p on n { tp = 2 }\nparallel q on n {\n  tp = 2\n}\n"
    assert fmt(mixed) == "parallel p on n { tp = 2 }\n\nparallel q on n {\n  tp = 2\n}\n"


def test_a_traffic_block_written_on_one_line_stays_one_line():
    one = ("parallel p on n {\n  tp = 8  dp = auto\n"
           "  traffic { tp allreduce 64 MiB x 160  dp allreduce 1 GB }  # per step\n}\n")
    assert fmt(one) == one
    assert fmt(one.replace("{ tp allreduce", "{tp  allreduce")) == one     # same columns
    flows = "  ".join(f"tp allreduce {i} MiB x 160" for i in range(1, 6))
    wide = f"parallel p on n {{\n  traffic {{ {flows} }}\n}}\n"      # past 100 columns
    out = fmt(wide)
    assert out.count("allreduce") == 5 and "  traffic {\n    tp allreduce 1 MiB x 160\n" in out
    assert fmt(out) == out
