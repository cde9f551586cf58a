"""Shared pytest set-up: golden-file regeneration flag and hypothesis profiles."""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "library"
GOLDEN = Path(__file__).resolve().parent / "golden"

# "ci" keeps the property suites quick on a 2-core machine; "thorough" is for local runs:
#   HYPOTHESIS_PROFILE=thorough pytest
settings.register_profile("ci", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True, scope="session")
def _private_plan_cache(tmp_path_factory):
    """topoc plan's row cache in a folder of this run, never the user's ~/.cache."""
    os.environ["TOPOC_CACHE"] = str(tmp_path_factory.mktemp("topoc-cache"))


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="rewrite golden files from the current output (review the diff!)")


@pytest.fixture
def update_goldens(request) -> bool:
    """True when the run was asked to rewrite golden files."""
    return request.config.getoption("--update-goldens")


def library_file(name: str) -> Path:
    """The bundled library file with this basename."""
    matches = sorted(LIBRARY.rglob(name))
    assert matches, name
    return matches[0]


@contextmanager
def deadline(seconds: int):
    """Fail with TimeoutError when the block runs longer than ``seconds`` (a hang, not a slow
    case, is what the callers catch)."""
    def expire(*_):
        raise TimeoutError(f"no answer within {seconds} s")
    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def expand_hostlist(hostlist: str) -> list[str]:
    """The host names a Slurm hostlist (``n[01-03,07],x``) stands for: the tests' reading of
    what ``backends.slurm.hostlist`` writes, zero-padding kept."""
    import re
    out = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?", hostlist):
        prefix, ranges = m.groups()
        if not ranges:
            out.append(prefix)
            continue
        for r in ranges.split(","):
            lo, _, hi = r.partition("-")
            out += [f"{prefix}{i:0{len(lo)}d}" for i in range(int(lo), int(hi or lo) + 1)]
    return out
