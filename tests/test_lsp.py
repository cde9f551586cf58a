"""``topoc lsp`` over its stdio protocol: diagnostics with the compiler's codes and spans, hover
with resolved figures, definition across imports into the bundled library, completion and
formatting; plus the analysis directly."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from topoc.lsp import Analysis

from .conftest import LIBRARY

GOOD = """use "nvidia/links.topo"
use "nvidia/devices.topo"
group Box {
  gpu[8] : H100
  sw : NVSwitch3
  gpu[*] <-> sw : nvlink4 x 4
}
system box : Box
"""


class Client:
    """A minimal LSP client: Content-Length framed JSON-RPC over the server's pipes."""

    def __init__(self, cwd: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "topoc", "lsp"], cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.messages: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = out.read(1)
                if not byte:
                    return
                header += byte
            length = int([ln for ln in header.decode().split("\r\n")
                          if ln.lower().startswith("content-length")][0].split(":")[1])
            self.messages.put(json.loads(out.read(length)))

    def send(self, method: str, params: dict, request: bool = True) -> int | None:
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            msg["id"] = self.next_id
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()
        return msg.get("id")

    def wait(self, pred, timeout: float = 60.0) -> dict:
        while True:
            msg = self.messages.get(timeout=timeout)
            if pred(msg):
                return msg

    def request(self, method: str, params: dict) -> dict:
        rid = self.send(method, params)
        return self.wait(lambda m: m.get("id") == rid)["result"]

    def diagnostics(self, uri: str) -> list[dict]:
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == uri)["params"]["diagnostics"]


@pytest.fixture
def client(tmp_path):
    c = Client(tmp_path)
    c.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(),
                             "capabilities": {}})
    c.send("initialized", {}, request=False)
    yield c
    try:
        c.request("shutdown", {})
        c.send("exit", {}, request=False)
        c.proc.wait(timeout=20)
    finally:
        c.proc.kill()


def _open(client, path: Path, text: str) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "topo",
                                                         "version": 1, "text": text}},
                request=False)
    return uri


def test_diagnostics_as_you_type(client, tmp_path):
    uri = _open(client, tmp_path / "box.topo", GOOD.replace("nvlink4 x 4", "nvlnk4 x 4"))
    (d,) = client.diagnostics(uri)
    assert d["code"] == "E111" and "did you mean 'nvlink4'" in d["message"]
    assert d["range"]["start"] == {"line": 5, "character": 18}
    assert d["severity"] == 1
    client.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                           "contentChanges": [{"text": GOOD}]}, request=False)
    assert client.diagnostics(uri) == []


def test_hover_definition_completion_and_formatting(client, tmp_path):
    uri = _open(client, tmp_path / "box.topo", GOOD.replace("  sw : NVSwitch3", "sw:NVSwitch3"))
    client.diagnostics(uri)
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": {"line": 3, "character": 13}})
    value = hover["contents"]["value"]
    assert "device H100" in value and "hbm = 85.521 GB" in value and "tflops_bf16 = 989" in value
    link = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": 5, "character": 20}})
    assert "link nvlink4" in link["contents"]["value"] and "per lane" in link["contents"]["value"]
    loc = client.request("textDocument/definition", {"textDocument": {"uri": uri},
                                                     "position": {"line": 3, "character": 13}})
    assert loc["uri"] == (LIBRARY / "nvidia" / "devices.topo").resolve().as_uri()
    text = (LIBRARY / "nvidia" / "devices.topo").read_text().split("\n")
    assert text[loc["range"]["start"]["line"]].startswith("device H100 ")
    items = client.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                       "position": {"line": 5, "character": 18}})
    labels = {i["label"] for i in items["items"]}
    assert {"nvlink4", "ndr", "pcie5"} <= labels and "H100" not in labels
    edits = client.request("textDocument/formatting", {"textDocument": {"uri": uri},
                                                       "options": {"tabSize": 2,
                                                                   "insertSpaces": True}})
    assert len(edits) == 1 and "  sw : NVSwitch3" in edits[0]["newText"]


def test_analysis_lint_findings_and_models(tmp_path):
    text = ('use "nvidia/dgx_h100.topo"\nuse "models/llama3.topo"\nsystem dgx : DGXH100\n'
            "parallel p on dgx { tp = 8  model = llama3_405b  batch = 8 }\n")
    path = tmp_path / "oom.topo"
    path.write_text(text)
    a = Analysis(text, str(path))
    assert [f.code for f in a.diagnostics] == ["W506"] and a.diagnostics[0].severity == 2
    assert "405" in a.hover(3, 42) and "parameters" in a.hover(3, 42)
    assert {c[0] for c in a.completions(3, len("parallel p on dgx { tp = 8  model = "))} >= \
        {"llama3_8b", "llama3_70b", "llama3_405b"}
    box = tmp_path / "box.topo"
    box.write_text(GOOD)
    inside = Analysis(GOOD, str(box))
    assert inside.hover(5, 3).startswith("`gpu` : H100") and "hbm = 85.521 GB" in inside.hover(5, 3)
    # a member used in a connection -> its member line; on the member line -> its model
    assert inside.definition(5, 13)[0] == str(box.resolve()) and inside.definition(5, 13)[1] == (4, 2)
    assert inside.definition(4, 8)[0].endswith("devices.topo")        # NVSwitch3
    broken = Analysis("group {", str(tmp_path / "b.topo"))
    assert broken.diagnostics and broken.diagnostics[0].code.startswith("E1")
    assert broken.hover(0, 1) is None and broken.formatted() is None


HALF = GOOD.replace("  gpu[*] <-> sw : nvlink4 x 4\n", "  gpu[*] <-> sw : nvlink4 x 4\n  gpu[0] <-> sw : \n")


def test_completion_on_a_half_typed_line(client, tmp_path):
    """The line being typed does not parse; completion still offers what fits the position:
    link types after a connection's ':', device models and groups after a member's ':',
    every bundled model after 'model ='."""
    uri = _open(client, tmp_path / "half.topo", HALF)
    (d,) = client.diagnostics(uri)
    assert d["code"].startswith("E1")
    items = client.request("textDocument/completion", {
        "textDocument": {"uri": uri}, "position": {"line": 6, "character": len("  gpu[0] <-> sw : ")}})
    labels = {i["label"] for i in items["items"]}
    assert {"nvlink4", "ndr", "pcie5"} <= labels and "H100" not in labels and "group" not in labels
    member = HALF.replace("  gpu[0] <-> sw : \n", "  nic[2] : \n")
    a = Analysis(member, str(tmp_path / "m.topo"))
    assert a.diagnostics and {"H100", "CX7", "NVSwitch3"} <= {c[0] for c in a.completions(6, 11)}
    text = ('use "nvidia/dgx_h100.topo"\nsystem dgx : DGXH100\nparallel p on dgx {\n  tp = 8\n'
            "  model = \n}\n")
    b = Analysis(text, str(tmp_path / "p.topo"))
    assert {"llama3_70b", "gpt3_175b", "mixtral_8x7b"} <= {c[0] for c in b.completions(4, 10)}


def test_one_error_per_typo_and_hover_on_words(tmp_path):
    typo = GOOD.replace("gpu[8] : H100", "gpu[8] : H10").replace(
        "  gpu[*] <-> sw : nvlink4 x 4\n", "  gpu[*] <-> sw : nvlink4 x 4\n  gpu[0] <-> sw : nvlink4\n")
    a = Analysis(typo, str(tmp_path / "t.topo"))
    assert [f.code for f in a.diagnostics] == ["E110"]
    box = Analysis(GOOD, str(tmp_path / "box.topo"))
    lanes = box.hover(5, len("  gpu[*] <-> sw : nvlink4 x "))
    assert "4 lanes" in lanes and "100 GB/s per direction" in lanes
    assert "declared at library: nvidia/devices.topo" in box.hover(3, 13)
    text = GOOD + ("parallel p on box {\n  tp = 8\n  traffic {\n    tp allreduce 1 GiB x 2\n"
                   "  }\n}\n")
    p = Analysis(text, str(tmp_path / "p.topo"))
    assert "tensor parallel" in p.hover(9, 3)
    assert "busbw = algbw x 2(n-1)/n" in p.hover(11, 8)
    # a traffic line is 'dim collective size': the group kinds first, then the collectives
    assert {c[0] for c in p.completions(11, 4)} == {"tp", "cp", "ep", "dp", "pp", "edp", "dpcp"}
    assert {c[0] for c in p.completions(11, 7)} >= {"allreduce", "alltoall"}


def test_definition_on_use_paths_and_broken_imports(tmp_path):
    a = Analysis(GOOD, str(tmp_path / "box.topo"))
    path, start, _ = a.definition(0, 8)
    assert path == str((LIBRARY / "nvidia" / "links.topo").resolve()) and start == (0, 0)
    (tmp_path / "bad.topo").write_text("link broken : nvlnk { bandwidth = 1 GB/s latency = 1 us }\n")
    text = 'use "bad.topo"\n' + GOOD
    b = Analysis(text, str(tmp_path / "user.topo"))
    assert b.diagnostics and b.diagnostics[0].start == (0, 0)
    assert "bad.topo" in b.diagnostics[0].message


def test_a_file_typed_character_by_character(tmp_path):
    """Issue 40: the real server over stdio, a file of every construct typed one character at
    a time (an incremental didChange inserting it, then a completion at the end): at every
    step the completion request is answered without an error, the diagnostics published for
    that step's text are well-formed (codes, severities, ranges inside the text), completion
    inside a block never offers the top-level keywords, and at chosen positions it offers
    what fits there (link types after a connection's ':' ...). The server writes no
    traceback, the finished file has no findings, and shutdown and exit with null params end
    it with code 0."""
    from .test_lsp_complete import POSITIONS, TOP, TYPED
    checks = {TYPED.index(mark) + len(mark): (mark, wanted, unwanted)
              for mark, wanted, unwanted in POSITIONS}
    client = Client(tmp_path)
    errors: list[bytes] = []
    threading.Thread(target=lambda: errors.extend(client.proc.stderr), daemon=True).start()
    try:
        client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(),
                                      "capabilities": {}})
        client.send("initialized", {}, request=False)
        uri = (tmp_path / "typed.topo").as_uri()
        client.send("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "topo", "version": 0, "text": ""}}, request=False)
        client.diagnostics(uri)
        published = []
        for n in range(1, len(TYPED) + 1):
            text = TYPED[:n]
            lines = text.split("\n")
            at = TYPED[:n - 1].split("\n")       # the character goes at the end, as typed
            end = {"line": len(at) - 1, "character": len(at[-1])}
            client.send("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": n},
                "contentChanges": [{"range": {"start": end, "end": end},
                                    "text": TYPED[n - 1]}]}, request=False)
            rid = client.send("textDocument/completion", {
                "textDocument": {"uri": uri},
                "position": {"line": len(lines) - 1, "character": len(lines[-1])}})
            reply, found = None, None
            while reply is None or found is None:   # this step's reply and its one publish
                msg = client.messages.get(timeout=60)
                if msg.get("id") == rid:
                    reply = msg
                elif msg.get("method") == "textDocument/publishDiagnostics":
                    assert msg["params"]["uri"] == uri
                    found = msg["params"]["diagnostics"]
            assert "error" not in reply, (text, reply)
            labels = {i["label"] for i in reply["result"]["items"]}
            for d in found:
                assert d["source"] == "topoc" and d["message"] and d["severity"] in (1, 2)
                assert d["code"][0] in "EW" and d["code"][1:].isdigit(), d
                start, end = d["range"]["start"], d["range"]["end"]
                assert (start["line"], start["character"]) <= (end["line"], end["character"])
                for pos in (start, end):
                    assert 0 <= pos["line"] < len(lines), (text, d)
                    assert 0 <= pos["character"] <= len(lines[pos["line"]]), (text, d)
            published.append(found)
            if text.count("{") > text.count("}"):
                assert not labels & (TOP - {"model"}), (text, sorted(labels & TOP))
            if n in checks:
                mark, wanted, unwanted = checks[n]
                assert wanted <= labels and not unwanted & labels, (mark, sorted(labels))
        assert published[-1] == [] and any(published)
        client.request("shutdown", None)
        client.send("exit", None, request=False)
        assert client.proc.wait(timeout=20) == 0
    finally:
        client.proc.kill()
    assert b"Traceback" not in b"".join(errors)


def test_diagnostic_ranges_lie_inside_the_document(tmp_path):
    """An error at the end of the file pointed one character past the last one (found by the
    typing test); an imported file's error covered the use line up to column 10,000."""
    (d,) = Analysis("use", str(tmp_path / "a.topo")).diagnostics
    assert d.code == "E102" and (d.start, d.end) == ((0, 2), (0, 3))
    (tmp_path / "bad.topo").write_text("link broken : nvlnk { bandwidth = 1 GB/s }\n")
    found = Analysis('use "bad.topo"\n' + GOOD, str(tmp_path / "user.topo")).diagnostics
    assert found[0].start == (0, 0) and found[0].end == (0, len('use "bad.topo"'))


def test_hover_and_definition_in_a_block_not_closed_yet(tmp_path):
    """Issue 40: in a group whose '}' is not typed yet, hover and definition answer from the
    text with its open blocks closed (they answered nothing)."""
    text = GOOD.split("  sw : NVSwitch3")[0] + "  sw : NVSwitch3\n  gpu[*] <-> sw : nv"
    a = Analysis(text, str(tmp_path / "open.topo"))
    assert a.diagnostics and a.diagnostics[0].code == "E103"
    assert "device H100" in a.hover(3, 13) and a.hover(5, 3).startswith("`gpu` : H100")
    assert a.definition(3, 13)[0].endswith("devices.topo")
