"""``topoc import nccl-topo|nvidia-smi INPUT -o node.topo [--bus-ids FILE] [--gpu MODEL]``."""

from __future__ import annotations

import sys

from ..backends.nccl_topo import write_bus_ids
from ..compiler.lang import pipeline
from ..importers import ImportFailure, from_nccl_xml, from_smi
from .common import EXIT_INPUT, EXIT_OK, UsageError, read_text, write_output


def add_parser(sub) -> None:
    p = sub.add_parser("import", help="turn an NCCL dump or nvidia-smi topo -m into .topo")
    p.add_argument("format", choices=["nccl-topo", "nvidia-smi"])
    p.add_argument("--bus-ids", metavar="FILE",
                   help="nccl-topo: also write each device's bus id in the dump to FILE")
    p.add_argument("--gpu", metavar="MODEL",
                   help="nvidia-smi: the GPU model (B200, H100, A100...) when the paste does "
                   "not show it; sets the NVLink generation")
    p.add_argument("input")
    p.add_argument("-o", "--output", metavar="PATH", required=True)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.format == "nccl-topo" and args.gpu:
        raise UsageError("--gpu is for nvidia-smi matrices; an NCCL dump names each GPU's sm")
    if args.format == "nvidia-smi" and args.bus_ids:
        raise UsageError("--bus-ids is for NCCL dumps; a topo -m matrix has no bus ids")
    text = read_text(args.input)
    bus_ids: dict[str, str] = {}
    try:
        if args.format == "nccl-topo":
            topo, notes = from_nccl_xml(text, args.input, bus_ids)
        else:
            topo, notes = from_smi(text, args.input, gpu=args.gpu)
        pipeline.compile(topo)                 # what we write must compile
    except ImportFailure as exc:
        print(f"topoc: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    write_output(topo, args.output)
    if args.bus_ids:
        write_output(write_bus_ids(bus_ids), args.bus_ids)
    return EXIT_OK
