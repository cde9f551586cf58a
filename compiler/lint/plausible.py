"""Figures that no real part has: a link lane far outside its class's known range, a NIC whose
rate is not its link's, a compute capability written as ``9.0``. Each finding says what the
writer most likely meant (lint rule W408).

The ranges are per lane and direction, as links are declared: NVLink 1 to 5 give 20 to 53 GB/s
a lane (links.topo cites them), PCIe Gen1 x1 to Gen6 x16 0.25 to 121 GB/s, scale-out ports 10 Gb/s
to 1.6 Tb/s, NVLink-C2C and socket links what NVIDIA's and NCCL's figures span, with headroom.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..ir.incidence import arrays_in
from ..ir.modelcodes import model_numbers
from ..ir.system import SCALEOUT_CLASSES, System
from ..base.units import RATE, human

#: Known per-lane, per-direction bandwidth (bytes/s) by link class, with headroom.
LANE_RANGE = {
    "nvlink": (15e9, 60e9),
    "nvlink_c2c": (10e9, 500e9),
    "pcie": (0.2e9, 130e9),
    "infiniband": (1.25e9, 200e9),
    "ethernet": (1.25e9, 200e9),
    "inter_socket": (5e9, 200e9),
}
SM_RANGE = (30, 130)
NIC_TOLERANCE = 0.10


def _guesses(cls: str, value: float) -> Iterator[tuple[float, str]]:
    """Readings of ``value`` a writer may have meant, most likely first."""
    yield value / 8, "the figure in bits where bytes were meant"
    yield value * 8, "the figure in bytes where bits were meant"
    if cls == "nvlink":
        for total, unit in ((value, ""), (value * 8, " in bytes")):
            yield total / 18, f"a GPU's one-way total{unit} over 18 lanes, as Blackwell's"
            yield total / 36, f"a GPU's both-ways total{unit} over 18 lanes, as Hopper's"


def lane_finding(cls: str, bandwidth: float) -> str | None:
    """Why a lane of ``bandwidth`` is implausible for ``cls``, and the likely meant value."""
    lo, hi = LANE_RANGE.get(cls, (0.0, float("inf")))
    if lo <= bandwidth <= hi:
        return None
    side = "above" if bandwidth > hi else "below"
    text = (f"{human(bandwidth, RATE)} a lane is {side} any {cls} part "
            f"({human(lo, RATE)} to {human(hi, RATE)} a lane and direction)")
    fits, seen = [], set()
    for guess, why in _guesses(cls, bandwidth):
        if lo <= guess <= hi and round(guess) not in seen:
            seen.add(round(guess))
            fits.append(f"{human(guess, RATE)} ({why})")
    return f"{text}; likely meant: {' or '.join(fits)}" if fits else text


def sm_finding(sm) -> str | None:
    """Why an ``sm`` attribute is implausible, and what was likely meant."""
    try:
        value = float(sm)
    except (TypeError, ValueError):
        return f"sm = {sm!r} is not a compute capability such as 90 or 100"
    if value.is_integer() and SM_RANGE[0] <= value <= SM_RANGE[1]:
        return None
    if value < 13:
        return (f"sm = {sm:g} reads as CUDA's major.minor; topoc (and NCCL) write compute "
                f"capability as {round(value * 10)}")
    return f"sm = {sm:g} is no compute capability (NVIDIA's run from 30 to 120)"


def findings(system: System) -> Iterator[tuple[str, object]]:
    """(message, span, a device it concerns) for every implausible link type, GPU model and
    NIC model in use."""
    seen_types, seen_models = set(), set()
    ends = system.ends
    # link types in the order the links first use them (ends.types is that order)
    for code, t in enumerate(ends.types):
        if t.name not in seen_types:
            seen_types.add(t.name)
            message = lane_finding(t.cls, t.bandwidth)
            if message:
                yield f"link '{t.name}': {message}", t.span, \
                    system.links[ends.type.index(code)].src
    # GPU models' compute capability and NIC models' rates, each name reported once at the
    # first device that shows it, in device order: found per model in numpy over the devices
    # and the scale-out links' integer ends (a pass over 1.7 M devices and the ids of every
    # scale-out link took seconds at 8,192 NVL72 racks)
    import numpy as np

    devices = system.devices
    numbers, models = model_numbers(system)
    events = []
    if len(numbers):
        used, first = np.unique(numbers, return_index=True)
        first_of = dict(zip(used.tolist(), first.tolist()))
        for k, m in enumerate(models):
            if k in first_of and m.kind == "gpu" and m.attr("sm") is not None:
                events.append((first_of[k], "gpu", m))
        a, b, bandwidth = arrays_in(system, SCALEOUT_CLASSES)
        ends = np.empty(2 * len(a), dtype=np.int64)
        ends[0::2], ends[1::2] = a, b
        # each end's sum in link order, as the pass link by link added them
        link = np.bincount(ends, weights=np.repeat(bandwidth, 2), minlength=len(devices))
        touched = np.bincount(ends, minlength=len(devices)) > 0
        rates = np.array([float(m.attr("rate")) if m.kind == "nic" and m.attr("rate") else 0.0
                          for m in models], dtype=np.float64)
        rate = rates[numbers]
        off = np.flatnonzero(touched & (rate != 0)
                             & (np.abs(rate - link) > NIC_TOLERANCE * link))
        first_bad: dict[str, int] = {}
        for i in off.tolist():
            name = models[numbers[i]].name
            if name not in first_bad:
                first_bad[name] = i
        events.extend((i, "nic", None) for i in first_bad.values())
    events.sort(key=lambda e: e[0])
    for i, kind, m in events:
        d = devices[i]
        m = d.model
        if kind == "gpu":
            if m.name in seen_models:
                continue
            seen_models.add(m.name)
            message = sm_finding(m.attr("sm"))
            if message:
                yield f"device '{m.name}': {message}", m.span, d.id
        else:
            rate = m.attr("rate")
            yield (f"device '{m.name}': rate {human(rate, RATE)} but {d.id} is cabled at "
                   f"{human(link[i].item(), RATE)}; one of the two is likely wrong (the cost "
                   "model uses the link)"), m.span, d.id
