"""What both importers share: the node being assembled, and the figures they default to."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..compiler.base.diagnostics import Diagnostic, Source, Span, error
from ..compiler.base.figures import PCIE_X16
from ..compiler.base.text import visible
from ..compiler.lang import emit

MAX_DEVICES = 4096
#: nvidia-smi product names -> the library's device model with its cited figures.
LIBRARY_GPUS = {"H100": "H100", "A100": "A100", "B200": "B200", "GB200": "B200_GB200"}

class ImportFailure(ValueError):
    """The input is not a dump this importer understands; the message names where."""


#: The code of every importer failure (docs/errors.md): a dump topoc cannot read.
IMPORT_CODE = "E180"
#: where a message names its place: ``line:col:`` or (ibnetdiscover's lines) ``line:``
_AT = re.compile(r"(\d+)(?::(\d+))?: (.*)", re.S)


def import_diagnostic(exc: ImportFailure, inputs: Sequence[tuple[str, str]]) -> Diagnostic:
    """The failure in the standard form, ``path:line:col: E180 error: message``: at the line
    and column its message names in one of the ``inputs`` (text, path), with that line and a
    caret; else at the input as a whole (no excerpt: the dump has no one line to blame)."""
    message = str(exc)
    for text, path in inputs:
        head = printable(path) + ":"
        if not message.startswith(head):
            continue
        rest = message[len(head):].lstrip(" ")
        source = Source(path, text)
        m = _AT.match(rest)
        if m:
            line, col = int(m.group(1)), int(m.group(2) or 1)
            return error(IMPORT_CODE, m.group(3), Span(source, line, col, line, col + 1))
        return error(IMPORT_CODE, rest, Span(source, 1, 1))
    # a message about several dumps at once ('a.txt + b.txt: ...') or none in particular
    label, _, rest = message.partition(": ")
    if " + " in label and rest:
        return error(IMPORT_CODE, rest, Span(Source(label, ""), 1, 1))
    path = inputs[0][1] if inputs else "<input>"
    return error(IMPORT_CODE, message, Span(Source(path, ""), 1, 1))


@dataclass
class Build:
    """A node being assembled: device models, instances, links and notes."""

    models: dict[str, str] = field(default_factory=dict)          # name -> declaration
    links: dict[str, str] = field(default_factory=dict)           # name -> declaration
    instances: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    wires: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)

    def add(self, array: str, model: str) -> str:
        """A new element of ``array`` with ``model``; returns its selector text."""
        self.instances[array].append(model)
        if sum(len(v) for v in self.instances.values()) > MAX_DEVICES:
            raise ImportFailure(f"more than {MAX_DEVICES} devices in one node")
        return f"{array}[{len(self.instances[array]) - 1}]"

    def count(self, array: str) -> int:
        """How many elements ``array`` has so far."""
        return len(self.instances.get(array, ()))

    def link(self, name: str, cls: str, bandwidth: float, extra: str = "") -> str:
        """Declare link type ``name`` once; returns the name."""
        self.links.setdefault(name, f"link {name} : {cls} {{ bandwidth = {gbs(bandwidth)}"
                              f"{'  ' + extra if extra else ''} }}")
        return name

    def pcie(self, gen: int, width: int) -> str:
        """The PCIe link type of generation ``gen`` and ``width`` lanes."""
        return self.link(f"pcie_g{gen}_x{width}", "pcie", PCIE_X16[gen] * width / 16,
                         f"gen = {gen}  width = {width}")

    def model(self, name: str, decl: str) -> str:
        """Declare device model ``name`` once; returns the name."""
        self.models.setdefault(name, decl)
        return name

    def group(self, name: str) -> str:
        """The group declaration holding every instance and wire."""
        lines = [f"group {name} {{"]
        lines += [f"  # {emit.comment(c)}" for c in self.comments]
        for array, models in self.instances.items():
            if len(set(models)) == 1:
                lines.append(f"  {array}[{len(models)}] : {models[0]}")
            else:
                raise ImportFailure(f"internal: mixed models in '{array}'")
        lines += [f"  {w}" for w in self.wires]
        lines.append("}")
        return "\n".join(lines)


def require_gpus(count: int, path: str, what: str) -> None:
    """An input without GPUs is an error: an empty system would be a silent wrong answer."""
    if count == 0:
        raise ImportFailure(f"{path}: {what} describes no GPU; nothing to import "
                            "(is this the right file, or a CPU-only node?)")


def gbs(value: float) -> str:
    """A bandwidth in GB/s as .topo text."""
    return f"{value / 1e9:g} GB/s"


def ident(text: str, prefix: str = "n_") -> str:
    """``text`` as a .topo identifier (``compiler.lang.emit.ident``); '' for ''."""
    return emit.ident(text, prefix) if text else ""


def printable(text: str) -> str:
    """``text`` with every control or unprintable character escaped (``\\n``, ``\\x1b``):
    a file name goes into messages and comments as one line, never as code."""
    return visible(text)


def finish(lines: list[str]) -> str:
    """The imported file's text in ``topoc fmt``'s layout, so it passes ``fmt --check``."""
    from ..compiler.lang.fmt import fmt
    return fmt("\n".join(lines))


def header(path: str, source: str) -> list[str]:
    """The comment lines every imported file starts with (the input's name escaped)."""
    return [f"# Imported by topoc from {emit.comment(path)}, {emit.comment(source)}.",
            "# Defaults for what the input does not say are listed in docs/nccl.md.", ""]


def library_gpu(product: str) -> tuple[str, str] | None:
    """(name, declaration text with its citation comments) of the library's device model for
    an nvidia-smi product name, so an imported GPU carries HBM, bandwidth and peak FLOP/s;
    None when the library has no such model."""
    from ..compiler.base import reading
    from ..compiler.lang.parse import parse
    from ..compiler.lang.resolve import library_root
    from ..compiler.lang import syntax as s
    name = LIBRARY_GPUS.get(product)
    if name is None:
        return None
    path = library_root() / "nvidia" / "devices.topo"
    text = reading.read_text(path)
    decl = next(i for i in parse(text, str(path)).items
                if isinstance(i, s.DeviceDecl) and i.name == name)
    lines = text.split("\n")
    first = decl.span.line - 1
    while first > 0 and lines[first - 1].startswith("#"):
        first -= 1
    body = lines[first:decl.span.end_line]
    return name, "# From the library (library/nvidia/devices.topo):\n" + "\n".join(body)


#: The display path of an importer's generated text, so diagnostics can tell it apart.
GENERATED = "<imported>"


def compile_imported(topo: str, path: str, kind: str):
    """The System of an importer's text; when it does not compile (a switch cabled past its
    ports, a limit), ImportFailure naming the user's input file ``path``, each error with the
    generated line it is about, never ``<input>:L:C`` of text the user never saw."""
    from ..compiler.base.diagnostics import ERROR, CompileError
    from ..compiler.lang import pipeline
    try:
        return pipeline.compile(topo, GENERATED)
    except CompileError as exc:
        errors = [d for d in exc.diagnostics if d.severity == ERROR] or list(exc.diagnostics)
        said = []
        for d in errors[:5]:
            where = ""
            if d.span.path == GENERATED and d.span.line:
                where = f" (at '{d.span.source.line(d.span.line).strip()}' in the imported text)"
            said.append(f"{d.code} {d.message}{where}")
        more = f"; and {len(errors) - 5} more" if len(errors) > 5 else ""
        raise ImportFailure(f"{printable(path)}: this {kind} describes a system topoc refuses: "
                            + "; ".join(said) + more) from None
