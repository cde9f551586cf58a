"""How a model maps onto parallel GPUs: the sizes (``Shape``), the pipeline's stage layout and
schedule, and the checks a mapping must pass before anything is costed.

The pipeline follows Megatron-LM: stages may be uneven (``--decoder-first/last-pipeline-num-
layers``), or count the embedding and the loss as one layer slot each
(``--account-for-embedding/loss-in-pipeline-split``, which is how Llama 3 405B's 126 layers run
on 16 stages); the 1F1B schedule idles (P - 1) / (V M + P - 1) of a step with V model chunks per
stage (Narayanan et al. 2021, sec. 2.2), and this module is the one place that formula lives.
"""

from __future__ import annotations

import attrs

from ..ir.system import Transformer


class MappingError(ValueError):
    """A mapping the model cannot run with: layers, batch, heads or experts do not divide, or
    too few micro-batches for an interleaved pipeline. ``dims`` names the parallel sizes the
    reason depends on (a parallel block whose ``auto`` size a ``-D`` override changed is left
    out, not wrong, when the reason depends on that size)."""

    def __init__(self, message: str, dims=()):
        super().__init__(message)
        self.dims = frozenset(dims)


@attrs.frozen(order=True)
class Shape:
    """The sizes of one mapping: tp, cp, ep, dp, pp and the expert tensor-parallel size.

    Dense weights are replicated over dp x cp (Megatron reduces their gradients, and shards
    the distributed optimizer, over that group); expert weights over the expert-data-parallel
    group of tp x cp x dp / (etp x ep) ranks."""

    tp: int = 1
    cp: int = 1
    ep: int = 1
    dp: int = 1
    pp: int = 1
    etp: int = 1

    @property
    def world(self) -> int:
        """GPUs used: tp x cp x dp x pp (expert groups reuse these ranks)."""
        return self.tp * self.cp * self.dp * self.pp

    @property
    def edp(self) -> int:
        """Megatron's expert data-parallel size."""
        return self.tp * self.cp * self.dp // (self.etp * self.ep)

    @property
    def dpcp(self) -> int:
        """The dense weights' replicas: the data-parallel x context-parallel group."""
        return self.dp * self.cp

    @property
    def sizes(self) -> tuple[tuple[str, int], ...]:
        """(dimension, size) pairs in ``ParallelStrategy.sizes`` form."""
        return (("tp", self.tp), ("cp", self.cp), ("ep", self.ep), ("dp", self.dp),
                ("pp", self.pp))


def shape_of(strategy) -> Shape:
    """The Shape of a ``ParallelStrategy``."""
    return Shape(**{d: strategy.size(d) for d in ("tp", "cp", "ep", "dp", "pp")},
                 etp=strategy.expert_tp)


# ---- the pipeline -----------------------------------------------------------------------------

@attrs.frozen
class Layout:
    """Transformer layers on the first, a middle and the last pipeline stage (the middle is
    the heaviest middle stage), and whether the layout counts embedding and loss as slots."""

    first: int
    middle: int
    last: int
    slots: bool = False

    @property
    def heaviest(self) -> int:
        """Layers on the most loaded stage."""
        return max(self.first, self.middle, self.last)

    def chunked(self, interleave: int) -> Layout:
        """The layout an interleaved schedule runs: a stage of n layers in ``interleave``
        chunks runs ceil(n / interleave) layers per chunk when they do not divide (Megatron's
        custom pipeline layouts put the remainder on some chunks; the heaviest sets the
        pace)."""
        if interleave == 1:
            return self

        def up(n: int, slot: int = 0) -> int:
            return -(-(n + slot) // interleave) * interleave - slot
        end = 1 if self.slots else 0
        return Layout(up(self.first, end), up(self.middle), up(self.last, end), self.slots)


def layout(m: Transformer, sh: Shape, first: int = 0, last: int = 0,
           slots: bool | None = None) -> Layout:
    """The stage layout of ``m`` over ``sh.pp`` stages. ``first``/``last`` fix the layers of the
    end stages (the rest split evenly); ``slots`` counts the embedding and the loss as one layer
    each; by default (None) a layer count pp does not divide uses slots when L + 2 divides, and
    otherwise runs ceil(L / pp) layers on every stage (the heaviest sets the pace)."""
    L, P = m.layers, sh.pp
    if P == 1:
        return Layout(L, L, L)
    if first or last:
        rest = L - (first or 0) - (last or 0)
        inner = P - (1 if first else 0) - (1 if last else 0)
        if rest < 0 or (inner == 0 and rest) or (inner and rest % inner):
            raise MappingError(f"{L} layers do not split into first {first or '-'} and last "
                               f"{last or '-'} stage layers and {inner} even stages", ("pp",))
        per = rest // inner if inner else 0
        return Layout(first or per, per if P > 2 else (first or last), last or per)
    if slots is None:
        slots = L % P != 0 and (L + 2) % P == 0
    if slots:
        if (L + 2) % P:
            raise MappingError(f"{L} layers + embedding + loss do not split into pp = {P}",
                               ("pp",))
        per = (L + 2) // P
        return Layout(per - 1, per, per - 1, True)
    per = -(-L // P)
    return Layout(per, per, per)


def bubble(stages: int, microbatches: int, interleave: int = 1) -> float:
    """The pipeline bubble's share of a step: (P - 1) / (V M + P - 1)."""
    return (stages - 1) / (interleave * microbatches + stages - 1)


def idle_time(compute: float, stages: int, microbatches: int, interleave: int = 1) -> float:
    """Seconds the pipeline idles per step: compute x (P - 1) / (V M), the bubble of a step
    whose busy part is ``compute``."""
    return compute * (stages - 1) / (interleave * microbatches)


def in_flight(stages: int, microbatches: int, interleave: int = 1) -> float:
    """Micro-batches whose activations the first stage holds at once, in units of a whole
    stage's layers: min(P, M) with 1F1B; with V chunks Megatron's warm-up keeps
    (V - 1) P + 2 (P - 1) + 1 chunks of L / V layers, P (1 + (P - 1) / (P V)) in stage units
    (Korthikanti et al. 2022, sec. 4.2.3)."""
    if interleave == 1:
        return min(stages, microbatches)
    return min(stages * (1 + (stages - 1) / (stages * interleave)), microbatches)


def check(t, sh: Shape) -> int:
    """The micro-batches per step of each pipeline; MappingError when ``t`` (a ``Training``)
    cannot run on ``sh``."""
    m = t.model
    if t.batch % (t.microbatch * sh.dp):
        raise MappingError(f"batch {t.batch} does not divide into micro-batches of "
                           f"{t.microbatch} over dp = {sh.dp}", ("dp",))
    micro = t.batch // (t.microbatch * sh.dp)
    if sh.pp > m.layers:
        raise MappingError(f"{m.layers} layers do not split into pp = {sh.pp} stages", ("pp",))
    lay = layout(m, sh, t.first_stage_layers, t.last_stage_layers, t.pipeline_slots)
    if t.interleave > 1:
        if sh.pp < 2:
            raise MappingError("an interleaved schedule needs pp >= 2", ("pp",))
        if micro < sh.pp:
            # Megatron-Core: "The number of contiguous micro-batches in a virtual pipeline
            # stage should range in [PP, M]" (microbatch_group_size_per_vp_stage, default pp)
            raise MappingError(f"an interleaved schedule needs at least pp = {sh.pp} "
                               f"micro-batches, not {micro}", ("pp", "dp"))
        if t.interleave > lay.heaviest:
            raise MappingError(f"{m.layers} layers do not split into pp = {sh.pp} stages of "
                               f"{t.interleave} chunks", ("pp",))
    if m.heads % sh.tp or m.kv_heads % sh.tp and sh.tp % m.kv_heads:
        raise MappingError(f"{m.heads} heads ({m.kv_heads} key/value heads) do not split over "
                           f"tp = {sh.tp}", ("tp",))
    if sh.cp > 1 and m.seq % (2 * sh.cp):
        raise MappingError(f"sequence {m.seq} does not split into 2 x cp = {2 * sh.cp} chunks",
                           ("cp",))
    if sh.ep > 1 and (not m.experts or m.experts % sh.ep):
        raise MappingError(f"ep = {sh.ep} needs a mixture of experts whose expert count it "
                           "divides" if m.experts else
                           f"ep = {sh.ep} on '{m.name}', which has no experts")
    if (sh.tp * sh.cp * sh.dp) % (sh.etp * sh.ep):
        raise MappingError(f"ep = {sh.ep} x etp = {sh.etp} does not divide tp x cp x dp",
                           ("tp", "cp", "dp"))
    return micro
