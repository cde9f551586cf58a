"""The network's message pipeline: how long a collective's messages across islands take when a
net plugin charges each message a cost of its own (AWS EFA through aws-ofi-nccl).

NCCL's proxy hands the net plugin one message per channel per pipeline step: a ring's chunk
of S / (n x channels) bytes (split into NCCL_BUFFSIZE / NCCL_STEPS steps when larger), a tree's
chunk (enqueue.cc's tree LL128 rule, below), and for all-to-all one message per peer and
NCCL_P2P_NET_CHUNKSIZE. aws-ofi-nccl's RDMA protocol sends each one as a libfabric write after
a control message from the receiver (messages above its 8 KiB eager limit,
``OFI_NCCL_EAGER_MAX_SIZE``), striped over the GPU's EFA devices only from 128 KiB
(``OFI_NCCL_MIN_STRIPE_SIZE``, nccl_ofi_scheduler.cpp). Such a message costs the channel's
connection ``o + s / B`` (``o``: the plugin's per-message work, ``s / B`` its wire time at the
channel's share of the NIC) and successive messages are at least ``g`` apart (the control
round trip and completion), so a connection moves one message per ``max(g, o + s / B)``.

A pipeline is as fast as its busiest connection, so the messages bound the time from below:

- **ring**: every step (2(n-1) for all-reduce, n-1 for all-gather and reduce-scatter) passes
  one chunk over every crossing, so each crossing carries steps x pieces messages;
- **tree**: an island inside the tree receives from two children and sends to its parent on
  the way up, and the reverse on the way down: three messages a chunk in each direction (one
  on two islands, where the tree is a pair);
- **NVLS-tree**: its network part's chunk (enqueue.cc's NVLS-tree rule, with the chunk sizes
  the plugin sets), one message a chunk on two islands, ``NVLS_TREE_FAN`` beyond (fitted);
- **all-to-all**: every peer on another island is a connection of its own (the gap does not
  serialise them), but the GPU's proxy serves them one after another: each costs the
  per-message work once (its further NCCL_P2P_NET_CHUNKSIZE pieces pipeline behind the first)
  and its bytes at the GPU's NICs' p2p rate.

``cost.options`` takes the larger of this bound and the links' bandwidth term. Its constants
are the transport's (transports.py; EFA's fitted, docs/cost.md); NCCL's own tuning model does
not know them, so ``auto`` chooses without them, as NCCL does.
"""

from __future__ import annotations

import math

from .constants import value
from .orders import CHANNELS_PER_NIC
from .tuning import Profile, channels_used

#: NCCL's LL128 step: NCCL_LL128_ELEMS_PER_THREAD (120) x NCCL_LL128_MAX_NTHREADS (640) x 8
#: bytes per line element = 614,400 bytes of lines a step (NCCL_STEPS = 8 of the LL128 buffer,
#: src/include/device.h), 120 of every 128 bytes data.
LL128_STEP_LINES = 614400
LL128_DATA = 120 / 128
NCCL_STEPS = 8


def _tree_ll128_chunk(size: int, channels: int, islands: int, ppn: float) -> float:
    """NCCL's tree LL128 chunk (enqueue.cc: halved while too few chunks per channel for
    nstepsLL128 = 1 + log2(nodes) + 0.1 ppn; first down to 128 KiB, then to 32 KiB), in data
    bytes."""
    chunk = LL128_STEP_LINES
    steps = 1 + int(math.log2(islands)) + 0.1 * ppn
    while size // (channels * chunk) < steps * 64 / ppn and chunk > 131072:
        chunk //= 2
    while size // (channels * chunk) < steps * 16 / ppn and chunk > 32768:
        chunk //= 2
    return chunk * LL128_DATA


def _connection(p: Profile, proto: int, ll: bool = False):
    """The transport and its per-message figures where the group's messages across islands
    cost time of their own, else None: no transport or per-message cost, one island, no NIC,
    and LL (whose latency path the transport's per-operation cost already describes) unless
    ``ll``."""
    t = p.transport
    if t is None or p.islands < 2 or not (t.msg_us or t.gap_us) or p.nic_bytes_per_s <= 0:
        return None
    if proto == 0 and not ll:
        return None
    step = LL128_STEP_LINES * LL128_DATA if proto == 1 else t.buffsize / NCCL_STEPS
    return t, t.gap_us * 1e-6, t.msg_us * 1e-6, step


def _chunked(p: Profile, gap: float, over: float, share: float, chunk: float,
             fan: int) -> float:
    """A channel's share in messages of at most ``chunk``, ``fan`` of them per chunk."""
    per_channel_bw = p.nic_bytes_per_s / CHANNELS_PER_NIC    # per (pooled) NIC
    return max(1, math.ceil(share / chunk)) * fan * max(gap, over + min(chunk, share) /
                                                         per_channel_bw)


def alltoall_seconds(p: Profile, collective: str, n: int, size: int, proto: int,
                     ll: bool = True) -> float:
    """All-to-all's least time (seconds): every peer on another island is its own connection,
    so the gap does not serialise them; the GPU's proxy does: each peer's messages cost its
    per-message work once (a peer's further pieces pipeline behind the first) and the peers'
    bytes share the GPU's NICs at the p2p fraction. ``ll``: whether LL's messages count."""
    found = _connection(p, proto, ll)
    if found is None or collective != "alltoall":
        return 0.0
    t, _, over, _ = found
    per_peer = size / n
    remote = n - p.island_ranks
    return remote * (over + per_peer / (p.nic_bytes_per_s * t.p2p_efficiency))


def ring_seconds(p: Profile, collective: str, n: int, size: int, proto: int) -> float:
    """A ring's least time: every step passes one chunk over every crossing."""
    found = _connection(p, proto)
    if found is None or collective not in ("allreduce", "allgather", "reducescatter"):
        return 0.0
    _, gap, over, step = found
    used = channels_used(p, n, size, proto, True)
    share = size / (n * used)
    pieces = max(1, math.ceil(share / step))
    s = share / pieces
    steps = 2 * (n - 1) if collective == "allreduce" else n - 1
    return steps * pieces * max(gap, over + s / (p.nic_bytes_per_s / CHANNELS_PER_NIC))


def tree_seconds(p: Profile, collective: str, n: int, size: int, proto: int) -> float:
    """A tree all-reduce's least time: three messages a chunk each way (one on two islands)."""
    found = _connection(p, proto)
    if found is None or collective != "allreduce":
        return 0.0
    _, gap, over, step = found
    used = channels_used(p, n, size, proto, False)
    chunk = _tree_ll128_chunk(size, used, p.islands, p.island_ranks) if proto == 1 else step
    return _chunked(p, gap, over, size / used, chunk, 1 if p.islands == 2 else 3)


def nvls_tree_seconds(p: Profile, collective: str, n: int, size: int, proto: int) -> float:
    """NVLS-tree's least time: its network part's chunks, ``NVLS_TREE_FAN`` messages each
    beyond two islands."""
    found = _connection(p, proto)
    if found is None or collective != "allreduce":
        return 0.0
    t, gap, over, _ = found
    chunk = _nvls_tree_chunk(size, p.channels * p.island_ranks, p.islands, t, p.nccl.release)
    return _chunked(p, gap, over, size / p.channels, chunk,
                    1 if p.islands == 2 else NVLS_TREE_FAN)


#: Messages a chunk of NVLS-tree's network part puts on a channel's busiest connection beyond
#: two islands, in each direction. *Fitted* on the p5 32-node 8 GiB all-reduce (docs/cost.md):
#: two, where the plain tree's structure gives three (two children and a parent).
NVLS_TREE_FAN = value("nvls_tree_fan")


def _nvls_tree_chunk(size: int, concurrent: int, islands: int, t,
                     release: tuple[int, ...] = (2, 30)) -> int:
    """NCCL's NVLS-tree chunk (enqueue.cc): NCCL_NVLS_CHUNKSIZE (128 KiB, or what the plugin
    sets; from 2.21, before which NVLS-tree started from the Simple step, NCCL_BUFFSIZE / 8), at
    most 64 KiB from four nodes (from 2.19.3; NCCL_NVLSTREE_MAX_CHUNKSIZE, which the plugin may
    set, replaces that cap from 2.20.3; 2.18 and 2.19.1 have no cap), then smaller while the
    message is small against channels x heads (``concurrent``). ``release``: NCCL's,
    (2, MINOR[, PATCH]); a release named without its patch ('2.19') is taken as the series'
    last, so a bare 2.19 has the cap."""
    chunk = t.nvls_chunk if release >= (2, 21) else t.buffsize // NCCL_STEPS
    # the cap is in enqueue.cc at v2.19.3-1, not at v2.19.1-1 (NVIDIA/nccl#1112 measured both)
    if (release if len(release) > 2 else (*release, 99)) >= (2, 19, 3):
        cap = t.nvls_tree_max_chunk if release >= (2, 20) else 0
        top = cap or (65536 if islands >= 4 else chunk)
        chunk = min(chunk, top)
    for times, floor in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
        if size < times * concurrent * chunk and chunk > floor:
            chunk = floor
    return chunk
