"""Hypothesis: on random systems and groups (sizes 1..64, odd and prime included), every
collective x algorithm either is refused for a stated reason or computes its collective,
counts nothing twice, routes every transfer on a connected path, and is deterministic."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import topoc
from topoc.backends.schedule_json import document
from topoc.compiler.ir.groups import select_group
from topoc.compiler.collectives.replay import check_links, replay
from topoc.compiler.collectives.paths import Router
from topoc.compiler.collectives.schedule import SUPPORTED, ScheduleError, schedule

from ...strategies import cluster_programs, group_requests

PAIRS = [(c, a) for c, algs in SUPPORTED.items() for a in (*algs, "auto")]


@given(st.data())
def test_schedules_compute_their_collective(data):
    text, world = data.draw(cluster_programs())
    system = topoc.loads(text)
    group = select_group(system, ranks_text=data.draw(group_requests(world)))
    collective, algorithm = data.draw(st.sampled_from(PAIRS))
    nbytes = data.draw(st.integers(1, 10**9))
    factor = data.draw(st.integers(1, 3))
    # rings and trees side by side: trees per channel head islands at different GPUs
    channels = data.draw(st.integers(1, 4)) if algorithm in ("ring", "tree") else None
    try:
        base = schedule(system, group, collective, algorithm, nbytes, channels=channels)
        chunks = base.chunks if base.algorithm == "ring" else base.chunks * factor
        sched = schedule(system, group, collective, algorithm, nbytes, chunks=chunks,
                         channels=channels)
    except ScheduleError as exc:
        message = str(exc)
        assert any(reason in message for reason in (
            "NVLS needs", "at least 2 ranks", "same number of ranks")), message
        return
    router = Router(system)
    doc = document(system, sched, router=router)
    assert replay(doc) == []
    ends = {link.id: (link.src, link.dst) for link in system.links}
    assert check_links(doc, ends) == []
    assert all(t["bytes"] == sched.slot_bytes(t["src_chunk"]) for r in doc["rounds"] for t in r)
    assert sched.transfer_count() == sum(len(r) for r in doc["rounds"])
    assert document(system, sched) == doc
    if group.ranks:                     # one rank's document: exactly its transfers
        rank = data.draw(st.sampled_from(group.ranks))
        mine = document(system, sched, rank, router)
        p = group.ranks.index(rank)
        assert mine["rounds"] == [[t for t in r if p in (t["src"], t["dst"])]
                                  for r in doc["rounds"]]
