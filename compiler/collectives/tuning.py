"""NCCL's tuning model (src/graph/tuning.cc and friends) as the cost model uses it: base and
per-hop latencies, protocol efficiencies and ceilings, NVLS efficiency, and nccl-tests' bus
bandwidth factors. Numbers are NCCL's unless a comment says *fitted* (docs/cost.md)."""

from __future__ import annotations

import attrs

from .constants import value
from .transports import Transport
from .versions import LATEST, VERSIONS, Nccl

PROTOCOLS = ("LL", "LL128", "Simple")
#: Base latencies in us per algorithm and protocol (LL, LL128, Simple), tuning.cc baseLat.
BASE_LAT = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0)}
#: Per-hop hardware latencies in us, tuning.cc hwLat[NVLINK | PCI | NET][TREE | RING].
HW_LAT = {("nvlink", "tree"): (0.6, 1.25, 4.0), ("nvlink", "ring"): (0.6, 1.9, 3.4),
          ("pci", "tree"): (1.0, 1.9, 4.0), ("pci", "ring"): (1.0, 2.5, 5.7),
          ("net", "tree"): (5.0, 8.5, 14.0), ("net", "ring"): (2.7, 4.0, 14.0)}
NVLS_LAT = 25.0          # us, hwLat[NVLINK][NVLS][Simple]; paid once per host, see docs/cost.md
NVLS_LAT_NET = 18.0      # us, hwLat[NET][NVLS][Simple]
#: llMaxBws (GB/s) by architecture index and node count (1, 2, more), tuning.cc.
LL_MAX_BW = {1: (87.7, 22.5, 19.0), 2: (141.0, 45.0, 35.0), 3: (282.0, 90.0, 70.0),
             0: (39.0, 39.0, 20.4)}
#: Per-channel ceilings (GB/s) of LL128 on rings, tuning.cc perChMaxRingLL128Bws, single node.
LL128_RING_CH = {0: 20.0, 1: 20.0, 2: 36.7, 3: 40.0}   # Blackwell: versions.BLACKWELL, per release
NVLS_EFFICIENCY = {2: 0.85, 3: 0.74}       # nvlsEfficiency, Hopper and Blackwell
#: Fitted: NCCL scales NVLS by (C-1)/C for the channel it keeps for synchronisation; C = 8 fits
#: HGX H100, HGX B200 and NVL72 published runs (docs/cost.md).
NVLS_CHANNELS = value("nvls_channels")
#: Channels a message keeps busy, as NCCL's enqueue.cc picks them: it drops channels while
#: bytes < channels x threads x threshold (src/include/device.h: NCCL_{LL,LL128,SIMPLE}_
#: THREAD_THRESHOLD 8, 8, 64 bytes; NCCL_{LL,LL128,SIMPLE}_MAX_NTHREADS 512, 640, 512), the
#: ring's LL threshold, and only that one, multiplied by the rank count (tuning.cc:
#: ``comm->threadThresholds[NCCL_ALGO_RING][NCCL_PROTO_LL] *= nRanks``).
THREAD_BYTES = (8 * 512, 8 * 640, 64 * 512)
#: ... and a channel pipelines in buffer steps (NCCL_BUFFSIZE 4 MiB over NCCL_STEPS 8 = 512 KiB
#: for Simple; LL128's buffer steps hold about as much), so Simple and LL128 open one channel
#: per step of data. LL's step is 32 KiB of data, below its thread threshold on rings.
STEP_BYTES = (0, 512 * 1024, 512 * 1024)
#: Fitted: what one LL channel moves (busbw, GB/s). NCCL's model lets LL use every channel at
#: a quarter of the bus bandwidth; the published DGX A100 1 MiB and 32 KiB rows (101.9 and
#: 43.8 us) take 4x longer than that, which a per-channel LL ceiling reproduces (docs/cost.md).
LL_CHANNEL_GBS = value("ll_channel_gbs")
#: Tree all-reduce bandwidth correction by log2(size / 64 B), NCCL's cost_model.cc
#: treeCorrectionFactor ("trees are not perfectly sticking to the model for medium sizes").
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
     1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
     1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9,
     .9))
#: Per-channel tree ceilings (GB/s) for 1, 2 and 4+ nodes, tuning.cc perChMaxTreeBws (Simple)
#: and perChMaxTreeLL128Bws, by architecture index; Blackwell doubles Hopper's.
TREE_CH = {0: (26.5, 18.5, 10.0), 1: (24.0, 23.6, 17.8), 2: (38.7, 41.4, 36.0),
           3: (77.4, 82.8, 72.0)}
TREE_LL128_CH = {0: (20.0, 20.0, 20.0), 1: (20.0, 20.0, 20.0), 2: (36.7, 36.7, 29.0),
                 3: (73.4, 73.4, 58.0)}
#: CollNet chain's hwLat (us) per NVLink hop and for the network trip, tuning.cc (Simple).
COLLNET_CHAIN_LAT = (2.8, 30.0)
#: busbw = algbw x factor(n), as nccl-tests defines it (doc/PERFORMANCE.md).
BUS_FACTOR = {"allreduce": lambda n: 2 * (n - 1) / n, "reducescatter": lambda n: (n - 1) / n,
              "allgather": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n,
              "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "sendrecv": lambda n: 1.0}


@attrs.frozen
class Profile:
    """What the size does not change: per-byte phase times, hop counts and the bottleneck."""

    algorithm: str
    seconds_per_byte: float      # Simple protocol, every channel busy
    bottleneck: tuple[str, str]  # (link class, link id)
    intra: str                   # "nvlink" or "pci": the class of hops inside islands
    islands: int
    hosts: int
    channels: int                # NCCL channels at full size (NVLink lanes per GPU, >= 2)
    arch: int
    classes: tuple[str, ...]     # link classes the transfers cross
    intra_declared: float = 0.0  # us: the file's extra latency of a hop inside an island
    net_declared: float = 0.0    # us: the file's extra latency of a hop between islands
    island_ranks: int = 1        # the group's ranks in one island
    nccl: Nccl = VERSIONS[LATEST]
    transport: Transport | None = None   # the network's, when the group crosses islands
    select_seconds_per_byte: float | None = None  # NVLS-tree's network part as NCCL charges it
    net_seconds_per_byte: float | None = None     # NVLS-tree's network part (seconds_per_byte:
                                                  # its NVLS part)
    nic_bytes_per_s: float = 0.0  # one GPU's (pooled) NICs at the transport's fraction
    credit: float = 1.0           # of the bandwidth NCCL's own choice credits (Algorithm.credit)
    net_overhead: float = 1.0     # us, tuning.cc getNetOverhead for the group's host CPU


#: tuning.cc getNetOverhead (us, v2.18 to 2.30): what a ring step across nodes costs the host at
#: least, by CPU vendor (x86 AMD 2, x86 Intel and every other CPU 1), three times for Simple;
#: a multi-node ring's steps inside a node take the larger of it and their hop
#: (``intraLat = std::max(intraLat, netOverhead)``).
NET_OVERHEAD_US = {"amd": 2.0}


def net_overhead_us(vendor: str | None, arch: str | None) -> float:
    """getNetOverhead for a host CPU's vendor and architecture."""
    x86 = (arch or "").startswith("x86")
    return NET_OVERHEAD_US.get((vendor or "").lower(), 1.0) if x86 else 1.0


def arch_index(sm: int | None) -> int:
    """NCCL's compute-capability index: 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell."""
    sm = 90 if sm is None else int(sm)
    return 0 if sm < 80 else 1 if sm < 90 else 2 if sm < 100 else 3


#: NCCL's NVLS channels on one node (src/transport/nvls.cc: NVLS_NCHANNELS_SM90 16,
#: NVLS_NCHANNELS_SM100 32), its default NCCL_NVLS_CHUNKSIZE, and NCCL_MAX_NVLS_ARITY, the most
#: heads an NVLS graph has (search.cc: one a GPU, at most 32).
NVLS_NCHANNELS = {2: 16, 3: 32}
NVLS_CHUNK = 128 * 1024
NVLS_MAX_HEADS = 32
#: Loops of the NVLS pipeline that run alone: the first loop's reduce before any broadcast and
#: the last loop's broadcast after every reduce (an assumption, not fitted: fill and drain).
NVLS_FILL_LOOPS = value("nvls_fill_loops")


def nvls_chunk(size: int, concurrent: int) -> int:
    """NCCL's NVLS all-reduce chunk (enqueue.cc): NCCL_NVLS_CHUNKSIZE, then 64 / 32 / 16 KiB
    while the message is under 64 / 8 / 2 x channels x heads (``concurrent``) x chunk."""
    chunk = NVLS_CHUNK
    for times, floor in ((64, 65536), (8, 32768), (2, 16384)):
        if size < times * concurrent * chunk and chunk > floor:
            chunk = floor
    return chunk


def channels_used(p: Profile, n: int, size: int, proto: int, scaled: bool = False) -> float:
    """Channels NCCL keeps busy for ``size`` bytes: fewer for small messages (THREAD_BYTES;
    ``scaled``: a ring, whose LL threshold NCCL multiplies by the rank count, tuning.cc).

    NCCL drops whole channels (enqueue.cc: ``while (nBytes < nc * nt * threadThreshold)
    nc--``); the model takes the fraction ``size / per`` instead, which equals NCCL's count
    wherever the size is a whole number of thresholds and lies below it in between, so that
    the bytes per channel, and the bandwidth term, never fall as the size grows. With whole
    channels a ring all-reduce on 9,216 ranks ran 384 MiB faster than 256 MiB (7 and 10
    channels for LL), and a size just under two thresholds took twice as long per byte as
    one at two."""
    per = max(THREAD_BYTES[proto] * (n if scaled and proto == 0 else 1), STEP_BYTES[proto])
    return min(float(p.channels), max(1.0, size / per))


def ll_cap(p: Profile) -> float:
    """NCCL's LL ceiling (llMaxBws, GB/s) for the profile's architecture and node count."""
    nodes = min(p.islands, 3) - 1
    return p.nccl.ll_max_hopper[nodes] * (2 if p.arch == 3 else 1) if p.arch >= 2 \
        else LL_MAX_BW[p.arch][nodes]


def per_channel(p: Profile, which: int) -> float:
    """A per-channel ceiling (GB/s) for the profile's architecture and node count: ``which``
    0 ring LL128, 1 tree LL128, 2 tree Simple; Blackwell's from the release's own rows
    (``Nccl.blackwell``)."""
    nodes = min(p.islands, 3) - 1
    if p.arch == 3 and p.nccl.blackwell is not None:
        return p.nccl.blackwell[which][nodes]
    if which == 0:
        return LL128_RING_CH[p.arch]
    return (TREE_LL128_CH if which == 1 else TREE_CH)[p.arch][nodes]


def tree_hops(p: Profile, kind: str, proto: int) -> tuple[float, float, float]:
    """NCCL's base latency and per-hop latencies inside and between islands (us) for its
    ``kind`` of table row ("tree" or "ring"), with what the file declares beyond the reference
    links NCCL's figures cover."""
    v = p.nccl
    intra = HW_LAT[(p.intra, kind)][proto] + p.intra_declared
    if (p.intra, kind, proto) == ("nvlink", "tree", 2):
        intra = v.tree_simple_nvlink + p.intra_declared
    net = HW_LAT[("net", kind)][proto] + p.net_declared
    return BASE_LAT[kind][proto] * v.base_scale, intra, net


