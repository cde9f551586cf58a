"""Every verb's output on every library file, saved or compared: proof that a speed-up changed
no result.

    .venv/bin/python benchmarks/verbs_unchanged.py save /tmp/before     # on the old code
    .venv/bin/python benchmarks/verbs_unchanged.py save /tmp/after      # on the new code
    .venv/bin/python benchmarks/verbs_unchanged.py diff /tmp/before /tmp/after
    .venv/bin/python benchmarks/verbs_unchanged.py save /tmp/plan --only plan   # some calls

For each ``library/**/*.topo`` with a system: ``compile --format json`` and its summary, ``lint``, ``cost`` of a
world all-reduce (1 MiB and 1 GiB), ``schedule`` of a world ring all-reduce (json), ``report``
(text), ``render -o x.dot`` (the default view, racks and physical), the cluster exports (Slurm
tree and block, Kubernetes, ibsim, ibdiagnet), ``diff`` (the file against itself, a bigger size
against the default, and a few related files: json) and ``plan`` of a dense and a
mixture-of-experts model with nothing fixed (every row, json); stdout, stderr, the exit code and
the written file of each call. ``--only`` keeps the calls whose names start with one of its
prefixes. Large parametric files also run at a bigger size (``-D``). The CLI runs in this
process (one interpreter per file keeps it quick), so a run takes a minute or so.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Extra sizes for the parametric clusters: the bundled default and one that needs more tiers.
EXTRA = {"nvl72_superpod.topo": ["racks=128"], "h100_superpod.topo": ["nodes=1024"],
         "nvl72_fourtier.topo": ["racks=48"], "h100_fourtier.topo": ["nodes=300"]}
#: Related files diffed against each other (json findings): drift between real designs.
PAIRS = {"h100_cluster.topo": ["h100_roce_cluster.topo", "h100_superpod.topo"],
         "dgx_h100.topo": ["dgx_h200.topo", "hgx_h200.topo", "aws_p5.topo"],
         "gb200_nvl72.topo": ["gb300_nvl72.topo"], "nvl72_superpod.topo": ["nvl72_cluster.topo"],
         "a100_cluster.topo": ["a100_superpod.topo"], "hgx_b200.topo": ["hgx_b300.topo"]}


#: The models ``plan`` searches on each file: a dense one and a mixture of experts.
PLAN_MODELS = ("llama3-405b", "mixtral-8x7b")


def calls(path: Path, tmp: Path) -> list[tuple[str, list[str]]]:
    """(name, argv) of every call for one file."""
    f = str(path)
    dot = str(tmp / "out.dot")      # every call's output file (read, then removed)
    base = [("compile", ["compile", f, "--format", "json"]),
            ("summary", ["compile", f]),
            ("lint", ["lint", f]),
            ("cost", ["cost", f, "--group", "world", "--sizes", "1M,1G", "--format", "json"]),
            ("schedule", ["schedule", f, "--group", "world", "--collective", "allreduce",
                          "--algorithm", "ring", "--size", "1M"]),
            ("report", ["report", f]),
            ("render-racks", ["render", f, "--view", "racks", "-o", dot]),
            ("render-physical", ["render", f, "--view", "physical", "-o", dot]),
            ("render", ["render", f, "-o", dot]),
            ("export-slurm", ["export", "slurm", f, "--topology", "tree", "-o", dot]),
            ("export-slurm-block", ["export", "slurm", f, "--topology", "block", "-o", dot]),
            ("export-k8s", ["export", "k8s", f, "-o", dot]),
            ("export-ibsim", ["export", "ibsim", f, "-o", dot]),
            ("export-ibdiagnet", ["export", "ibdiagnet", f, "-o", dot]),
            ("diff", ["diff", f, f, "--format", "json"]),
            *((f"plan-{model}", ["plan", f, "--model", model, "--batch", "1024", "--jobs", "1",
                                 "--no-cache", "--top", "0", "--format", "json"])
              for model in PLAN_MODELS)]
    out = list(base)
    for define in EXTRA.get(path.name, []):
        out += [(f"{name}[{define}]", [*argv, "-D", define]) for name, argv in base
                if not name.startswith(("render-physical", "plan"))]
    for other in PAIRS.get(path.name, []):
        g = str(path.parent / other)
        out += [(f"diff[{other}]", ["diff", f, g, "--format", "json"]),
                (f"diff[{other}, text]", ["diff", g, f])]
    return out


def run_file(path: Path, only: tuple[str, ...] = ()) -> dict:
    """Every call for one file (those whose names start with one of ``only``, when given), in
    this process."""
    from topoc.cli import main
    result = {}
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for name, argv in calls(path, tmp):
            if only and not name.startswith(only):
                continue
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(argv)
                except SystemExit as exc:
                    code = exc.code
            dot = tmp / "out.dot"
            result[name] = {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(),
                            "file": dot.read_text() if dot.exists() else None}
            dot.unlink(missing_ok=True)
    return result


def files() -> list[Path]:
    return sorted(p for p in (ROOT / "library").rglob("*.topo") if "system " in p.read_text())


def save(folder: Path, only: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for path in files():
        # the path relative to the checkout, so that two checkouts' messages compare equal
        done = subprocess.run([sys.executable, __file__, "one", str(path.relative_to(ROOT)),
                               only], capture_output=True, text=True, check=True, cwd=ROOT)
        (folder / f"{path.stem}.json").write_text(done.stdout)
        print(path.name, flush=True)


def diff(a: Path, b: Path) -> int:
    bad = 0
    for left in sorted(a.glob("*.json")):
        right = b / left.name
        if not right.exists():
            print(f"{left.stem}: missing in {b}")
            bad += 1
            continue
        x, y = json.loads(left.read_text()), json.loads(right.read_text())
        for name in sorted(set(x) | set(y)):
            if x.get(name) != y.get(name):
                print(f"{left.stem}: {name} differs")
                bad += 1
    print("identical" if not bad else f"{bad} differences")
    return 1 if bad else 0


def main() -> int:
    verb, *rest = sys.argv[1:]
    only = ""
    if "--only" in rest:
        at = rest.index("--only")
        only = rest[at + 1]
        del rest[at:at + 2]
    if verb == "one":
        only = rest[1] if len(rest) > 1 else only
        prefixes = tuple(x for x in only.split(",") if x)
        print(json.dumps(run_file(Path(rest[0]), prefixes), sort_keys=True))
        return 0
    if verb == "save":
        save(Path(rest[0]), only)
        return 0
    return diff(Path(rest[0]), Path(rest[1]))


if __name__ == "__main__":
    sys.exit(main())
