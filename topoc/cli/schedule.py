"""``topoc schedule FILE (--parallel P --group KIND[:I] | --ranks LIST) --collective C ...``:
a collective planned on a group, every transfer routed."""

from __future__ import annotations

import sys

from ..backends import nccl_log, schedule_json
from ..compiler.collectives import algos
from ..compiler.collectives.paths import NoRoute
from ..compiler.collectives.schedule import MAX_CHANNELS, ScheduleError, schedule
from ..compiler.ir.groups import lone_rank
from ..compiler.ir.system import COLLECTIVES, ROOTED_COLLECTIVES
from .common import (add_failure_options, EXIT_OK, UsageError, add_common, add_group_options, count, fail, load,
                     parse_size, selected_group, write_output)

BACKENDS = {"json": schedule_json, "nccl": nccl_log}


def add_parser(sub) -> None:
    p = sub.add_parser("schedule", help="plan a collective on a group, every transfer routed")
    p.add_argument("file")
    add_group_options(p, "the strategy whose groups --group names", "tp:0, dp:3, ... or world")
    p.add_argument("--collective", required=True, choices=list(COLLECTIVES))
    p.add_argument("--size", default="1GiB", help="bytes per rank (default 1GiB)")
    p.add_argument("--algorithm", default="auto", choices=["auto", *(a.name for a in algos.REGISTRY.values() if a.planned)],
                   help="default: the fastest of NCCL's; hierarchical is topoc's own")
    p.add_argument("--channels", type=count(1, MAX_CHANNELS), help="channels side by side: rings (default 2) or "
                   "pairs of trees (default 1)")
    p.add_argument("--chunks", type=count(1, 1 << 20), help="slots the data is cut into (default per algorithm)")
    p.add_argument("--root", type=count(0, 2**31), help="group position of the root (broadcast, "
                   "reduce; default 0)")
    p.add_argument("--format", choices=list(BACKENDS), default="json")
    p.add_argument("--rank", type=count(0, 2**31), metavar="R", help="only the steps of world rank R")
    add_common(p)
    add_failure_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    system = load(args)
    nbytes = parse_size(args.size)
    group = selected_group(system, args)
    if args.rank is not None and args.rank not in group.ranks:
        raise UsageError(f"{args.file}: rank {args.rank} is not in group {group.name}")
    root = _root(args, len(group.ranks))
    try:
        sched = schedule(system, group, args.collective, args.algorithm, nbytes, args.channels,
                         args.chunks, root)
        text = BACKENDS[args.format].render(system, sched, args.rank)
    except (ScheduleError, NoRoute) as exc:
        # The file is fine but cannot serve this request: an input error (exit 1).
        return fail(args.file, exc)
    lone = lone_rank(group)
    if lone:
        print(f"note: {lone}", file=sys.stderr)
    write_output(text, args.output)
    return EXIT_OK


def _root(args, n: int) -> int:
    """--root checked against the command line: a position of the group, and only for a
    collective that has a root (given with another one it would be silently ignored)."""
    if args.root is None:
        return 0
    if args.collective not in ROOTED_COLLECTIVES:
        raise UsageError(f"--root is for {' and '.join(ROOTED_COLLECTIVES)}; {args.collective} "
                         "has no root: drop --root")
    if args.root >= n:
        raise UsageError(f"--root {args.root} is not a position of the group (0..{n - 1})")
    return args.root
