"""What every verb shares: the exit-code policy, usage errors, reading and writing files,
``-D`` defines, sizes, and the options declared once (``-D``/``--import-root``/``-o`` and the
group selection ``--parallel``/``--group``/``--ranks``).

Exit codes, the same for every verb (docs/contracts.md):
- 0: success, or no findings at the failing level;
- 1: the input has errors (diagnostics), lint findings at the failing level, or the file cannot
  serve the request (no route, no mapping runs, no algorithm applies);
- 2: usage or I/O: a bad command line, a name on the command line that the file does not have
  (a parallel block, a group, a rank, a node), an unreadable input or an unwritable output.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..compiler.base import reading
from ..compiler.base.diagnostics import CompileError, Diagnostic, render_all, suggest
from ..compiler.base.limits import LIMITS
from ..compiler.base.text import visible
from ..compiler.base.units import BYTES, MAX_MESSAGE, Quantity
from ..compiler.ir.groups import GroupError, RankGroup, select_group
from ..compiler.ir.system import System
from ..compiler.lang import pipeline

EXIT_OK, EXIT_INPUT, EXIT_USAGE = 0, 1, 2
MAX_SIZES = 64
MAX_SIZE = MAX_MESSAGE    # bytes in one collective (1 PiB): far past any real buffer


class UsageError(Exception):
    """A bad command line, a name the file does not have, or an unreadable/unwritable file:
    exit code 2."""


def color(stream) -> bool:
    """Colour only on a terminal, never with NO_COLOR."""
    return stream.isatty() and "NO_COLOR" not in os.environ


def paint(text: str) -> str:
    """Severity words in colour (for a terminal)."""
    return text.replace(" error: ", " \x1b[1;31merror\x1b[0m: ") \
               .replace(" warning: ", " \x1b[1;33mwarning\x1b[0m: ")


def report(diagnostics: Sequence[Diagnostic], stream=None) -> None:
    """Print diagnostics as text (colour only on a terminal, never with NO_COLOR)."""
    stream = stream or sys.stderr
    text = render_all(diagnostics)
    print(paint(text) if color(stream) else text, file=stream)


def fail(file: str, message: object) -> int:
    """An input the file cannot serve: ``FILE: error: message`` on stderr, exit 1."""
    print(f"{visible(file)}: error: {visible(str(message))}", file=sys.stderr)
    return EXIT_INPUT


def write_stream(pieces: Iterable[str], out: str | None) -> None:
    """Write text made in pieces (a document too large to hold whole) to stdout or to a file,
    as ``write_output`` does: a regular file is replaced only once every piece is written, so
    a failure part-way (a full disk, Ctrl-C) leaves what was there."""
    if out in (None, "-"):
        for piece in pieces:
            sys.stdout.write(piece)
        return
    safe_write(out, (piece.encode("utf-8") for piece in pieces))


def write_output(text: str | bytes, out: str | None) -> None:
    """Write to stdout ('-' or None) or to a file, respecting what is there (``safe_write``)."""
    if out in (None, "-"):
        if isinstance(text, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(text)
        else:
            sys.stdout.write(text)
        return
    safe_write(out, text if isinstance(text, bytes) else text.encode("utf-8"))


def _target(out: str, refuse_read_only: bool = True) -> os.stat_result | None:
    """What ``out`` is now (None when it does not exist), after the refusals every write
    shares: a folder, a read-only regular file, a regular file in a folder that is missing."""
    try:
        st = os.stat(out)                       # follows symbolic links
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"cannot write {out}: it is a folder")
    if st is not None and not stat.S_ISREG(st.st_mode):
        return st                               # a pipe or device: written into
    if st is not None and refuse_read_only and not st.st_mode & 0o222:
        raise UsageError(f"cannot write {out}: the file is read-only (make it writable first)")
    folder = Path(os.path.realpath(out)).parent
    if not folder.is_dir():
        raise UsageError(f"cannot write {out}: folder {folder} does not exist")
    return st


def check_writable(out: str | None) -> None:
    """UsageError now when ``safe_write`` would refuse ``out`` (a folder, a read-only file, a
    missing or read-only folder): a verb that writes several files checks them all before it
    replaces any."""
    if out in (None, "-"):
        return
    st = _target(out)
    if st is not None and not stat.S_ISREG(st.st_mode):
        return
    folder = Path(os.path.realpath(out)).parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {out}: folder {folder} is not writable")


def safe_write(out: str, data: bytes | Iterable[bytes], refuse_read_only: bool = True) -> None:
    """Write ``data`` (bytes, or pieces of bytes made as they are written) to the file ``out``
    as its kind asks:

    - a FIFO, a character device or another special file (``/dev/null``, ``/dev/stdout``) is
      written into, never replaced by a regular file;
    - a symbolic link is followed: the file it points to is rewritten, the link stays;
    - a regular file is replaced atomically (a temporary file next to it, renamed over it),
      keeping its mode and, where allowed, its owner; a read-only file is refused;
    - the temporary file is removed on every failure, Ctrl-C included;
    - an OSError (a folder as target, a read-only folder, a full disk) is a ``UsageError``
      that names the path and the reason (exit 2), never a traceback.
    """
    def problem(exc: OSError) -> UsageError:
        return UsageError(f"cannot write {out}: {exc.strerror or exc}")
    st = _target(out, refuse_read_only)
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            with open(out, "wb") as f:          # a pipe, a terminal, /dev/null: write into it
                _write_all(f, data)
        except OSError as exc:
            raise problem(exc) from None
        return
    target = Path(os.path.realpath(out))
    folder = target.parent
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as f:
            _write_all(f, data)
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass                            # not ours to give away: keep ours
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)      # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise problem(exc) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _write_all(f, data: bytes | Iterable[bytes]) -> None:
    if isinstance(data, (bytes, bytearray)):
        f.write(data)
    else:
        for part in data:
            f.write(part)


def count(low: int, high: int):
    """An argparse type: a whole number in ``low..high`` (ASCII digits), else a clear error."""
    def parse(text: str) -> int:
        digits = text.strip().replace("_", "")
        if not re.fullmatch(r"[+-]?[0-9]{1,18}", digits):
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number")
        value = int(digits)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range: give {low} to {high:,}")
        return value
    return parse


def number(low: float, high: float, low_open: bool = False):
    """An argparse type: a finite decimal number in ``low..high`` (``(low, high]`` with
    ``low_open``); NaN and infinity are refused."""
    def parse(text: str) -> float:
        try:
            value = float(text) if re.fullmatch(r"\s*[+-]?[0-9._eE+-]{1,40}\s*", text) \
                else math.nan
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"'{text}' is not a finite number")
        if value < low or value > high or (low_open and value == low):
            what = f"more than {low:g}" if low_open else f"at least {low:g}"
            raise argparse.ArgumentTypeError(f"{value:g} is out of range: {what} and at most "
                                             f"{high:g}")
        return value
    return parse


class DefineAction(argparse.Action):
    """``-D NAME=VALUE``, appended; a name given twice is a usage error, not a silent last
    value."""

    def __call__(self, parser, namespace, value, option_string=None):
        items = list(getattr(namespace, self.dest, None) or [])
        name = value.partition("=")[0].strip()
        if any(item.partition("=")[0].strip() == name for item in items):
            parser.error(f"-D {name} is given twice; give each parameter once")
        items.append(value)
        setattr(namespace, self.dest, items)


def parse_defines(items: Sequence[str]) -> dict[str, int]:
    """``-D racks=20`` pairs as a dict; values are whole numbers."""
    out: dict[str, int] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise UsageError(f"-D {item}: expected NAME=VALUE, as in -D racks=20")
        digits = value.strip().replace("_", "")
        if not re.fullmatch(r"[+-]?[0-9]{1,18}", digits):
            raise UsageError(f"-D {item}: '{value}' is not a whole number of at most 18 digits")
        if name.strip() in out:
            raise UsageError(f"-D {name.strip()} is given twice; give each parameter once")
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


def read_text(path: str) -> str:
    """A file's text, or a usage error that says why it cannot be read."""
    try:
        return pipeline.read(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc) from None


def read_stdin() -> str:
    """Standard input's text, through the bounded reader (8 MiB, then E290)."""
    from ..compiler.base import reading
    try:
        if not hasattr(sys.stdin, "buffer"):        # a text stream put in place of stdin
            text = sys.stdin.read(LIMITS.file_bytes + 1)
            if len(text) > LIMITS.file_bytes:
                raise reading.TooLarge("<stdin>", LIMITS.file_bytes)
            return reading.strip_bom(text)
        return reading.decode(reading.read_stream(sys.stdin.buffer, "<stdin>"))
    except reading.TooLarge as exc:
        raise CompileError([pipeline.too_large("<stdin>", exc)]) from None
    except UnicodeDecodeError as exc:
        raise unreadable("<stdin>", exc) from None


def load(args) -> System:
    """The verb's FILE compiled with its ``-D`` and ``--import-root`` options (a root that is
    not a folder is a usage error: it would silently resolve nothing), through the
    compiled-system cache unless ``--no-cache``."""
    for root in args.import_root or ():
        if not os.path.isdir(root):
            raise UsageError(f"--import-root {root}: not a folder")
    notes: list[str] = []
    try:
        system = pipeline.load(args.file, parse_defines(args.define), args.import_root or (),
                               cache=not getattr(args, "no_cache", False), notes=notes)
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(args.file, exc) from None
    cache_notes(notes)
    _KEPT.append(system)
    return degraded(system, args)


#: The systems the verbs loaded, kept to the end of the process: it exits without freeing
#: them (``topoc.launch``), where dropping a large system at the end of a verb freed millions
#: of objects one by one.
_KEPT: list = []


def cache_notes(notes: Sequence[str]) -> None:
    """The compiled-system cache's notes (a file there that could not be used) on stderr."""
    for note in notes:
        print(f"topoc: note: {visible(note)}", file=sys.stderr)


def add_failure_options(p: argparse.ArgumentParser) -> None:
    """``--fail`` and ``--degrade``, declared once for the verbs that analyse a system."""
    p.add_argument("--fail", action="append", metavar="ID|GLOB|A<->B",
                   help="take a device (and all under an instance id), every device a glob "
                        "matches, or the links between two selectors out of the system; "
                        "repeatable (docs/failures.md)")
    p.add_argument("--degrade", action="append", metavar="SELECTOR=RATE",
                   help="run the links a selector names (A<->B, or every link of the devices) "
                        "at a share ('50%%') or a rate ('200Gb/s'); repeatable")
    p.add_argument("--faults", metavar="FILE",
                   help="a failure file: 'fail SELECTOR' and 'degrade SELECTOR = RATE' lines, "
                        "for a scenario kept beside the design")


def degraded(system: System, args, file: str | None = None) -> System:
    """The system with the command line's ``--fail``/``--degrade``/``--faults`` applied (a note
    on stderr says what they did); the system itself without them. ``file`` names the input
    in errors (``args.file`` when None)."""
    from ..compiler.ir.degrade import FaultError, Faults, apply
    fails, slows = getattr(args, "fail", None) or (), getattr(args, "degrade", None) or ()
    path = getattr(args, "faults", None)
    if not fails and not slows and not path:
        return system
    scenario = Faults()
    if path:
        try:
            scenario = Faults.read(reading.read_text(path, 2**20), path)
        except (OSError, UnicodeDecodeError, reading.TooLarge) as exc:
            raise unreadable(path, exc) from None
    try:
        result = apply(system, fails, slows, scenario)
    except FaultError as exc:
        raise UsageError(f"{file or args.file}: {exc}") from None
    for line in result.summary():
        print(f"note: {line}", file=sys.stderr)
    return result.system


def parse_size(text: str) -> int:
    """'1GiB', '64 MiB', '4096', or nccl-tests' '1G' (K, M, G, T are binary there) -> bytes."""
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


def scaling_range(text: str, gpus: int) -> tuple[int, int]:
    """``LO..HI`` (or one count) of ``--scaling`` as (LO, HI), checked against the system's
    ``gpus``; a UsageError names what is wrong."""
    lo, sep, hi = text.partition("..")
    try:
        lo_n, hi_n = int(lo), int(hi) if sep else int(lo)
    except ValueError:
        raise UsageError(f"--scaling {text}: give LO..HI, as in 8..512") from None
    if lo_n < 1 or hi_n < lo_n:
        raise UsageError(f"--scaling {text}: LO must be at least 1 and at most HI")
    if hi_n > gpus:
        raise UsageError(f"--scaling {text}: the system has {gpus} GPUs")
    return lo_n, hi_n


def add_common(p: argparse.ArgumentParser, output_required: bool = False) -> None:
    """``-D``, ``--import-root`` and ``-o``: every verb that reads one .topo file has them."""
    p.add_argument("-D", "--define", action=DefineAction, metavar="NAME=VALUE",
                   help="override a parameter of the file's system, e.g. -D racks=20")
    p.add_argument("--import-root", action="append", metavar="DIR",
                   help="also allow imports from DIR (besides the file's folder and the library)")
    p.add_argument("-o", "--output", metavar="PATH", required=output_required,
                   help="write here (atomically); '-' is stdout")
    try:
        p.add_argument("--no-cache", action="store_true",
                       help="compile again: neither read nor write the compiled-system cache "
                            "($TOPOC_CACHE/systems; docs/scale.md)")
    except argparse.ArgumentError:
        pass        # the verb has its own --no-cache (plan: its rows), which covers this one


def add_group_options(p: argparse.ArgumentParser, parallel_help: str, group_help: str) -> None:
    """The group selection, declared once: ``--parallel``, ``--group``, ``--ranks``."""
    p.add_argument("--parallel", metavar="NAME", help=parallel_help)
    p.add_argument("--group", metavar="KIND[:INDEX]", help=group_help)
    p.add_argument("--ranks", metavar="LIST", help="an ad-hoc group of world ranks: 0..7,16")


def selected_group(system: System, args, spec: str | None = None) -> RankGroup:
    """The group the options name (``spec`` instead of ``--group`` when given); a name the
    file does not have is a usage error (exit 2)."""
    try:
        return select_group(system, spec if spec is not None else args.group, args.parallel,
                            args.ranks)
    except GroupError as exc:
        raise UsageError(f"{args.file}: {exc}") from None


def strategy_name(system: System, file: str, name: str | None, needed: bool = True) -> str | None:
    """The parallel block ``--parallel`` names, or the only one when it is omitted; a name
    the file does not have is a usage error (exit 2), the same for every verb."""
    names = system.parallel_names()
    if name is None and not needed:
        return None
    chosen = name or (names[0] if len(names) == 1 else None)
    if chosen in names:
        return chosen
    left_out = dict(system.skipped)
    if (name or (not names and len(left_out) == 1 and next(iter(left_out)))) in left_out:
        raise UsageError(f"{file}: {left_out[name or next(iter(left_out))].message}")
    if name and not names:
        what = f"no parallel block '{name}': the file has none (docs/language.md)"
    elif not names:
        what = "the file has no parallel block (docs/language.md)"
    elif name:
        what = f"no parallel block '{name}'" + (suggest(name, names)
                                                or f"; the file has {', '.join(names)}")
    else:
        what = f"name the strategy with --parallel: one of {', '.join(names)}"
    raise UsageError(f"{file}: {what}")
