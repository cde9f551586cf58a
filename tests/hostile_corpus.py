"""A generated corpus of hostile inputs (issue 44) and the checks every case must pass.

``dumps(n)`` makes ``n`` dumps (hwloc XML, ibnetdiscover in both formats, nvidia-smi topo -m,
NCCL topology XML) from the real fixtures under ``tests/fixtures``, with hostile text where a
machine or a person writes names: quotes, backslashes, newlines, NUL and other control
characters, U+2028, huge widths, format fields, deep nesting, numbers holding text; each case
knows the hosts and GPUs it put in (or ``None`` for a random mutation, whose content nobody
knows). ``topo_files(n)`` makes ``n`` .topo files the same way: hostile host patterns (each
case knows its hosts' names), mutated library files and fixtures, deep nesting and huge
literals. Both are deterministic in their seed.

``check(case)`` runs one case through its importer (the API, and ``topoc import`` for what
the user sees), or the compiler, the language server's analysis, ``lint``, every cluster export (Slurm tree, block and yaml, Kubernetes, ibsim,
ibdiagnet) and ``diff`` of the system against itself, and returns the outcome: ``exported``
(got through the exports), ``refused`` (an ImportFailure, a CompileError or an export's
refusal naming the problem) or ``compiled``. It raises AssertionError when anything is wrong:
a traceback (any other exception), a host or GPU the generator did not put in or one missing,
an export line its tool's grammar does not have, a control character in any output.

``run(cases, lsp=True)`` checks many cases in a worker process whose address space is capped
at 3 GB (``resource.setrlimit``), each case under a 20 s alarm, restarting the worker when one
dies, and, when ``lsp``, opens and then edits every case's .topo text in ``topoc lsp`` over
stdio (didOpen, didChange) and waits for its published diagnostics. The default test run
checks a small slice (tests/test_hostile_corpus.py); the whole corpus is marked ``fuzz`` and
``benchmarks/hostile_corpus.py`` runs it and prints the counts.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
SECONDS = 20
MEMORY = 3 * 10**9

#: The pieces hostile names are made of.
PIECES = ['"', "\\", "\n", "\r", "\r\n", "\x00", "\x1b]0;pwned\x07", "\x1b[2J", "\x07", "\x7f",
          "\x85", "\u2028", "\u2029", "\u202e", "{node}", "{", "}", "{node:0999999}", "&#10;",
          "&quot;", "' - '", "#", " ", "\t", "\\n", '"]', "*/", "${x}", "`", ";", "=", "[0-9]",
          "é", "ß", "²", "\U0001f600", "0x1f", "nan", "-1", "1e999", "9" * 40]
WORD = "abcdefghijklmnopqrstuvwxyz0123456789-._"
#: What XML 1.0 cannot carry, dropped from XML cases that must stay well-formed.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
#: What no output may hold: a control character but newline (and tab, where a format has it)
#: or a Unicode line separator another tool could split a line at.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x85\u2028\u2029]")
NAME = r"[A-Za-z0-9_.\-]+"
HOSTLIST = r"[A-Za-z0-9_.\-\[\],]+"
#: Every line each export may write, by tool (a comment, or one of its record forms).
LINES = {
    "slurm": re.compile(rf"#[^\x00-\x1f\x7f]*|SwitchName={NAME} (?:Nodes|Switches)={HOSTLIST}"
                        rf"|BlockName=block\d+ Nodes={HOSTLIST}|BlockSizes=[0-9,]+"),
    "ibsim": re.compile(r"#[^\x00-\x1f\x7f]*|(?:Switch|Hca)\t\d+ \"[^\"\x00-\x1f]*\""
                        r"|\[\d+\]\t\"[^\"\x00-\x1f]*\"\[\d+\]\tw=\d+ [se]=\d+|"),
    "ibdiagnet": re.compile(rf"#[^\x00-\x1f\x7f]*|{NAME} {NAME}(?:/U\d+)?"
                            rf"|   P\d+ -> {NAME} {NAME}(?:/U\d+)? P\d+|"),
    "k8s": re.compile(r'#[^\x00-\x1f\x7f]*|---|apiVersion: \S+|kind: \w+|metadata:|spec:|'
                      r'  labels:|  levels:|  name: "[a-z0-9.\-]+"|'
                      r'    [a-z0-9./\-]+: "[A-Za-z0-9_.\-]+"|  - nodeLabel: "[a-z0-9./\-]+"'),
}


@dataclass(frozen=True)
class Case:
    """One generated input: its kind (a dump's or ``topo``), the file name it is read as,
    its text, and what the generator put in (None: unknown, a random mutation)."""

    label: str
    path: str
    text: str
    hosts: tuple[str, ...] | None = None
    gpus: int | None = None


# -- hostile text ------------------------------------------------------------------------------

def hostile(rng: random.Random, xml: bool = False, space: bool = True) -> str:
    """A name made of 1-5 hostile pieces and plain letters; sometimes huge."""
    parts = []
    for _ in range(rng.randint(1, 5)):
        parts.append(rng.choice(PIECES) if rng.random() < 0.6 else
                     "".join(rng.choice(WORD) for _ in range(rng.randint(1, 6))))
    if rng.random() < 0.05:
        parts.append(rng.choice(WORD) * rng.choice([300, 5000, 100_000]))
    text = "".join(parts)
    if xml:
        text = NOT_XML.sub("", text)
    if not space:
        text = "".join(c for c in text if not c.isspace())
    return text or "x"


def _mutate(text: str, rng: random.Random) -> str:
    """One to four random edits (the dump fuzz's mutations, tests/test_dump_fuzz.py)."""
    from .test_dump_fuzz import mutate
    return mutate(text, rng)


# -- dumps -------------------------------------------------------------------------------------

def _hwloc(rng: random.Random) -> Case:
    fixture = rng.choice(["power8gpudistances.xml", "nvidiaDGX2.xml"])
    root = ET.parse(FIX / "hwloc" / fixture).getroot()
    gpus = sum(o.get("type") == "OSDev" and o.get("subtype") == "CUDA" or
               (o.get("type") == "OSDev" and (o.get("name") or "").startswith("cuda"))
               for o in root.iter("object"))
    host = hostile(rng, xml=True)
    machine = next(o for o in root.iter("object") if o.get("type") == "Machine")
    for info in machine.findall("info"):
        if info.get("name") == "HostName":
            machine.remove(info)
    ET.SubElement(machine, "info", name="HostName", value=host)
    ET.SubElement(machine, "info", name="DMIProductName", value=hostile(rng, xml=True))
    for osdev in root.iter("object"):
        if osdev.get("type") == "OSDev" and rng.random() < 0.5:
            osdev.set("name", hostile(rng, xml=True))
    known = True
    if rng.random() < 0.25:                 # a number holding text: refused, never a traceback
        attr = rng.choice(["local_memory", "osdev_type", "pci_link_speed", "nbobjs"])
        for el in root.iter():
            if el.get(attr) is not None:
                el.set(attr, rng.choice(["lots", "nan", "1e999", "-5", "9" * 40, "0x10", " 1"]))
        known = False
    text = ET.tostring(root, encoding="unicode")
    if rng.random() < 0.1:                  # deep nesting, past and inside the bound
        depth = rng.choice([50, 127, 129, 2000])
        inner = "<object type='PCIDev'/>"
        for _ in range(depth):
            inner = f"<object type='Bridge' bridge_type='1-1'>{inner}</object>"
        text = text.replace("</object></topology>", inner + "</object></topology>", 1)
        known = known and depth < 100
    path = hostile(rng) + ".xml"
    return Case("hwloc", path, text, (host,) if known else None, None)


def ib_dump(names: list[str], switch: str, p_format: bool) -> str:
    """An ibnetdiscover dump of one switch with two HCAs per host, in either format."""
    lines = []
    sw_guid, sw_desc = "0x00000000000a0000", f"MF0;{switch}:QM9700/U1"
    if not p_format:
        lines.append(f'Switch\t64 "S-00000000000a0000"\t\t# "{sw_desc}" base port 0 lid 1 lmc 0')
        port = 1
        for h in range(len(names)):
            for n in range(2):
                lines.append(f'[{port}]\t"H-{0x100000 + 2 * h + n:016x}"[1]\t\t# "x" lid 2 4xNDR')
                port += 1
        lines.append("")
    port = 1
    for h, name in enumerate(names):
        for n in range(2):
            guid = f"{0x100000 + 2 * h + n:016x}"
            desc = f"{name} mlx5_{n}"
            if p_format:
                lines.append(f"CA     0  1 0x{guid} 4x NDR - SW     0 {port} {sw_guid} "
                             f"( '{desc}' - '{sw_desc}' )")
            else:
                lines += [f'Ca\t1 "H-{guid}"\t\t# "{desc}"',
                          f'[1]({guid})\t"S-00000000000a0000"[{port}]\t\t# lid 2 4xNDR', ""]
            port += 1
    return "\n".join(lines) + "\n"


def _ibnetdiscover(rng: random.Random) -> Case:
    names: list[str] = []
    while len(names) < rng.randint(1, 5):
        name = hostile(rng, space=False)
        if name not in names:
            names.append(name)
    switch = hostile(rng, space=False)
    p_format = rng.random() < 0.5
    return Case("ibnetdiscover", hostile(rng) + ".txt", ib_dump(names, switch, p_format),
                tuple(names), 0)


def _smi(rng: random.Random) -> Case:
    text = (FIX / "nccl" / "hgx_h200_topo_m.txt").read_text()
    for nic in ("NIC0", "NIC1"):
        name = hostile(rng, space=False)
        text = re.sub(rf"{nic}: \S+", lambda _: f"{nic}: {name}", text)
    if rng.random() < 0.2:
        text += "\n" * rng.choice([10, 10_000]) + " " * rng.choice([10, 10_000]) + "x"
    return Case("nvidia-smi", hostile(rng) + ".txt", text, None, 8)


def _nccl(rng: random.Random) -> Case:
    root = ET.parse(FIX / "nccl" / "hgx_h200_topo.xml").getroot()
    for cpu in root.iter("cpu"):
        cpu.set("vendor", hostile(rng, xml=True))
        cpu.set("host_hash", hostile(rng, xml=True))
    for el in root.iter("net"):
        el.set("name", hostile(rng, xml=True))
    for el in root.iter("pci"):
        if el.find("nic") is not None and rng.random() < 0.5:
            el.set("busid", hostile(rng, xml=True))
    return Case("nccl-xml", hostile(rng) + ".xml", ET.tostring(root, encoding="unicode"),
                None, 8)


_FIXTURES = sorted(p for d in ("hwloc", "ibnetdiscover", "nccl") for p in (FIX / d).iterdir()
                   if p.suffix in (".xml", ".txt"))


def _mutant(rng: random.Random) -> Case:
    path = rng.choice(_FIXTURES)
    return Case(f"mutant:{path.parent.name}", path.name, _mutate(path.read_text(), rng))


DUMP_MAKERS = [_hwloc, _ibnetdiscover, _smi, _nccl, _mutant, _mutant]


def dumps(n: int, seed: int = 44) -> list[Case]:
    """``n`` hostile dumps, the same for the same seed."""
    rng = random.Random(f"dumps:{seed}")
    return [DUMP_MAKERS[i % len(DUMP_MAKERS)](rng) for i in range(n)]


# -- .topo files -------------------------------------------------------------------------------

TOPO = """device C : cpu { }
device G : gpu { }
device X : nic { rate = 400 Gb/s }
device L : net_switch { }
link ib : infiniband { bandwidth = 400 Gb/s }
link pc : pcie { bandwidth = 64 GB/s }
group N { cpu : C  gpu : G  nic : X  gpu <-> cpu : pc  nic <-> cpu : pc }
group Cl { host node[3] : N PATTERN  leaf[2] : L  node[*].nic <-> leaf[0] : ib
           leaf[0] <-> leaf[1] : ib }
system c : Cl
"""


def _pattern(rng: random.Random) -> Case:
    from topoc.compiler.lang import emit
    head, tail = (hostile(rng).replace("{", "").replace("}", "") for _ in range(2))
    pattern = f"{head}{{node}}{tail}"
    text = TOPO.replace("PATTERN", emit.string(pattern))
    names = tuple(f"{head}{i}{tail}" for i in range(3))
    return Case("topo:pattern", hostile(rng) + ".topo", text, names, 3)


_TOPOS = sorted([*(ROOT / "library" / "nvidia").glob("*.topo"),
                 *(FIX / "user_files").glob("*.topo"), FIX / "ibnetdiscover" / "two_switch.topo"])


def _topo_mutant(rng: random.Random) -> Case:
    if rng.random() < 0.3:
        text = TOPO.replace("PATTERN", '"n{node:02}"')
    else:
        text = rng.choice(_TOPOS).read_text()
    return Case("topo:mutant", "mutant.topo", _mutate(text, rng))


def _topo_hostile(rng: random.Random) -> Case:
    """Hostile text where the language puts names, numbers and comments; deep nesting."""
    base = TOPO.replace("PATTERN", '"n{node:02}"')
    kind = rng.randrange(6)
    if kind == 0:       # a comment or a string holding anything
        at = rng.choice([m.end() for m in re.finditer("\n", base)])
        text = base[:at] + "# " + hostile(rng) + "\n" + base[at:]
    elif kind == 1:     # a number holding text, or a huge one
        text = base.replace("400 Gb/s", rng.choice(["nan Gb/s", "1e999 Gb/s", "9" * 40 +
                                                     " Gb/s", "-1 Gb/s", "0x10 Gb/s"]), 1)
    elif kind == 2:     # deep nesting of an expression
        depth = rng.choice([10, 47, 60, 5000])
        text = base.replace("node[3]", "node[" + "(" * depth + "3" + ")" * depth + "]")
    elif kind == 3:     # an identifier or a string of huge width
        text = base.replace("leaf", "l" * rng.choice([300, 70_000]))
    elif kind == 4:     # control characters and separators in names and between tokens
        text = base.replace(" : ", " " + rng.choice(PIECES) + " : ", rng.randint(1, 3))
    else:               # a wide format field
        text = TOPO.replace("PATTERN", '"n{node:0' + str(rng.choice([9, 99, 2900000000]))
                            + '}"')
    return Case("topo:hostile", hostile(rng) + ".topo", text)


TOPO_MAKERS = [_pattern, _topo_mutant, _topo_hostile]


def topo_files(n: int, seed: int = 44) -> list[Case]:
    """``n`` hostile .topo files, the same for the same seed."""
    rng = random.Random(f"topo:{seed}")
    return [TOPO_MAKERS[i % len(TOPO_MAKERS)](rng) for i in range(n)]


# -- checks ------------------------------------------------------------------------------------

def expand(hostlist: str) -> list[str]:
    """Slurm's hostlist expression (``a[1-3,5],b``) as its names."""
    out, depth, start = [], 0, 0
    parts = []
    for i, c in enumerate(hostlist + ","):
        depth += c == "["
        depth -= c == "]"
        if c == "," and depth == 0:
            parts.append(hostlist[start:i])
            start = i + 1
    for part in parts:
        m = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if not m:
            out.append(part)
            continue
        for r in m.group(2).split(","):
            lo, _, hi = r.partition("-")
            for k in range(int(lo), int(hi or lo) + 1):
                out.append(f"{m.group(1)}{str(k).zfill(len(lo))}{m.group(3)}")
    return out


def _exports(system, hosts: tuple[str, ...] | None) -> bool:
    """Every cluster export either refuses or writes only its tool's lines, and the Slurm
    files name exactly the hosts put in. Whether any export wrote something."""
    from topoc.backends import ibsim, k8s, names, slurm
    from topoc.compiler.analysis.fabric import fabric
    fab = fabric(system)
    refusals = (slurm.ExportError, ibsim.ExportError, names.InvalidName)
    wrote = False
    renders = {"slurm": [lambda: slurm.render(fab, "tree"), lambda: slurm.render(fab, "block")],
               "k8s": [lambda: k8s.render(fab)], "ibsim": [lambda: ibsim.render_ibsim(fab)],
               "ibdiagnet": [lambda: ibsim.render_ibdiagnet(fab)]}
    for tool, calls in renders.items():
        for call in calls:
            try:
                text = call()
            except refusals:
                continue
            wrote = True
            assert not CONTROL.search(text), (tool, text[:300])
            named = []
            for line in text.rstrip("\n").split("\n"):
                assert LINES[tool].fullmatch(line), (tool, line[:300])
                m = re.match(r"(?:SwitchName=\S+|BlockName=\S+) Nodes=(\S+)", line)
                if m:
                    named += expand(m.group(1))
            if tool == "slurm" and hosts is not None and named:
                assert sorted(set(named)) == sorted(hosts), (named, hosts)
    try:
        text = slurm.render(fab, "tree", "yaml")
        wrote = True
        assert not CONTROL.search(text)
    except refusals:
        pass
    return wrote


def _lint(text: str, tmp: str) -> None:
    """``topoc lint`` of the text as a file: an exit code, no traceback, no control
    character in what it prints."""
    from topoc.cli import main
    path = os.path.join(tmp, "case.topo")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["lint", path])
    assert code in (0, 1, 2), code
    printed = out.getvalue() + err.getvalue()
    assert "Traceback" not in printed
    assert not CONTROL.search(printed.replace("\t", " ")), printed[:300]


def _import(kind: str, case: Case, tmp: str) -> None:
    """``topoc import`` of the dump as a file named as the case names it (its notes and
    errors as the user sees them): an exit code, no traceback, no control character."""
    from topoc.cli import main
    name = os.path.join(tmp, re.sub(r"[/\x00]", "_", case.path)[:200] or "dump")
    with open(name, "w", encoding="utf-8", newline="") as f:
        f.write(case.text)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["import", kind, name, "-o", os.path.join(tmp, "imported.topo")])
    assert code in (0, 1, 2), code
    printed = out.getvalue() + err.getvalue()
    assert "Traceback" not in printed
    assert not CONTROL.search(printed.replace("\t", " ")), printed[:300]


def check(case: Case, tmp: str) -> tuple[str, str]:
    """(outcome, the .topo text the case became, for the language server) of one case."""
    from topoc.compiler.analysis.diff import DiffError, diff
    from topoc.compiler.base.diagnostics import CompileError
    from topoc.compiler.ir.hosts import HostnameError, hosts as hosts_of
    from topoc.importers import ImportFailure
    from topoc.importers.base import compile_imported
    from topoc.importers.detect import kind_of, to_topo
    from topoc.lsp import Analysis
    try:
        kind, topo, _ = to_topo(case.text, case.path)
        if kind != "topo":
            _import(kind, case, tmp)
        system = compile_imported(topo, case.path, kind) if kind != "topo" else None
    except ImportFailure as exc:
        # the API's message holds the dump's text as it is; what the user sees is escaped
        _import(kind_of(case.text), case, tmp)
        # a generated fabric is refused only for a name no tool takes (past a hostname's 253
        # characters or ibnetdiscover's line length)
        assert case.hosts is None or case.label != "ibnetdiscover" or max(
            map(len, case.text.split("\n"))) > 250, exc
        return "refused", ""
    assert Analysis(topo, os.path.join(tmp, "case.topo")).diagnostics is not None
    _lint(topo, tmp)
    if system is None:
        from topoc.compiler.lang import pipeline
        try:
            system = pipeline.compile(topo, os.path.join(tmp, "case.topo"))
        except (CompileError, HostnameError):
            assert case.hosts is None or case.label != "topo:pattern" or any(
                CONTROL.search(h) or len(h) > 253 or not h.strip() or "#" in h
                for h in case.hosts), "a valid pattern refused"
            return "refused", topo
    if case.hosts is not None:
        found = sorted(h.name for h in hosts_of(system))
        assert found == sorted(case.hosts), (found, case.hosts)
    if case.gpus:
        assert sum(d.kind == "gpu" for d in system.devices) == case.gpus
    wrote = _exports(system, case.hosts)
    try:
        assert diff(system, system).equal
    except (DiffError, HostnameError):
        pass
    return ("exported" if wrote else "compiled"), topo


# -- the worker and the language server --------------------------------------------------------

class Lsp:
    """``topoc lsp`` over stdio: open or change a document, wait for its diagnostics."""

    def __init__(self):
        from topoc import lsp_io
        self.io = lsp_io
        self.proc = subprocess.Popen([sys.executable, "-m", "topoc", "lsp"], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.send({"id": 0, "method": "initialize",
                   "params": {"processId": None, "rootUri": ROOT.as_uri(), "capabilities": {}}})
        self.wait(lambda m: m.get("id") == 0)
        self.send({"method": "initialized", "params": {}})
        self.version = 0

    def _read(self) -> None:
        reader = self.io.Reader(self.proc.stdout)
        while (body := reader.frame()) is not None:
            self.replies.put(json.loads(body))
        self.replies.put(None)

    def send(self, message: dict) -> None:
        self.proc.stdin.write(self.io.encode({"jsonrpc": "2.0", **message}))
        self.proc.stdin.flush()

    def wait(self, pred, timeout: float = SECONDS) -> dict:
        end = time.monotonic() + timeout
        while True:
            msg = self.replies.get(timeout=max(0.01, end - time.monotonic()))
            assert msg is not None, "the language server ended"
            if pred(msg):
                return msg

    def diagnostics(self, texts: list[str]) -> None:
        """Open each text as a document, then change it to itself with one character more,
        and wait for the diagnostics of every one (each within the time bound)."""
        uris = [f"file:///corpus/{self.version}-{i}.topo" for i in range(len(texts))]
        self.version += 1
        for uri, text in zip(uris, texts):
            self.send({"method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": uri, "languageId": "topo", "version": 1, "text": text}}})
            self.send({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [{"text": text + "\n"}]}})
        left = set(uris)
        while left:
            msg = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
            left.discard(msg["params"]["uri"])
            for d in msg["params"]["diagnostics"]:
                assert not CONTROL.search(d["message"].replace("\t", " ")), d["message"][:300]
        for uri in uris:
            self.send({"method": "textDocument/didClose",
                       "params": {"textDocument": {"uri": uri}}})

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _alarm(signum, frame):
    raise TimeoutError(f"no answer within {SECONDS} s")


def worker(kind: str, n: int, seed: int, start: int, lsp: bool) -> None:
    """Check cases ``start`` .. of the corpus (``kind`` dumps or topo), one JSON line each,
    with the address space capped and each case under an alarm; every 50 cases their .topo
    texts go through the language server."""
    import resource
    import signal
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    signal.signal(signal.SIGALRM, _alarm)
    cases = (dumps if kind == "dumps" else topo_files)(n, seed)
    server = Lsp() if lsp else None
    batch: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(start, n):
            print(json.dumps({"start": i}), flush=True)
            t = time.monotonic()
            signal.alarm(SECONDS)
            try:
                outcome, topo = check(cases[i], tmp)
                row = {"i": i, "outcome": outcome}
                if topo:
                    batch.append(topo)
            except BaseException as exc:     # noqa: BLE001 - every failure is the finding
                import traceback
                row = {"i": i, "outcome": "FAIL", "error": f"{type(exc).__name__}: {exc}"[:500],
                       "trace": traceback.format_exc()[-1500:]}
            finally:
                signal.alarm(0)
            row["label"], row["s"] = cases[i].label, round(time.monotonic() - t, 2)
            print(json.dumps(row), flush=True)
            if server is not None and (len(batch) >= 50 or i == n - 1) and batch:
                t = time.monotonic()
                try:
                    server.diagnostics(batch)
                    print(json.dumps({"lsp": len(batch), "s": round(time.monotonic() - t, 2)}),
                          flush=True)
                except BaseException as exc:     # noqa: BLE001
                    print(json.dumps({"lsp": len(batch), "outcome": "FAIL",
                                      "error": f"{type(exc).__name__}: {exc}"[:500]}),
                          flush=True)
                    server.close()
                    server = Lsp()
                batch = []
    if server is not None:
        server.close()


def run(kind: str, n: int, seed: int = 44, lsp: bool = True, budget: float | None = None):
    """Check the whole corpus of ``kind`` in worker processes: a list of result rows (one per
    case, plus one per language-server batch). A worker that dies (signal, memory) is a
    ``FAIL`` row for the case it was on, and a new worker goes on with the next."""
    rows: list[dict] = []
    start, began = 0, time.monotonic()
    while start < n:
        proc = subprocess.Popen([sys.executable, "-m", "tests.hostile_corpus", kind, str(n),
                                 str(seed), str(start), "1" if lsp else "0"], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        current = start
        for line in proc.stdout:
            row = json.loads(line)
            if "start" in row:
                current = row["start"]
                if budget is not None and time.monotonic() - began > budget:
                    proc.kill()
                    proc.wait()
                    return rows
                continue
            rows.append(row)
            if "i" in row:
                current = row["i"] + 1
        code = proc.wait()
        if current < n:
            rows.append({"i": current, "outcome": "FAIL", "label": "worker",
                         "error": f"the worker ended (exit {code}): "
                                  f"{proc.stderr.read()[-800:]}"})
            current += 1
        start = current
    return rows


if __name__ == "__main__":
    k, count, sd, first, with_lsp = sys.argv[1:6]
    worker(k, int(count), int(sd), int(first), with_lsp == "1")
