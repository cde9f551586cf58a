"""The reliability rates checked against fleets they were not taken from
(docs/reliability.md, Validation; ``benchmarks/reliability_validation.py`` prints the table).

Each check takes one study's rates, applies them to another study's fleet (its GPUs, NICs and
hosts over its period) and compares the failures predicted with the failures that study
counted, restricted to the causes both count. Forward checks predict the Llama 3 405B run
(419 unexpected interruptions in 54 days on 16,384 H100s) from other fleets; reverse checks
predict the other fleets from Llama 3's rates.
"""

from __future__ import annotations

import math

import attrs

from .reliability import KINDS, rate_set

#: The hardware kinds of Llama 3's Table 5 (what a node-level rate counts): GPU, NIC,
#: network and host causes; not maintenance, software or unknown.
HARDWARE = tuple(k for k, kind in KINDS.items() if kind.hardware and k != "node")
ALL = tuple(k for k in KINDS if k != "node")


@attrs.frozen
class Check:
    """Predict ``target``'s failures of ``kinds`` with ``predictor``'s rates."""

    predictor: str
    target: str
    kinds: tuple[str, ...]
    label: str
    note: str = ""

    @property
    def predicted(self) -> float:
        """Failures the predictor's rates give on the target's fleet over its period (a
        node-level rate stands for every hardware kind)."""
        rates, fleet = rate_set(self.predictor), rate_set(self.target).first
        kinds = rates.kinds if "node" in rates.kinds else [k for k in rates.kinds
                                                           if k in self.kinds]
        return sum(rates.rate(k) * fleet.fleet.units(KINDS[k].unit) for k in kinds) * \
            fleet.days

    @property
    def observed(self) -> float:
        target = rate_set(self.target)
        return target.count(None if "node" in target.kinds else self.kinds)

    @property
    def error(self) -> float:
        """predicted / observed - 1."""
        return self.predicted / self.observed - 1

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95 % Poisson interval of the observed count (``poisson_interval``): how far a
        perfect prediction may fall from it by chance; None where the study publishes a rate,
        not the count behind it."""
        if any(c.published == "rate" for c in rate_set(self.target).causes):
            return None
        return poisson_interval(self.observed)


def poisson_interval(n: float, z: float = 1.959964) -> tuple[float, float]:
    """The 95 % interval of a Poisson mean given ``n`` events: Garwood's chi-square bounds
    with the Wilson-Hilferty approximation of the quantiles (0.2 % from the exact bounds at 10
    events, closer above; loose below 5): 10 events give 4.8 to 18.4, 419 give 380 to 461."""
    if n <= 0:
        return 0.0, 3.689                       # the exact upper bound for no event
    lo = n * (1 - 1 / (9 * n) - z / (3 * math.sqrt(n))) ** 3
    m = n + 1
    hi = m * (1 - 1 / (9 * m) + z / (3 * math.sqrt(m))) ** 3
    return lo, hi


#: The checks, forward (other fleets predict Llama 3) then reverse.
CHECKS = (
    Check("rsc1", "llama3", ALL, "RSC-1 node rate -> Llama 3, all 419 interruptions",
          "A100 research cluster, every hardware cause at the node; the acceptance figure"),
    Check("rsc1", "llama3", HARDWARE, "RSC-1 node rate -> Llama 3, hardware causes",
          "like for like: Table 5's GPU, NIC, network and host rows"),
    Check("lablup_b200", "llama3", ("gpu",), "B200 GPU rate -> Llama 3, GPU causes",
          "GPUs only (the study counts nothing else); 10 events"),
    Check("opt175b", "llama3", ALL, "OPT-175B host cycles -> Llama 3, all interruptions",
          "hosts cycled out is a lower bound on failures, over 'two months'"),
    Check("llama3", "rsc1", HARDWARE, "Llama 3 hardware rates -> RSC-1 node rate",
          "per 1,000 node-days, 8 GPUs and 8 NICs a node"),
    Check("llama3", "lablup_b200", ("gpu",), "Llama 3 GPU rate -> B200 GPU failures",
          "504 B200s for 55 days"),
    Check("llama3", "opt175b", ALL, "Llama 3 rates -> OPT-175B host cycles",
          "992 A100s for about 60 days"),
)


def checks() -> tuple[Check, ...]:
    """Every check, in the table's order."""
    return CHECKS


def independent(target: str = "llama3") -> tuple[Check, ...]:
    """The checks that predict ``target`` from other studies' rates."""
    return tuple(c for c in CHECKS if c.target == target and c.predictor != target)
