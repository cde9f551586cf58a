"""The language server's transport, hardened: what arrives on stdin can be malformed in any
way and the server keeps serving.

- Framing: header lines may end in CRLF or LF; ``Content-Length`` must be a whole number up
  to ``MAX_FRAME``, and given twice, the same both times; a frame that breaks these rules gets a JSON-RPC error (id null) and the
  reader finds the next ``Content-Length`` header, so one bad frame costs one message.
- Messages: a body that is not JSON gets -32700 (parse error); JSON that is not a request,
  notification or response gets -32600 (invalid request); a request before ``initialize``
  gets -32002 (server not initialized, as the LSP specification says) and notifications
  before it are dropped; params the protocol types cannot read get -32602 (invalid params).
- Ending, as the LSP specification says: ``shutdown`` and ``exit`` take no params (absent or
  ``null``); ``shutdown`` answers null, and every request after it gets -32600 (invalid
  request); ``exit`` ends the server, with exit code 0 after a ``shutdown`` and 1 without.
- Analysis is debounced on a worker thread (``Debouncer``): edits only record that the
  document changed; an analysis still running when a newer edit arrives gives up at its next
  stage (``Analysis``'s ``stale``), so the newest text is analysed next. Requests never run
  the pipeline: on a small document they wait for a pending analysis (at most ``WAIT``
  seconds, usually far less); on a large one (``lsp.SMALL``) they answer at once from the
  current text and the last program that resolved, while the analysis runs behind them
  (benchmarks/robust.py measures a document at the size limit).
- Broken imports: ``import_site`` finds the ``use`` line of the document that leads to the
  file a diagnostic is in, so an error in an imported file shows on that line.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from .compiler.base import reading
from .compiler.base.limits import LIMITS

#: Largest frame body: a document at the size limit, JSON-escaped (every byte may take two
#: characters, or six as \\uXXXX), plus the envelope.
MAX_FRAME = 6 * LIMITS.file_bytes + 2**16
MAX_HEADER_LINE = 8192
MAX_HEADERS = 32
DELAY = 0.15        # seconds of quiet after an edit before the document is analysed
WAIT = 0.8          # longest a request waits for a pending analysis

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
NOT_INITIALIZED = -32002
_LENGTH = re.compile(rb"content-length\s*:", re.I)


class FrameError(Exception):
    """A frame that cannot be read; the message says why (sent back as an error)."""


class Reader:
    """Frames from a byte stream, one at a time, bounded in memory."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.carry = b""            # a header that arrived glued to the end of a bad body

    def _line(self) -> bytes | None:
        """One header line (without its end), at most MAX_HEADER_LINE bytes; the rest of a
        longer line is skipped. None at the end of the stream."""
        if self.carry:
            line, self.carry = self.carry, b""
            return line
        line = self.stream.readline(MAX_HEADER_LINE)
        if not line:
            return None
        while not line.endswith(b"\n"):             # too long: skip to the line's end
            more = self.stream.readline(MAX_HEADER_LINE)
            if not more:
                break
            line = line[:MAX_HEADER_LINE] + (b"\n" if more.endswith(b"\n") else b"")
            if more.endswith(b"\n"):
                break
        return line.rstrip(b"\r\n")

    def frame(self) -> bytes | None:
        """The next frame's body; ``FrameError`` for a malformed one (the stream is then at
        the start of whatever follows); None at the end of the stream."""
        length: int | None = None
        bad: str | None = None
        count = 0
        while True:
            line = self._line()
            if line is None:
                return None
            if not line.strip():
                if length is None and bad is None and count == 0:
                    continue                        # blank lines between frames
                break
            count += 1
            m = _LENGTH.search(line)
            if m and m.start() > 0 and count == 1:
                line = line[m.start():]            # a header glued to the rest of a body
            name, sep, value = line.partition(b":")
            if not sep or count > MAX_HEADERS:
                bad = bad or "a header line without 'Name: value'"
            elif name.strip().lower() == b"content-length":
                value = value.strip()
                if not re.fullmatch(rb"[0-9]{1,12}", value):
                    bad = bad or f"Content-Length '{value[:40].decode('latin-1')}' is not a number"
                elif int(value) > MAX_FRAME:
                    bad = bad or (f"Content-Length {int(value)} is larger than the limit of "
                                  f"{MAX_FRAME} bytes")
                elif length is not None and int(value) != length:
                    # two lengths: either could be the frame's; reading by one would smuggle
                    # a message inside the other's body (a repeat of one value is fine)
                    bad = bad or (f"two Content-Length headers that disagree ({length} and "
                                  f"{int(value)})")
                else:
                    length = int(value)
        if bad is None and length is None:
            bad = "a frame without Content-Length"
        if bad is not None:
            raise FrameError(bad)
        try:
            body = reading.read_stream(_Exactly(self.stream, length), "frame", length)
        except reading.TooLarge:        # cannot happen: _Exactly stops at length
            raise FrameError("frame body too long") from None
        if len(body) < length:
            return body if body else None
        return body


class _Exactly:
    """A stream view that gives at most ``n`` bytes."""

    def __init__(self, stream: BinaryIO, n: int):
        self.stream, self.left = stream, n

    def read(self, size: int) -> bytes:
        data = self.stream.read(min(size, self.left)) if self.left > 0 else b""
        self.left -= len(data)
        return data


def encode(message: dict) -> bytes:
    """A frame for ``message`` (ASCII JSON, so the length in bytes is the length in chars)."""
    body = json.dumps(message, separators=(",", ":")).encode("ascii")
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def error(msg_id, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


class Writer:
    """Frames to a byte stream, one writer at a time (the analysis thread publishes too)."""

    def __init__(self, stream: BinaryIO):
        self.stream, self.lock = stream, threading.Lock()

    def write(self, data: bytes) -> None:
        with self.lock:
            self.stream.write(data)
            self.stream.flush()

    def close(self) -> None:
        pass


def classify(body: bytes) -> tuple[dict | None, dict | None]:
    """(message, None) for a well-formed JSON-RPC message, or (None, error reply)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None, error(None, PARSE_ERROR, "the frame's body is not JSON")
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
        return None, error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
    msg_id = data.get("id")
    if "id" in data and (isinstance(msg_id, bool) or not isinstance(msg_id, (int, str))):
        return None, error(None, INVALID_REQUEST, "'id' must be a number or a string")
    if "method" in data:
        if not isinstance(data["method"], str):
            return None, error(msg_id, INVALID_REQUEST, "'method' must be a string")
        if "params" in data and data["params"] is None:
            del data["params"]              # JSON-RPC: params "MAY be omitted"; null is absent
        if "params" in data and not isinstance(data["params"], (dict, list)):
            return None, error(msg_id, INVALID_PARAMS, "'params' must be an object or array")
    elif "id" not in data or not ("result" in data or "error" in data):
        return None, error(msg_id, INVALID_REQUEST, "neither a request, a notification nor a "
                           "response")
    return data, None


def serve(server, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Run ``server`` (a pygls LanguageServer) on the streams until they end (0) or the client
    sends ``exit``: the process's exit code, 0 when ``shutdown`` came first, else 1."""
    protocol = server.protocol
    writer = Writer(stdout)
    protocol.set_writer(writer)
    reader = Reader(stdin)
    initialized = shut_down = False
    while True:
        try:
            body = reader.frame()
        except FrameError as exc:
            writer.write(encode(error(None, INVALID_REQUEST, f"malformed frame: {exc}")))
            continue
        if body is None:
            return 0
        data, reply = classify(body)
        if reply is not None:
            writer.write(encode(reply))
            continue
        method = data.get("method")
        request = method is not None and "id" in data
        if method == "exit":
            return 0 if shut_down else 1
        if shut_down:
            if request:
                writer.write(encode(error(data["id"], INVALID_REQUEST,
                                          "the server is shut down: only 'exit' is read")))
            continue
        if not initialized and method not in ("initialize", None):
            if request:
                writer.write(encode(error(data["id"], NOT_INITIALIZED,
                                          "the server is not initialized yet")))
            continue
        try:
            message = protocol.structure_message(data)
        except Exception:
            if request:
                writer.write(encode(error(data["id"], INVALID_PARAMS,
                                          f"params of '{method}' cannot be read")))
            continue
        protocol.handle_message(message)
        if method == "initialize":
            initialized = True
        if method == "shutdown" and request:
            shut_down = True


# ---- debounced analysis -----------------------------------------------------------------------

class Debouncer:
    """Analyses documents on one worker thread, each after ``DELAY`` seconds without edits;
    ``run(uri)`` does the work (analyse and publish)."""

    def __init__(self, run: Callable[[str], None], delay: float = DELAY):
        self.run, self.delay = run, delay
        self.cond = threading.Condition()
        self.due: dict[str, float] = {}
        self.busy: str | None = None
        threading.Thread(target=self._work, name="topoc-analysis", daemon=True).start()

    def submit(self, uri: str) -> None:
        with self.cond:
            self.due[uri] = time.monotonic() + self.delay
            self.cond.notify_all()

    def pending(self, uri: str) -> bool:
        """Whether an edit of ``uri`` waits for its analysis (a running one is then stale)."""
        with self.cond:
            return uri in self.due

    def wait(self, uri: str, timeout: float = WAIT) -> None:
        """Until ``uri`` has no pending or running analysis, at most ``timeout`` seconds."""
        end = time.monotonic() + timeout
        with self.cond:
            while uri in self.due or self.busy == uri:
                left = end - time.monotonic()
                if left <= 0:
                    return
                if uri in self.due:                 # asked for now: skip the quiet time
                    self.due[uri] = min(self.due[uri], time.monotonic())
                    self.cond.notify_all()
                self.cond.wait(left)

    def _work(self) -> None:
        while True:
            with self.cond:
                while True:
                    now = time.monotonic()
                    ready = [u for u, t in self.due.items() if t <= now]
                    if ready:
                        uri = ready[0]
                        del self.due[uri]
                        self.busy = uri
                        break
                    self.cond.wait(min(self.due.values()) - now if self.due else None)
            try:
                self.run(uri)
            except Exception:               # one document's failure never stops the worker
                pass
            finally:
                with self.cond:
                    self.busy = None
                    self.cond.notify_all()


# ---- errors in imported files -----------------------------------------------------------------

_USE = re.compile(r'^[ \t]*use[ \t]+"([^"\n]*)"', re.M)


def import_site(text: str, path: str, target: str) -> tuple[int, int, int] | None:
    """(0-based line, start column, end column) of the ``use`` in ``text`` through which the
    document at ``path`` reaches the file ``target`` (directly or through other imports), so
    a diagnostic in that file can be shown there; None if no ``use`` leads to it."""
    from .compiler.lang.resolve import library_root
    goal = Path(target).resolve()
    here = Path(path).resolve().parent
    for m in _USE.finditer(text):
        line = text.count("\n", 0, m.start())
        col = m.start() - (text.rfind("\n", 0, m.start()) + 1)
        seen: set[Path] = set()
        todo = [(here, m.group(1), 0)]
        while todo:
            base, name, depth = todo.pop()
            for folder in (base, library_root()):
                found = (folder / name).resolve()
                if found.is_file():
                    break
            else:
                continue
            if found == goal:
                return line, col, col + len(m.group(0).strip())
            if found in seen or depth >= LIMITS.imports:
                continue
            seen.add(found)
            try:
                inner = reading.read_text(found)
            except (OSError, ValueError):
                continue
            todo += [(found.parent, n, depth + 1) for n in _USE.findall(inner)]
    return None
