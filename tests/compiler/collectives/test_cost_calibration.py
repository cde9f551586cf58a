"""The cost model against every published measurement in library/calibration.csv.

The 46 rows before issue 27 (the first of the file) keep their bounds: single-node
busbw within 15 % at 1 GiB and above and within 30 % from 1 MiB up to 1 GiB (issue 4);
multi-node busbw within 20 % from 64 MiB up, and single-node times within 25 % from 32 KiB to
1 MiB (issue 14); below 32 KiB the time within a factor of 2. Each is predicted with the NCCL
release its source states.

The validation rows (held out from every fit) must meet issue 27's per-class medians, and no
row may get worse than the worst recorded in docs/cost.md. Every validation row must be
predicted: a row the model cannot cost is a failure, not a skip.
"""

from __future__ import annotations

import pytest

from ...calibration_rows import (TARGETS, eks_chunks, error, faster_share, loose_flush_bound_us,
                                 measured_time, median, predict, row_class, rows, size_of)

EARLIER = rows()[:46]
#: Those still fit rows: three of Azure's single-process (-g 8) runs under 1 ms are excluded
#: since (library/calibration.csv notes why).
LEGACY = [r for r in EARLIER if r["role"] == "fit"]
#: The worst validation row today (docs/cost.md: p5 on NCCL 2.18.5 over EKS, 256 MiB, +116 %;
#: its 64 MiB row, +129 % until issue 45 made time monotonic in size, is +44 %); issue 27 asks
#: for 40 %, not yet met.
WORST_RECORDED = 1.17


def test_every_published_row_is_here():
    every = rows()
    assert len(every) >= 190
    assert all(row["source"] for row in every)
    assert {row["role"] for row in every} <= {"fit", "validate", "exclude", "inconsistent"}
    assert all(row["note"] for row in every if row["role"] in ("exclude", "inconsistent"))
    assert len(rows("validate")) >= 100
    assert all(r["role"] in ("fit", "exclude") and not r["source"].endswith("]")
               for r in EARLIER)
    assert len(LEGACY) >= 43


def test_rows_moved_out_as_inconsistent_name_the_numbers_of_their_own_run():
    """A validation row leaves only when its own run contradicts it, and says with what."""
    moved = rows("inconsistent")
    assert len(moved) <= 3      # none today: the EKS run's two went back (docs/cost.md)
    for row in moved:
        assert "the same run contradicts it" in row["note"] and " us" in row["note"]
        assert row["source"].endswith("]") and row["time_us"]


def test_rows_are_scored_against_the_faster_of_the_two_calls():
    """Where the source prints nccl-tests' in-place column too, a row is scored against the
    faster call (docs/cost.md, Measurement convention), whichever column that is."""
    both = [r for r in rows() if r["inplace"]]
    assert len(both) >= 90
    p5_64k = next(r for r in both if r["source"].endswith("[aws_p5_2n_ar-64K]"))
    assert measured_time(p5_64k) == pytest.approx(103.8e-6)          # in place: faster
    p5_8b = next(r for r in both if r["source"].endswith("[aws_p5_2n_ar-8B]"))
    assert measured_time(p5_8b) == pytest.approx(69.12e-6)           # out of place: faster
    a2a = next(r for r in both if r["source"].endswith("[cg_p5_8n_alltoall-32M]"))
    assert faster_share(a2a) == pytest.approx(28.67 / 31.81)         # busbw: the higher
    assert all(faster_share(r) == 1.0 for r in rows() if not r["inplace"])


def bound(row) -> float:
    size, multi = size_of(row["size"]), bool(row["defines"])
    if multi:
        return 0.20
    return 0.15 if size >= 2**30 else 0.30


@pytest.mark.parametrize("row", LEGACY, ids=lambda r: f"{r['system']}-{r['defines'] or '1'}-"
                         f"{r['gpus']}-{r['size']}-{r['algorithm']}")
def test_prediction_within_the_published_bound(row):
    got = predict(row)
    size = size_of(row["size"])
    measured_bus = float(row["busbw"]) * 1e9 / faster_share(row)     # the faster call's
    took = measured_time(row)
    if size < 32 * 1024:
        assert took / 2 <= got.time <= took * 2, (got, took)
    elif size <= 2**20:
        assert abs(got.time / took - 1) <= 0.25, (got.time, took)
    else:
        error = got.busbw / measured_bus - 1
        assert abs(error) <= bound(row), f"busbw {got.busbw / 1e9:.1f} vs {row['busbw']}: {error:+.1%}"


def test_validation_medians_meet_the_targets():
    """Issue 27's done-when figures on rows no constant was fitted on."""
    errors: dict[str, list[float]] = {}
    worst = (0.0, None)
    for row in rows("validate"):
        e = abs(error(row, predict(row)))
        errors.setdefault(row_class(row), []).append(e)
        worst = max(worst, (e, row["source"][-40:]), key=lambda w: w[0])
    assert set(errors) == set(TARGETS)
    for name, target in TARGETS.items():
        assert median(errors[name]) <= target, (name, median(errors[name]), target)
    assert worst[0] <= WORST_RECORDED, worst


def test_the_forced_flush_cannot_make_what_the_eks_rows_miss():
    """docs/cost.md, sixth pass (benchmarks/eks_flush.py): NCCL 2.18.5 flushes every Simple
    network receive on Hopper and aws-ofi-nccl 1.7.3 does it as one 4-byte RDMA read, behind
    NCCL's 8-deep receive window, so a flush adds its latency to the two legs of the tree's path
    (2F), not to every chunk. F is at most what a flushed Simple step costs on p4de
    (efa_sendrecv's step: one EFA round trip, 9 us, constants.py; it was a 15 us step fitted on
    the p4de 8 B row alone until issue 41), or loosely half the p4de 8 B all-reduce over the p5
    one. Even
    at the loose bound the 256 MiB and 1 GiB rows stay over 40 % (64 MiB, which the model prices
    as the 32 KiB chunks just under it run since time is monotonic in size, issue 45, is 26 %
    short); charged on every chunk of both legs (not what NCCL does) each would need more than
    twice F, and the run's 2 GiB row less than twice F: no one per-flush figure fits the
    run."""
    from topoc.compiler.collectives import transports
    flush = transports.TRANSPORTS["efa_sendrecv"].step_us
    assert flush <= 15.0
    loose = loose_flush_bound_us()
    assert flush < loose < 50.0
    needed, pipelined = {}, {}
    for row in rows("validate"):
        size = size_of(row["size"])
        if "[aws_p5eks_2n_ar-" not in row["source"] or size < 64 << 20:
            continue        # the run's sizes under 64 MiB carry one NVLS-tree chunk or a few
        chunks = eks_chunks(size)[1]
        got = predict(row)
        assert got.algorithm == "nvlstree" and got.protocol == "Simple", got
        model, took = got.time * 1e6, measured_time(row) * 1e6
        needed[row["size"]] = (took - model) / (2 * chunks)
        pipelined[row["size"]] = took / (model + 2 * loose) - 1
    assert set(needed) == {"64MiB", "256MiB", "1GiB", "2GiB"}
    assert pipelined["64MiB"] > 0.25, pipelined["64MiB"]
    for size in ("64MiB", "256MiB", "1GiB"):
        if size != "64MiB":
            assert pipelined[size] > 0.40, (size, pipelined[size])
        assert needed[size] > 2 * flush, (size, needed[size])
    assert needed["2GiB"] < 2 * flush


def test_no_other_nvls_tree_run_over_efa_pays_what_the_eks_run_does():
    """docs/cost.md, seventh pass (benchmarks/eks_neighbours.py): every other published p5 run
    of NVLS-tree over EFA from 64 MiB (NCCL 2.19.1 to 2.27.7, 2 to 32 nodes, fit or validation)
    is within 12 % of the model's busbw (the worst, NVIDIA/nccl#1112 on 2.19.1, +11.0 %), while
    the EKS run (NCCL 2.18.5, aws-ofi-nccl 1.7.3) is more than twice as slow at its 128 KiB
    chunks (64 MiB, priced since issue 45 as the smaller chunks just under it run, 44 % slower)
    and back within 10 % at 512 KiB. That is why no per-chunk cost is fitted for its
    stack: there is no second run of it to fit one on."""
    others, eks = [], {}
    for row in rows():
        if row["system"] != "aws_p5" or row["role"] not in ("fit", "validate") \
                or size_of(row["size"]) < 64 << 20:
            continue
        got = predict(row)
        if got.algorithm != "nvlstree":
            continue
        if "[aws_p5eks_2n_ar-" in row["source"]:
            eks[row["size"]] = error(row, got)
        else:
            others.append((error(row, got), row["source"][-45:]))
    assert len(others) >= 10
    assert max(abs(e) for e, _ in others) <= 0.12, others
    assert eks["64MiB"] > 0.4 and eks["256MiB"] > 1.0
    assert eks["2GiB"] < 0.10
