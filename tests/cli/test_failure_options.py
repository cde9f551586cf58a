"""--fail, --degrade and --faults on every analysing verb (issue 48): each verb takes them from
the command line, the failure changes what it answers, and a failure file gives the same answer
as the flags; in Python every verb's function takes the degraded system
``compiler.ir.degrade.apply`` returns."""

from __future__ import annotations

import pytest

import topoc
from topoc.cli import main
from topoc.compiler.ir.degrade import apply

SOURCE = """use "nvidia/dgx_h100.topo"
use "models/llama3.topo"
system dgx : DGXH100
parallel train on dgx { tp = 8  model = llama3_8b  batch = 64 }
"""

#: verb -> its arguments after the file; ``render`` writes -o itself.
VERBS = {
    "compile": [],
    "cost": ["--sizes", "1MiB"],
    "schedule": ["--collective", "allreduce", "--size", "1MiB"],
    "plan": ["--model", "llama3_8b", "--batch", "64"],
    "infer": ["--model", "llama3_8b", "--isl", "1024", "--osl", "128"],
    "report": ["--parallel", "train"],
    "render": [],
    "blast": ["--top", "3"],
}
SLOW = "dgx.gpu0<->dgx.nvswitch0=50%"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fail")
    (folder / "f.topo").write_text(SOURCE)
    (folder / "gpu.faults").write_text("fail dgx.gpu3\n")
    (folder / "slow.faults").write_text(f"degrade {SLOW.replace('=', ' = ')}\n")
    return folder


def _run(files, capsys, verb: str, *flags: str) -> tuple[int, str, str]:
    out = files / f"{verb}.out"
    args = [verb, str(files / "f.topo"), *VERBS[verb], *flags]
    args += ["-o", str(files / f"{verb}.dot")] if verb == "render" else []
    code = main(args)
    cap = capsys.readouterr()
    text = (files / f"{verb}.dot").read_text() if verb == "render" and code == 0 else cap.out
    out.write_text(text)
    return code, text, cap.err


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_takes_failures(verb, files, capsys):
    code, healthy, _ = _run(files, capsys, verb)
    assert code == 0
    code, slow, err = _run(files, capsys, verb, "--degrade", SLOW)
    assert code == 0 and "degraded: 1 link" in err
    code, slow_file, _ = _run(files, capsys, verb, "--faults", str(files / "slow.faults"))
    assert code == 0 and slow_file == slow
    code, failed, err = _run(files, capsys, verb, "--fail", "dgx.gpu3")
    assert "7 of 8 GPUs survive" in err
    code_file, failed_file, _ = _run(files, capsys, verb, "--faults",
                                     str(files / "gpu.faults"))
    assert (code_file, failed_file) == (code, failed)
    if verb == "report":
        # the strategy maps 8 GPUs: with 7 left it is refused, saying to plan again
        assert code == 2 and "plan again" in err
    else:
        assert code == 0 and failed != healthy
    if verb not in ("compile", "render", "blast", "schedule"):
        # a slower NVLink lane changes the figures of every verb that costs something;
        # schedule lists transfers and their links, not times: a slower lane changes it only
        # where it changes the algorithm (a 1 MiB all-reduce on 8 H100s stays a ring at any
        # rate of one lane since ring LL runs at half the bus from NCCL 2.21)
        assert slow != healthy, verb


def test_the_api_takes_the_degraded_system(files):
    from topoc.backends import render as r
    from topoc.compiler.analysis.blast import blast
    from topoc.compiler.analysis.strategy import analyse
    system = topoc.load(str(files / "f.topo"))
    slow = apply(system, degrade_=[SLOW]).system
    lost = apply(system, fail=["dgx.gpu3"]).system
    assert len(lost.gpus) == 7 and len(slow.gpus) == 8
    assert analyse(slow, "train").per_step > analyse(system, "train").per_step
    assert r.render(lost, "dot")[0] != r.render(system, "dot")[0]
    assert blast(lost)[0].gpus_total == 7
