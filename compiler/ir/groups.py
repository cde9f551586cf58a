"""Rank groups: the communicators of a parallel strategy (tp:0, dp:3, world) and ad-hoc groups of
world ranks (``0..7,16``), as the collective model, the lint rules and the CLI name them."""

from __future__ import annotations

import math

import attrs

from ..base.diagnostics import suggest
from .system import GROUP_KINDS, ParallelStrategy, System


def rank_groups(strategy: ParallelStrategy, dim: str) -> list[list[int]]:
    """The world-rank groups of one dimension, as Megatron's RankGenerator builds them: ranks
    decompose in mixed radix over ``strategy.order`` (leftmost fastest), and a group holds the
    ranks that differ only in ``dim``. Groups are listed by their first rank.

    Dense groups (tp, cp, dp, pp) use the sizes with ep = 1; expert groups (ep, and edp, the
    expert data parallel group) use Megatron's expert generator over the same order: tp = etp,
    cp = 1, ep, dp = edp = tp x cp x dp / (etp x ep), pp.

    Order tp-pp-dp with sizes 2-2-2 gives dp groups [[0, 4], [1, 5], [2, 6], [3, 7]].
    ``dpcp`` groups hold the ranks that differ only in dp and cp (Megatron's data-parallel
    group with context parallelism), ranks ascending.
    """
    if dim == "dpcp":
        return _joint_groups(strategy, ("dp", "cp"))
    stride, n, world = _radix(strategy, dim)
    block = stride * n
    return [[base + offset + k * stride for k in range(n)]
            for base in range(0, world, block) for offset in range(stride)]


def _radix(strategy: ParallelStrategy, dim: str) -> tuple[int, int, int]:
    """(stride, size, world) of ``dim`` in the mixed radix over ``strategy.order``: the dense
    sizes with ep = 1, or for an expert dimension (ep, edp) Megatron's expert generator's
    (tp = etp, cp = 1, dp = edp)."""
    if dim in ("ep", "edp"):
        sizes = {"tp": strategy.expert_tp, "cp": 1, "ep": strategy.size("ep"),
                 "dp": strategy.size("edp"), "pp": strategy.size("pp")}
        dim = "ep" if dim == "ep" else "dp"
    else:
        sizes = {**dict(strategy.sizes), "ep": 1}
    stride = 1
    for d in strategy.order:
        if d == dim:
            break
        stride *= sizes[d]
    return stride, sizes[dim], math.prod(sizes.values())


def _joint_groups(strategy: ParallelStrategy, dims: tuple[str, ...]) -> list[list[int]]:
    """Groups of the ranks that share every coordinate outside ``dims``."""
    sizes = {**dict(strategy.sizes), "ep": 1}
    order = [d for d in strategy.order if sizes.get(d, 1) > 1]
    groups: dict[tuple, list[int]] = {}
    world = math.prod(sizes.values())
    for r in range(world):
        rest, key = r, []
        for d in order:
            rest, coord = divmod(rest, sizes[d])
            if d not in dims:
                key.append(coord)
        groups.setdefault(tuple(key), []).append(r)
    return list(groups.values())


def group_translates(strategy: ParallelStrategy, dim: str):
    """``rank_groups(strategy, dim)`` as translates of one group: (first ranks, offsets) with
    group i = first[i] + offsets, first ranks a numpy array in the groups' order. Every
    family is one (a group varies the coordinates of its dimensions over the same ranges
    from a base whose own coordinates there are zero), so a search that needs one group of
    each layout reads the first ranks instead of building every group of the world."""
    import numpy as np

    if dim == "dpcp":
        sizes = {**dict(strategy.sizes), "ep": 1}
        world = math.prod(sizes.values())
        radix, inside, step = {}, [0], 1
        for d in strategy.order:
            if sizes.get(d, 1) > 1:
                radix[d] = step
                if d in ("dp", "cp"):
                    inside = [o + c * step for c in range(sizes[d]) for o in inside]
                step *= sizes[d]
        ranks = np.arange(world, dtype=np.int64)
        keep = np.ones(world, dtype=np.bool_)
        for d in ("dp", "cp"):
            if d in radix:
                keep &= (ranks // radix[d]) % sizes[d] == 0
        return ranks[keep], tuple(sorted(inside))
    stride, n, world = _radix(strategy, dim)
    first = (np.arange(0, world, stride * n, dtype=np.int64)[:, None]
             + np.arange(stride, dtype=np.int64)[None, :]).reshape(-1)
    return first, tuple(k * stride for k in range(n))


@attrs.frozen
class RankGroup:
    """A communicator: world ranks in group order, named ``dp:3``, ``world`` or ``ranks``."""

    name: str
    ranks: tuple[int, ...]


def lone_rank(group: RankGroup) -> str | None:
    """What to say of a group of one rank, which has no ring and whose collectives move no
    data (``--ring dp:0`` or ``schedule --group dp:0`` where dp = 1); None for a larger group."""
    if len(group.ranks) != 1:
        return None
    who = "the group" if group.name == "ranks" else f"group {group.name}"
    return (f"{who} is one rank (world rank {group.ranks[0]}): it has no ring, and a "
            "collective on it moves no data")


class GroupError(ValueError):
    """A group request that names no group of the system (a usage problem, not a file one)."""


def parse_rank_list(text: str, world: int) -> tuple[int, ...]:
    """``0..7,16`` -> (0, 1, ..., 7, 16): inclusive ranges and single ranks, in the order given."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("..")
        try:
            a, b = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise GroupError(f"'{part}' is not a rank or a range like 0..7") from None
        if a > b:
            raise GroupError(f"range {part} runs backwards")
        if a < 0 or b >= world:
            raise GroupError(f"rank {b if b >= world else a} is outside the world of {world} "
                             f"GPUs (ranks 0..{world - 1})")
        if b - a + len(out) >= world * 2:
            raise GroupError("the rank list is longer than the world")
        out.extend(range(a, b + 1))
    if len(set(out)) != len(out):
        raise GroupError("a rank appears twice in the list")
    return tuple(out)


def select_group(system: System, spec: str | None = None, parallel: str | None = None,
                 ranks_text: str | None = None) -> RankGroup:
    """The group a request names: ``--ranks LIST``, ``world``, or ``KIND[:INDEX]`` of a
    parallel strategy (index 0 when omitted)."""
    world = len(system.gpus)
    if ranks_text is not None:
        return RankGroup("ranks", parse_rank_list(ranks_text, world))
    kind, _, index = (spec or "world").partition(":")
    if kind == "world":
        if index not in ("", "0"):
            raise GroupError(f"world has one group, world:0, not world:{index}")
        return RankGroup("world", tuple(range(world)))
    if kind not in GROUP_KINDS:
        raise GroupError(f"unknown group kind '{kind}'" + suggest(kind, [*GROUP_KINDS, "world"]))
    names = [p.name for p in system.parallels]
    if parallel is None:
        if len(names) != 1:
            have = ", ".join(names) or "the file has no parallel block"
            raise GroupError(f"name the strategy with --parallel ({have})")
        parallel = names[0]
    if parallel not in names:
        raise GroupError(f"no parallel block '{parallel}'" + suggest(parallel, names))
    groups = rank_groups(system.parallel(parallel), kind)
    try:
        i = int(index or 0)
    except ValueError:
        raise GroupError(f"'{index}' is not a group index") from None
    if not 0 <= i < len(groups):
        raise GroupError(f"{kind} has groups 0..{len(groups) - 1}, not {i}")
    return RankGroup(f"{kind}:{i}", tuple(groups[i]))


def groups(system: System, kind: str, parallel: str | None = None) -> list[RankGroup]:
    """The rank groups of one dimension (tp, cp, ep, dp, pp) of a strategy, as RankGroups
    named ``kind:index``; ``parallel`` may be omitted when the file has one strategy.
    ``world`` is the one group of every GPU and needs no strategy."""
    first = select_group(system, f"{kind}:0", parallel)
    if kind == "world":
        return [first]
    strategy = system.parallel(parallel or system.parallels[0].name)
    return [attrs.evolve(first, name=f"{kind}:{i}", ranks=tuple(g))
            for i, g in enumerate(rank_groups(strategy, kind))]
