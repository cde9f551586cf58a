"""The ``topoc`` command line (design.md section 3).

Exit codes: 0 success, 1 the input has errors, 2 a usage or I/O error.
"""

from __future__ import annotations

import argparse
import re
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import topoc

from . import cli_plan
from .backends import REGISTRY
from .compiler.ir.system import GROUP_KINDS
from .compiler.collectives.orders import ALGORITHMS, COSTED_ALGORITHMS
from .compiler.base.diagnostics import CompileError, Diagnostic, render_all, suggest

EXIT_OK, EXIT_INPUT, EXIT_USAGE = 0, 1, 2
COLLECTIVE_CHOICES = ("allreduce", "reducescatter", "allgather", "broadcast", "reduce",
                      "alltoall", "sendrecv")


class UsageError(Exception):
    """A bad command line or an unreadable/unwritable file: exit code 2."""


def _color(stream) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


def report(diagnostics: Sequence[Diagnostic], stream=None) -> None:
    """Print diagnostics as text (colour only on a terminal, never with NO_COLOR)."""
    stream = stream or sys.stderr
    text = render_all(diagnostics)
    if _color(stream):
        text = text.replace(" error: ", " \x1b[1;31merror\x1b[0m: ") \
                   .replace(" warning: ", " \x1b[1;33mwarning\x1b[0m: ")
    print(text, file=stream)


def write_output(text: str | bytes, out: str | None) -> None:
    """Write to stdout ('-' or None) or atomically to a file: temp file, then rename."""
    if out in (None, "-"):
        if isinstance(text, bytes):
            sys.stdout.buffer.write(text)
        else:
            sys.stdout.write(text)
        return
    target = Path(out)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"cannot write {out}: folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text if isinstance(text, bytes) else text.encode("utf-8"))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)   # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def parse_defines(items: Sequence[str]) -> dict[str, int]:
    """``-D racks=20`` pairs as a dict; values are whole numbers."""
    out: dict[str, int] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise UsageError(f"-D {item}: expected NAME=VALUE, as in -D racks=20")
        digits = value.strip().replace("_", "")
        if not re.fullmatch(r"[+-]?\d{1,18}", digits):
            raise UsageError(f"-D {item}: '{value}' is not a whole number of at most 18 digits")
        out[name.strip()] = int(digits)
    return out


def unreadable(path, exc: Exception) -> UsageError:
    """The usage error for a file that cannot be read: for text that is not UTF-8, the line and
    column of the first bad byte, so the user can find it."""
    if isinstance(exc, UnicodeDecodeError):
        data = exc.object[:exc.start]
        line = data.count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n") + 1) + 1
        return UsageError(f"{path}:{line}:{col}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); "
                          "save the file as UTF-8")
    return UsageError(f"cannot read {getattr(exc, 'filename', None) or path}: {exc}")


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc) from None


def _load(args) -> topoc.System:
    try:
        return topoc.load(args.file, parse_defines(args.define), args.import_root or ())
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(args.file, exc) from None


def cmd_compile(args) -> int:
    """topoc compile FILE [--format summary|json] [-o OUT]."""
    system = _load(args)
    write_output(REGISTRY[args.format](system), args.output)
    return EXIT_OK


def cmd_lint(args) -> int:
    """topoc lint FILE... [--format F] [--select CODES] [--ignore CODES] [--strict]."""
    from .backends import lint_report
    from .compiler.lint.lint import ConfigError, check_codes, find_config
    select = [c.strip() for c in (args.select or "").split(",") if c.strip()]
    ignore = [c.strip() for c in (args.ignore or "").split(",") if c.strip()]
    defines = parse_defines(args.define)
    found: list[Diagnostic] = []
    strict = args.strict
    try:
        check_codes(select, "--select")
        check_codes(ignore, "--ignore")
        for file in args.files:
            config = find_config(Path(file).resolve()).merged(select, ignore, args.strict)
            strict = strict or config.strict
            try:
                found += topoc.lint(file, config, defines, args.import_root or ())
            except (OSError, UnicodeDecodeError) as exc:
                raise unreadable(file, exc) from None
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "text":
        out = lint_report.text(found)
        if out:
            stream = sys.stdout if args.output in (None, "-") else None
            if stream is not None and _color(stream):
                out = out.replace(" error: ", " \x1b[1;31merror\x1b[0m: ") \
                         .replace(" warning: ", " \x1b[1;33mwarning\x1b[0m: ")
            write_output(out, args.output)
    elif args.format == "json":
        write_output(lint_report.as_json(found), args.output)
    elif args.format == "github":
        write_output(lint_report.github(found), args.output)
    else:
        write_output(lint_report.sarif(found, topoc.__version__), args.output)
    failing = {"error", "warning"} if strict else {"error"}
    return EXIT_INPUT if any(d.severity in failing for d in found) else EXIT_OK


def cmd_export(args) -> int:
    """topoc export nccl-topo|nccl-graph FILE [--node PATH] [--ranks ...] -o OUT."""
    from .backends import nccl_graph, nccl_topo
    from .compiler.ir.groups import GroupError, select_group
    system = _load(args)
    try:
        if args.format == "nccl-topo":
            bus_ids = nccl_topo.read_bus_ids(_read_text(args.bus_ids)) if args.bus_ids else None
            text = nccl_topo.render(system, args.node, bus_ids)
        else:
            group = select_group(system, args.group, args.parallel, args.ranks)
            text = nccl_graph.render(system, group, args.node, args.channels)
    except (nccl_topo.ExportError, GroupError) as exc:
        print(f"{args.file}: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    write_output(text, args.output)
    return EXIT_OK


def cmd_import(args) -> int:
    """topoc import nccl-topo|nvidia-smi INPUT -o node.topo [--bus-ids FILE]."""
    from .backends.nccl_topo import write_bus_ids
    from .importers import ImportFailure, from_nccl_xml, from_smi
    if args.format == "nccl-topo" and args.gpu:
        raise UsageError("--gpu is for nvidia-smi matrices; an NCCL dump names each GPU's sm")
    if args.format == "nvidia-smi" and args.bus_ids:
        raise UsageError("--bus-ids is for NCCL dumps; a topo -m matrix has no bus ids")
    text = _read_text(args.input)
    bus_ids: dict[str, str] = {}
    try:
        if args.format == "nccl-topo":
            topo, notes = from_nccl_xml(text, args.input, bus_ids)
        else:
            topo, notes = from_smi(text, args.input, gpu=args.gpu)
        topoc.loads(topo)                 # what we write must compile
    except ImportFailure as exc:
        print(f"topoc: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    write_output(topo, args.output)
    if args.bus_ids:
        write_output(write_bus_ids(bus_ids), args.bus_ids)
    return EXIT_OK


def cmd_fmt(args) -> int:
    """topoc fmt FILE... [--check] [--diff] [--stdout]; FILE '-' reads standard input and
    writes the result to standard output."""
    import difflib
    from .compiler.lang.fmt import fmt
    changed, failed = [], []
    for file in args.files:
        text = sys.stdin.read() if file == "-" else _read_text(file)
        name = "<stdin>" if file == "-" else file
        try:
            new = fmt(text, name)
        except CompileError as exc:
            report(exc.diagnostics)
            failed.append(file)
            continue
        if args.diff and new != text:
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(keepends=True), new.splitlines(keepends=True),
                f"{name} (original)", f"{name} (formatted)"))
        elif (args.stdout or file == "-") and not args.check:
            sys.stdout.write(new)
        if new != text:
            changed.append(name)
            if not (args.check or args.diff or args.stdout or file == "-"):
                write_output(new, file)
    if not (args.stdout and not args.check):
        verb = "would reformat" if args.check or args.diff else "reformatted"
        for name in changed:
            if name != "<stdin>" or args.check:
                print(f"{verb} {name}", file=sys.stderr)
    if failed or (args.check and changed):
        return EXIT_INPUT
    return EXIT_OK


def cmd_render(args) -> int:
    """topoc render FILE -o OUT.{svg,png,pdf,dot} [--view V] [--parallel P --color D]."""
    from .backends import render as r
    fmt = Path(args.output).suffix.lstrip(".").lower() if args.output != "-" else "dot"
    if fmt not in ("dot", "gv", "svg", "png", "pdf"):
        raise UsageError(f"cannot tell the format of '{args.output}': use a .svg, .png, .pdf or "
                         ".dot file")
    system = _load(args)
    if args.parallel:
        names = [p.name for p in system.parallels]
        if args.parallel not in names:
            raise UsageError(f"no parallel block '{args.parallel}' in {args.file}"
                             + suggest(args.parallel, names)
                             + (f" (it has {', '.join(names)})" if names else ""))
    elif args.color:
        raise UsageError("--color needs --parallel NAME")
    for h in args.highlight or ():
        _check_highlight(system, h)
    opts = r.Options(args.view, args.parallel, args.color or "tp", tuple(args.highlight or ()),
                     args.ring)
    if args.ring:
        from .compiler.ir.groups import GroupError
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
        print(f"note: {note}", file=sys.stderr)
    if args.view is None:
        print(f"topoc: render: drew the {view} view ({len(system.devices)} devices, "
              f"{len(system.links)} links); --view {'|'.join(r.VIEWS)} picks another",
              file=sys.stderr)
    write_output(data, args.output)
    return EXIT_OK


def _check_highlight(system, name: str) -> None:
    """``--highlight`` names a device, a group instance (an id prefix) or a link class."""
    from .compiler.ir.system import LINK_CLASSES
    depth = name.count(".") + 1
    prefixes = {".".join(d.id.split(".")[:depth]) for d in system.devices}
    if name in prefixes or name in LINK_CLASSES:
        return
    raise UsageError(f"--highlight {name}: no device, group or link class of that name"
                     + suggest(name, sorted(prefixes | set(LINK_CLASSES))))


def cmd_schedule(args) -> int:
    """topoc schedule FILE (--parallel P --group KIND[:I] | --ranks LIST) --collective C ..."""
    from .backends import nccl_log, schedule_json
    from .compiler.ir.groups import GroupError, select_group
    from .compiler.collectives.paths import NoRoute
    from .compiler.collectives.schedule import ScheduleError, schedule
    system = _load(args)
    nbytes = parse_size(args.size)
    try:
        group = select_group(system, args.group, args.parallel, args.ranks)
        if args.rank is not None and args.rank not in group.ranks:
            raise GroupError(f"rank {args.rank} is not in group {group.name}")
        sched = schedule(system, group, args.collective, args.algorithm, nbytes, args.channels,
                         args.chunks, args.root)
        backend = schedule_json if args.format == "json" else nccl_log
        text = backend.render(system, sched, args.rank)
    except (GroupError, ScheduleError, NoRoute) as exc:
        # The file is fine but cannot serve this request: an input error (exit 1).
        print(f"{args.file}: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    write_output(text, args.output)
    return EXIT_OK


MAX_SIZES = 64
MAX_SIZE = 2**50          # bytes in one collective (1 PiB): far past any real buffer


def parse_sizes(text: str) -> list[int]:
    """'8B..8GiB' (doubling, as nccl-tests -f 2) or '32KiB,1MiB' -> sizes in bytes."""
    if ".." in text:
        lo, _, hi = text.partition("..")
        a, b = parse_size(lo), parse_size(hi)
        if a > b:
            raise UsageError(f"--sizes {text}: the first size is larger than the last")
        out = [a]
        while out[-1] * 2 <= b and len(out) <= MAX_SIZES:
            out.append(out[-1] * 2)
    else:
        out = [parse_size(t) for t in text.split(",") if t.strip()]
    if not out or len(out) > MAX_SIZES:
        raise UsageError(f"--sizes {text}: give 1 to {MAX_SIZES} sizes")
    return out


def cmd_cost(args) -> int:
    """topoc cost FILE (--parallel P [--group KIND] | --ranks LIST | --group world) ..."""
    from .backends import cost_table
    from .compiler.collectives.cost import CostError, sweep
    from .compiler.ir.groups import GroupError, select_group
    sizes = parse_sizes(args.sizes) if args.sizes else None     # before the slow part
    system = _load(args)
    try:
        if args.parallel and not args.group and not args.ranks:
            if args.parallel not in system.parallel_names():
                raise GroupError(f"no parallel block '{args.parallel}'"
                                 + suggest(args.parallel, system.parallel_names()))
            rows = _strategy_rows(system, args, sizes, sweep, select_group)
        else:
            group = select_group(system, args.group, args.parallel, args.ranks)
            rows = sweep(system, group, args.collective or "allreduce",
                         sizes or parse_sizes("8B..8GiB"), args.algorithm, args.protocol)
    except (GroupError, CostError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) else exc
        print(f"{args.file}: error: {message}", file=sys.stderr)
        return EXIT_INPUT
    title = f"topoc cost {args.file}: predicted times (NCCL-style model, docs/cost.md)"
    write_output(cost_table.render(rows, args.format, title), args.output)
    return EXIT_OK


def _strategy_rows(system, args, sizes, sweep, select_group):
    """--parallel NAME alone: one row per distinct traffic line (a model's forward and backward
    collectives of one size are one row), on the first group of its kind."""
    from .compiler.ir.groups import GroupError
    strategy = system.parallel(args.parallel)
    if not strategy.flows:
        raise GroupError(f"parallel block '{args.parallel}' has no traffic; name a --group")
    rows = []
    seen = set()
    for flow in strategy.flows:
        if args.collective and flow.collective != args.collective or \
                (flow.dim, flow.collective, flow.bytes) in seen:
            continue
        seen.add((flow.dim, flow.collective, flow.bytes))
        group = select_group(system, flow.dim, args.parallel)
        if len(group.ranks) > 1:
            rows += sweep(system, group, flow.collective, sizes or [flow.bytes], args.algorithm,
                          args.protocol)
    return rows


def cmd_report(args) -> int:
    """topoc report FILE --parallel NAME [--format text|markdown]."""
    from .backends import report
    from .compiler.analysis.strategy import analyse
    system = _load(args)
    names = system.parallel_names()
    name = args.parallel or (names[0] if len(names) == 1 else None)
    if name not in names:
        if not names:
            what = "the file has no parallel block to report on (docs/language.md)"
        elif args.parallel:
            what = f"no parallel block '{args.parallel}'" + (
                suggest(args.parallel, names) or f"; the file has {', '.join(names)}")
        else:
            what = f"name the strategy with --parallel: one of {', '.join(names)}"
        print(f"{args.file}: error: {what}", file=sys.stderr)
        return EXIT_INPUT
    if args.format == "html":
        write_output(_html_report(system, name), args.output)
        return EXIT_OK
    write_output(report.render(analyse(system, name), system.name, args.format), args.output)
    return EXIT_OK


def _published() -> list[dict]:
    """The single-node calibration rows with the GPU model of the library system they name."""
    from .library import calibration, find
    rows, models = [], {}
    for row in calibration():
        if row["defines"]:
            continue
        if row["system"] not in models:
            models[row["system"]] = topoc.load(find(f"{row['system']}.topo")).gpus[0].model.name
        rows.append({**row, "gpu_model": models[row["system"]]})
    return rows


def _html_report(system, name: str) -> str:
    """The self-contained page: the diagram (GPUs coloured by tp group), plots, tables."""
    from .backends import render as r
    from .backends import report_html
    try:
        svg, _ = r.render(system, "svg", r.Options(parallel=name, color="tp"))
        return report_html.document(system, name, svg, _published())
    except (r.DotMissing, r.TooLarge, report_html.ReportUnavailable) as exc:
        raise UsageError(str(exc)) from None


def parse_size(text: str) -> int:
    """'1GiB', '64 MiB', '4096', or nccl-tests' '1G' (K, M, G, T are binary there) -> bytes."""
    from .compiler.base.units import BYTES, Quantity
    m = re.fullmatch(r"\s*([\d_]+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*", text or "")
    unit = m.group(2) if m else ""
    if unit.upper() in ("K", "M", "G", "T"):
        unit = unit.upper() + "iB"
    try:
        q = Quantity.parse(m.group(1), unit or None) if m else None
    except ValueError:
        q = None
    if q is None or q.dim not in (BYTES, (0, 0)) or q.value < 1 or q.value.denominator != 1:
        raise UsageError(f"'{text}' is not a size in bytes, as in 1GiB or 64MiB")
    if q.value > MAX_SIZE:
        raise UsageError(f"'{text}' is larger than the limit of 1 PiB per collective")
    return int(q.value)


def _common(p: argparse.ArgumentParser, output_required: bool = False) -> None:
    p.add_argument("-D", "--define", action="append", metavar="NAME=VALUE",
                   help="override a parameter of the file's system, e.g. -D racks=20")
    p.add_argument("--import-root", action="append", metavar="DIR",
                   help="also allow imports from DIR (besides the file's folder and the library)")
    p.add_argument("-o", "--output", metavar="PATH", required=output_required,
                   help="write here (atomically); '-' is stdout")


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every verb."""
    ap = argparse.ArgumentParser(prog="topoc", description="Compile, check and draw GPU system "
                                 "topologies written in the .topo language.")
    ap.add_argument("--version", action="version", version=f"topoc {topoc.__version__}")
    sub = ap.add_subparsers(dest="verb", metavar="VERB")
    p = sub.add_parser("compile", help="compile a .topo file and summarise it")
    p.add_argument("file")
    p.add_argument("--format", choices=["summary", "json"], default="summary")
    _common(p)
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("lint", help="check .topo files and report problems")
    p.add_argument("files", nargs="+")
    p.add_argument("--format", choices=["text", "json", "github", "sarif"], default="text")
    p.add_argument("--select", metavar="CODES", help="only these codes or prefixes: W4,W501")
    p.add_argument("--ignore", metavar="CODES", help="skip these codes or prefixes")
    p.add_argument("--strict", action="store_true", help="warnings fail the run too")
    _common(p)
    p.set_defaults(func=cmd_lint)
    p = sub.add_parser("export", help="write NCCL's topology or graph XML for a node")
    p.add_argument("format", choices=["nccl-topo", "nccl-graph"])
    p.add_argument("file")
    p.add_argument("--node", metavar="PATH", help="the node (host) to write, e.g. cluster.node3")
    p.add_argument("--parallel", metavar="NAME")
    p.add_argument("--group", metavar="KIND[:INDEX]", help="nccl-graph: the group whose orders")
    p.add_argument("--ranks", metavar="LIST", help="nccl-graph: an ad-hoc group of world ranks")
    p.add_argument("--bus-ids", metavar="FILE",
                   help="nccl-topo: the machine's bus ids ('<device id> <bus id>' lines, as "
                   "topoc import nccl-topo --bus-ids writes them) instead of synthesised ones")
    p.add_argument("--channels", type=int, help="nccl-graph: channels per graph (default: NCCL's, two per NIC across "
                   "nodes, one per NVLink lane inside one)")
    _common(p, output_required=True)
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("import", help="turn an NCCL dump or nvidia-smi topo -m into .topo")
    p.add_argument("format", choices=["nccl-topo", "nvidia-smi"])
    p.add_argument("--bus-ids", metavar="FILE",
                   help="nccl-topo: also write each device's bus id in the dump to FILE")
    p.add_argument("--gpu", metavar="MODEL",
                   help="nvidia-smi: the GPU model (B200, H100, A100...) when the paste does "
                   "not show it; sets the NVLink generation")
    p.add_argument("input")
    p.add_argument("-o", "--output", metavar="PATH", required=True)
    p.set_defaults(func=cmd_import)
    p = sub.add_parser("fmt", help="rewrite .topo files in the canonical layout")
    p.add_argument("files", nargs="+")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file "
                   "would change")
    p.add_argument("--diff", action="store_true", help="change nothing; print a unified diff "
                   "of what would change (with --check, exit 1 if anything would)")
    p.add_argument("--stdout", action="store_true", help="print the formatted text instead of "
                   "rewriting the files ('-' as FILE reads standard input and does this)")
    p.set_defaults(func=cmd_fmt)
    p = sub.add_parser("render", help="draw the system with Graphviz")
    p.add_argument("file")
    p.add_argument("--view", choices=["physical", "logical", "racks"],
                   help="default: the most detailed view that stays legible")
    p.add_argument("--parallel", metavar="NAME", help="colour GPUs by the groups of this strategy")
    p.add_argument("--color", choices=list(GROUP_KINDS), help="which groups (tp)")
    p.add_argument("--ring", metavar="GROUP", help="draw the ring order of a group: dp:3, world, "
                   "or world ranks like 0..7")
    p.add_argument("--highlight", action="append", metavar="ID|CLASS",
                   help="emphasise a device (or everything under an id) or a link class")
    _common(p, output_required=True)
    p.set_defaults(func=cmd_render)
    p = sub.add_parser("schedule", help="plan a collective on a group, every transfer routed")
    p.add_argument("file")
    p.add_argument("--parallel", metavar="NAME", help="the strategy whose groups --group names")
    p.add_argument("--group", metavar="KIND[:INDEX]", help="tp:0, dp:3, ... or world")
    p.add_argument("--ranks", metavar="LIST", help="an ad-hoc group of world ranks: 0..7,16")
    p.add_argument("--collective", required=True, choices=list(COLLECTIVE_CHOICES))
    p.add_argument("--size", default="1GiB", help="bytes per rank (default 1GiB)")
    p.add_argument("--algorithm", default="auto", choices=["auto", *ALGORITHMS],
                   help="default: the fastest of NCCL's; hierarchical is topoc's own")
    p.add_argument("--channels", type=int, help="channels side by side: rings (default 2) or "
                   "pairs of trees (default 1)")
    p.add_argument("--chunks", type=int, help="slots the data is cut into (default per algorithm)")
    p.add_argument("--root", type=int, default=0, help="group position of the root (broadcast, "
                   "reduce)")
    p.add_argument("--format", choices=["json", "nccl"], default="json")
    p.add_argument("--rank", type=int, metavar="R", help="only the steps of world rank R")
    _common(p)
    p.set_defaults(func=cmd_schedule)
    p = sub.add_parser("cost", help="predict collective times, algbw and busbw (a sweep)")
    p.add_argument("file")
    p.add_argument("--parallel", metavar="NAME", help="the strategy; alone: cost its traffic")
    p.add_argument("--group", metavar="KIND[:INDEX]", help="tp:0, dp:3, ... or world")
    p.add_argument("--ranks", metavar="LIST", help="an ad-hoc group of world ranks: 0..7,16")
    p.add_argument("--collective", choices=list(COLLECTIVE_CHOICES),
                   help="default allreduce (with --parallel alone: the traffic's own)")
    p.add_argument("--sizes", metavar="SIZES", help="8B..8GiB (doubling; the default) or a "
                   "list 32KiB,1MiB; nccl-tests' 1G, 64M, 8K mean GiB, MiB, KiB")
    p.add_argument("--algorithm", default="auto",
                   choices=["auto", *COSTED_ALGORITHMS],
                   help="default: the fastest of NCCL's; nvlstree is NVLS in each island and a "
                   "tree between; hierarchical is topoc's own")
    p.add_argument("--protocol", choices=["LL", "LL128", "Simple"],
                   help="default: the fastest, as NCCL picks")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table")
    _common(p)
    p.set_defaults(func=cmd_cost)
    p = sub.add_parser("report", help="analyse a parallel strategy's training step")
    p.add_argument("file")
    p.add_argument("--parallel", metavar="NAME", help="the strategy (needed when several)")
    p.add_argument("--format", choices=["text", "markdown", "html"], default="text",
                   help="html: one self-contained page with the diagram and plots")
    _common(p)
    p.set_defaults(func=cmd_report)
    cli_plan.add_parser(sub, _common)
    p = sub.add_parser("lsp", help="run the .topo language server on stdio (for editors)")
    p.set_defaults(func=cmd_lsp)
    return ap


def cmd_lsp(args) -> int:
    """topoc lsp: diagnostics, hover, definition, completion and formatting over stdio."""
    from . import lsp
    try:
        server = lsp.build_server()
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    server.start_io()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of raising SystemExit for errors."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.func(args)
    except CompileError as exc:
        report(exc.diagnostics)
        return EXIT_INPUT
    except UsageError as exc:
        print(f"topoc: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except RecursionError:
        print("topoc: error: input nested too deeply", file=sys.stderr)
        return EXIT_INPUT


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
