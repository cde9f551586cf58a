"""The orderings data (tests/training_orderings.py) and the check over it
(benchmarks/plan_validation.py --orderings): what the data must be for the check to mean
something, and that the check counts a pair and a winner as it says."""

from __future__ import annotations

import sys

import pytest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

from tests.training_orderings import groups  # noqa: E402
from tests.training_rows import _model_cached, predict  # noqa: E402


def test_groups_hold_alternatives_of_one_training_work_from_six_sources():
    gs = groups()
    assert len({g.id for g in gs}) == len(gs)
    assert len({g.source for g in gs}) >= 6
    for g in gs:
        ran = [a.row for a in g.alternatives if not a.oom]
        assert len(ran) >= 2, g.id
        assert g.url.startswith("https://"), g.id
        # one model (shape), one GPU type and count in every alternative of a group
        models = {(m.layers, m.hidden, m.heads, m.seq, m.vocab, m.experts)
                  for m in (_model_cached(r.id) for r in ran)}
        assert len(models) == 1, g.id
        assert len({(r.gpu, r.gpus) for r in ran}) == 1, g.id
        for r in ran:
            assert r.shape.tp * r.shape.cp * r.shape.dp * r.shape.pp == r.gpus, r.id
            assert r.batch % (r.microbatch * r.shape.dp) == 0, r.id


def test_alternatives_are_predicted_on_their_library_systems():
    refused = [(g.id, a.label) for g in groups() for a in g.alternatives
               if not a.oom and predict(a.row).predicted is None]
    # every alternative that ran is costed (Megatron-Bridge 25.09's DeepSeek-V3 on PP 8 was
    # refused while it was read at EP 64, which a 32-GPU stage cannot hold)
    assert refused == []


def test_the_check_orders_a_pair_and_names_a_winner_as_measured(monkeypatch):
    import plan_validation as pv
    from topoc.compiler.training import gemm
    start = {gen: gemm.CURVES[gen] for gen in pv.GENERATIONS}
    tt = [g for g in groups() if g.id == "tt24-t5-405b-512"]
    monkeypatch.setattr(pv, "groups", lambda: tuple(tt))
    res = pv.ordering_results(start, {})
    (r,) = res
    # torchtitan Table 5: interleaved 1F1B measured 28 % faster than 1F1B (128 against 100
    # tokens/s/GPU); one pair over 10 %, the measured winner named
    assert [(p[0], p[1]) for p in r["pairs"]] == [("interleaved 1f1b", "1f1b")]
    assert r["winner"] == "interleaved 1f1b"
    assert r["pairs"][0][5] == (r["pairs"][0][3] < r["pairs"][0][4])
    assert r["winner_right"] == (r["predicted_winner"] == "interleaved 1f1b")


def test_a_wrong_pair_is_classed_by_what_differs_and_the_term_that_favours_the_slower():
    """``--terms``: a pair ordered wrong is named by the keys its two mappings differ in (dp
    and the batch follow from them) and by the model's term that most favours the alternative
    measured slower; a refused alternative, two fp8 runs that differ only in their recipe, and
    two that topoc cannot tell apart have classes of their own."""
    import plan_validation as pv
    base = {"tp": 8, "pp": 6, "dp": 8, "cp": 1, "ep": 1, "mb": 4, "vp": 1,
            "recompute": "full", "fsdp": False, "fp8": False, "gbs": 2048, "recipe": None}
    other = dict(base, pp=2, dp=24, mb=2, gbs=2016)
    fast = {"GEMMs": 0.033, "bubble": 0.0015, "exposed dp": 0.0009}
    slow = {"GEMMs": 0.031, "bubble": 0.0009, "exposed dp": 0.0027}
    assert pv.mechanism(fast, slow, base, other) == "pp+mb / GEMMs"
    assert pv.mechanism(dict(fast, bubble=0.01), slow, base, other) == "pp+mb / bubble"
    assert pv.mechanism({}, slow, base, other) == "refused"
    fp8 = dict(base, fp8=True, recipe="tensorwise")
    assert pv.mechanism(fast, fast, fp8, fp8) == "fp8 recipe (the same to topoc)"
    assert pv.mechanism(fast, slow, fp8, dict(fp8, recipe="rowwise")) == "fp8 recipe"
    assert pv.mechanism(fast, slow, base, dict(fp8, recipe="rowwise")) == "precision"


def test_terms_of_an_alternative_add_up_to_its_predicted_step():
    """What ``--terms`` prints of an alternative is its step split into the terms ``--compare``
    shows (per sequence of its batch): they add up to the predicted step."""
    import plan_validation as pv
    from topoc.compiler.training import gemm
    start = {gen: gemm.CURVES[gen] for gen in pv.GENERATIONS}
    g = next(g for g in groups() if g.id == "bloom-181b-0221")
    held, _ = pv.curves_without(g.source, start, {})
    for a in g.alternatives[:2]:
        terms, facts = pv._terms_per_seq(a.row, held)
        assert facts["microbatches"] == a.row.batch // (a.row.microbatch * a.row.shape.dp)
        assert sum(terms.values()) == pytest.approx(facts["step"], rel=1e-9)
        assert pv.predicted_with(a.row, held).predicted / a.row.batch == \
            pytest.approx(facts["step"], rel=1e-12)


def test_export_variants_run_their_nvlink_at_the_cut_rate():
    """An A800 or H800 row (FlagPerf's groups) runs on the A100 or H100 topology with every
    GPU-NVSwitch link at 400 GB/s a GPU (``training_rows.NVLINK_SHARE``): the tensor-parallel
    mapping pays for it, a mapping without tensor parallelism on one node hardly does."""
    import attrs
    from tests.training_rows import system_for, system_of
    rows = {a.row.id: a.row for g in groups() if g.id == "flagperf-llama3-8b-a800-8"
            for a in g.alternatives if not a.oom}
    tp8 = rows["flagperf-a800-l3-8b-pp1dp1tp8"]
    a100 = attrs.evolve(tp8, gpu="A100-80GB")
    cut, _ = system_for(tp8, system_of(tp8))
    full, _ = system_for(a100, system_of(a100))

    def nvlink(s):
        return {round(l.type.bandwidth * l.lanes / 1e9, 1) for l in s.links
                if l.src.endswith("gpu0") and l.type.cls == "nvlink"}
    assert nvlink(full) == {50.0} and nvlink(cut) == {33.3}     # GB/s a link, 12 a GPU
    slower = predict(tp8).predicted / predict(a100).predicted - 1
    assert slower > 0.02
    pp8 = rows["flagperf-a800-l3-8b-pp8dp1tp1"]
    assert abs(predict(pp8).predicted / predict(attrs.evolve(pp8, gpu="A100-80GB")).predicted
               - 1) < slower / 4


def test_as_plan_ranks_is_plan_rank_key_and_out_of_memory_alternatives_are_ranked_too(
        monkeypatch):
    """The check's 'as plan ranks' orders the alternatives by ``PlanRow.rank_key`` itself,
    after ``plan.answered`` (the one rule, not a copy): with the key reversed, its ranked
    winner becomes the alternative predicted slowest. An alternative the source measured out
    of memory carries its mapping and is ranked the same way against the group's measured
    winner (FlagPerf's A800 table: pp1 dp8 tp1 ran out of memory)."""
    import plan_validation as pv
    from topoc.compiler.analysis.plan import PlanRow
    from topoc.compiler.training import gemm
    start = {gen: gemm.CURVES[gen] for gen in pv.GENERATIONS}
    (g,) = [g for g in groups() if g.id == "flagperf-llama3-8b-a800-8"]
    monkeypatch.setattr(pv, "groups", lambda: (g,))
    cache: dict = {}
    (r,) = pv.ordering_results(start, cache)
    (oom,) = [a for a in g.alternatives if a.oom]
    assert oom.row is not None and oom.row.value is None
    assert [o[0] for o in r["oom"]] == [oom.label]
    _label, ratio, refused, above = r["oom"][0]
    held, _ = pv.curves_without(r["source"], start, cache)
    key, _ = pv.plan_rank(oom.row, held)
    winner = dict((t[0], t[3]) for t in r["times"])[r["winner"]]
    assert ratio > 0 and refused is (key is None)
    assert above == (key is not None and key < winner)
    slowest = max(r["times"], key=lambda t: t[2])[0]
    monkeypatch.setattr(PlanRow, "rank_key", property(lambda row: (-row.step_time,)))
    (rev,) = pv.ordering_results(start, cache)
    assert rev["ranked_winner"] == slowest != r["ranked_winner"]
