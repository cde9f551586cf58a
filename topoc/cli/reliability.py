"""``topoc reliability FILE [--gpus N] [--checkpoint-cost S] [--restart S] [--rates STUDY]``:
expected interruptions of a job, its MTBF, the checkpoint interval that maximises goodput and
the goodput, from published failure rates (docs/reliability.md)."""

from __future__ import annotations

from ..backends import reliability_table
from ..compiler.analysis.reliability import (DEFAULT_RATES, ReliabilityError, estimate,
                                             rate_sets)
from .common import (EXIT_OK, UsageError, add_common, add_failure_options, count, fail, load,
                     number, write_output)


def add_rate_options(p, when: str = "") -> None:
    """``--checkpoint-cost``, ``--restart`` and ``--rates``, declared once (``plan --goodput``
    takes them too, ``when`` saying so in their help)."""
    p.add_argument("--checkpoint-cost", type=number(0, 10**7, low_open=True), metavar="S",
                   help=f"{when}seconds the job stops to write a checkpoint: gives the interval "
                   "(Young 1974, Daly 2006) and the goodput")
    p.add_argument("--restart", type=number(0, 10**7), default=0.0, metavar="S",
                   help=f"{when}seconds from an interruption to running again from the last "
                   "checkpoint (default 0)")
    p.add_argument("--rates", default=DEFAULT_RATES, metavar="STUDY",
                   help=f"{when}the published failure rates: {', '.join(rate_sets())} "
                   f"(default {DEFAULT_RATES}; library/reliability.csv)")


def add_parser(sub) -> None:
    p = sub.add_parser("reliability", help="expected interruptions, MTBF, checkpoint interval "
                       "and goodput of a job from published failure rates")
    p.add_argument("file")
    p.add_argument("--gpus", type=count(1, 10**8), metavar="N",
                   help="the job: the first N GPUs with their hosts, NICs and cables (default: "
                   "every GPU; more than the file has are counted at its ratios)")
    add_rate_options(p)
    p.add_argument("--format", choices=reliability_table.FORMATS, default="text")
    add_common(p)
    add_failure_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.rates not in rate_sets():
        raise UsageError(f"--rates: no failure rates for '{args.rates}'; there are: "
                         f"{', '.join(rate_sets())}")
    system = load(args)
    try:
        est = estimate(system, args.gpus, args.checkpoint_cost, args.restart, args.rates)
    except ReliabilityError as exc:
        return fail(args.file, exc)
    title = (f"topoc reliability {args.file}: a job of {est.exposure.gpus:,} GPUs "
             f"(docs/reliability.md)")
    write_output(reliability_table.render(est, args.format, title), args.output)
    return EXIT_OK
