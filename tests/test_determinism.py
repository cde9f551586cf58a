"""Every output format is byte-identical across runs with different hash seeds."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import library_file

CLUSTER = str(library_file("nvl72_cluster.topo"))
PCIE = str(library_file("pcie_server.topo"))
COMMANDS = {
    "compile-summary": ["compile", CLUSTER, "-D", "racks=2"],
    "compile-json": ["compile", CLUSTER, "-D", "racks=2", "--format", "json"],
    "render-dot": ["render", CLUSTER, "-D", "racks=2", "-o", "-"],
    "render-ring": ["render", PCIE, "--ring", "0..7", "-o", "-"],
    "schedule-json": ["schedule", CLUSTER, "-D", "racks=2", "--parallel", "train", "--group",
                      "dp:1", "--collective", "allreduce", "--algorithm", "ring"],
    "schedule-nccl": ["schedule", PCIE, "--ranks", "0..7", "--collective", "allreduce",
                      "--algorithm", "tree", "--format", "nccl", "--rank", "3"],
    "lint-json": ["lint", CLUSTER, PCIE, "--format", "json"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_same_bytes_for_every_hash_seed(name):
    outs = set()
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-m", "topoc", *COMMANDS[name]],
                              capture_output=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr.decode()
        outs.add(done.stdout)
    assert len(outs) == 1 and outs.pop()
