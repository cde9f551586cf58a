"""Issue 25's speed figures: inputs at the limits answer in bounded time, growing linearly.

Prints seconds for:

- ``limits``: fmt of link lines each with a comment (2x the lines should take about 2x), the
  NCCL importer on 100,000 sibling elements (its element limit), the nvidia-smi importer on a
  512-column matrix (its column limit), and the bounded reader on /dev/zero;
- ``large``: a 5 MB file of link lines (200,000 connections in fmt's layout): parse, compile
  and fmt in process (CPU seconds), ``topoc compile`` and ``topoc fmt --check`` as commands
  (wall seconds), and the same file spaced unusually, which Lark parses line by line;
- ``lsp``: the real language server (``topoc lsp``) over stdio with a document just under the
  8 MiB limit: didOpen, a hover during the first analysis, the time to the first diagnostics;
  then three edits (the second leaves a half-typed line), each followed at once by a hover, a
  completion near the top and one on the group's last line (its syntax read from 8 MiB of text
  before the cursor): the time to each reply and to the edit's diagnostics;
- ``grown``: the fuzz campaign's small cluster with its node count set to 4,096, 16,384 and
  32,768 (the fifth campaign's slow mutant set it to 165,491: 2.8 M devices, 2.6 M links),
  each verb as a command: CPU seconds (user + system of the child) and peak resident memory,
  and both per device or link, which should stay flat when the work is linear
  (``grown 165491`` adds that size: about 5 minutes and 2.7 GB at most).

Run: .venv/bin/python benchmarks/robust.py [limits large lsp grown [NODES...]]
"""

from __future__ import annotations

import json
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from topoc.compiler.base.limits import LIMITS
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.lang import pipeline
from topoc.compiler.lang.fmt import fmt
from topoc.importers import from_nccl_xml, from_smi, nccl_xml, smi


def timed(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def commented(n: int) -> str:
    return ("link l : nvlink { bandwidth = 1 GB/s }\ndevice X : gpu { }\ngroup G {\n"
            "  a[10] : X\n" + "".join(f"  a[1] <-> a[2] : l  # c{i}\n" for i in range(n)) + "}\n")


def limits() -> None:
    for n in (5_000, 10_000, 20_000):
        text = commented(n)
        print(f"fmt, {n:,} commented lines ({len(text) / 1e6:.2f} MB): "
              f"{timed(lambda: fmt(text)):.2f} s")
    gpu = ('<pci busid="0000:01:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" '
           'link_width="16"><gpu sm="90"/></pci>')
    xml = ('<system version="1"><cpu numaid="0" arch="x86_64">' + gpu
           + '<pci busid="0000:ff:00.0" class="0x010000"/>' * (nccl_xml.MAX_ELEMENTS - 10)
           + "</cpu></system>")
    print(f"import nccl-topo, {nccl_xml.MAX_ELEMENTS:,} sibling elements "
          f"({len(xml) / 1e6:.1f} MB): {timed(lambda: from_nccl_xml(xml, 'wide.xml')):.2f} s")
    n = smi.MAX_COLUMNS
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n))
    rows = [f"GPU{i}\t" + "\t".join("X" if i == j else "NV18" if i % 7 and j % 7 else "NODE"
                                    for j in range(n)) for i in range(n)]
    matrix = "\n".join([head, *rows])
    print(f"import nvidia-smi, {n} x {n} matrix ({len(matrix) / 1e6:.1f} MB): "
          f"{timed(lambda: from_smi(matrix, 'wide.txt')):.2f} s")

    def zero():
        try:
            pipeline.read("/dev/zero")
        except CompileError:
            pass
    print(f"read /dev/zero: E290 after {LIMITS.file_bytes + 1:,} bytes in {timed(zero):.2f} s")


def link_lines(limit: int, spacing: str = " ") -> tuple[str, int]:
    """A file of connections between 4,000 GPUs, at most ``limit`` characters, and the 0-based
    line of its first connection; ``spacing`` between tokens (one space is fmt's layout)."""
    r = random.Random(1)
    head = "link l : nvlink { bandwidth = 1 GB/s }\n\ndevice X : gpu { }\n\ngroup G {\n" \
           "  a[4000] : X\n"
    tail = "}\n\nsystem s : G\n"
    lines, size = [], len(head) + len(tail)
    w = spacing
    while True:
        i = r.randrange(4000)
        j = (i + 1 + r.randrange(3999)) % 4000
        line = f"  a[{i}]{w}<->{w}a[{j}]{w}:{w}l\n"
        if size + len(line) > limit:
            break
        lines.append(line)
        size += len(line)
    return head + "".join(lines) + tail, head.count("\n")


def cpu(f) -> float:
    start = time.process_time()
    f()
    return time.process_time() - start


def command(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "topoc", *args], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def large() -> None:
    import topoc
    from topoc.compiler.lang.parse import parse
    text, _ = link_lines(5_000_000)
    n = text.count("<->")
    print(f"large file: {len(text) / 1e6:.1f} MB, {n:,} connections")
    print(f"  parse {cpu(lambda: parse(text)):.2f} s CPU, compile "
          f"{cpu(lambda: topoc.compile(text)):.2f} s CPU, fmt {cpu(lambda: fmt(text)):.2f} s CPU")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "links.topo"
        path.write_text(text)
        print(f"  topoc compile {command('compile', str(path)):.2f} s wall, topoc fmt --check "
              f"{command('fmt', '--check', str(path)):.2f} s wall")
    odd, _ = link_lines(5_000_000, "  ")
    print(f"  the same spaced with two blanks ({odd.count('<->'):,} connections, parsed by "
          f"Lark): parse {cpu(lambda: parse(odd)):.2f} s CPU, fmt {cpu(lambda: fmt(odd)):.2f} s "
          "CPU")


class _Client:
    """``topoc lsp`` in a child process, every message it sends kept with its arrival time."""

    def __init__(self, cwd: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "topoc", "lsp"], cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.arrived: queue.Queue = queue.Queue()
        self.seen: list = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        from topoc import lsp_io
        reader = lsp_io.Reader(self.proc.stdout)
        while (body := reader.frame()) is not None:
            self.arrived.put((time.monotonic(), json.loads(body)))

    def send(self, message: dict) -> None:
        from topoc import lsp_io
        self.proc.stdin.write(lsp_io.encode({"jsonrpc": "2.0", **message}))
        self.proc.stdin.flush()

    def wait(self, pred, timeout: float = 600):
        end = time.monotonic() + timeout
        while True:
            for i, (at, m) in enumerate(self.seen):
                if pred(m):
                    del self.seen[i]
                    return at, m
            self.seen.append(self.arrived.get(timeout=max(0.01, end - time.monotonic())))

    def request(self, method: str, params: dict) -> tuple[float, dict]:
        self.next_id += 1
        k, start = self.next_id, time.monotonic()
        self.send({"id": k, "method": method, "params": params})
        at, m = self.wait(lambda m: m.get("id") == k)
        return at - start, m


def lsp() -> None:
    text, first = link_lines(LIMITS.file_bytes - 2**16)
    print(f"language server: a {len(text) / 2**20:.2f} MiB document, "
          f"{text.count(chr(10)):,} lines")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        c = _Client(root)
        uri = (root / "big.topo").as_uri()
        c.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
        c.send({"method": "initialized", "params": {}})
        diagnostics = lambda m: m.get("method") == "textDocument/publishDiagnostics"  # noqa: E731

        def ask(method: str, line: int, character: int) -> tuple[float, dict]:
            return c.request(method, {"textDocument": {"uri": uri},
                                      "position": {"line": line, "character": character}})
        start = time.monotonic()
        c.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "topo", "version": 1, "text": text}}})
        took, m = ask("textDocument/hover", first + 1, 20)
        print(f"  hover during the first analysis: {took:.2f} s "
              f"({'an answer' if m.get('result') else 'no answer yet: nothing analysed'})")
        at, m = c.wait(diagnostics)
        print(f"  didOpen to first diagnostics: {at - start:.2f} s")
        lines = text.split("\n")
        for version, edit in ((2, "  a[1] <-> a[2] : l"), (3, "  a[1] <-> a[2] :"),
                              (4, "  a[1] <-> a[3] : l")):
            lines[first + 2] = edit
            start = time.monotonic()
            c.send({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": "\n".join(lines)}]}})
            hover, h = ask("textDocument/hover", first + 3, len(lines[first + 3]) - 1)
            completion, m = ask("textDocument/completion", first + 2, len(edit))
            # the group's last line: the text before the cursor is the whole 8 MiB group
            last = len(lines) - 5
            end, e = ask("textDocument/completion", last, lines[last].index(":") + 1)
            at, d = c.wait(diagnostics)
            print(f"  edit {version} ({edit.strip()!r}): hover {hover:.2f} s "
                  f"({'answered' if h.get('result') else 'empty'}), completion {completion:.2f} s"
                  f" ({len(m['result']['items'])} items), at the group's end {end:.2f} s "
                  f"({len(e['result']['items'])}), its diagnostics {at - start:.2f} s "
                  f"({len(d['params']['diagnostics'])})")
        c.proc.kill()
        c.proc.wait()


GROWN_VERBS = [["compile"], ["lint", "--format", "sarif"], ["render", "-o", "{out}.dot"],
               ["export", "nccl-topo", "-o", "{out}.xml"],
               ["schedule", "--ranks", "0..3", "--collective", "allgather", "--size", "1MiB"],
               ["cost", "--group", "world", "--sizes", "1MiB"], ["report", "--parallel", "train"]]


def child(args: list[str]) -> tuple[int, float, int]:
    """Exit code, CPU seconds (user + system) and peak resident bytes of ``topoc ARGS``."""
    proc = subprocess.Popen([sys.executable, "-m", "topoc", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def grown(sizes: list[int]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.test_robust_fuzz import SMALL, elaborated_size
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes or [4096, 16384, 32768]:
            src = Path(tmp) / f"n{n}.topo"
            src.write_text(SMALL.replace("node[nodes]", f"node[{n}]"))
            size = elaborated_size(src.read_text(), src)
            print(f"node[{n}]: {size:,} devices and links")
            for verb in GROWN_VERBS:
                rest = [a.replace("{out}", str(Path(tmp) / "out")) for a in verb]
                args = [rest[0], rest[1], str(src), *rest[2:]] if rest[0] == "export" else \
                    [rest[0], str(src), *rest[1:]]
                code, seconds, rss = child(args)
                print(f"  {' '.join(verb[:2]):20s} exit {code}  {seconds:6.2f} s CPU "
                      f"({seconds / size * 1e6:5.2f} us each)  {rss / 2**20:6.0f} MiB "
                      f"({rss / size:4.0f} B each)  load {os.getloadavg()[0]:.1f}", flush=True)


def main() -> None:
    parts = sys.argv[1:] or ["limits", "large", "lsp"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if parts[0] == "grown":
        grown([int(n) for n in parts[1:]])
        return
    for part in parts:
        {"limits": limits, "large": large, "lsp": lsp}[part]()


if __name__ == "__main__":
    main()
