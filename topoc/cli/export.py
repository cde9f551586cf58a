"""``topoc export nccl-topo|nccl-graph FILE [--node PATH] [--ranks ...] -o OUT`` and the
cluster tools' files: ``topoc export slurm|k8s|ibdiagnet|ibsim FILE -o OUT`` (docs/drift.md)."""

from __future__ import annotations

from ..backends import ibsim, k8s, names, nccl_graph, nccl_topo, slurm
from ..compiler.base.gcpause import gc_paused
from ..compiler.collectives.orders import MAX_GRAPH_CHANNELS
from .cluster import add_hostnames, fabric_of
from .common import (EXIT_OK, UsageError, add_common, add_group_options, count, fail, load, read_text,
                     selected_group, write_output)


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="write NCCL's topology or graph XML for a node, or a "
                       "cluster tool's topology (Slurm, Kubernetes, ibdiagnet, ibsim)")
    p.add_argument("format", choices=["nccl-topo", "nccl-graph", *CLUSTER])
    p.add_argument("file")
    p.add_argument("--node", metavar="PATH", help="the node (host) to write, e.g. cluster.node3")
    add_group_options(p, "nccl-graph: the strategy whose groups --group names",
                      "nccl-graph: the group whose orders")
    p.add_argument("--bus-ids", metavar="FILE",
                   help="nccl-topo: the machine's bus ids ('<device id> <bus id>' lines, as "
                   "topoc import nccl-topo --bus-ids writes them) instead of synthesised ones")
    p.add_argument("--channels", type=count(1, MAX_GRAPH_CHANNELS),
                   help=f"nccl-graph: channels per graph, 1..{MAX_GRAPH_CHANNELS} (default: "
                   "NCCL's, two per NIC across nodes, one per NVLink lane inside one)")
    p.add_argument("--topology", choices=["tree", "block"],
                   help="slurm: topology/tree from the fabric or topology/block from the NVLink "
                   "domains (with --format yaml: the cluster default; default tree)")
    p.add_argument("--format", dest="file_format", choices=["conf", "yaml"], default="conf",
                   help="slurm: topology.conf (default) or topology.yaml (both topologies)")
    p.add_argument("--slurm-version", metavar="X.Y",
                   help="slurm: the Slurm release that reads the file (as 'sinfo -V' prints "
                   "it, e.g. 25.05): block sizes, and whether topology.yaml or topology/block "
                   "exist there (default: a file any Slurm with the plugin loads)")
    p.add_argument("--kueue-api", choices=k8s.KUEUE_APIS, default=k8s.KUEUE_APIS[0],
                   help="k8s: the Kueue Topology's API version (default v1beta2, Kueue 0.14+; "
                   "v1beta1 or v1alpha1 for older Kueue)")
    p.add_argument("--gpu-clique", action="store_true",
                   help="k8s: also write nvidia.com/gpu.clique (GPU Feature Discovery owns it "
                   "and sets <ClusterUUID>.<CliqueID>; only for clusters without GFD)")
    p.add_argument("--ports", metavar="FILE",
                   help="ibsim, ibdiagnet: number the cables' ports as this file gives them "
                        "('<end> <port> <end> <port>' lines, as topoc import ibnetdiscover "
                        "--ports writes them); the rest take each end's lowest free ports")
    add_hostnames(p)
    add_common(p, output_required=True)
    p.set_defaults(func=run)


CLUSTER = ("slurm", "k8s", "ibdiagnet", "ibsim")


def _cluster(system, args) -> str:
    """The text of a cluster tool's file."""
    # the NVLink domains are read by Kubernetes' labels and Slurm's blocks (the yaml file
    # holds both topologies), not by a topology/tree file, ibsim or ibdiagnet
    blocks = args.format == "k8s" or (args.format == "slurm" and (
        args.topology == "block" or args.file_format == "yaml"))
    fab = fabric_of(system, args, blocks)
    version = None
    if args.slurm_version:
        try:
            version = slurm.parse_version(args.slurm_version)
        except slurm.ExportError as exc:
            raise UsageError(f"--slurm-version: {exc}") from None
    try:
        if args.format == "slurm":
            if args.topology is None and args.file_format == "conf":
                raise UsageError("export slurm needs --topology tree or --topology block")
            return slurm.render(fab, args.topology or "tree", args.file_format, args.file,
                                version)
        if args.format == "k8s":
            return k8s.render(fab, args.file, kueue_api=args.kueue_api, clique=args.gpu_clique)
        ports = _ports(fab, args.ports) if args.ports else None
        if args.format == "ibsim":
            return ibsim.render_ibsim(fab, args.file, ports)
        return ibsim.render_ibdiagnet(fab, args.file, ports)
    except (slurm.ExportError, ibsim.ExportError, names.InvalidName) as exc:
        raise _Unservable(str(exc)) from None


def _ports(fab, path: str):
    """The --ports file, each end one the fabric has (a usage error names the first that is
    not)."""
    from ..importers import ImportFailure
    from ..importers.ports import read_ports
    try:
        ports = read_ports(read_text(path), path)
    except ImportFailure as exc:
        raise UsageError(str(exc)) from None
    ends = {s.name for s in fab.switches} | {f"{h.host}/{h.index}" for h in fab.hcas}
    cabled = {tuple(sorted((c.a, c.b))): c.count for c in fab.cables}
    for (a, b), pairs in ports.items():
        for end in (a, b):
            if end not in ends:
                raise UsageError(f"--ports {path}: '{end}' is no switch or HCA of the fabric")
        if len(pairs) > cabled.get((a, b), 0):
            raise UsageError(f"--ports {path}: {len(pairs)} cable(s) between '{a}' and '{b}'; "
                             f"the fabric has {cabled.get((a, b), 0)}")
    return ports


class _Unservable(Exception):
    """The file cannot serve the export (no fabric, no GPUs): exit 1."""


def run(args) -> int:
    if args.format not in CLUSTER and (args.topology or args.file_format != "conf" or
                                       args.hostnames):
        raise UsageError("--topology, --format and --hostnames are for slurm, k8s, ibdiagnet "
                         "and ibsim")
    if args.format != "slurm" and (args.topology or args.file_format != "conf" or
                                   args.slurm_version):
        raise UsageError("--topology, --format and --slurm-version are for export slurm")
    if args.ports and args.format not in ("ibsim", "ibdiagnet"):
        raise UsageError("--ports is for export ibsim and ibdiagnet")
    if args.format != "k8s" and (args.kueue_api != k8s.KUEUE_APIS[0] or args.gpu_clique):
        raise UsageError("--kueue-api and --gpu-clique are for export k8s")
    system = load(args)
    if args.format in CLUSTER:
        try:
            # the view and the text are millions of objects at 8,192 racks that live until
            # the file is written: no collector pass between the stages walks them
            with gc_paused():
                text = _cluster(system, args)
        except _Unservable as exc:
            return fail(args.file, exc)
        write_output(text, args.output)
        return EXIT_OK
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
