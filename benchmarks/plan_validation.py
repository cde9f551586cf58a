"""Leave one source out for ``topoc plan``'s fitted constants (issue 42): the only accuracy the
docs quote for fixed strategies.

The rows of tests/training_rows.py are grouped by their source (the document a row's
``source`` names). For each source, the GEMM curves (``constants``: ``gemm.<generation>.*``)
and the global constants (``plan_calibration.GLOBALS``: ``compute.layer_microbatch``) are
refitted without it, with benchmarks/plan_calibration.py's own procedure (``fit_all``: the
global constants on every scored row and group of alternatives of the other sources, the
curves by coordinate descent on the RMS log error of the rows marked fit, per generation,
from the registry's values), and every row of the left-out source is predicted with the
constants that never saw it. A generation whose every fit row comes from the left-out source cannot be refitted
without it; its rows are then predicted with the previous generation's curve refitted
without the source (Blackwell with Hopper's, as Ada takes Hopper's figures), and the table
says so. The in-sample figure beside it is the same fit on every fit row, each row predicted
by curves fitted with its own source in.

    .venv/bin/python benchmarks/plan_validation.py [--rows] [--orderings] [--terms]

Prints (``--rows``) every scored row's held-out and in-sample errors, then the medians and
90th percentiles of |error| overall and per GPU generation, dense / MoE, BF16 / FP8 and
source; and
(``--orderings``) the orderings check: for every group of measured alternatives of one
training work (tests/training_orderings.py), the curves are refitted without the group's
source and every alternative predicted, per sequence of its batch; each pair whose measured
gap is over 10 % is ordered right when the faster-measured alternative is predicted faster,
and a group's winner is right when the alternative measured fastest is predicted fastest. An
alternative topoc refuses counts as ordered wrong in each pair it is in (and its group's
winner wrong when it is the measured winner); a pair predicted a tie is ordered wrong, and a
group whose first place is a predicted tie names no winner. Every pair is listed, then the fractions per
source and overall, by the predicted step and as ``plan`` ranks the alternatives
(``PlanRow.rank_key`` after ``plan.answered``: the one rule, not a copy); then every
alternative the source measured out of memory, ranked the same way, and how many of them
``plan`` would rank above their group's measured winner. With neither flag, both. ``--terms`` prints instead every pair ordered
wrong with both alternatives' terms (ms per sequence: GEMMs, attention, element-wise, gradient
accumulation, launches, the cost per layer and micro-batch, bubble, each group's exposed
traffic), their memory and micro-batches, and a count of the wrong pairs by mechanism (what
the mappings differ in, and the model's term that most favours the one measured slower).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from memory_validation import quantile  # noqa: E402
from plan_calibration import GLOBALS, fit_all, globals_now, set_globals  # noqa: E402
from plan_calibration import source_of  # noqa: E402,F401  (benchmarks/peers imports it here)
from tests.training_orderings import groups  # noqa: E402
from tests.training_rows import (NOT_A_STEP, OPTIONS, _model_cached, breakdown, predict,  # noqa: E402
                                 rows)
from topoc.compiler.training import gemm  # noqa: E402
from topoc.compiler.training.constants import value  # noqa: E402

GENERATIONS = ("ampere", "hopper", "blackwell")
#: A generation with no fit row left takes this one's curve (refitted without the source).
FALLBACK = {"blackwell": "hopper", "hopper": "ampere", "ampere": "hopper"}


class Fitted(dict):
    """The curves by generation (a dict), with the global constants (``plan_calibration.
    GLOBALS``: registry name -> value) they were fitted with."""

    values: dict[str, float] = {}


def curves_without(source: str | None, start: dict[str, gemm.Curve],
                   cache: dict) -> tuple[Fitted, dict[str, str]]:
    """The curves refitted on the fit rows of every source but ``source`` (None: all), with
    the global constants refitted on every row and group of alternatives of those sources
    (``plan_calibration.fit_all``, from the registry's values and ``start``), and, per
    generation that has no fit row left, the generation whose curve it borrows."""
    if source not in cache:
        saved, saved_values = dict(gemm.CURVES), globals_now()
        gemm.CURVES.update(start)
        set_globals({k: value(k) for k in GLOBALS})
        try:
            fit_rows = [r for r in rows() if r.fit and source_of(r) != source]
            values, fitted = fit_all(fit_rows, leave_out=source, generations=GENERATIONS)
        finally:
            gemm.CURVES.clear()
            gemm.CURVES.update(saved)
            set_globals(saved_values)
        cache[source] = (values, fitted)
    values, fitted = cache[source]
    out, borrowed = Fitted(fitted), {}
    out.values = values
    for gen in GENERATIONS:
        if gen not in out:
            borrowed[gen] = FALLBACK[gen]
            out[gen] = out[FALLBACK[gen]]
    return out, borrowed


def predicted_with(row, curves: Fitted):
    """The row's Prediction with ``curves`` and their global constants in place (Ada keeps
    Hopper's curve, as gemm.CURVES does)."""
    saved, saved_values = dict(gemm.CURVES), globals_now()
    gemm.CURVES.update(curves)
    gemm.CURVES["ada"] = curves["hopper"]
    set_globals(getattr(curves, "values", {}))
    try:
        return predict(row)
    finally:
        gemm.CURVES.clear()
        gemm.CURVES.update(saved)
        set_globals(saved_values)


def breakdown_with(row, curves: Fitted) -> tuple:
    """``training_rows.breakdown`` of the row with ``curves`` and their global constants in
    place: (Prediction, PlanRow or None, compute split, micro-batches a step)."""
    saved, saved_values = dict(gemm.CURVES), globals_now()
    gemm.CURVES.update(curves)
    gemm.CURVES["ada"] = curves["hopper"]
    set_globals(getattr(curves, "values", {}))
    try:
        return breakdown(row)
    finally:
        gemm.CURVES.clear()
        gemm.CURVES.update(saved)
        set_globals(saved_values)


def predicted_error(row, curves: Fitted) -> float | None:
    """The row's error with ``curves`` in place."""
    return predicted_with(row, curves).error


#: A pair counts when its measured gap (slower over faster, minus one) is over this.
PAIR_GAP = 0.10


def _judged(times: list, at: int) -> tuple[list, str | None, bool]:
    """(pairs over ``PAIR_GAP`` as (faster, slower, gap, its key, the other's key, right),
    the predicted winner, whether it is the measured one), ordering ``times`` (label,
    measured, step, rank key) by their entry ``at``: 2 the predicted step, 3 plan's rank key
    (``PlanRow.rank_key``; None: refused)."""
    pairs = []
    for i in range(len(times)):
        for j in range(i + 1, len(times)):
            a, b = times[i], times[j]
            gap = max(a[1], b[1]) / min(a[1], b[1]) - 1
            if gap <= PAIR_GAP:
                continue
            fast, slow = (a, b) if a[1] < b[1] else (b, a)
            right = fast[at] is not None and slow[at] is not None and fast[at] < slow[at]
            pairs.append((fast[0], slow[0], gap, fast[2], slow[2], right))
    best = min(times, key=lambda t: t[1])
    known = [t for t in times if t[at] is not None]
    if not known:
        return pairs, None, False
    top = min(known, key=lambda t: t[at])
    # a tie for first (two runs topoc cannot tell apart: torchao's two MX rows) names no winner
    if sum(1 for t in known if t[at] == top[at] or at == 2 and t[2] <= top[2] * (1 + 1e-9)) > 1:
        return pairs, None, False
    return pairs, top[0], top[0] == best[0]


def plan_rank(row, held: Fitted):
    """The alternative's key as ``topoc plan`` ranks it (``PlanRow.rank_key`` of the row
    ``plan.answered`` gives at the row's HBM and the default memory margin, its step scaled to
    seconds per sequence of its batch so that alternatives of another batch compare), with its
    memory over HBM; (None, ratio) when ``plan`` would refuse it (over HBM by more than the
    uncertainty) or the model cannot run it."""
    import attrs
    from topoc.compiler.analysis.plan import answered
    from topoc.compiler.training.memory import MEMORY_MARGIN
    pred, step, _parts, _mbs = breakdown_with(row, held)
    if step is None:
        return None, None
    step = attrs.evolve(step, step_time=step.step_time / row.batch)
    shown = answered(step, pred.hbm, MEMORY_MARGIN)
    return (None if shown is None else shown.rank_key), pred.memory / pred.hbm


def ordering_results(start: dict, cache: dict) -> list[dict]:
    """Per group: its source, every alternative's measured and held-out predicted seconds per
    sequence (None: refused), and, ordered by the predicted step and as ``plan`` ranks them
    (``plan_rank``: ``PlanRow.rank_key`` after ``plan.answered``), its pairs over
    ``PAIR_GAP`` and its winner; and each alternative the source measured out of memory
    (``oom``) as (label, predicted memory over HBM, whether ``plan`` refuses it, whether it
    ranks it above the measured winner)."""
    out = []
    for g in groups():
        ran = [a for a in g.alternatives if not a.oom]
        src = source_of(ran[0].row)
        held, _ = curves_without(src, start, cache)
        times = []
        for a in ran:
            p = predicted_with(a.row, held)
            pred = p.predicted / a.row.batch if p.predicted else None
            rank, _ = plan_rank(a.row, held)
            times.append((a.label, p.measured / a.row.batch, pred, rank))
        best = min(times, key=lambda t: t[1])
        pairs, top, won = _judged(times, 2)
        ranked, top_r, won_r = _judged(times, 3)
        oom = []
        for a in g.alternatives:
            if a.oom:
                rank, ratio = plan_rank(a.row, held)
                oom.append((a.label, ratio, rank is None,
                            rank is not None and (best[3] is None or rank < best[3])))
        out.append(dict(group=g, source=src, times=times, pairs=pairs, winner=best[0],
                        predicted_winner=top, winner_right=won,
                        rank_right=[p[5] for p in ranked], ranked_winner=top_r,
                        ranked_winner_right=won_r, oom=oom))
    return out


def _short(src: str) -> str:
    return src[:40]


def orderings(start: dict, cache: dict) -> tuple[float, float]:
    """Print the orderings check (every pair, then per source and overall); return the
    overall fractions by the predicted step (pairs ordered right, groups whose winner is
    predicted first)."""
    res = ordering_results(start, cache)
    fmt = (lambda x: "refused" if x is None else f"{x:.4f}")
    print("| group | source | faster measured | slower measured | measured gap | "
          "predicted (s/seq) faster, slower | by step | as plan ranks |")
    print("|---|---|---|---|---|---|---|---|")
    for r in res:
        for (fast, slow, gap, pf, ps, right), rr in zip(r["pairs"], r["rank_right"]):
            print(f"| {r['group'].id} | {_short(r['source'])} | {fast} | {slow} | {gap:.1%} | "
                  f"{fmt(pf)}, {fmt(ps)} | {'right' if right else 'WRONG'} | "
                  f"{'right' if rr else 'WRONG'} |")
    print()
    print("| group | source | alternatives | measured winner | predicted winner | winner | "
          "plan's first | winner as plan ranks |")
    print("|---|---|---|---|---|---|---|---|")
    for r in res:
        print(f"| {r['group'].id} | {_short(r['source'])} | {len(r['times'])} | "
              f"{r['winner']} | {r['predicted_winner'] or 'none (a tie)'} | "
              f"{'right' if r['winner_right'] else 'WRONG'} | "
              f"{r['ranked_winner'] or 'none (a tie)'} | "
              f"{'right' if r['ranked_winner_right'] else 'WRONG'} |")
    print()
    print("| source | groups | pairs over 10 % | ordered right by step | winner first by step | "
          "ordered right as plan ranks | winner first as plan ranks |")
    print("|---|---|---|---|---|---|---|")

    def line(label, sel):
        picked = [r for r in res if sel(r)]
        pairs = [p for r in picked for p in r["pairs"]]
        right = sum(p[5] for p in pairs)
        ranked = sum(x for r in picked for x in r["rank_right"])
        won = sum(r["winner_right"] for r in picked)
        won_r = sum(r["ranked_winner_right"] for r in picked)
        n = len(picked)

        def share(k):
            return f"{k} ({k / len(pairs):.0%})" if pairs else "no pair"
        print(f"| {label} | {n} | {len(pairs)} | {share(right)} | {won} ({won / n:.0%}) | "
              f"{share(ranked)} | {won_r} ({won_r / n:.0%}) |")
        return (right / len(pairs) if pairs else None), won / n
    for src in sorted({r["source"] for r in res}):
        line(_short(src), lambda r, s=src: r["source"] == s)
    overall = line("all", lambda r: True)
    print()
    print(f"{len(res)} groups from {len({r['source'] for r in res})} sources; each predicted "
          "with the curves refitted without its source (targets: 85 % of pairs, 80 % of "
          "winners); 'as plan ranks': PlanRow.rank_key (the rows that fit by step time, "
          "tight or not, then the tight ones over HBM; over HBM by more than the memory "
          "model's uncertainty refused), as topoc plan orders them")
    print()
    print("| group | measured out of memory | predicted memory / HBM | as plan ranks |")
    print("|---|---|---|---|")
    ooms = [(r, o) for r in res for o in r["oom"]]
    for r, (label, ratio, refused, above) in ooms:
        where = "not costed" if ratio is None else f"{ratio:.0%}"
        verdict = "refused" if refused else "ABOVE the measured winner" if above else \
            "below the measured winner"
        print(f"| {r['group'].id} | {label} | {where} | {verdict} |")
    above = sum(o[3] for _, o in ooms)
    print(f"measured out-of-memory alternatives ranked above the measured winner: {above} of "
          f"{len(ooms)}")
    return overall


def _mapping(row) -> dict:
    """What a row's strategy is, key by key (what a pair's alternatives differ in)."""
    sh = row.shape
    return {"tp": sh.tp, "pp": sh.pp, "dp": sh.dp, "cp": sh.cp, "ep": sh.ep,
            "mb": row.microbatch, "vp": row.interleave, "recompute": row.recompute,
            "fsdp": row.fsdp, "fp8": row.fp8, "gbs": row.batch,
            "recipe": OPTIONS.get(row.id, {}).get("fp8_recipe", "tensorwise") if row.fp8
            else None}


def _terms_per_seq(row, curves: Fitted) -> tuple[dict[str, float], dict]:
    """(the row's step terms in seconds per sequence of its batch, facts: memory GB and
    micro-batches a step), with ``curves`` in place."""
    pred, step, parts, mbs = breakdown_with(row, curves)
    if step is None:
        return {}, {"refused": True}
    per = 1.0 / row.batch
    out = {"bubble": step.bubble_time * per}
    out.update({k.replace("compute: ", ""): v * per for k, v in parts.items()})
    out.update({f"exposed {d}": t * per for d, t in step.comm_by_dim})
    return out, {"memory": pred.memory / 1e9, "hbm": pred.hbm / 1e9, "microbatches": mbs,
                 "step": step.step_time * per}


def mechanism(fast_terms: dict, slow_terms: dict, fast_map: dict, slow_map: dict) -> str:
    """A wrongly ordered pair's class: what the two mappings differ in, and the model's term
    that most favours the alternative measured slower (largest fast - slow, per sequence)."""
    if not fast_terms or not slow_terms:
        return "refused"
    diff = [k for k in fast_map if fast_map[k] != slow_map[k] and k not in ("dp", "gbs")]
    if diff == ["recipe"] or (not diff and fast_map["fp8"]):
        return "fp8 recipe" if diff else "fp8 recipe (the same to topoc)"
    if diff == ["fp8", "recipe"]:
        return "precision"
    names = sorted(set(fast_terms) | set(slow_terms))
    term = max(names, key=lambda n: fast_terms.get(n, 0.0) - slow_terms.get(n, 0.0))
    return f"{'+'.join(diff) or 'same mapping'} / {term}"


def wrong_pairs(start: dict, cache: dict) -> None:
    """Print every pair ordered wrong by the predicted step with both alternatives' terms
    (ms per sequence), memory and micro-batches against the measured gap, then a count of the
    pairs per mechanism (``mechanism``)."""
    res = ordering_results(start, cache)
    classes: dict[str, int] = {}
    for r in res:
        by_label = {a.label: a.row for a in r["group"].alternatives if not a.oom}
        held, _ = curves_without(r["source"], start, cache)
        for fast, slow, gap, pf, ps, right in r["pairs"]:
            if right:
                continue
            ft, ff = _terms_per_seq(by_label[fast], held)
            st, sf = _terms_per_seq(by_label[slow], held)
            kind = mechanism(ft, st, _mapping(by_label[fast]), _mapping(by_label[slow]))
            classes[kind] = classes.get(kind, 0) + 1
            print(f"### {r['group'].id}: {fast} measured {gap:.1%} faster than {slow}; "
                  f"predicted {'refused' if pf is None else f'{pf * 1e3:.1f}'} against "
                  f"{'refused' if ps is None else f'{ps * 1e3:.1f}'} ms/seq; class: {kind}")
            if not ft or not st:
                print()
                continue
            print(f"memory {ff['memory']:.1f} / {sf['memory']:.1f} GB of {ff['hbm']:.0f}; "
                  f"micro-batches a step {ff['microbatches']} / {sf['microbatches']}")
            print("| term (ms per sequence) | measured faster | measured slower | difference |")
            print("|---|---|---|---|")
            names = sorted(set(ft) | set(st),
                           key=lambda n: (-abs(ft.get(n, 0) - st.get(n, 0)), n))
            for n in names:
                a, b = ft.get(n, 0.0), st.get(n, 0.0)
                if a or b:
                    print(f"| {n} | {a * 1e3:.2f} | {b * 1e3:.2f} | {(a - b) * 1e3:+.2f} |")
            print()
    print("| mechanism (what differs / the model's deciding term) | wrong pairs |")
    print("|---|---|")
    for k, n in sorted(classes.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"| {k} | {n} |")


def held_out(start: dict | None = None,
             cache: dict | None = None) -> tuple[list[tuple], dict[str, gemm.Curve]]:
    """Every scored row's (row, source, "dense" or "MoE", held-out error, in-sample error,
    which curve predicted it held out), by source, and the in-sample curves
    (benchmarks/peers/side_by_side.py sets the peers beside these rows)."""
    start = start or {gen: gemm.CURVES[gen] for gen in GENERATIONS}
    cache = {} if cache is None else cache
    inside, _ = curves_without(None, start, cache)
    scored = [r for r in rows() if r.id not in NOT_A_STEP]
    by_source: dict[str, list] = {}
    for r in scored:
        by_source.setdefault(source_of(r), []).append(r)
    results = []
    for src in sorted(by_source):
        held, borrowed = curves_without(src, start, cache)
        for r in by_source[src]:
            out, inn = predicted_error(r, held), predicted_error(r, inside)
            if out is None or inn is None:
                continue
            kind = "MoE" if _model_cached(r.id).experts else "dense"
            curve = f"{borrowed[r.generation]}'s (no {r.generation} fit row left)" \
                if r.generation in borrowed else "refitted without the source"
            results.append((r, src, kind, out, inn, curve))
    return results, inside


def main() -> None:
    """The orderings check and/or the per-row table and its summaries (both by default;
    ``--orderings`` or ``--rows`` for one)."""
    args = sys.argv[1:]
    start = {gen: gemm.CURVES[gen] for gen in GENERATIONS}
    cache: dict = {}
    if "--terms" in args:
        wrong_pairs(start, cache)
        return
    if "--orderings" in args or "--rows" not in args:
        orderings(start, cache)
        print()
    if "--rows" not in args and "--orderings" in args:
        return
    results, inside = held_out(start, cache)
    print("| run | source | generation | kind | precision | role | held-out error | "
          "in-sample error | curve |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r, src, kind, out, inn, curve in results:
        print(f"| {r.id} | {src[:48]} | {r.generation} | {kind} | "
              f"{'fp8' if r.fp8 else 'bf16'} | {'fit' if r.fit else 'validation'} | "
              f"{out:+.1%} | {inn:+.1%} | {curve} |")
    print()
    print("| rows | n | held-out median | held-out 90th pct | in-sample median | "
          "in-sample 90th pct |")
    print("|---|---|---|---|---|---|")

    def line(label: str, sel) -> None:
        picked = [x for x in results if sel(x)]
        if not picked:
            return
        out = [abs(x[3]) for x in picked]
        inn = [abs(x[4]) for x in picked]
        print(f"| {label} | {len(picked)} | {statistics.median(out):.1%} | "
              f"{quantile(out, 0.9):.1%} | {statistics.median(inn):.1%} | "
              f"{quantile(inn, 0.9):.1%} |")
    line("all", lambda x: True)
    for gen in GENERATIONS:
        line(gen, lambda x, g=gen: x[0].generation == g)
    for kind in ("dense", "MoE"):
        line(kind, lambda x, k=kind: x[2] == k)
    for prec in ("bf16", "fp8"):
        line(prec, lambda x, p=prec: ("fp8" if x[0].fp8 else "bf16") == p)
    for src in sorted({x[1] for x in results}):
        line(f"source: {src[:48]}", lambda x, s=src: x[1] == s)
    print()
    print(f"{len({x[1] for x in results})} sources; the in-sample fit from the registry's "
          "values: " + "; ".join(f"{g} {inside[g]}" for g in GENERATIONS) + "; " +
          "; ".join(f"{k} {v:g}" for k, v in inside.values.items()))
    for src in sorted({x[1] for x in results}):
        held, _ = curves_without(src, start, cache)
        print(f"without {src[:48]}: " + "; ".join(f"{k} {v:g}" for k, v in held.values.items()))


if __name__ == "__main__":
    main()
