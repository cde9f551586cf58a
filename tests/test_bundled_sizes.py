"""Every bundled cluster compiles and lints without errors at sizes its fabric can host that its
example ``parallel`` block does not divide: the block is left out with warning W507, and a verb
that names it says why (issue 23)."""

from __future__ import annotations

import pytest

from topoc.cli import main

from .conftest import LIBRARY

#: (file, parameter, sizes): edges, primes and sizes the example block does not divide.
SIZES = [("a100_cluster.topo", "nodes", (1, 3, 7, 20, 35, 99, 100)),
         ("h100_cluster.topo", "nodes", (1, 3, 5, 33, 129, 255)),
         ("nvl72_cluster.topo", "racks", (1, 3, 64)),
         ("h100_superpod.topo", "nodes", (1, 3, 257)),
         ("a100_superpod.topo", "nodes", (1, 3, 101, 201)),
         ("nvl72_superpod.topo", "racks", (1, 3, 65))]


@pytest.mark.parametrize("file, key, sizes", SIZES, ids=[s[0] for s in SIZES])
def test_bundled_clusters_compile_and_lint_at_every_size(file, key, sizes, capsys):
    path = str(LIBRARY / "nvidia" / file)
    for n in sizes:
        assert main(["compile", path, "-D", f"{key}={n}"]) == 0, (file, n)
        assert main(["lint", path, "-D", f"{key}={n}"]) == 0, (file, n)
        assert " error" not in capsys.readouterr().err


def test_a_verb_that_names_the_left_out_block_says_why(capsys):
    path = str(LIBRARY / "nvidia" / "h100_cluster.topo")
    assert main(["report", path, "-D", "nodes=3", "--parallel", "train"]) == 2
    err = capsys.readouterr().err
    assert "does not fit this size" in err and "24 GPUs" in err
    assert main(["lint", path, "-D", "nodes=3"]) == 0
    assert "W507" in capsys.readouterr().out


def test_a_size_past_the_fabric_is_refused_by_its_requirement(capsys):
    """a100_cluster.topo at 128 or 140 nodes (the DGX A100 SuperPOD's 140) failed with E222,
    'a connection needs at least one lane, not 0 (with spines = 28)'."""
    path = str(LIBRARY / "nvidia" / "a100_cluster.topo")
    assert main(["compile", path, "-D", "nodes=140"]) == 1
    err = capsys.readouterr().err
    assert "E223" in err and "100 nodes" in err and "E222" not in err


MODEL_BLOCK = """use "nvidia/links.topo"
use "nvidia/devices.topo"
use "nvidia/dgx_h100.topo"
use "models/llama3.topo"

group Nodes(n: int = 4) {{ node[n] : DGXH100 }}
system cluster : Nodes(n = {n})

parallel train on cluster {{
  tp = 8  dp = auto
  model = llama3_8b
  batch = 64
}}
"""


def test_a_model_block_whose_batch_the_d_size_does_not_divide_is_left_out(tmp_path, capsys):
    """batch 64 over dp = 3 (-D n=3) stopped compile, lint and plan with E303, though plan never
    uses the block; with -D it is left out with W507 as a block of sizes that do not fit. Written
    at that size (no -D) it stays an error."""
    path = tmp_path / "t.topo"
    path.write_text(MODEL_BLOCK.format(n=4))
    assert main(["compile", str(path), "-D", "n=3"]) == 0
    assert "W507" in capsys.readouterr().err
    assert main(["lint", str(path), "-D", "n=3"]) == 0
    assert "batch 64 does not divide" in capsys.readouterr().out
    # the file's nodes share no network, so plan searches one node's GPUs
    assert main(["plan", str(path), "-D", "n=3", "--model", "llama3-8b", "--batch", "48",
                 "--gpus", "8", "--top", "1", "--no-cache", "--jobs", "1"]) == 0
    capsys.readouterr()
    assert main(["report", str(path), "-D", "n=3", "--parallel", "train"]) == 2
    assert "does not fit this size" in capsys.readouterr().err
    path.write_text(MODEL_BLOCK.format(n=3))
    assert main(["compile", str(path)]) == 1
    assert "E303" in capsys.readouterr().err


def test_a_model_block_wrong_at_every_size_stays_an_error_under_d(tmp_path, capsys):
    """-D leaves out only what the override's size breaks (here dp, the auto size): ep = 2 on
    a dense model is wrong at any size, E303 with or without -D at a size whose batch divides,
    never a W507 that drops it."""
    path = tmp_path / "t.topo"
    path.write_text(MODEL_BLOCK.format(n=4).replace("dp = auto", "dp = auto  ep = 2"))
    for extra in ([], ["-D", "n=4"], ["-D", "n=2"]):
        assert main(["compile", str(path), *extra]) == 1
        err = capsys.readouterr().err
        assert "E303" in err and "has no experts" in err and "W507" not in err
