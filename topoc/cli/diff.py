"""``topoc diff A B [B2 ...] [--format text|json|github|sarif]``: drift between a declared
design and what the machines report (any .topo or importable dump on either side; several B
ibnetdiscover dumps, one per subnet, are one fabric whose findings name their plane)."""

from __future__ import annotations

import os
import sys

from ..backends import diff_report, impact_report
from ..compiler.analysis.impact import impact
from ..compiler.analysis.diff import DiffError, diff
from ..compiler.base.diagnostics import CompileError
from ..compiler.base.text import visible
from ..compiler.base.version import VERSION
from ..compiler.ir.hosts import HostnameError
from ..importers import ImportFailure
from ..importers.base import import_diagnostic
from ..importers.base import compile_imported
from ..importers.detect import kind_of, load_any
from ..importers.iblinkinfo import from_iblinkinfo
from ..importers.ibnetdiscover import from_ibnetdiscover, merge
from ..importers.ports import port_map, read_ports
from .common import EXIT_INPUT, EXIT_OK, UsageError, add_failure_options, cache_notes, \
    degraded, parse_defines, read_text, report, strategy_name, unreadable, write_output

FORMATS = ("text", "json", "github", "sarif")


def add_parser(sub) -> None:
    p = sub.add_parser("diff", help="compare two topologies (.topo files or dumps): drift")
    p.add_argument("a", metavar="A", help="the declared design (.topo) or any dump")
    p.add_argument("b", metavar="B", nargs="+",
                   help="what was found: hwloc XML, ibnetdiscover, iblinkinfo, NCCL XML, "
                   "nvidia-smi topo -m, or a .topo; several ibnetdiscover dumps (one per "
                   "subnet: rail or plane) are one fabric, each finding naming the plane of its "
                   "switch")
    p.add_argument("--format", choices=FORMATS, default="text")
    p.add_argument("--host", metavar="HOSTNAME",
                   help="compare this host of A with B's only host (a node's dump against the "
                   "cluster's design); the fabric is then not compared")
    p.add_argument("--parallel", metavar="NAME",
                   help="with --impact: the strategy of A to cost on both")
    p.add_argument("--impact", action="store_true",
                   help="what the differences cost A's strategy: each traffic line and the step "
                        "on A and on B, and whether the mapping still holds (docs/failures.md)")
    p.add_argument("-D", "--define", action="append", metavar="NAME=VALUE",
                   help="override a parameter of A's system (A must be a .topo file)")
    p.add_argument("--import-root", action="append", metavar="DIR")
    p.add_argument("--no-cache", action="store_true",
                   help="compile A and B again: neither read the compiled-system cache nor "
                        "store A in it ($TOPOC_CACHE/systems; docs/scale.md)")
    p.add_argument("--ports", metavar="FILE",
                   help="A's cable ports ('<end> <port> <end> <port>' lines, as topoc import "
                   "ibnetdiscover --ports writes them), compared with an ibnetdiscover or "
                   "iblinkinfo B's: a "
                   "cable moved to another port is a difference (a dump A gives its own)")
    add_failure_options(p)
    p.add_argument("-o", "--output", metavar="PATH", help="write here (atomically); '-' is stdout")
    p.set_defaults(func=run)


def _text(path: str) -> str:
    """A dump's text for the source line under an import error ('' when it cannot be read
    again: the error is still reported, without the line)."""
    try:
        return read_text(path)
    except (OSError, UnicodeDecodeError, UsageError, CompileError):
        return ""


def _load(path: str, args, defines, keep: bool = True):
    """One side as a System; a .topo through the compiled-system cache, as compile, lint and
    cost read it (stored when ``keep``), None when it cannot be read (why is printed)."""
    cached: list[str] = []
    try:
        system, _, notes = load_any(path, defines, args.import_root or (),
                                    cache=not args.no_cache, cache_notes=cached, keep=keep)
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc) from None
    except ImportFailure as exc:
        print(import_diagnostic(exc, [(_text(path), path)]).render(), file=sys.stderr)
        return None
    except CompileError as exc:
        report(exc.diagnostics)
        return None
    except (RecursionError, ValueError) as exc:
        # bad input, not drift: exit 2 like any other (docs/drift.md), never 1 ("different")
        why = "input nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        print(f"topoc: error: {visible(path)}: {visible(why)}", file=sys.stderr)
        return None
    cache_notes(cached)
    for note in notes:      # an importer's warnings say so themselves
        print(visible(note) if note.startswith("warning: ") else f"note: {visible(note)}",
              file=sys.stderr)
    return system


def _load_planes(paths: list[str]):
    """B from several subnets' ibnetdiscover dumps: their union as one system, and each
    switch's plane label (``plane 2: dump2.txt``, planes counted from 0 in argument order)."""
    dumps = []
    for path in paths:
        text = read_text(path)
        kind = kind_of(text)
        if kind != "ibnetdiscover":
            raise UsageError(f"{path}: several B files are ibnetdiscover dumps (one per "
                             f"subnet), not a {kind} file")
        dumps.append((text, path))
    label = " + ".join(paths)
    try:
        joined, where = merge(dumps)
        topo, notes = from_ibnetdiscover(joined, label)
        system = compile_imported(topo, label, "ibnetdiscover dumps")
    except ImportFailure as exc:
        print(import_diagnostic(exc, [(_text(p), p) for p in paths]).render(), file=sys.stderr)
        return None, {}
    except CompileError as exc:
        report(exc.diagnostics)
        return None, {}
    for note in notes:
        print(visible(note) if note.startswith("warning: ") else f"note: {visible(note)}",
              file=sys.stderr)
    planes = {name: "; ".join(f"plane {n}: {os.path.basename(paths[n])}" for n in ns)
              for name, ns in where.items()}
    return system, planes


def _dump_ports(paths: list[str]):
    """The cable ports of ibnetdiscover dumps (their union) or of one iblinkinfo dump, None
    for any other input."""
    dumps = []
    for path in paths:
        text = read_text(path)
        kind = kind_of(text)
        if kind != "ibnetdiscover" and not (kind == "iblinkinfo" and len(paths) == 1):
            return None
        dumps.append((text, path))
    records: list = []
    try:
        text = merge(dumps)[0] if len(dumps) > 1 else dumps[0][0]
        read = from_iblinkinfo if kind == "iblinkinfo" else from_ibnetdiscover
        read(text, paths[0], None, records)
    except ImportFailure:
        return None             # _load said why
    return port_map(records)


def _ports(args, b_paths: list[str]):
    """(A's ports, B's ports) when both are known: a dump gives its own, A's --ports file
    A's; None otherwise."""
    pb = _dump_ports(b_paths)
    if args.ports:
        if pb is None:
            raise UsageError("--ports compares A's cable ports with an ibnetdiscover or "
                             "iblinkinfo B's; B is not an ibnetdiscover dump, nor iblinkinfo's")
        try:
            pa = read_ports(read_text(args.ports), args.ports)
        except ImportFailure as exc:
            raise UsageError(str(exc)) from None
    else:
        pa = _dump_ports([args.a])
    return (pa, pb) if pa is not None and pb is not None else None


def run(args) -> int:
    a = _load(args.a, args, parse_defines(args.define))
    planes = None
    if len(args.b) > 1:
        b, planes = _load_planes(args.b)
    else:
        # B, what was found, is read from the cache but not stored: it is new at each
        # check (a dump, the machines' state), where A, the design, is read again and again
        b = _load(args.b[0], args, None, keep=False)
    b_paths = list(args.b)
    args.b = " + ".join(args.b)
    if a is None or b is None:
        raise _BadInput()
    ports = _ports(args, b_paths) if not args.host else None
    b = degraded(b, args, file=args.b)      # B with parts out: what a failure would cost
    found = None
    if args.impact or args.parallel:
        if not (args.impact and args.parallel):
            raise UsageError("--impact and --parallel NAME go together")
        if args.format in ("github", "sarif"):
            raise UsageError(f"--impact is written in the text and json formats, not "
                             f"{args.format}")
        strategy_name(a, args.a, args.parallel)
        found = impact(a, b, args.parallel)
    try:
        d = diff(a, b, args.host, planes, ports)
    except (HostnameError, DiffError) as exc:
        raise UsageError(str(exc)) from None
    except RecursionError:
        raise UsageError("an input is nested too deeply to compare") from None
    if args.format == "json":
        text = diff_report.as_json(d, args.a, args.b,
                                   None if found is None else impact_report.as_dict(found))
    elif args.format == "github":
        text = diff_report.github(d, args.a, args.b)
    elif args.format == "sarif":
        text = diff_report.sarif(d, args.a, args.b, VERSION)
    else:
        text = diff_report.text(d, args.a, args.b)
        if found is not None:
            text += impact_report.text(found)
    write_output(text, args.output)
    return EXIT_OK if d.equal else EXIT_INPUT


class _BadInput(UsageError):
    """An input that does not compile or import: exit 2 for diff (bad input), its
    diagnostics already printed."""

    def __str__(self) -> str:
        return "an input could not be read as a topology (see above)"
