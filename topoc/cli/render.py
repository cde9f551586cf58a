"""``topoc render FILE -o OUT.{svg,png,pdf,dot} [--view V] [--parallel P --color D]
[--highlight ID|CLASS] [--ring GROUP] [--heat blast] [--size WxH|slide|poster]``."""

from __future__ import annotations

import sys

import attrs
from pathlib import Path

from ..backends import render as r
from ..compiler.base.diagnostics import suggest
from ..compiler.base.text import visible
from ..compiler.ir.groups import GroupError
from ..compiler.ir.system import GROUP_KINDS, LINK_CLASSES, System
from .common import add_failure_options, EXIT_OK, UsageError, add_common, load, strategy_name, write_output

FORMATS = ("dot", "gv", "svg", "png", "pdf")


def add_parser(sub) -> None:
    p = sub.add_parser("render", help="draw the system with Graphviz")
    p.add_argument("file")
    p.add_argument("--view", choices=list(r.VIEWS),
                   help="default: fabric for a cluster, else the most detailed view legible on a slide")
    p.add_argument("--parallel", metavar="NAME", help="colour GPUs by the groups of this strategy")
    p.add_argument("--color", choices=list(GROUP_KINDS), help="which groups (tp)")
    p.add_argument("--ring", metavar="GROUP", help="draw the ring order of a group: dp:3, world, "
                   "or world ranks like 0..7")
    p.add_argument("--highlight", action="append", metavar="ID|CLASS|TYPE",
                   help="emphasise a device (or everything under an id), a link class "
                        "(nvlink) or a link type (ndr)")
    p.add_argument("--heat", choices=["blast"],
                   help="fill each box by what the worst single failure in it costs (topoc "
                        "blast; with --parallel, for that strategy)")
    p.add_argument("--size", metavar="WxH|poster",
                   help="the page the picture is for, in px (7680x4320) or slide (1920x1080, "
                        "the default) or poster (A0 at 150 dpi): the default view is the most "
                        "detailed one legible on it, and a PNG is scaled down to fit it")
    add_common(p, output_required=True)
    add_failure_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    fmt = Path(args.output).suffix.lstrip(".").lower() if args.output != "-" else "dot"
    if fmt not in FORMATS:
        raise UsageError(f"cannot tell the format of '{args.output}': use a .svg, .png, .pdf or "
                         ".dot file")
    system = load(args)
    if args.parallel:
        strategy_name(system, args.file, args.parallel)
    elif args.color:
        raise UsageError("--color needs --parallel NAME")
    highlight = tuple(full for h in args.highlight or () for full in _check_highlight(system, h))
    opts = r.Options(args.view, args.parallel, args.color or "tp", highlight, args.ring)
    if args.size:
        try:
            opts = attrs.evolve(opts, size=r.parse_size(args.size))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.heat:
        if args.color:
            raise UsageError("--heat fills the boxes instead of --color's groups: give one")
        from ..backends.heat import heat_map
        from ..compiler.analysis.blast import blast
        opts = attrs.evolve(opts, heat=heat_map(blast(system, args.parallel)))
    if args.ring:
        try:
            r.ring_group(system, opts)
        except GroupError as exc:
            raise UsageError(f"--ring {args.ring}: {exc}") from None
    notes: list[str] = []
    try:
        data, view = r.render(system, "dot" if fmt == "gv" else fmt, opts, notes)
    except (r.DotMissing, r.TooLarge) as exc:
        raise UsageError(str(exc)) from None
    for note in notes:
        print(f"note: {visible(note)}", file=sys.stderr)
    if args.view is None:
        print(f"topoc: render: drew the {view} view ({len(system.devices)} devices, "
              f"{len(system.links)} links); --view {'|'.join(r.VIEWS)} picks another",
              file=sys.stderr)
    write_output(data, args.output)
    return EXIT_OK


def _check_highlight(system: System, name: str) -> list[str]:
    """What ``--highlight NAME`` highlights: a device or group instance by its id (an id
    prefix) or by the name its box shows (``leaf3`` for ``cluster.leaf3``; every instance of
    that name when several have it), a link class or a link type the file uses (``ndr``)."""
    depth = name.count(".") + 1
    prefixes = {".".join(d.id.split(".")[:depth]) for d in system.devices}
    types = {link.type.name for link in system.links}
    if name in prefixes or name in LINK_CLASSES or name in types:
        return [name]
    parts = name.split(".")
    found: set[str] = set()
    for d in system.devices:
        segments = d.id.split(".")
        for i in range(1, len(segments) - len(parts) + 1):
            if segments[i:i + len(parts)] == parts:
                found.add(".".join(segments[:i + len(parts)]))
                break
    if found:
        if len(found) > 1:
            print(f"note: --highlight {name}: {len(found)} instances of that name "
                  f"({_few(sorted(found))}); give a full id for one", file=sys.stderr)
        return sorted(found)
    tails = {d.id.split(".", 1)[-1] for d in system.devices} | \
        {d.id.rsplit(".", 1)[-1] for d in system.devices}
    raise UsageError(f"--highlight {name}: no device, group, link class or link type of that "
                     "name" + suggest(name, sorted(prefixes | set(LINK_CLASSES) | types | tails)))


def _few(ids: list[str]) -> str:
    return ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
