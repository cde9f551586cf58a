"""The System IR: devices, links and parallel strategies after elaboration.

Devices and links are flat tuples in declaration order (GPU world ranks follow it); the link
graph is built from them on first use. Models and link types are shared, so a device costs one
small object however many attributes its model has.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import attrs
from attrs import field

from ..base.diagnostics import Span

LINK_CLASSES = ("nvlink", "nvlink_c2c", "pcie", "infiniband", "ethernet", "inter_socket")
SCALEUP_CLASSES = ("nvlink",)
SCALEOUT_CLASSES = ("infiniband", "ethernet")
NIC_ROLES = ("compute", "storage")
#: Transports a NIC can carry NCCL's traffic over (a NIC model's ``transport``): InfiniBand
#: verbs, RoCE, AWS EFA (aws-ofi-nccl over SRD), Google's GPUDirect-TCPX and -TCPXO, and
#: NVIDIA Spectrum-X (RoCE with adaptive routing). The cost model's figures per transport are
#: in ``compiler.collectives.transports``.
TRANSPORTS = ("ib", "roce", "efa", "efa_sendrecv", "tcpx", "tcpxo", "spectrum_x")
#: Provider tuner plugins a NIC model may name (``tuner``): their tables choose NCCL's algorithm
#: and protocol where they cover the call (compiler.collectives.tuners).
NIC_TUNERS = ("aws_p5", "aws_p6")
PARALLEL_DIMS = ("tp", "cp", "ep", "dp", "pp")
#: Group kinds: the dimensions, plus Megatron's expert data parallel group (the ranks that hold
#: the same experts and reduce their gradients) and its dp x cp group (the replicas of the dense
#: weights when context parallelism splits the sequence).
GROUP_KINDS = (*PARALLEL_DIMS, "edp", "dpcp")
DEFAULT_ORDER = ("tp", "cp", "ep", "dp", "pp")
#: Builders of a System's derived views, registered by the stages that own them
#: (``compiler.graph``, ``compiler.locality``) when the compiler package is imported, so that
#: the IR imports no later stage.
VIEWS: dict[str, Callable[[System], Any]] = {}

COLLECTIVES = ("allreduce", "reducescatter", "allgather", "broadcast", "reduce", "alltoall",
               "sendrecv")
#: The collectives that have a root (a position of the group that sends or receives it all).
ROOTED_COLLECTIVES = ("broadcast", "reduce")


@attrs.frozen
class LinkType:
    """A declared link: its class and per-lane, per-direction bandwidth and latency."""

    name: str
    cls: str
    bandwidth: float            # bytes/s per lane per direction
    latency: float              # seconds
    attrs: tuple[tuple[str, Any], ...] = ()
    span: Span = field(eq=False, repr=False, default=None)

    def attr(self, key: str, default: Any = None) -> Any:
        """An optional attribute such as ``gen`` or ``width``."""
        return dict(self.attrs).get(key, default)


@attrs.frozen
class DeviceModel:
    """A declared device model: its kind, attributes and port budget per link class."""

    name: str
    kind: str
    attrs: tuple[tuple[str, Any], ...] = ()
    ports: tuple[tuple[str, int], ...] = ()
    span: Span = field(eq=False, repr=False, default=None)

    def attr(self, key: str, default: Any = None) -> Any:
        """An attribute value in base units (bytes, seconds, bytes/s), or ``default``."""
        return self._attr_map.get(key, default)

    @functools.cached_property
    def _attr_map(self) -> dict[str, Any]:
        """``attrs`` as a dict, made once per model (lint asks every device's model)."""
        return dict(self.attrs)

    def port_budget(self, cls: str) -> int | None:
        """How many lanes of link class ``cls`` the device has room for (None: unlimited)."""
        return dict(self.ports).get(cls)


@attrs.frozen
class Device:
    """One physical chip, named by its hierarchical path (``cluster.rack0.tray3.sc1.gpu0``)."""

    id: str
    model: DeviceModel
    span: Span = field(eq=False, repr=False, default=None)

    @property
    def compute_nic(self) -> bool:
        """A NIC that carries GPU traffic (NCCL's NICs, rails): not a DPU or a storage NIC."""
        return self.kind == "nic" and self.model.attr("role", "compute") == "compute"

    @property
    def kind(self) -> str:
        """A name in ``compiler.ir.kinds.KINDS``."""
        return self.model.kind


@attrs.frozen(repr=False)
class Link:
    """Lanes of one link type between two devices (``duplex``: both directions).

    ``id`` is ``src<->dst:type`` (``->`` when one-way) unless the constructor was given another:
    elaborate passes None and the id is spelled out on demand, which keeps 13.7 M links of an
    8,192-rack cluster from holding 1.7 GB of id strings nothing but an export reads."""

    given_id: str | None = field(alias="id")
    src: str
    dst: str
    type: LinkType
    lanes: int
    duplex: bool = True
    span: Span = field(eq=False, repr=False, default=None)

    @property
    def id(self) -> str:
        """The link's id: ``cluster.rack0.tray3.sc0.gpu1<->cluster.rack0.sw0:nvlink5``."""
        if self.given_id is not None:
            return self.given_id
        return f"{self.src}{'<->' if self.duplex else '->'}{self.dst}:{self.type.name}"

    def __repr__(self) -> str:
        return (f"Link(id={self.id!r}, src={self.src!r}, dst={self.dst!r}, type={self.type!r}, "
                f"lanes={self.lanes!r}, duplex={self.duplex!r})")

    @property
    def cls(self) -> str:
        """The link class: nvlink, nvlink_c2c, pcie, infiniband, ethernet or inter_socket."""
        return self.type.cls

    @property
    def bandwidth(self) -> float:
        """Bytes/s per direction over all lanes."""
        return self.type.bandwidth * self.lanes

    @property
    def latency(self) -> float:
        """Seconds for one traversal."""
        return self.type.latency


@attrs.frozen
class Transformer:
    """A ``model`` declaration: a decoder-only transformer as Megatron builds it.

    ``ffn`` is the MLP's inner size (4 x hidden unless given); ``gated`` means SwiGLU (three
    matrices instead of two); ``experts`` > 0 makes every layer after ``dense_layers`` a
    mixture of experts with ``top_k`` routed experts of ``expert_ffn`` each, plus
    ``shared_experts`` always-on ones; ``tied`` shares the input embedding with the output
    layer; ``dropout`` keeps Megatron's default dropout masks in the activations.
    """

    name: str
    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    ffn: int
    kv_heads: int
    experts: int = 0
    top_k: int = 0
    expert_ffn: int = 0
    shared_experts: int = 0
    dense_layers: int = 0
    gated: bool = False
    tied: bool = True
    dropout: bool = True
    dtype: str = "bf16"
    span: Span = field(eq=False, repr=False, default=None)
    #: Width of one attention head; 0: hidden / heads (Qwen3 and GPT-OSS set their own).
    head_dim: int = 0
    #: Multi-head latent attention (DeepSeek-V2/V3): the compressed key/value and query ranks
    #: and the rotary part of each head (0: ordinary attention).
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    rope_head_dim: int = 0
    #: Tokens an expert takes over its even share (0: dropless, Megatron's default).
    capacity_factor: float = 0.0
    #: GPT-OSS's clamped SwiGLU: the gate clamped to at most this and the linear half to
    #: [-act_clamp, act_clamp] (0: no clamp); ``expert_bias``: the experts' linear layers
    #: carry biases. Frameworks may run both outside their fused kernels
    #: (``training.epilogue``).
    act_clamp: float = 0.0
    expert_bias: bool = False

    @property
    def dhead(self) -> int:
        """The width of one attention head."""
        return self.head_dim or self.hidden // self.heads


@attrs.frozen
class TrafficFlow:
    """What one group kind moves per training step: ``count`` collectives of ``bytes``."""

    dim: str
    collective: str
    bytes: int
    count: int
    span: Span = field(eq=False, repr=False, default=None)
    #: When it can hide behind compute: "" (by its group kind, for written traffic lines),
    #: "none", "backward", "forward" or "wgrad" (lines derived from a model).
    overlap: str = ""
    #: An expert dispatch that sends each token once per destination node (DeepEP): (top-k,
    #: the most nodes a token may be routed to, 0 for no limit); (0, 0) for a plain all-to-all.
    dedup: tuple[int, int] = (0, 0)


@attrs.frozen
class ParallelStrategy:
    """A checked ``parallel`` block: sizes per dimension, rank order, traffic."""

    name: str
    sizes: tuple[tuple[str, int], ...]
    order: tuple[str, ...]
    microbatches: int
    flows: tuple[TrafficFlow, ...]
    settings: tuple[tuple[str, Any], ...] = ()
    span: Span = field(eq=False, repr=False, default=None)
    expert_tp: int = 1
    #: The ``compiler.training.Training`` the traffic was derived from, when the block names a
    #: model (None for written traffic lines).
    training: Any = field(eq=False, repr=False, default=None)
    #: What the training derives for this mapping, once (``compiler.training.Derived``: compute,
    #: memory, layout, traffic); None for written traffic lines.
    derived: Any = field(eq=False, repr=False, default=None)

    @property
    def world(self) -> int:
        """GPUs the strategy runs on: tp x cp x dp x pp."""
        return self.size("tp") * self.size("cp") * self.size("dp") * self.size("pp")

    def size(self, dim: str) -> int:
        """The size of one dimension or group kind (1 when not given); ``edp`` is derived."""
        if dim == "edp":
            return self.size("tp") * self.size("cp") * self.size("dp") // \
                (self.expert_tp * self.size("ep"))
        if dim == "dpcp":
            return self.size("dp") * self.size("cp")
        return dict(self.sizes).get(dim, 1)


@attrs.frozen
class Host:
    """A group instance (or device) marked ``host``: one OS image, such as a DGX node or a
    GB200 compute tray. ``indices`` are the (member, index) steps from the system down to it,
    which a hostname pattern such as ``"gb-{rack:02}-{tray:02}"`` reads."""

    id: str
    indices: tuple[tuple[str, int | None], ...]
    pattern: str | None = None
    span: Span = field(eq=False, repr=False, default=None)


def make_devices(ids, models, spans) -> list[Device]:
    """``[Device(i, m, s) for i, m, s in zip(ids, models, spans)]``, made column by column in
    C (``_by_columns``): the constructor's Python frame per device took about a second at
    8,192 NVL72 racks (1.7 M devices), in elaborate and again in every read of the
    compiled-system cache; this takes about a third of it."""
    return _by_columns(Device, ids, (("id", ids), ("model", models), ("span", spans)))


def make_hosts(ids, indices, patterns, spans) -> list[Host]:
    """``Host(id, indices, pattern, span)`` for each row of these columns, as
    ``make_devices``."""
    return _by_columns(Host, ids, (("id", ids), ("indices", indices), ("pattern", patterns),
                                   ("span", spans)))


def _by_columns(cls, ids, columns) -> list:
    """Objects of the frozen attrs class ``cls``, one per element of ``ids``: each allocated,
    then each slot filled by its descriptor over its whole column (``columns``: every field,
    by name, each as long as ``ids``). Equal to the constructor's objects, which apply no
    validator, converter or default here."""
    import collections
    import itertools

    assert [name for name, _ in columns] == [f.name for f in attrs.fields(cls)], cls
    out = list(map(object.__new__, itertools.repeat(cls, len(ids))))
    consume = collections.deque(maxlen=0).extend
    for name, column in columns:
        consume(map(cls.__dict__[name].__set__, out, column))
    return out


def device_indices(system: System) -> dict[str, int]:
    """Device id -> its index in ``system.devices``, made once per system and shared by the
    views that key integer passes by id (incidence, locality, ``System.device``)."""
    found = system.memo.get("device_indices")
    if found is None:
        found = system.memo["device_indices"] = {d.id: i for i, d in enumerate(system.devices)}
    return found


@attrs.frozen
class System:
    """An elaborated system: devices, links, strategies and the parameters used."""

    name: str
    devices: tuple[Device, ...]
    links: tuple[Link, ...]
    parallels: tuple[ParallelStrategy, ...] = ()
    params: tuple[tuple[str, Any], ...] = ()
    span: Span = field(eq=False, repr=False, default=None)
    #: Where each member was declared, by its path with array indices left out
    #: (``cluster.rack.tray`` -> the ``tray[18] : Tray`` statement): lint's way back from a
    #: device to the user's line that put it there.
    sites: tuple[tuple[str, Span], ...] = field(eq=False, repr=False, default=())
    #: The ``model`` declarations the file can see (``topoc plan --model`` looks here first).
    models: tuple[Transformer, ...] = field(eq=False, repr=False, default=())
    #: Instances marked ``host`` in depth-first order (empty: no marker in the file).
    hosts: tuple[Host, ...] = field(eq=False, repr=False, default=())
    #: Parallel blocks left out because their sizes do not fit the GPUs a ``-D`` override gave
    #: the system: (name, the reason as a warning ``Diagnostic``). Verbs that name such a block
    #: fail with the reason; the others run (lint reports W507).
    skipped: tuple[tuple[str, Any], ...] = field(eq=False, repr=False, default=())
    #: Notes of the resolved program: W120, a declaration of the user's file that shadows a
    #: used file's declaration of the same name (``compiler.lang.scope``).
    notes: tuple[Any, ...] = field(eq=False, repr=False, default=())

    @functools.cached_property
    def graph(self):
        """The link graph (networkx MultiGraph), built on first use by ``compiler.graph``."""
        return VIEWS["graph"](self)

    @functools.cached_property
    def locality(self):
        """Islands, NVLink domains, sockets and NICs of the GPUs, by ``compiler.locality``."""
        return VIEWS["locality"](self)

    @functools.cached_property
    def incidence(self) -> dict[str, list[Link]]:
        """Each device's links in declaration order, by ``compiler.ir.incidence``: what
        ``links_of`` reads when nothing has built the graph."""
        return VIEWS["incidence"](self)

    @functools.cached_property
    def adjacency(self):
        """The link graph's adjacency (device -> neighbour -> link id -> edge data, as
        networkx's ``graph._adj``) by ``compiler.ir.incidence``: built per device on first
        read, so routing needs no networkx graph (the graph's own when it is built)."""
        return VIEWS["adjacency"](self)

    @functools.cached_property
    def ends(self):
        """The links as integer arrays (device indices, link type codes, lanes) by
        ``compiler.ir.incidence``, for passes over every link."""
        return VIEWS["ends"](self)

    @functools.cached_property
    def levels(self) -> dict[str, int]:
        """Distance of every scale-out device from the NICs (``compiler.ir.summary``), computed
        once per system for lint, the cost model, the summary and the drawing (read-only)."""
        return VIEWS["levels"](self)

    @functools.cached_property
    def memo(self) -> dict[Any, Any]:
        """Per-system results later stages share between calls (the cost model's resources):
        facts of this system only, so any call may reuse them."""
        return {}

    @functools.cached_property
    def gpus(self) -> tuple[Device, ...]:
        """GPUs in world-rank order (picked by their models' kind in numpy: a pass over 1.7 M
        devices in Python took a second)."""
        from .modelcodes import model_flags

        devices = self.devices
        return tuple(map(devices.__getitem__,
                         model_flags(self, lambda m: m.kind == "gpu").nonzero()[0].tolist()))

    @functools.cached_property
    def gpu_models(self) -> dict[str, DeviceModel]:
        """The GPUs' device models by name, in the order ranks first use them."""
        return {g.model.name: g.model for g in self.gpus}

    def has_view(self, name: str) -> bool:
        """True when the derived view ``name`` (graph, locality, ...) is already built (attrs
        keeps a cached property in a slot, which is unset until first use)."""
        try:
            type(self).__dict__[name].__get__(self)
        except AttributeError:
            return False
        return True

    def device(self, device_id: str) -> Device:
        """The device with this id (KeyError if none), by the index map the integer views
        share (no second dict of every device)."""
        return self.devices[device_indices(self)[device_id]]

    def parallel(self, name: str) -> ParallelStrategy:
        """The parallel strategy called ``name`` (KeyError if none)."""
        for p in self.parallels:
            if p.name == name:
                return p
        raise KeyError(name)

    def parallel_names(self) -> list[str]:
        """Names of the parallel strategies, in declaration order."""
        return [p.name for p in self.parallels]

    def links_of(self, device_id: str) -> Iterator[Link]:
        """Every link with ``device_id`` at one end, in the graph's order; from the graph when
        something built it, else from the lighter incidence view (the graph is not built)."""
        if self.has_view("graph"):
            for _, _, link in self.graph.edges(device_id, data="link"):
                yield link
            return
        # the graph's order: by neighbour in the order each first appeared, then declaration
        by_end: dict[str, list[Link]] = {}
        for link in self.incidence.get(device_id, ()):
            by_end.setdefault(link.dst if link.src == device_id else link.src, []).append(link)
        for group in by_end.values():
            yield from group
