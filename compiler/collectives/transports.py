"""What each network transport adds to a collective: a fixed cost per operation that crosses
the network, a cost per network step or per message (messages.py), and the fraction of the
NICs' line rate NCCL reaches.

NCCL's tuning tables (tuning.cc hwLat[NET]) describe its own InfiniBand/RoCE transport; other
transports come through net plugins with their own software path: AWS EFA through aws-ofi-nccl
(libfabric over SRD), Google's GPUDirect-TCPX/TCPXO through their TCP plugins, whose per-call
proxy progress and flow set-up cost tens of microseconds. A NIC model's ``transport`` names it
(devices.topo); an InfiniBand NIC without one is ``ib``, an Ethernet NIC ``roce``.

*Fitted* figures live in the registry (constants.py: value, rows, sources; docs/cost.md,
Calibration): EFA's on the p5, p5en and p4de rows of four sources, TCPXO's on two a3-megagpu-8g
sweeps (an all-reduce and an all-gather). InfiniBand, RoCE and Spectrum-X keep NCCL's own
figures and the 96 % of line rate CX-7 NDR reaches (nccl-tests issues 267, 290).
"""

from __future__ import annotations

import attrs

from .constants import value
from .versions import numbers


@attrs.frozen
class Transport:
    """One transport's figures."""

    name: str
    op_us: float          # once per operation that crosses the network (every protocol)
    step_us: float        # per network step of LL128 and Simple: the plugin's bulk path
    efficiency: float     # of the NIC links' declared rate
    p2p_efficiency: float = 1.0   # of that, what all-to-all's concurrent peers reach
    declared_us: float = 0.0      # the latency the net plugin declares to NCCL (props.latency)
    protocols: tuple[str, ...] = ("LL", "LL128", "Simple")   # what the plugin lets NCCL run
    msg_us: float = 0.0           # per message across the network, with its wire time (messages.py)
    gap_us: float = 0.0           # least spacing of a connection's messages (messages.py)
    buffsize: int = 4 << 20       # NCCL_BUFFSIZE: NCCL's default, or what the plugin sets
    p2p_chunk: int = 128 << 10    # NCCL_P2P_NET_CHUNKSIZE: NCCL's default, or the plugin's
    nvls_chunk: int = 128 << 10   # NCCL_NVLS_CHUNKSIZE: NCCL's default, or the plugin's
    nvls_tree_max_chunk: int = 0  # NCCL_NVLSTREE_MAX_CHUNKSIZE the plugin sets (0: NCCL's rule)
    tuner: bool = True            # the plugin release ships the tuner the NIC model names
    plugin: str = ""              # the net plugin release these settings are from ("": latest)


#: EFA (aws-ofi-nccl's RDMA protocol on p5 and later): a per-operation cost, and a bulk path
#: described per message (messages.py), not per step: a message costs EFA_MSG_US on top of its
#: wire time and follows the last one on its connection no sooner than EFA_GAP_US. All three,
#: and EFA_P2P (all-to-all's share of the rate), are *fitted* (constants.py: first on single
#: rows, the p5 8 B, the 8-node 256 MiB all-reduce, the 8-node 32 MiB all-gather and the 2-node
#: 2 GiB all-to-all; the refit on every EFA row of four sources lands within a grid step of
#: them, and EFA_P2P at 0.875). The line-rate fraction is InfiniBand's 96 %, not fitted.
#: NCCL_BUFFSIZE 8 MiB, NCCL_P2P_NET_CHUNKSIZE, NCCL_NVLS_CHUNKSIZE and
#: NCCL_NVLSTREE_MAX_CHUNKSIZE 512 KiB are what aws-ofi-nccl sets on p4d and later
#: (src/platform-aws.cpp, platform_data_map .env). TCPXO's per-operation cost and line-rate
#: fraction are refit on both published a3-mega sweeps, its per-step cost on the all-reduce
#: sweep's trees (a ring hides it; constants.py). TCPX is given TCPXO's figures, and both the p2p
#: fraction ``tcpx_p2p`` (chosen, constants.py: no published all-to-all on either). EFA over
#: SENDRECV (p4d, p4de) takes EFA's fitted all-to-all fraction (it was a 0.94 of no record).
#: declared_us is not fitted: it is what the net plugin reports to NCCL as its latency, which
#: NCCL's own tuning model adds to every network step when it chooses an algorithm and protocol
#: (tuning.cc: interLat += graphs[a]->latencyInter, once more for Simple, "the flush extra
#: latency"; search.cc: latencyInter = net->net.latency). NCCL's IB and socket transports
#: declare 0 ("Not set", net_ib/init.cc); aws-ofi-nccl declares 75 us on p4d, p4de and p5 and
#: later (src/platform-aws.c, platform_data_map .latency). The TCPX/TCPXO plugins' declaration
#: is not public here; 0 is assumed.
#: efa_sendrecv is EFA as aws-ofi-nccl drives it on p4d and p4de: its SENDRECV protocol (libfabric
#: tagged messages; the RDMA-write protocol is for p5 and later, platform-aws.c
#: default_protocol) and NCCL_PROTO=simple, which the plugin sets on those instances because LL
#: and LL128 are not known to be safe there (platform-aws.c force_proto_simple). It keeps EFA's
#: per-operation cost and declared latency; each network step waits for the send's completion,
#: one EFA round trip, the same wait that spaces the RDMA protocol's messages (EFA_GAP_US: the
#: per-step cost was a separate 15 us fitted on the p4de 8 B row alone, issue 41). Its line-rate
#: fraction is EFA's (InfiniBand's 96 %): a 91 % was fitted on the one p4de run's large rows,
#: one source, which left out keeps within 7 % at 96 % (256 MiB +4.2 %, 1 GiB +7.1 %, 2 GiB
#: +5.4 %, benchmarks/calibration.py --loso), so no constant of its own.
EFA_MSG_US = value("efa_msg_us")
EFA_GAP_US = value("efa_gap_us")
EFA_P2P = value("efa_p2p")
TRANSPORTS = {
    "ib": Transport("ib", 0.0, 0.0, 0.96),
    "roce": Transport("roce", 0.0, 0.0, 0.96),
    "spectrum_x": Transport("spectrum_x", 0.0, 0.0, 0.96),
    "efa": Transport("efa", value("efa_op_us"), 0.0, 0.96, EFA_P2P, 75.0, msg_us=EFA_MSG_US,
                     gap_us=EFA_GAP_US, buffsize=8 << 20, p2p_chunk=512 << 10,
                     nvls_chunk=512 << 10, nvls_tree_max_chunk=512 << 10),
    "efa_sendrecv": Transport("efa_sendrecv", value("efa_op_us"), value("efa_gap_us"),
                              0.96, EFA_P2P, 75.0, ("Simple",)),
    "tcpx": Transport("tcpx", value("tcpxo_op_us"), value("tcpxo_step_us"),
                      value("tcpxo_efficiency"), value("tcpx_p2p")),
    "tcpxo": Transport("tcpxo", value("tcpxo_op_us"), value("tcpxo_step_us"),
                       value("tcpxo_efficiency"), value("tcpx_p2p")),
}
DEFAULT = {"infiniband": "ib", "ethernet": "roce"}


#: aws-ofi-nccl releases whose settings differ from the latest, oldest first: (first release,
#: what changes), read from the plugin's tags (aws/aws-ofi-nccl): the NCCL settings
#: platform-aws sets on p5 (NCCL_NVLSTREE_MAX_CHUNKSIZE 512 KiB from v1.8.0-aws; NCCL_BUFFSIZE
#: 8 MiB, NCCL_P2P_NET_CHUNKSIZE and NCCL_NVLS_CHUNKSIZE 512 KiB from v1.16.0; before them
#: NCCL's defaults) and the tuner (from v1.8.0-aws, RELEASENOTES.md: "a tuner component ...
#: picks the optimal NCCL algorithm and protocol"). The rail scheduler changed too
#: (ROUND_ROBIN_THRESHOLD 8 KiB up to v1.7.3-aws, every larger message split over all four
#: rails; 256 KiB from v1.7.4-aws; MIN_STRIPE_SIZE 128 KiB from v1.13.0-aws), which the model
#: does not charge: a per-stripe cost contradicts the current plugin's fit rows (docs/cost.md).
_NCCL_DEFAULTS = {k: attrs.fields_dict(Transport)[k].default
                  for k in ("buffsize", "p2p_chunk", "nvls_chunk")}   # NCCL's own
EFA_RELEASES = (
    ((1, 7), dict(_NCCL_DEFAULTS, nvls_tree_max_chunk=0, tuner=False)),
    ((1, 8), dict(_NCCL_DEFAULTS)),
    ((1, 16), {}),
)


class UnknownPlugin(ValueError):
    """A net plugin release the profiles do not cover."""


def plugin_release(version: str) -> tuple[int, ...]:
    """'1.7.3', 'v1.7.3-aws' or '1.16' as a tuple of ints."""
    release = numbers(version)
    if not release:
        raise UnknownPlugin(f"aws-ofi-nccl release '{version}': give it as 1.MINOR[.PATCH], "
                            "e.g. 1.7.3")
    if len(release) < 2 or release < (1, 7):
        raise UnknownPlugin(f"aws-ofi-nccl {version}: the profiles start at 1.7 (the first "
                            "release with the RDMA protocol on p5)")
    return release


def with_plugin(t: Transport | None, version: str | None) -> Transport | None:
    """``t`` as aws-ofi-nccl ``version`` drives it (None or 'latest': unchanged). Only the
    ``efa`` transport (the RDMA protocol) changes: ``efa_sendrecv`` is costed per network step,
    which the plugin's chunk settings do not enter."""
    if version in (None, "", "latest"):
        return t
    release = plugin_release(version)
    if t is None or t.name != "efa":
        return t
    chosen = {}
    for first, changes in EFA_RELEASES:
        if release >= first:
            chosen = changes
    return attrs.evolve(t, plugin=".".join(map(str, release)), **chosen)


def of_nic(model, link_cls: str) -> Transport:
    """The transport of a NIC of ``model`` on links of class ``link_cls``."""
    name = model.attr("transport") if model is not None else None
    return TRANSPORTS[name or DEFAULT.get(link_cls, "ib")]
