"""The one door to the collective model: ``cost_collective`` (and ``Coster``, the same call
prepared once for many sizes). ``cost``, ``schedule``, ``plan``, ``infer`` and the report all
call it, so the same call gives the same figure in every verb.

A call names the group, the collective, the size, the NCCL release and net plugin whose
settings apply, and the chooser:

- ``nccl`` (the default; the CLI's ``--algorithm auto``): what NCCL would run, among the
  algorithms its release had and the topology allows (``algos``: each record's releases and
  conditions), by NCCL's own model (``cost.choose``), or by the tuner plugin the network
  names where its table covers the call;
- ``fastest``: the least predicted time among the same algorithms and their protocols (no
  tuner): what the best of NCCL's algorithms could do;
- an algorithm's name: that algorithm (any the cost model prices for the collective, topoc's
  own included), with the protocol NCCL's model would pick for it.

It returns ``cost.Cost`` rows: the time, the algorithm, the protocol and the bottleneck link.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from ..base.gcpause import gc_paused
from ..ir.groups import RankGroup
from ..ir.system import COLLECTIVES, System
from . import algos, transports
from ..base.units import byte_count
from .cost import (Cost, CostError, _gpu_facts, _tuner, _tuner_loads, auto_algorithms, choose,
                   options, profile, weighed)
from .loads import Resources
from .paths import NoRoute
from .tuning import PROTOCOLS
from .versions import UnknownVersion, nccl as nccl_profile

#: The choosers besides a forced algorithm's name.
CHOOSERS = ("nccl", "fastest")


def _release_note(version, asked: str | None) -> str:
    return version.note if asked not in (None, "", "latest") else ""


class Coster:
    """One collective on one group, its size-independent part (algorithms, routes, loads)
    computed once; ``Coster(...)(size)`` is ``cost_collective(..., size)``. ``background``:
    the bytes other groups of the same traffic line put on the links at the same time (per
    unit of this group's size, ``cost.group_loads``), which share them (``loads.crowding``)."""

    def __init__(self, system: System, group: RankGroup, collective: str,
                 chooser: str = "nccl", protocol: str | None = None, nccl: str | None = None,
                 plugin: str | None = None, graph: bool = False, among: Sequence[str] = (),
                 background: dict | None = None):
        try:
            version = nccl_profile(nccl)
            if plugin not in (None, "", "latest"):
                transports.plugin_release(plugin)
        except (UnknownVersion, transports.UnknownPlugin) as exc:
            raise CostError(str(exc)) from None
        if collective not in COLLECTIVES:
            raise CostError(f"unknown collective '{collective}'")
        costed = algos.costed(collective)
        if chooser in CHOOSERS:
            names = auto_algorithms(system, group, collective, among, version)
        elif chooser in costed:
            names = [chooser]
        else:
            raise CostError(f"{collective} has no '{chooser}' algorithm (one of "
                            f"{', '.join(costed)}, or auto)")
        if collective in ("alltoall", "sendrecv") and len(group.ranks) < 2:
            raise CostError(f"{collective} needs at least 2 ranks")
        res = Resources.of(system, _gpu_facts(system, group.ranks)[0])
        try:
            profiles = [profile(system, group, collective, a, res, version, plugin,
                                background) for a in names]
        except NoRoute as exc:
            raise CostError(f"{exc}: the group's GPUs are not all linked to each other") \
                from None
        self.profiles = [p for p in profiles if protocol is None or
                         PROTOCOLS.index(protocol) in algos.protocols(p.algorithm)]
        tuner = _tuner(system, group.ranks) if chooser == "nccl" and protocol is None \
            else None
        self.tuner = tuner if tuner and _tuner_loads(self.profiles, version) else None
        self.group, self.collective, self.chooser = group, collective, chooser
        self.protocol, self.graph = protocol, graph
        #: what the release asked for cannot be modelled as it was (versions.Nccl.note)
        self.note = _release_note(version, nccl)

    def __call__(self, size: int) -> Cost:
        found = [o for p in self.profiles
                 for o in options(p, self.group, self.collective, size, self.protocol,
                                  self.graph)]
        if not found:
            if not self.profiles and self.protocol is None:
                raise CostError(f"no algorithm runs {self.collective} on this group")
            raise CostError(f"no algorithm runs {self.collective} with the {self.protocol} "
                            "protocol")
        if self.chooser == "fastest":
            best = min(found, key=lambda o: (o[1].time, o[1].algorithm, o[1].protocol))[1]
            return attrs.evolve(best, choice="fastest", weighed=weighed(found))
        if self.chooser not in CHOOSERS:       # an algorithm named: its protocol by NCCL's model
            best = min(found, key=lambda o: (o[0], o[1].algorithm, o[1].protocol))[1]
            return attrs.evolve(best, choice="forced",
                                weighed=weighed(found) if self.protocol is None else ())
        return choose(found, self.tuner, self.collective)


@gc_paused()
def cost_collective(system: System, group: RankGroup, collective: str,
                    sizes: int | Iterable[int], nccl: str | None = None,
                    plugin: str | None = None, chooser: str = "nccl",
                    protocol: str | None = None, graph: bool = False,
                    among: Sequence[str] = ()) -> Cost | list[Cost]:
    """The predicted cost of ``collective`` on ``group`` at one size (a ``Cost``) or at each
    of ``sizes`` (a list). ``nccl``: the release whose tables and algorithms apply
    (versions.py; the latest when None); ``plugin``: the net plugin's release (aws-ofi-nccl,
    transports.with_plugin); ``chooser``: ``nccl``, ``fastest`` or an algorithm's name (module
    docstring); ``protocol``: force one; ``graph``: CUDA-graph launches (nccl-tests -G);
    ``among``: narrow the chooser's algorithms (the schedule stage asks only for what it
    plans)."""
    # a size that is not a finite, positive whole number of bytes is refused before any work
    # (TypeError or ValueError): the planners loop over sizes, an infinite one never returned
    one = not isinstance(sizes, Iterable) or isinstance(sizes, (str, bytes))
    checked = [byte_count(s, "a size") for s in ([sizes] if one else sizes)]
    at = Coster(system, group, collective, chooser, protocol, nccl, plugin, graph, among)
    if one:
        return at(checked[0])
    return [at(size) for size in checked]


def sweep(system: System, group: RankGroup, collective: str, sizes: Iterable[int],
          algorithm: str = "auto", protocol: str | None = None,
          among: Sequence[str] = (), nccl: str | None = None,
          graph: bool = False, plugin: str | None = None) -> list[Cost]:
    """``cost_collective`` at every size, the chooser as the CLI's ``--algorithm`` names it
    (``auto``: NCCL's choice)."""
    return cost_collective(system, group, collective, list(sizes), nccl, plugin,
                           "nccl" if algorithm == "auto" else algorithm, protocol, graph, among)


def cost(system: System, group: RankGroup, collective: str, size: int,
         algorithm: str = "auto", protocol: str | None = None, nccl: str | None = None,
         graph: bool = False, plugin: str | None = None) -> Cost:
    """``sweep`` at one size."""
    return sweep(system, group, collective, [size], algorithm, protocol, nccl=nccl,
                 graph=graph, plugin=plugin)[0]


def coster(system: System, group: RankGroup, collective: str, chooser: str = "nccl",
           nccl: str | None = None, plugin: str | None = None, protocol: str | None = None,
           background: dict | None = None) -> Coster:
    """The prepared call the plan search and infer ask for many sizes (``background``: the
    links' load by the groups running at the same time, ``Coster``)."""
    return Coster(system, group, collective, chooser, protocol, nccl=nccl, plugin=plugin,
                  background=background)
