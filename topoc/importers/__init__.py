"""``topoc import``: NCCL topology dumps and ``nvidia-smi topo -m`` matrices as .topo files.

Both importers write a self-contained file (its own link types and device models) that
compiles; what the input cannot tell is filled with a documented default and reported as a
note (docs/nccl.md lists them). An input that describes no GPU is an error, never an empty
system.
"""

from __future__ import annotations

from .base import ImportFailure
from .nccl_xml import from_nccl_xml
from .smi import from_smi

__all__ = ["ImportFailure", "from_nccl_xml", "from_smi"]
