"""Any input ``topoc diff`` accepts, as a System: a .topo file, or a dump one of the importers
reads, recognised by its content (not its name): hwloc XML (``<topology>``), an NCCL topology
dump (``<system>``), an ``nvidia-smi topo -m`` matrix (a ``GPU0`` header row), an
ibnetdiscover dump (``Switch``/``Ca`` records, or ``-p`` port lines) or iblinkinfo output
(``Switch: 0x<GUID> ...:`` / ``CA: ...:`` headers over ``==( ... )==>`` port lines, or
``-l``'s lines ``0x<GUID> "<description>" <LID> <port>[ ] ==(...``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..compiler.ir.system import System
from ..compiler.lang import pipeline
from .base import ImportFailure, compile_imported

_XML_ROOT = re.compile(r"<(topology|system)\b")
# Within a line only ([ \t], never \s, which crosses newlines): over a run of blank lines a
# leading \s* restarts at every line and backtracks to the end, quadratic in the input.
_IB = re.compile(r'^[ \t]*(Switch|Ca)[ \t]+\d+[ \t]+"[SH]-|^[ \t]*(SW|CA)[ \t]+\d+[ \t]+\d+[ \t]+0x',
                 re.M)
_IBL = re.compile(r"^(?:Switch: 0x[0-9A-Fa-f]{1,16} |CA: )[^\n]*:[ \t]*\n[^\n]*==\(|"
                  r'^0x[0-9A-Fa-f]{1,16} "[^\n]{0,200}?"[ \t]{1,16}[0-9]{1,5}[ \t]{1,16}'
                  r"[0-9]{1,5}\[", re.M)
_SMI = re.compile(r"^[ \t]*GPU0\b", re.M)


def kind_of(text: str) -> str:
    """``topo``, ``hwloc``, ``nccl-topo``, ``nvidia-smi``, ``ibnetdiscover`` or
    ``iblinkinfo``."""
    head = text.lstrip()[:4096]
    if head.startswith("<"):
        m = _XML_ROOT.search(text[:20000])
        if m:
            return "hwloc" if m.group(1) == "topology" else "nccl-topo"
    if _IB.search(text):
        return "ibnetdiscover"
    if _IBL.search(text):
        return "iblinkinfo"
    if _SMI.search(text) and "<->" not in text:
        return "nvidia-smi"
    return "topo"


def to_topo(text: str, path: str) -> tuple[str, str, list[str]]:
    """(kind, .topo text, notes) for any input."""
    kind = kind_of(text)
    if kind == "topo":
        return kind, text, []
    if kind == "hwloc":
        from .hwloc import from_hwloc
        return (kind, *from_hwloc(text, path))
    if kind == "nccl-topo":
        from .nccl_xml import from_nccl_xml
        return (kind, *from_nccl_xml(text, path, {}))
    if kind == "nvidia-smi":
        from .smi import from_smi
        return (kind, *from_smi(text, path))
    if kind == "iblinkinfo":
        from .iblinkinfo import from_iblinkinfo
        return (kind, *from_iblinkinfo(text, path))
    from .ibnetdiscover import from_ibnetdiscover
    return (kind, *from_ibnetdiscover(text, path))


def load_any(path: str, defines: Mapping[str, int] | None = None,
             import_roots=(), cache: bool = False, cache_notes: list[str] | None = None,
             keep: bool = True) -> tuple[System, str, list[str]]:
    """(system, kind, notes) for a .topo file or any importable dump. Raises ``OSError`` or
    ``UnicodeDecodeError`` for an unreadable file, ``ImportFailure`` for a dump the importer
    refuses and ``CompileError`` for a .topo with errors. With ``cache``, a .topo goes through
    the compiled-system cache (``pipeline.compile``: a cache file that could not be used is a
    note in ``cache_notes``; ``keep`` False reads the cache without storing)."""
    text = pipeline.read(path)
    kind, topo, notes = to_topo(text, path)
    if kind == "topo":
        return pipeline.compile(text, path, defines, import_roots, cache, cache_notes,
                                keep), kind, notes
    if defines:
        raise ImportFailure(f"{path}: -D applies to .topo files, not to a {kind} dump")
    return compile_imported(topo, path, f"{kind} dump"), kind, notes
