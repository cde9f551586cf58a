"""Number bombs (issue 18): library files and published inputs whose number literals were
replaced by extreme spellings (huge exponents, thousands of digits, 1e309, -0, NaN, inf) get an
answer from every verb: exit 0 or 1 (2 for a refused command-line value), no traceback, within
5 s of CPU and 1 GiB each. CI runs a sample; ``pytest -m fuzz`` runs the 5,000-input campaign."""

from __future__ import annotations

import contextlib
import gc
import io
import signal
import time
import tracemalloc

import pytest
from hypothesis import given, settings

from topoc.cli import main

from .strategies import importer_bombs, number_bombs

SECONDS = 5
MEMORY = 2**30
#: The bound is on CPU seconds: on the shared 2-core machine a load of 7 to 10 stretches the
#: wall clock three times and more (a 43 s CPU run took 138 s), not the work. A hang shows as
#: wall time, so the wall clock is cut at HANG x SECONDS, and a run cut there counts as past
#: the bound.
HANG = 4


def run_verb(argv: list[str]) -> tuple[int, float, int]:
    """Exit code, CPU seconds (this process, user + system) and peak traced bytes of one
    in-process CLI run; any exception that escapes ``main`` is a traceback a user would have
    seen, so it fails the test. A run the wall-clock deadline cuts short reports at least
    SECONDS (its exit code is main's answer to the interruption)."""
    out, err = io.StringIO(), io.StringIO()
    fired = []

    def expire(*_):
        fired.append(True)
        raise TimeoutError(f"no answer within {SECONDS * HANG} s")
    old = signal.signal(signal.SIGALRM, expire)
    # A full collection of what earlier tests left on this worker's heap is not the verb's
    # work: under tracemalloc it cost 7.8 CPU seconds on CI for a parse error that takes
    # 0.02 s. Freezing the heap (a constant-time move to the permanent generation, no
    # collection: collecting first made these tests 20 times slower) keeps the verb's
    # collections to its own objects.
    gc.freeze()
    signal.alarm(SECONDS * HANG)
    tracemalloc.start()
    start = time.process_time()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as exc:           # argparse refusing a flag
        code = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        cpu = time.process_time() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        gc.unfreeze()
    assert "Traceback" not in err.getvalue()
    return code, max(cpu, SECONDS) if fired else cpu, peak


def check_bomb(verb, path, text, tmp_path):
    src = tmp_path / path.name
    src.write_text(text)
    rest = [a.replace("{out}", str(tmp_path / "out")) for a in verb[1:]]
    if verb[0] == "export":             # export FORMAT FILE ...
        argv = [verb[0], rest[0], str(src), *rest[1:], "--import-root", str(path.parent)]
    else:
        argv = [verb[0], str(src), *rest, "--import-root", str(path.parent)]
    if verb[0] == "fmt":
        argv = argv[:-2]                   # fmt resolves no imports
    code, seconds, peak = run_verb(argv)
    assert code in (0, 1, 2), (argv, code)
    assert seconds < SECONDS and peak < MEMORY


def check_import(kind, name, text, tmp_path):
    src = tmp_path / name
    src.write_text(text)
    code, seconds, peak = run_verb(["import", kind, str(src), "-o", str(tmp_path / "n.topo")])
    assert code in (0, 1) and seconds < SECONDS and peak < MEMORY


@settings(max_examples=25)
@given(number_bombs())
def test_number_bombs(tmp_path_factory, case):
    check_bomb(*case, tmp_path_factory.mktemp("bomb"))


@settings(max_examples=25)
@given(importer_bombs())
def test_importer_number_bombs(tmp_path_factory, case):
    check_import(*case, tmp_path_factory.mktemp("imp"))


@pytest.mark.fuzz
@settings(max_examples=4000)
@given(number_bombs())
def test_number_bombs_campaign(tmp_path_factory, case):
    check_bomb(*case, tmp_path_factory.mktemp("bomb"))


@pytest.mark.fuzz
@settings(max_examples=1000)
@given(importer_bombs())
def test_importer_number_bombs_campaign(tmp_path_factory, case):
    check_import(*case, tmp_path_factory.mktemp("imp"))


REPORTED = {   # the three inputs of issue 18, as reported
    "index": ("dgx_h100", "exponent 99999999"),
    "lanes": ('use "nvidia/links.topo"\ndevice G : gpu { }\n'
              "group N {\n  gpu[2] : G\n  gpu[0] <-> gpu[1] : nvlink4 x 1e9999999\n}\n"
              "system n : N\n", "exponent 9999999"),
    "hbm": ("device G : gpu { hbm = 1e309 GB }\ngroup N { gpu[2] : G }\nsystem n : N\n",
            "about 1e309"),
}


@pytest.mark.parametrize("case", sorted(REPORTED))
def test_the_three_reported_inputs_exit_1_fast(case, tmp_path, capsys):
    from .conftest import library_file
    text, needle = REPORTED[case]
    lib = library_file("dgx_h100.topo")
    if text == "dgx_h100":
        text = lib.read_text().replace("cpu[0] <-> cpu[1]", "cpu[1e99999999] <-> cpu[1]", 1)
    (tmp_path / "x.topo").write_text(text)
    for verb in (["compile", "--import-root", str(lib.parent)], ["fmt", "--check"]):
        start = time.process_time()      # CPU: a loaded CI machine stretches the wall clock
        assert main([verb[0], str(tmp_path / "x.topo"), *verb[1:]]) == 1
        assert time.process_time() - start < 2
        err = capsys.readouterr().err
        assert "E297 error" in err and needle in err and "^" in err
