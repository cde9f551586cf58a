"""Reliability arithmetic: how often a job of N GPUs is interrupted, how often it should
checkpoint, and the share of its time that is useful work (docs/reliability.md).

A synchronous training job stops when any component it runs on fails: a GPU, its host, a NIC,
the switch or cable behind the NIC. Failures are taken as independent Poisson processes with a
constant rate per device (the flat bottom of the bathtub curve), so the job's interruption rate
is the sum over what it uses, ``lambda = sum_k n_k r_k``, and its mean time between
interruptions is ``M = 1 / lambda``. The rates come from published fleet studies
(library/reliability.csv, each study one rate set), never from a fit to the figure they are
checked against (``reliability_check``).

Checkpointing, with C the time to write a checkpoint, R the time to restart from one and tau
the compute time between two checkpoints:

- Young (1974): ``tau = sqrt(2 C M)``, the first-order optimum;
- Daly (2006): ``tau = sqrt(2 C M) (1 + sqrt(C / 2M) / 3 + (C / 2M) / 9) - C`` for
  ``C < 2M``, else ``tau = M``: the higher-order optimum;
- Daly (2006), the expected wall time of work ``T_s`` when failures also strike during
  checkpoints and restarts: ``T_w = M e^(R/M) (e^((tau + C)/M) - 1) T_s / tau``, so the
  goodput (useful share of wall time) is ``tau / (M e^(R/M) (e^((tau + C)/M) - 1))``.
"""

from __future__ import annotations

import functools
import math

import attrs

from ...library import reliability as _rows
from ..ir.hosts import hosts
from ..ir.system import SCALEOUT_CLASSES, System

DAY = 86400.0
DEFAULT_RATES = "llama3"


class ReliabilityError(ValueError):
    """A request the rates or the system cannot answer (the message says why)."""


@attrs.frozen
class Kind:
    """A component a failure rate is charged to, and the device it is counted per."""

    name: str
    unit: str                   # gpu, nic, host or node (a whole server)
    hardware: bool
    what: str


#: The components, in the order reports list them.
KINDS = {k.name: k for k in (
    Kind("gpu", "gpu", True, "GPU (HBM, SRAM, GSP, NVLink, thermal)"),
    Kind("nic", "nic", True, "compute NIC"),
    Kind("network", "nic", True, "switch or cable, per compute NIC"),
    Kind("host", "host", True, "host (CPU, DRAM, SSD, PSU, chassis, IO board)"),
    Kind("node", "node", True, "server, every hardware cause"),
    Kind("maintenance", "host", False, "unplanned host maintenance"),
    Kind("software", "gpu", False, "software, dependency or unknown (per GPU)"),
)}


@attrs.frozen
class Exposure:
    """What a job runs on: GPUs, compute NICs (each with its cable into the fabric) and hosts;
    ``switches``: the fabric switches its NICs plug into (reported, not charged);
    ``extrapolated``: more GPUs than the file has, counted at the file's ratios."""

    gpus: int
    nics: int
    hosts: int
    switches: int = 0
    extrapolated: bool = False

    def units(self, unit: str) -> int:
        """How many devices of ``unit`` the job uses (a node is a host)."""
        return {"gpu": self.gpus, "nic": self.nics, "host": self.hosts,
                "node": self.hosts}[unit]


@attrs.frozen
class Cause:
    """One published row: ``count`` failures of ``component`` over ``fleet`` x ``days``."""

    study: str
    component: str
    kind: str
    count: float
    fleet: Exposure
    days: float
    published: str
    gpu_model: str
    source: str
    where: str
    url: str
    note: str

    @property
    def rate(self) -> float:
        """Failures per device-day of the kind's unit."""
        return self.count / (self.fleet.units(KINDS[self.kind].unit) * self.days)


@attrs.frozen
class RateSet:
    """One study's rates: the sum of its causes per kind."""

    study: str
    causes: tuple[Cause, ...]

    @property
    def first(self) -> Cause:
        return self.causes[0]

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds the study counts, in KINDS order."""
        present = {c.kind for c in self.causes}
        return tuple(k for k in KINDS if k in present)

    def rate(self, kind: str) -> float:
        """Failures per device-day of ``kind`` (0 where the study counts none)."""
        return sum(c.rate for c in self.causes if c.kind == kind)

    def count(self, kinds: tuple[str, ...] | None = None) -> float:
        """The failures the study counted (of ``kinds`` only when given)."""
        return sum(c.count for c in self.causes if kinds is None or c.kind in kinds)


@functools.cache
def rate_sets() -> dict[str, RateSet]:
    """Every study of library/reliability.csv as a rate set, in the file's order."""
    by_study: dict[str, list[Cause]] = {}
    for row in _rows():
        kind = row["kind"]
        if kind not in KINDS or row["unit"] != KINDS[kind].unit:
            raise ReliabilityError(f"reliability.csv: {row['study']} '{row['component']}': "
                                   f"kind '{kind}' counted per '{row['unit']}'")
        fleet = Exposure(int(row["gpus"]), int(row["nics"]), int(row["hosts"]))
        by_study.setdefault(row["study"], []).append(Cause(
            row["study"], row["component"], kind, float(row["count"]), fleet,
            float(row["days"]), row["published"], row["gpu_model"], row["source"],
            row["where"], row["url"], row["note"]))
    return {study: RateSet(study, tuple(causes)) for study, causes in by_study.items()}


def rate_set(study: str) -> RateSet:
    """The named study's rates; ``ReliabilityError`` naming the studies there are."""
    sets = rate_sets()
    if study not in sets:
        raise ReliabilityError(f"no failure rates for '{study}'; there are: "
                               f"{', '.join(sets)}")
    return sets[study]


def job_exposure(system: System, gpus: int | None = None) -> Exposure:
    """What a job on the first ``gpus`` GPUs (all by default) of the system runs on: those
    GPUs, the hosts that hold them, the compute NICs its GPUs drive (none when the job stays
    inside one machine: NCCL then never touches the network) and the fabric switches those NICs
    plug into. More GPUs than the file has are counted at the file's ratios of NICs and hosts
    per GPU (``extrapolated``)."""
    total = len(system.gpus)
    if not total:
        raise ReliabilityError("the system has no GPU")
    n = total if gpus is None else gpus
    if n < 1:
        raise ReliabilityError("a job needs at least one GPU")
    ranks = range(min(n, total))
    chosen = {system.gpus[r].id for r in ranks}
    job_hosts = [h for h in hosts(system) if any(d in chosen for d in h.devices)]
    loc = system.locality
    nics = sorted({nic for r in ranks for nic in loc.nics(r)})
    if n > total:
        return Exposure(n, round(len(nics) * n / total), math.ceil(len(job_hosts) * n / total),
                        extrapolated=True)
    if len({loc.island[r] for r in ranks}) == 1:
        nics = []                               # one machine: NVLink and PCIe only
    else:                   # a NIC cabled into no fabric (a lone tray's) carries no traffic
        nics = [nic for nic in nics if any(link.type.cls in SCALEOUT_CLASSES
                                           for link in system.links_of(nic))]
    switches = {end for nic in nics for link in system.links_of(nic)
                for end in (link.src, link.dst) if system.device(end).kind == "net_switch"}
    return Exposure(n, len(nics), len(job_hosts), len(switches))


def young_interval(checkpoint: float, mtbf: float) -> float:
    """Young (1974): the compute time between checkpoints, sqrt(2 C M)."""
    return math.sqrt(2.0 * checkpoint * mtbf)


def daly_interval(checkpoint: float, mtbf: float) -> float:
    """Daly (2006), the higher-order optimum: sqrt(2CM)(1 + sqrt(C/2M)/3 + (C/2M)/9) - C for
    C < 2M, else M."""
    if checkpoint >= 2.0 * mtbf:
        return mtbf
    x = checkpoint / (2.0 * mtbf)
    return math.sqrt(2.0 * checkpoint * mtbf) * (1 + math.sqrt(x) / 3 + x / 9) - checkpoint


def goodput(interval: float, checkpoint: float, restart: float, mtbf: float) -> float:
    """Daly (2006): the useful share of wall time, tau / (M e^(R/M) (e^((tau+C)/M) - 1)),
    failures striking during work, checkpoints and restarts alike; tau/(tau+C) without
    failures."""
    if math.isinf(mtbf):
        return interval / (interval + checkpoint) if interval else 1.0
    if interval + checkpoint == 0:
        return math.exp(-restart / mtbf)     # the limit of free, continuous checkpoints
    return interval / (mtbf * math.exp(restart / mtbf) * math.expm1((interval + checkpoint) / mtbf))


def best_interval(checkpoint: float, restart: float, mtbf: float) -> float:
    """The interval that maximises ``goodput``, found numerically (golden-section search on a
    function with one maximum): what Young's and Daly's closed forms approximate."""
    lo, hi = 1e-9 * mtbf, 20.0 * mtbf
    g = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        if goodput(a, checkpoint, restart, mtbf) < goodput(b, checkpoint, restart, mtbf):
            lo = a
        else:
            hi = b
    return (lo + hi) / 2


@attrs.frozen
class Term:
    """One kind's share: ``devices`` of it at ``rate`` failures per device-day."""

    kind: str
    devices: int
    rate: float

    @property
    def per_day(self) -> float:
        return self.devices * self.rate


@attrs.frozen
class Estimate:
    """A job's interruptions, MTBF, checkpoint interval and goodput under one rate set."""

    rates: RateSet
    exposure: Exposure
    checkpoint: float | None = None     # seconds to write a checkpoint
    restart: float = 0.0                # seconds to restart from one
    file_gpus: int = 0                  # GPUs the file has (the job may extrapolate past it)

    @property
    def terms(self) -> tuple[Term, ...]:
        return tuple(Term(k, self.exposure.units(KINDS[k].unit), self.rates.rate(k))
                     for k in self.rates.kinds)

    @property
    def per_day(self) -> float:
        """Expected interruptions per day."""
        return sum(t.per_day for t in self.terms)

    @property
    def hardware_per_day(self) -> float:
        return sum(t.per_day for t in self.terms if KINDS[t.kind].hardware)

    @property
    def mtbf(self) -> float:
        """Mean time between interruptions, seconds (infinite when nothing fails)."""
        return DAY / self.per_day if self.per_day else math.inf

    @property
    def young(self) -> float | None:
        if self.checkpoint is None or math.isinf(self.mtbf):
            return None
        return young_interval(self.checkpoint, self.mtbf)

    @property
    def daly(self) -> float | None:
        if self.checkpoint is None or math.isinf(self.mtbf):
            return None
        return daly_interval(self.checkpoint, self.mtbf)

    @property
    def goodput(self) -> float | None:
        """The useful share of wall time checkpointing at Daly's interval."""
        if self.checkpoint is None:
            return None
        if math.isinf(self.mtbf):
            return 1.0
        return goodput(self.daly, self.checkpoint, self.restart, self.mtbf)

    def to_json(self) -> dict:
        """The estimate as plain data (``topoc reliability --format json``)."""
        def num(x):
            return None if x is None or math.isinf(x) else round(x, 6)
        first = self.rates.first
        return {
            "rates": {"study": self.rates.study, "source": first.source, "where": first.where,
                      "url": first.url, "gpu_model": first.gpu_model,
                      "published": first.published, "failures": self.rates.count(),
                      "fleet": attrs.asdict(first.fleet, filter=lambda a, _: a.name in (
                          "gpus", "nics", "hosts")),
                      "days": first.days},
            "job": attrs.asdict(self.exposure),
            "terms": [{"kind": t.kind, "what": KINDS[t.kind].what, "devices": t.devices,
                       "rate_per_device_day": float(f"{t.rate:.6g}"),
                       "per_day": num(t.per_day)} for t in self.terms],
            "interruptions_per_day": num(self.per_day),
            "hardware_per_day": num(self.hardware_per_day),
            "mtbf_hours": num(self.mtbf / 3600),
            "checkpoint_seconds": self.checkpoint, "restart_seconds": self.restart,
            "young_interval_seconds": num(self.young), "daly_interval_seconds": num(self.daly),
            "goodput": num(self.goodput),
        }


def estimate(system: System, gpus: int | None = None, checkpoint: float | None = None,
             restart: float = 0.0, rates: str = DEFAULT_RATES) -> Estimate:
    """The reliability of a job on the first ``gpus`` GPUs of ``system`` under the named
    study's rates: interruptions per day, MTBF, Young's and Daly's checkpoint intervals for a
    checkpoint of ``checkpoint`` seconds, and the goodput with a restart of ``restart``
    seconds."""
    if checkpoint is not None and checkpoint < 0 or restart < 0:
        raise ReliabilityError("checkpoint and restart times cannot be negative")
    return Estimate(rate_set(rates), job_exposure(system, gpus), checkpoint, restart,
                    len(system.gpus))
