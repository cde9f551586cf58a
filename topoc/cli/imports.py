"""``topoc import nccl-topo|nvidia-smi|hwloc|ibnetdiscover|iblinkinfo INPUT -o node.topo
[--bus-ids FILE] [--gpu MODEL]``; ``ibnetdiscover`` takes several dumps (one per subnet) as one fabric."""

from __future__ import annotations

import sys

from ..backends.nccl_topo import write_bus_ids
from ..compiler.base.text import visible
from ..importers import ImportFailure, from_nccl_xml, from_smi
from ..importers.base import compile_imported, import_diagnostic
from ..importers.guids import read_guids, write_guids
from ..importers.hwloc import from_hwloc
from ..importers.iblinkinfo import from_iblinkinfo
from ..importers.ibnetdiscover import from_ibnetdiscover, merge
from ..importers.ports import port_map, write_ports
from .common import EXIT_INPUT, EXIT_OK, UsageError, check_writable, read_text, write_output


def add_parser(sub) -> None:
    p = sub.add_parser("import", help="turn an NCCL dump, nvidia-smi topo -m, hwloc XML or an "
                       "ibnetdiscover or iblinkinfo dump into .topo")
    p.add_argument("format", choices=["nccl-topo", "nvidia-smi", "hwloc", "ibnetdiscover",
                                         "iblinkinfo"])
    p.add_argument("--bus-ids", metavar="FILE",
                   help="nccl-topo: also write each device's bus id in the dump to FILE")
    p.add_argument("--gpu", metavar="MODEL",
                   help="nvidia-smi: the GPU model (B200, H100, A100...) when the paste does "
                   "not show it; sets the NVLink generation")
    p.add_argument("--guids", metavar="FILE",
                   help="hwloc: also write each HCA's node GUID with its hostname and NIC index "
                   "to FILE; ibnetdiscover, iblinkinfo: place HCAs in hosts by the GUIDs in FILE "
                   "(docs/drift.md)")
    p.add_argument("--ports", metavar="FILE",
                   help="ibnetdiscover, iblinkinfo: also write every cable's port numbers to "
                   "FILE, for export ibsim/ibdiagnet --ports and diff --ports (docs/drift.md)")
    p.add_argument("input", nargs="+",
                   help="the dump; ibnetdiscover: several dumps (one per subnet: rail or "
                   "plane) are imported as one fabric, their union")
    p.add_argument("-o", "--output", metavar="PATH", required=True)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.format == "nccl-topo" and args.gpu:
        raise UsageError("--gpu is for nvidia-smi matrices; an NCCL dump names each GPU's sm")
    if args.format != "nccl-topo" and args.bus_ids:
        raise UsageError(f"--bus-ids is for NCCL dumps; {args.format} input has no bus ids")
    fabric = args.format in ("ibnetdiscover", "iblinkinfo")
    if (args.format == "hwloc" or fabric) and args.gpu:
        raise UsageError(f"--gpu is for nvidia-smi matrices; {args.format} input names models")
    if args.guids and not (args.format == "hwloc" or fabric):
        raise UsageError("--guids is for hwloc (written) and ibnetdiscover/iblinkinfo (read)")
    if args.ports and not fabric:
        raise UsageError(f"--ports is for ibnetdiscover and iblinkinfo dumps; {args.format} "
                         "input has no switch ports")
    if len(args.input) > 1 and args.format != "ibnetdiscover":
        raise UsageError(f"several inputs are for ibnetdiscover dumps (one per subnet); "
                         f"{args.format} takes one")
    dumps = [(read_text(path), path) for path in args.input]
    sources = list(dumps)       # every file an error may name, for its line and carets
    args.input = " + ".join(args.input)
    text = dumps[0][0]
    bus_ids: dict[str, str] = {}
    guids: dict = {}
    ports: list = []
    try:
        if args.format == "nccl-topo":
            topo, notes = from_nccl_xml(text, args.input, bus_ids)
        elif args.format == "hwloc":
            topo, notes = from_hwloc(text, args.input, guids)
        elif fabric:
            if args.guids:
                sources.append((read_text(args.guids), args.guids))  # named in its errors
                guids = read_guids(sources[-1][0], args.guids)
            if len(dumps) > 1:      # the subnets' union, each dump checked on its own first
                text = merge(dumps)[0]
            read = from_ibnetdiscover if args.format == "ibnetdiscover" else from_iblinkinfo
            topo, notes = read(text, args.input, guids, ports)
        else:
            topo, notes = from_smi(text, args.input, gpu=args.gpu)
        compile_imported(topo, args.input, f"{args.format} input")   # what we write compiles
    except ImportFailure as exc:
        print(import_diagnostic(exc, sources).render(), file=sys.stderr)
        return EXIT_INPUT
    for note in notes:      # an importer's warnings say so themselves
        print(visible(note) if note.startswith("warning: ") else f"note: {visible(note)}",
              file=sys.stderr)
    side = args.bus_ids or (args.guids if args.format == "hwloc" else None)
    # Every output checked before any is replaced, the side files written before -o: an
    # unwritable --bus-ids, --guids or --ports leaves the old -o as it was.
    check_writable(args.output)
    check_writable(side)
    check_writable(args.ports)
    if args.ports:
        write_output(write_ports(port_map(ports)), args.ports)
    if args.bus_ids:
        write_output(write_bus_ids(bus_ids), args.bus_ids)
    if args.guids and args.format == "hwloc":
        write_output(write_guids(guids), args.guids)
    write_output(topo, args.output)
    return EXIT_OK
