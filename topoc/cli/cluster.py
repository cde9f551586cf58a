"""What the cluster verbs share (``export slurm|k8s|ibdiagnet|ibsim``, ``diff``): hostname
options and the fabric view of a loaded system."""

from __future__ import annotations

import os

from ..compiler.analysis.fabric import Fabric, fabric
from ..compiler.ir.hosts import HostnameError, read_mapping
from ..compiler.ir.system import System
from .common import UsageError, read_text


def add_hostnames(p) -> None:
    """``--hostnames PATTERN|FILE``."""
    p.add_argument("--hostnames", metavar="PATTERN|FILE",
                   help="hostnames: a pattern over the host path's array indices, as "
                   "\"gb-{rack:02}-{tray:02}\" ({host} is the host's position), or a file of "
                   "'<host id or default name> <hostname>' lines; default: the file's own "
                   "pattern, else the host's path with dots as dashes (docs/drift.md)")


def hostnames(args) -> tuple[str | None, dict[str, str] | None]:
    """(pattern, mapping) from ``--hostnames``: an existing file is a mapping."""
    value = getattr(args, "hostnames", None)
    if not value:
        return None, None
    if "{" not in value and os.path.isfile(value):
        try:
            return None, read_mapping(read_text(value))
        except HostnameError as exc:
            raise UsageError(f"--hostnames {value}: {exc}") from None
    if "{" not in value:
        raise UsageError(f"--hostnames {value}: neither a file nor a pattern with {{...}} "
                         "fields, as in \"node{node:03}\"")
    return value, None


def fabric_of(system: System, args, blocks: bool = True) -> Fabric:
    """The fabric view with the options' hostnames; a pattern the hosts cannot fill is a
    usage error. ``blocks`` False leaves the NVLink domains out (a file that does not list
    them: the locality table they come from is seconds at 8,192 racks)."""
    pattern, mapping = hostnames(args)
    try:
        return fabric(system, pattern, mapping, blocks=blocks)
    except HostnameError as exc:
        raise UsageError(f"{args.file}: {exc}") from None
