"""Every fitted or chosen constant of the collective cost model in one registry: its value,
unit, physical meaning, how it was obtained, what it would be with no fit (``prior``), the range
a refit searches, the rows and sources behind it, and where the code holds it.

Everything else the cost model uses is NCCL's own (tuning.cc, topo.h, device.h, enqueue.cc at
each release's tag) or the library's hardware data, cited next to the code. ``how`` says what a
value here is:

- ``fitted``: searched on published rows (library/calibration.csv) by
  ``benchmarks/calibration.py --loso``, which refits it on every row it moves (``rows``
  describes them, ``sources`` names their documents) and, for the leave-one-source-out figures,
  on those rows without each source in turn; where no other source constrains it, the held-out
  source is predicted with ``prior``;
- ``chosen``: an assumption or a bound, not searched: ``sources`` are what bounds or checks it.

``where`` names the places that hold the value (``module:NAME`` or ``module:NAME.key.field``,
modules relative to ``compiler.collectives``); the modules read their value from here, and
``override`` sets every place for a refit (the benchmark only: nothing at run time changes a
constant). ``tests/compiler/collectives/test_constants.py`` walks the registry: every place
resolves and holds the record's value, every fitted record names at least two sources.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator, Mapping

import attrs

_PACKAGE = __name__.rsplit(".", 1)[0]


@attrs.frozen
class Constant:
    """One constant of the collective model: what it is, what it is worth, what it rests on."""

    name: str
    value: float
    unit: str
    meaning: str
    how: str                          # "fitted" or "chosen" (module docstring)
    rows: str                         # the published rows it is fitted on (or checked against)
    sources: tuple[str, ...]          # their documents (calibration.csv's source column)
    where: tuple[str, ...]            # where the code holds it (module docstring)
    bounds: tuple[float, float] = (0.0, 0.0)   # what a refit searches
    prior: float | None = None        # the value with no row to fit it on (None: bounds' low end)
    integer: bool = False             # a count: the refit tries whole numbers only
    #: a fraction of link capacity: systems cache their routed capacities (loads.Resources),
    #: which a refit must rebuild when it changes
    capacity: bool = False
    #: the rows a refit may use, of those the constant moves: a class of rows (benchmarks/
    #: loso.py, row_class), or "single-host small" (single-node small rows whose group is one
    #: host's GPUs) for the launch, a host cost that large rows' bandwidth errors, the network's
    #: fitted costs and a multi-host NVLink domain's cross-host work would otherwise trade
    #: against; "" every row it moves
    scope: str = ""
    caveat: str = ""

    @property
    def fallback(self) -> float:
        """What the constant is when no row constrains it: ``prior``, else its lower bound."""
        return self.bounds[0] if self.prior is None else self.prior


#: The documents of the EFA rows (tests/calibration_rows.py, source_of).
_EFA_SOURCES = ("aws-samples/awsome-distributed-training",
                "crazyguitar/aws-gpu-communication-benchmark",
                "aws/aws-k8s-tester pull request 585", "NVIDIA/nccl pull request 1112",
                "stas00/ml-engineering")
#: What a refit may leave: the registered value stays where moving it to the all-sources refit
#: would move the earlier passes' analyses (docs/cost.md), which this one did not redo.
_KEPT = ("kept: the refit on every source (benchmarks/calibration.py --loso) gives {}, one step "
         "of its grid away; the leave-one-source-out figures refit it anyway")
_TCPXO = ("lessizzmore/create-a3mega-ztan-fork", "dstackai/dstack")
_OLD_LAUNCH = ("versions:VERSIONS.2.18.launch_us", "versions:VERSIONS.2.19.launch_us")
_NEW_LAUNCH = tuple(f"versions:VERSIONS.{v}.launch_us"
                    for v in ("2.21", "2.23", "2.25", "2.27", "2.28", "2.28.9", "2.29", "2.30"))

REGISTRY: tuple[Constant, ...] = (
    Constant("launch_2.18", 10.0, "us",
             "what an nccl-tests call costs besides the hops and the bytes on NCCL 2.18-2.20 "
             "(kernel launch and host enqueue), on top of all of tuning.cc's base latency",
             "chosen", "none left: it was fitted on Azure's HGX H100 1 KiB row (NCCL 2.18), "
             "excluded since as a single-process -g 8 run; no other single-host small row "
             "states a 2.18-2.20 release (the DGX A100 rows of stas00/ml-engineering state none)",
             ("Azure/AI-benchmarking-guide",), _OLD_LAUNCH,
             caveat="kept from an excluded row: no source with a stated 2.18-2.20 release "
                    "measures a single-host small call"),
    Constant("launch_2.21", 7.5, "us",
             "what an nccl-tests call costs besides the hops and the bytes from NCCL 2.21 (none "
             "of tuning.cc's base latency: the host path got faster): the kernel launch and "
             "host enqueue of back-to-back calls",
             "fitted", "small rows of one host's GPUs, NCCL 2.21 and later and unstated releases "
             "(costed as the latest); at 8 B a ring all-reduce's empty LL steps do not wait "
             "(algos/ring.py, idle), so the 8 B and the 1-4 KiB rows of both sources ask for "
             "the same launch (7-8 us)",
             ("aws-samples/awsome-distributed-training", "deepseek-ai/DeepEP issue 303"),
             _NEW_LAUNCH, (0.0, 20.0), prior=0.0, scope="single-host small"),
    Constant("ll_channel_gbs", 2.5, "GB/s busbw",
             "what one LL channel moves on NCCL 2.18-2.20 (NCCL's model lets LL use every channel "
             "at a quarter of the bus; the DGX A100 rows take four times longer)",
             "fitted", "LL rows of NCCL 2.18-2.20 (the DGX A100 32 KiB and 1 MiB rows)",
             ("stas00/ml-engineering",),
             ("tuning:LL_CHANNEL_GBS", "algos.ring:LL_CHANNEL_GBS"), (0.5, 20.0), prior=20.0,
             caveat="one source, whose release is not stated; its refit there (1.96) would turn "
                    "NCCL 2.18's choice at 32 KiB on a DGX A100 to LL128, so 2.5 is kept"),
    Constant("nvls_channels", 8, "channels",
             "NVLS's bandwidth is scaled by (C-1)/C for the channel NCCL keeps for "
             "synchronisation (nvls.cc)", "fitted", "NVLS and NVLS-tree rows",
             ("NVIDIA/nccl issue 1455", "coreweave/nccl-tests",
              "aws-samples/awsome-distributed-training",
              "crazyguitar/aws-gpu-communication-benchmark", "Azure/AI-benchmarking-guide",
              "oracle-quickstart/oci-hpc-oke"),
             ("tuning:NVLS_CHANNELS", "algos.nvls:NVLS_CHANNELS", "algos.nvlstree:NVLS_CHANNELS"),
             (2, 32), prior=1e9, integer=True),
    Constant("efa_op_us", 46.0, "us",
             "aws-ofi-nccl's fixed cost of an operation that crosses EFA (the proxy's progress "
             "and completion polling, libfabric over SRD)", "fitted",
             "EFA rows (p5, p5en, p4de) the per-operation cost moves: small messages across nodes",
             _EFA_SOURCES,
             ("transports:TRANSPORTS.efa.op_us", "transports:TRANSPORTS.efa_sendrecv.op_us"),
             (0.0, 150.0), prior=0.0, caveat=_KEPT.format("52.5 us")),
    Constant("efa_msg_us", 4.5, "us",
             "aws-ofi-nccl's work per message on top of its wire time (RDMA protocol, p5 and "
             "later)", "fitted", "EFA rows whose time the message pipeline bounds",
             _EFA_SOURCES, ("transports:EFA_MSG_US", "transports:TRANSPORTS.efa.msg_us"),
             (0.0, 20.0), prior=0.0),
    Constant("efa_gap_us", 9.0, "us",
             "one EFA round trip a transfer waits for: the least spacing of two messages on one "
             "connection of the RDMA protocol (p5 and later: the receiver's control message "
             "before each write above 8 KiB, and completion), and the wait of every network step "
             "of the SENDRECV protocol (p4d, p4de: the send's completion); the same round trip, "
             "so one figure (it was a separate 15 us step cost fitted on the p4de 8 B row alone)",
             "fitted", "EFA rows whose time the message pipeline bounds, and p4de rows",
             _EFA_SOURCES,
             ("transports:EFA_GAP_US", "transports:TRANSPORTS.efa.gap_us",
              "transports:TRANSPORTS.efa_sendrecv.step_us"), (0.0, 30.0), prior=0.0,
             caveat=_KEPT.format("9.75 us")),
    Constant("efa_p2p", 0.875, "fraction",
             "what all-to-all's concurrent peers reach of EFA's rate", "fitted",
             "EFA all-to-all rows", ("crazyguitar/aws-gpu-communication-benchmark",),
             ("transports:EFA_P2P", "transports:TRANSPORTS.efa.p2p_efficiency",
              "transports:TRANSPORTS.efa_sendrecv.p2p_efficiency"), (0.5, 1.0),
             prior=1.0, caveat="one source: the only published EFA all-to-all rows; without them "
             "it is its prior, 1 (InfiniBand's all-to-all reaches a NIC's rate, "
             "NVIDIA/nccl-tests#267)"),
    Constant("tcpx_p2p", 0.87, "fraction",
             "what all-to-all's concurrent peers reach of TCPX's and TCPXO's rate", "chosen",
             "none: an assumption, no published TCPX or TCPXO all-to-all (EFA's first fitted "
             "all-to-all fraction, borrowed)", (),
             ("transports:TRANSPORTS.tcpx.p2p_efficiency",
              "transports:TRANSPORTS.tcpxo.p2p_efficiency"),
             caveat="no row moves it: every published a3-mega row is an all-reduce or an "
                    "all-gather"),
    Constant("nvls_tree_fan", 2, "messages",
             "messages a chunk of NVLS-tree's network part puts on a channel's busiest EFA "
             "connection beyond two islands", "fitted", "EFA NVLS-tree rows beyond two nodes",
             ("NVIDIA/nccl pull request 1112", "crazyguitar/aws-gpu-communication-benchmark",
              "stas00/ml-engineering"), ("messages:NVLS_TREE_FAN",), (1, 3), prior=3,
             integer=True),
    Constant("tcpxo_op_us", 97.5, "us",
             "Google's TCPXO plugin's fixed cost of an operation across nodes", "fitted",
             "a3-mega rows: the all-reduce sweep's and the all-gather sweep's small sizes",
             _TCPXO, ("transports:TRANSPORTS.tcpxo.op_us", "transports:TRANSPORTS.tcpx.op_us"),
             (0.0, 300.0), prior=0.0),
    Constant("tcpxo_step_us", 350.0, "us",
             "TCPXO's cost per network step of LL128 and Simple, which trees and NVLS-tree pay "
             "(a ring hides it: ring_step_share)", "fitted",
             "a3-mega all-reduce rows (trees and NVLS-tree)",
             ("lessizzmore/create-a3mega-ztan-fork",),
             ("transports:TRANSPORTS.tcpxo.step_us", "transports:TRANSPORTS.tcpx.step_us"),
             (0.0, 1000.0), prior=0.0,
             caveat="one source: the only published TCPXO trees (dstack's rows are rings)"),
    Constant("tcpxo_efficiency", 0.93, "fraction", "what TCPXO reaches of the NICs' line rate",
             "fitted", "a3-mega large rows", _TCPXO,
             ("transports:TRANSPORTS.tcpxo.efficiency", "transports:TRANSPORTS.tcpx.efficiency"),
             (0.6, 1.0), prior=0.96, capacity=True),
    Constant("mnnvl_tree_credit", 1 / 3, "fraction",
             "the share of the tree's bandwidth NCCL's own choice credits across multi-host "
             "NVLink islands", "chosen", "CoreWeave's 20-rack runs bound it below 0.36",
             ("coreweave/nccl-tests", "NVIDIA/nccl issue 1801"), ("algos.tree:MNNVL_TREE_CREDIT",),
             caveat="a bound, not a point: the value inside it is chosen"),
    Constant("ring_step_share", 0.0, "fraction",
             "the share of a transport's per-step cost a ring exposes: none, a ring's pipeline "
             "runs a step's transport work while the next chunk is in flight (trees and "
             "NVLS-tree, whose few network steps wait on each other, pay it whole)", "chosen",
             "the TCPXO all-gather rings (dstack's a3-mega run: +121 % at 8 MiB with half the "
             "step cost exposed, +11 % with none); no other source's rings pay a step cost",
             ("dstackai/dstack",),
             ("algos.ring:RING_STEP_SHARE", "algos.hierarchical:RING_STEP_SHARE"),
             caveat="the limit of the pipeline (0), not searched; 0.5 was an assumption no row "
                    "constrained until a TCPXO ring was published"),
    Constant("nvls_fill_loops", 2, "loops",
             "loops of the one-host NVLS pipeline that run alone (fill and drain)", "chosen",
             "none: an assumption", (), ("tuning:NVLS_FILL_LOOPS", "algos.nvls:NVLS_FILL_LOOPS")),
    Constant("graph_saves_us", 3.0, "us", "what a CUDA-graph replay saves of a call's fixed cost",
             "chosen", "none (no published -G row)", (),
             ("versions:GRAPH_SAVES_US", "cost:GRAPH_SAVES_US")),
)
BY_NAME: Mapping[str, Constant] = {c.name: c for c in REGISTRY}


def value(name: str) -> float:
    """The registered value of constant ``name``."""
    return BY_NAME[name].value


def _split(place: str) -> tuple[str, list[str]]:
    module, path = place.split(":")
    # a version key holds dots ('2.28.9'): the field is the last part, the attribute the first
    head, *rest = path.split(".")
    if len(rest) >= 2:
        rest = [".".join(rest[:-1]), rest[-1]]
    return f"{_PACKAGE}.{module}", [head, *rest]


def read(place: str):
    """What the code holds at ``place`` now."""
    module, path = _split(place)
    obj = getattr(importlib.import_module(module), path[0])
    if len(path) == 3:
        obj = getattr(obj[path[1]], path[2])
    return obj


def _write(place: str, new) -> None:
    module, path = _split(place)
    mod = importlib.import_module(module)
    if len(path) == 1:
        setattr(mod, path[0], new)
        return
    table = getattr(mod, path[0])
    table[path[1]] = attrs.evolve(table[path[1]], **{path[2]: new})


@contextlib.contextmanager
def override(values: Mapping[str, float]) -> Iterator[None]:
    """Every place of each named constant set to the value given, and put back on exit: how a
    refit tries a value (benchmarks/calibration.py --loso)."""
    saved = []
    try:
        for name, new in values.items():
            for place in BY_NAME[name].where:
                saved.append((place, read(place)))
                _write(place, new)
        yield
    finally:
        for place, old in reversed(saved):
            _write(place, old)
