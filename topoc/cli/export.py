"""``topoc export nccl-topo|nccl-graph FILE [--node PATH] [--ranks ...] -o OUT``."""

from __future__ import annotations

from ..backends import nccl_graph, nccl_topo
from .common import (EXIT_OK, add_common, add_group_options, fail, load, read_text,
                     selected_group, write_output)


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="write NCCL's topology or graph XML for a node")
    p.add_argument("format", choices=["nccl-topo", "nccl-graph"])
    p.add_argument("file")
    p.add_argument("--node", metavar="PATH", help="the node (host) to write, e.g. cluster.node3")
    add_group_options(p, "nccl-graph: the strategy whose groups --group names",
                      "nccl-graph: the group whose orders")
    p.add_argument("--bus-ids", metavar="FILE",
                   help="nccl-topo: the machine's bus ids ('<device id> <bus id>' lines, as "
                   "topoc import nccl-topo --bus-ids writes them) instead of synthesised ones")
    p.add_argument("--channels", type=int, help="nccl-graph: channels per graph (default: "
                   "NCCL's, two per NIC across nodes, one per NVLink lane inside one)")
    add_common(p, output_required=True)
    p.set_defaults(func=run)


def run(args) -> int:
    system = load(args)
    try:
        if args.format == "nccl-topo":
            bus_ids = nccl_topo.read_bus_ids(read_text(args.bus_ids)) if args.bus_ids else None
            text = nccl_topo.render(system, args.node, bus_ids)
        else:
            text = nccl_graph.render(system, selected_group(system, args), args.node,
                                     args.channels)
    except nccl_topo.ExportError as exc:
        return fail(args.file, exc)
    write_output(text, args.output)
    return EXIT_OK
