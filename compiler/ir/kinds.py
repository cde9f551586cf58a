"""The kinds of device a file may declare (``device NAME : KIND``), one record each.

A kind is declared here once: its attributes and their units (what ``resolve`` checks), the
name a person says ("NVLink switch", what the drawing and the legend print), its drawing style
and row (plain Graphviz data, so the compiler reads no backend) and its height in the hierarchy
the cost model routes through. Every other module
reads ``KINDS``; adding a kind is one ``register`` call. Tests check that the reference
(docs/language.md) and the editor grammar name the same kinds.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..base.units import BYTES, NUMBER, RATE

#: Attribute types that are no unit (a unit's type is its ``Dim``).
STRING, BOOL, INT = "string", "bool", "int"
#: Attributes every kind takes.
COMMON: dict[str, Any] = {"vendor": STRING, "arch": STRING, "description": STRING}


@attrs.frozen
class DeviceKind:
    """One kind of device: what a file may say of it, and how it is named and drawn."""

    name: str                               # the word in ``device NAME : KIND``
    label: str                              # as a person says it: "NVLink switch"
    attributes: tuple[tuple[str, Any], ...] = ()    # beyond COMMON, name -> type
    #: Graphviz node attributes of its boxes (shape, fillcolor, fontcolor, style).
    draw: tuple[tuple[str, str], ...] = (("shape", "box"), ("fillcolor", "#dddddd"))
    row: int = 3                            # drawing row from the host down
    height: int = 0                         # hierarchy height for routing (GPUs 0)
    #: A network endpoint of its host (a NIC, a DPU): scale-out levels count from it and a
    #: drawing puts it by the PCIe switch or CPU it hangs off.
    endpoint: bool = False

    def schema(self) -> dict[str, Any]:
        """Every attribute the kind takes, with its type."""
        return {**COMMON, **dict(self.attributes)}

    def style(self) -> dict[str, str]:
        """Its boxes' Graphviz attributes."""
        return dict(self.draw)


#: The registry, in the order the language reference and messages list kinds.
KINDS: dict[str, DeviceKind] = {}


def register(kind: DeviceKind) -> DeviceKind:
    """Add ``kind`` (a name already taken is a programming error)."""
    if kind.name in KINDS:
        raise ValueError(f"device kind '{kind.name}' is registered twice")
    KINDS[kind.name] = kind
    return kind


def is_endpoint(kind: str) -> bool:
    """Whether ``kind`` is a registered kind that is a network endpoint of its host (False
    for a drawn-only box such as a rack)."""
    found = KINDS.get(kind)
    return found is not None and found.endpoint


def names() -> tuple[str, ...]:
    """The kinds' names in registry order."""
    return tuple(KINDS)


register(DeviceKind(
    "gpu", "GPU",
    (("hbm", BYTES), ("hbm_bandwidth", RATE), ("sm", INT), ("tflops_bf16", NUMBER),
     ("tflops_fp8", NUMBER), ("tflops_fp4", NUMBER), ("gemm_efficiency", NUMBER)),
    (("shape", "box"), ("fillcolor", "#76b900"), ("fontcolor", "black")), row=3, height=0))
register(DeviceKind(
    "cpu", "CPU",
    (("memory", BYTES), ("memory_bandwidth", RATE), ("cores", INT)),
    (("shape", "box"), ("style", "filled,rounded"), ("fillcolor", "#4f81bd"),
     ("fontcolor", "white")), row=1, height=2))
register(DeviceKind(
    "nic", "NIC",
    (("rate", RATE), ("role", STRING), ("transport", STRING), ("tuner", STRING)),
    (("shape", "hexagon"), ("fillcolor", "#f79646")), row=2, height=3, endpoint=True))
register(DeviceKind(
    "dpu", "DPU",
    (("rate", RATE), ("cores", INT), ("memory", BYTES)),
    (("shape", "hexagon"), ("fillcolor", "#fac090"), ("style", "filled,bold")), row=2, height=3,
    endpoint=True))
register(DeviceKind(
    "switch", "NVLink switch",
    (("reduction", BOOL),),
    (("shape", "octagon"), ("fillcolor", "#8064a2"), ("fontcolor", "white")), row=4, height=1))
register(DeviceKind(
    "pcie_switch", "PCIe switch",
    (),
    (("shape", "diamond"), ("fillcolor", "#bfbfbf")), row=2, height=1))
register(DeviceKind(
    "net_switch", "network switch",
    (("rate", RATE), ("sharp", BOOL)),
    (("shape", "doubleoctagon"), ("fillcolor", "#c0504d"), ("fontcolor", "white")),
    row=6, height=4))
