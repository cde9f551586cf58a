"""NCCL version profiles: the tuning tables that changed between releases, and the fixed cost
of a call as nccl-tests measures it with each.

Every table value is NCCL's own, read from ``src/graph/tuning.cc`` at the release's tag
(NVIDIA/nccl v2.18.3-1, v2.19.3-1, v2.20.5-1, v2.21.5-1, v2.23.4-1, v2.25.1-1, v2.27.7-1,
v2.28.3-1, v2.28.9-1, v2.30.7-1; the lines are cited at ``VERSIONS``); ``launch`` is *fitted*
(docs/cost.md): NCCL's base latencies are a selection aid, not what a call costs, and the host
side of a launch got cheaper across releases. ``--cuda-graph`` replays a captured graph
(nccl-tests ``-G``), which skips most of the host enqueue path (``GRAPH_SAVES_US``).
"""

from __future__ import annotations

import attrs

from .constants import value

#: What a CUDA-graph replay saves of a call's fixed cost, in us: NCCL's host-side enqueue and
#: the kernel launch it replaces. An assumption from nccl-tests' -G option documentation (graph
#: launches amortise the launch); no published -G row calibrates it (docs/cost.md).
GRAPH_SAVES_US = value("graph_saves_us")


class UnknownVersion(ValueError):
    """A version the profiles do not cover."""


def numbers(text: str) -> tuple[int, ...]:
    """'v2.18.5-1', '1.7.3-aws' or '2.27' as a tuple of ints (what comes before a '-' suffix);
    () when that is not dotted numbers. NCCL's and the net plugin's releases parse alike."""
    try:
        return tuple(int(p) for p in text.strip().lstrip("v").split("-")[0].split("."))
    except ValueError:
        return ()


def release(version: str) -> tuple[int, ...]:
    """'2.27', '2.27.7' or '2.18.5-1' as a tuple of ints, (2, 27, 7); the one parse of an NCCL
    version every comparison uses."""
    found = numbers(version)
    if len(found) < 2:
        raise UnknownVersion(f"NCCL version '{version}': give it as 2.MINOR, e.g. 2.27")
    return found


@attrs.frozen
class Nccl:
    """What the cost model reads from one NCCL release."""

    version: str
    launch_us: float            # fitted: launch + host enqueue + the base latency really paid
    base_scale: float           # fraction of tuning.cc's baseLat that ``launch_us`` leaves out
    tree_simple_nvlink: float   # hwLat[NVLINK][TREE][SIMPLE]
    nvls_lat: float             # hwLat[NVLINK][NVLS][SIMPLE] (2.18: its baseLat, 23)
    nvls_tree_net: float        # hwLat[NET][NVLS_TREE][SIMPLE]
    ll_max_hopper: tuple[float, float, float]   # llMaxBws[Hopper] N1 / N2 / N4
    blackwell_tables: bool      # Blackwell rows of the per-channel tables (2.25+)
    nvls_tree_ch: tuple[float, float] | None    # perChMaxNVLSTreeBws Hopper N2 / N4 (2.28+)
    ll_channel_cap: bool = True  # the fitted 2.5 GB/s per LL channel (tuning.LL_CHANNEL_GBS)
    #: Blackwell's per-channel ceilings (GB/s) for 1, 2 and 4+ nodes: perChMaxRingLL128Bws,
    #: perChMaxTreeLL128Bws and perChMaxTreeBws' Blackwell rows (2.25+; None: no Blackwell rows)
    blackwell: tuple[tuple[float, float, float], ...] | None = None
    #: the release asked for, (2, MINOR[, PATCH]) (``nccl``; by default the profile's own):
    #: what a rule between two profiles reads (NCCL_NVLSTREE_MAX_CHUNKSIZE exists from 2.20,
    #: inside the 2.19 profile)
    release: tuple[int, ...] = attrs.field(
        default=attrs.Factory(lambda self: release(self.version), takes_self=True))

    @property
    def note(self) -> str:
        """What the model cannot say of the release asked for: one older than the oldest
        profile is costed with that profile's tables, and with only the algorithms the
        release had (algos: each record's releases), never a newer one; one newer than the
        latest profile with the latest's tables and algorithms."""
        asked = ".".join(str(x) for x in self.release[:2])
        if self.release[:2] > release(LATEST)[:2]:
            return (f"NCCL {asked} is newer than the model's latest tables ({LATEST}): its "
                    f"algorithms, latencies and launch cost are {LATEST}'s")
        if self.release >= release(OLDEST):
            return ""
        return (f"NCCL {asked} is older than the model's oldest tables ({OLDEST}): its "
                f"latencies and launch cost are {OLDEST}'s; its algorithms are {asked}'s")

    @property
    def nvls_tree_declared(self) -> bool:
        """NVLS-tree's latency as tuning.cc charges it: from 2.19, baseLat + intraLat + 2
        log2(nodes) x interLat, and interLat holds the net plugin's declared latency (twice for
        Simple); in 2.18 (v2.18.3-1, v2.18.5-1) baseLat + 2 (nodes - 1) x
        hwLat[NET][NVLS_TREE], without it."""
        return self.release >= (2, 19)

    @property
    def ring_ll_share(self) -> float | None:
        """The share of a ring's bus bandwidth tuning.cc credits LL with: half from 2.21 (LL
        moves 8 data bytes in every 16-byte line; v2.21.5-1 to v2.30.7-1, ``busBw *
        .5``); None up to 2.20, whose rule is a quarter for all-reduce, reduce and every
        multi-node ring, a third otherwise (v2.10.3-1 to v2.20.5-1, ``1.0/4.0 : 1.0/3.0``)."""
        return 0.5 if self.release >= (2, 21) else None


#: launch_us and base_scale: 10 us plus all of baseLat up to 2.20 (fitted on the NCCL 2.18 DGX
#: H100 1 KiB row, which the 2.20 H200 rows then validate); 7.5 us and none of baseLat from 2.21
#: (fitted on the 8 B to 1 MiB rows of one HGX H100 and H20 node, two sources, with a ring
#: all-reduce's empty LL steps not waited for: algos/ring.py idle). No published small-message
#: row between 2.20 and 2.25 pins the release in between where the host path got faster.
#: ll_channel_cap: the per-channel LL ceiling was fitted on rows of NCCL 2.18 and older; current
#: NCCL goes past it (an HGX H100 does 1 MiB at 64 GB/s busbw where it allows 45), so from 2.21
#: the model keeps NCCL's own LL figures. Decided after the validation rows were seen
#: (docs/cost.md says so).
#: The tables, with where tuning.cc holds them (tag: line): tree_simple_nvlink is
#: hwLat[NVLINK][TREE][SIMPLE] (v2.18.3-1: 67, 4; v2.19.3-1: 67, 28; v2.21.5-1: 67, 28;
#: v2.23.4-1: 67, 4.0); nvls_lat is NVLS's baseLat at v2.18.3-1 (59, 23.0) and
#: hwLat[NVLINK][NVLS] from v2.19.3-1 (69, 23; v2.21.5-1: 69, 25); nvls_tree_net is
#: hwLat[NET][NVLS_TREE] (v2.18.3-1: 77, 19; v2.19.3-1 .. v2.28.7-1: 14, e.g. v2.28.7-1: 165;
#: v2.28.9-1: 165, 20.9; v2.30.7-1: 173); ll_max_hopper is llMaxBws' Hopper row (v2.18.3-1 ..
#: v2.20.5-1: 89, 87.7 / 22.5 / 19.0; v2.21.5-1: 89, 141 / 45 / 35); Blackwell rows from
#: v2.25.1-1 (155); perChMaxNVLSTreeBws' Hopper row from v2.28.3-1 (196, 57.7 / 45.5).
#: Blackwell's rows (ring LL128, tree LL128, tree): twice Hopper's at v2.25.1-1 (162, 168, 174)
#: to v2.27.7-1; at v2.28.3-1 (179, 185, 191) tree LL128 55.6 / 31.67 / 20 and tree 70 / 42.8 /
#: 24; ring LL128 2 x 36.7 / 34.6 / 2 x 36.7 at v2.28.9-1 (179), 34.5 / 34.6 / 34.5 at
#: v2.29.2-1 (179), 40 at v2.30.7-1 (189).
_BW_TREES_2X = ((73.4, 73.4, 58.0), (77.4, 82.8, 72.0))
_BW_TREES_228 = ((55.6, 31.67, 20.0), (70.0, 42.8, 24.0))
BLACKWELL = {"2.25": ((73.4, 73.4, 73.4), *_BW_TREES_2X),
             "2.28": ((73.4, 73.4, 73.4), *_BW_TREES_228),
             "2.28.9": ((73.4, 34.6, 73.4), *_BW_TREES_228),
             "2.29": ((34.5, 34.6, 34.5), *_BW_TREES_228),
             "2.30": ((40.0, 40.0, 40.0), *_BW_TREES_228)}
_OLD, _NEW = value("launch_2.18"), value("launch_2.21")   # fitted (constants.py)
VERSIONS = {
    "2.18": Nccl("2.18", _OLD, 1.0, 4.0, 23.0, 19.0, (87.7, 22.5, 19.0), False, None),
    "2.19": Nccl("2.19", _OLD, 1.0, 28.0, 23.0, 14.0, (87.7, 22.5, 19.0), False, None),
    "2.21": Nccl("2.21", _NEW, 0.0, 28.0, 25.0, 14.0, (141.0, 45.0, 35.0), False, None,
                 ll_channel_cap=False),
    "2.23": Nccl("2.23", _NEW, 0.0, 4.0, 25.0, 14.0, (141.0, 45.0, 35.0), False, None,
                 ll_channel_cap=False),
    "2.25": Nccl("2.25", _NEW, 0.0, 4.0, 25.0, 14.0, (141.0, 45.0, 35.0), True, None,
                 ll_channel_cap=False, blackwell=BLACKWELL["2.25"]),
    "2.27": Nccl("2.27", _NEW, 0.0, 4.0, 25.0, 14.0, (141.0, 45.0, 35.0), True, None,
                 ll_channel_cap=False, blackwell=BLACKWELL["2.25"]),
    "2.28": Nccl("2.28", _NEW, 0.0, 4.0, 25.0, 14.0, (141.0, 45.0, 35.0), True, (57.7, 45.5),
                 ll_channel_cap=False, blackwell=BLACKWELL["2.28"]),
    "2.28.9": Nccl("2.28.9", _NEW, 0.0, 4.0, 25.0, 20.9, (141.0, 45.0, 35.0), True,
                   (57.7, 45.5), ll_channel_cap=False, blackwell=BLACKWELL["2.28.9"]),
    "2.29": Nccl("2.29", _NEW, 0.0, 4.0, 25.0, 20.9, (141.0, 45.0, 35.0), True, (57.7, 45.5),
                 ll_channel_cap=False, blackwell=BLACKWELL["2.29"]),
    "2.30": Nccl("2.30", _NEW, 0.0, 4.0, 25.0, 20.9, (141.0, 45.0, 35.0), True, (57.7, 45.5),
                 ll_channel_cap=False, blackwell=BLACKWELL["2.30"]),
}
LATEST = "2.30"
OLDEST = "2.18"
#: The oldest release asked for that is costed at all: the published measurements the model is
#: checked on ran 2.10 and later. Older ones had a different protocol set (LL128 came in 2.5)
#: and graph search.
OLDEST_ACCEPTED = (2, 10)


def nccl(version: str | None = None) -> Nccl:
    """The profile of ``version`` ('2.27', '2.27.7', 'latest' or None: the latest), carrying the
    release asked for; a release between two profiles takes the older one's tables, one from
    2.10 to 2.17 the oldest profile's (with ``Nccl.note`` saying so)."""
    if version in (None, "", "latest"):
        return VERSIONS[LATEST]
    asked = release(version)
    if asked < OLDEST_ACCEPTED:
        raise UnknownVersion(f"NCCL {version} is older than the oldest release the model "
                             f"covers (2.{OLDEST_ACCEPTED[1]})")
    if asked < release(OLDEST):     # the oldest tables, the release's own algorithms (note)
        return attrs.evolve(VERSIONS[OLDEST], release=asked)
    # a release named without its patch ('2.28') is the series' last (2.28.9)
    series = asked if len(asked) > 2 else (*asked, 99)
    best = max((v for v in VERSIONS.values() if v.release <= series), key=lambda v: v.release)
    return best if asked == best.release else attrs.evolve(best, release=asked)
