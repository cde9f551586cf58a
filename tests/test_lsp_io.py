"""Issue 25: the language server keeps serving whatever arrives: malformed frames answered per
JSON-RPC, -32002 before ``initialize``, error replies for unreadable params, a document at the
size limit answered within 2 s per edit, and a broken imported file shown on its ``use``
line."""

from __future__ import annotations

import io
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from topoc import lsp_io
from topoc.compiler.base.limits import LIMITS
from topoc.lsp import Analysis

pytest.importorskip("pygls")


class Raw:
    """A client that writes raw bytes and reads framed replies."""

    def __init__(self, cwd: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "topoc", "lsp"], cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        reader = lsp_io.Reader(self.proc.stdout)
        while (body := reader.frame()) is not None:
            self.replies.put(json.loads(body))

    def raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        self.raw(lsp_io.encode({"jsonrpc": "2.0", **message}))

    def reply(self, pred=lambda m: True, timeout: float = 30.0) -> dict:
        end = time.monotonic() + timeout
        while True:
            msg = self.replies.get(timeout=max(0.01, end - time.monotonic()))
            if pred(msg):
                return msg

    def initialize(self, root: Path) -> None:
        self.send({"id": "init", "method": "initialize",
                   "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}})
        assert "result" in self.reply(lambda m: m.get("id") == "init")
        self.send({"method": "initialized", "params": {}})

    def alive(self, n: int) -> None:
        """The server still answers a request."""
        self.send({"id": n, "method": "textDocument/hover",
                   "params": {"textDocument": {"uri": "file:///none.topo"},
                              "position": {"line": 0, "character": 0}}})
        assert self.reply(lambda m: m.get("id") == n).get("error") is None

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def raw(tmp_path):
    client = Raw(tmp_path)
    yield client
    client.close()


def test_request_before_initialize_is_32002(raw, tmp_path):
    raw.send({"id": 1, "method": "textDocument/hover",
              "params": {"textDocument": {"uri": "file:///x.topo"},
                         "position": {"line": 0, "character": 0}}})
    assert raw.reply()["error"]["code"] == -32002
    raw.initialize(tmp_path)
    raw.alive(2)


@pytest.mark.parametrize("frame, code", [
    (b"Content-Length: 99999999999\r\n\r\n", -32600),
    (b"Content-Length: many\r\n\r\n{}", -32600),
    (b"Content-Length: 5\r\n\r\n{\"jsonrpc\": \"2.0\"}", -32700),        # a short length
    (b"Content-Length: 8\r\n\r\nnot json", -32700),
    (b"Content-Length: 2\r\n\r\n[]", -32600),
    (b"no header here\r\n\r\n", -32600),
    (b"Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}", -32600),      # two lengths
])
def test_a_malformed_frame_is_answered_and_the_server_keeps_serving(raw, tmp_path, frame, code):
    raw.initialize(tmp_path)
    raw.raw(frame)
    assert raw.reply(lambda m: "error" in m)["error"]["code"] == code
    raw.alive(7)


def test_lf_only_headers_are_read(raw, tmp_path):
    body = json.dumps({"jsonrpc": "2.0", "id": "i", "method": "initialize",
                       "params": {"processId": None, "rootUri": tmp_path.as_uri(),
                                  "capabilities": {}}}).encode()
    raw.raw(b"Content-Length: %d\n\n%s" % (len(body), body))
    assert "result" in raw.reply(lambda m: m.get("id") == "i")


def test_unreadable_params_get_an_error_reply(raw, tmp_path):
    raw.initialize(tmp_path)
    raw.send({"id": 3, "method": "textDocument/hover", "params": {"position": "x"}})
    assert raw.reply(lambda m: m.get("id") == 3)["error"]["code"] == -32602
    raw.send({"id": 4, "method": "textDocument/hover", "params": 5})
    assert raw.reply(lambda m: m.get("id") == 4)["error"]["code"] == -32602
    raw.alive(5)


def _near_limit() -> tuple[str, int]:
    """A document just under the size limit (one group of link lines) and the 0-based line
    of its first connection."""
    head = 'device X : gpu { }\nlink l : nvlink { bandwidth = 1 GB/s }\n' \
           'group G {\n  a[100] : X\n'
    line = "  a[1] <-> a[2] : l\n"
    text = head + line * ((LIMITS.file_bytes - len(head) - 100) // len(line)) + "}\n"
    return text, 4


def test_requests_on_a_large_document_run_no_analysis(monkeypatch, tmp_path):
    """Issue 25: a request on a document at the size limit answers from the current text and
    the last program that resolved, even while the text is broken, and runs no stage of the
    pipeline (which takes seconds at that size: benchmarks/robust.py)."""
    from topoc.compiler.lang import pipeline
    text, first = _near_limit()
    path = str(tmp_path / "big.topo")
    last = Analysis(text, path)
    assert last.program is not None
    broken = text.replace("  a[1] <-> a[2] : l\n", "  a[1] <-> a[2] :\n", 1)
    monkeypatch.setattr(pipeline, "front_end", lambda *a, **k: pytest.fail("analysed"))
    view = Analysis.answering(broken, path, last, last.program)
    assert view.text is broken and view.program is last.program
    assert "nvlink" in view.hover(first + 1, len("  a[1] <-> a[2] : l") - 1)
    assert [c[0] for c in view.completions(first, len("  a[1] <-> a[2] :"))] == ["l"]
    assert Analysis.answering(text, path, last, last.program) is last


def test_an_analysis_of_an_edited_document_gives_up(tmp_path):
    """An analysis still running when a newer edit arrives stops at its next stage."""
    from topoc.lsp import Stale
    text, _ = _near_limit()
    calls = []
    with pytest.raises(Stale):
        Analysis(text[:2000] + "}\n", str(tmp_path / "a.topo"),
                 stale=lambda: calls.append(1) or True)
    assert calls == [1]


def test_a_document_at_the_size_limit_keeps_answering_through_edits(raw, tmp_path):
    """The real server over stdio: a document at the size limit, edited (once into a broken
    line), answers hover and completion from the last analysis; every reply arrives (the time
    per edit is measured by benchmarks/robust.py, not asserted here)."""
    raw.initialize(tmp_path)
    text, first = _near_limit()
    uri = (tmp_path / "big.topo").as_uri()
    raw.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "topo", "version": 1, "text": text}}})
    raw.reply(lambda m: m.get("method") == "textDocument/publishDiagnostics", timeout=300)
    lines = text.split("\n")
    for version, edit in ((2, "  a[1] <-> a[2] :"), (3, "  a[1] <-> a[3] : l")):
        lines[first] = edit
        raw.send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": "\n".join(lines)}]}})
        raw.send({"id": version, "method": "textDocument/completion",
                  "params": {"textDocument": {"uri": uri},
                             "position": {"line": first, "character": len("  a[1] <-> a[2] :")}}})
        items = raw.reply(lambda m: m.get("id") == version, timeout=120)["result"]["items"]
        assert [i["label"] for i in items] == ["l"]
        raw.send({"id": 10 + version, "method": "textDocument/hover",
                  "params": {"textDocument": {"uri": uri},
                             "position": {"line": 1, "character": 6}}})
        hover = raw.reply(lambda m: m.get("id") == 10 + version, timeout=120)["result"]
        assert "nvlink" in hover["contents"]["value"]


def test_a_broken_imported_file_shows_on_the_use_line(tmp_path):
    (tmp_path / "lib.topo").write_text("device X : gpu {\n")           # unclosed
    (tmp_path / "mid.topo").write_text('use "lib.topo"\n')
    text = '# a system\nuse "mid.topo"\ngroup G { x : X }\nsystem s : G\n'
    found = Analysis(text, str(tmp_path / "main.topo")).diagnostics
    assert found and found[0].start[0] == 1 and "lib.topo" in found[0].message
    assert found[0].severity == 1


def test_reader_skips_to_the_next_header_after_a_bad_frame():
    good = lsp_io.encode({"jsonrpc": "2.0", "method": "x"})
    reader = lsp_io.Reader(io.BytesIO(b"Content-Length: 3\r\n\r\nabcdef" + good))
    assert reader.frame() == b"abc"
    assert json.loads(reader.frame())["method"] == "x"
    assert reader.frame() is None


@pytest.mark.parametrize("params", [{"params": None}, {}])
def test_shutdown_and_exit_take_no_params(raw, tmp_path, params):
    """Issue 40: 'shutdown' and 'exit' with params null (or absent) follow the LSP
    specification: shutdown answers null, a request after it gets -32600, exit ends the
    server with code 0 (null params got -32602 and the server kept running)."""
    raw.initialize(tmp_path)
    raw.send({"id": "bye", "method": "shutdown", **params})
    reply = raw.reply(lambda m: m.get("id") == "bye")
    assert "error" not in reply and reply["result"] is None
    raw.send({"id": "late", "method": "textDocument/hover",
              "params": {"textDocument": {"uri": "file:///x.topo"},
                         "position": {"line": 0, "character": 0}}})
    assert raw.reply(lambda m: m.get("id") == "late")["error"]["code"] == -32600
    raw.send({"method": "exit", **params})
    assert raw.proc.wait(timeout=20) == 0


@pytest.mark.parametrize("params", [{"params": None}, {}])
def test_exit_without_shutdown_ends_with_code_1(raw, tmp_path, params):
    raw.initialize(tmp_path)
    raw.send({"method": "exit", **params})
    assert raw.proc.wait(timeout=20) == 1


def test_conflicting_lengths_are_refused_and_a_repeated_one_is_read():
    """Issue 44: two Content-Length headers that disagree were accepted (the last won)."""
    good = lsp_io.encode({"jsonrpc": "2.0", "method": "x"})
    reader = lsp_io.Reader(io.BytesIO(b"Content-Length: 2\r\ncontent-length: 9\r\n\r\n{}"
                                      + good + b"Content-Length: 2\r\nContent-Length: 2\r\n"
                                      b"\r\n[]"))
    with pytest.raises(lsp_io.FrameError, match="disagree"):
        reader.frame()
    assert json.loads(reader.frame())["method"] == "x"
    assert reader.frame() == b"[]"
