"""``topoc blast``'s outputs on every library file, saved or compared: proof that a speed-up of
the blast radius changed no result (``verbs_unchanged.py`` does the same for the other verbs).

    .venv/bin/python benchmarks/blast_unchanged.py save /tmp/before     # on the old code
    .venv/bin/python benchmarks/blast_unchanged.py save /tmp/after      # on the new code
    .venv/bin/python benchmarks/blast_unchanged.py diff /tmp/before /tmp/after

For each ``library/**/*.topo`` with a system, at its default size: ``blast`` as text and JSON,
with ``--parallel`` for each parallel block, and ``render --heat blast`` (the heat map, DOT);
stdout, stderr and the exit code of each call.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import verbs_unchanged as base  # noqa: E402


def calls(path: Path, tmp: Path) -> list[tuple[str, list[str]]]:
    """(name, argv) of every call for one file."""
    f = str(path)
    out = [("blast", ["blast", f]), ("blast-json", ["blast", f, "--format", "json"]),
           ("heat", ["render", f, "--heat", "blast", "-o", str(tmp / "out.dot")])]
    for name in re.findall(r"^parallel\s+(\w+)", path.read_text(), re.M):
        out.append((f"blast-{name}", ["blast", f, "--parallel", name, "--format", "json"]))
    return out


def main() -> int:
    base.calls = calls
    verb, *rest = sys.argv[1:]
    if verb == "one":
        print(json.dumps(base.run_file(Path(rest[0])), sort_keys=True))
        return 0
    if verb == "save":
        folder = Path(rest[0])
        folder.mkdir(parents=True, exist_ok=True)
        for path in base.files():
            done = subprocess.run([sys.executable, __file__, "one", str(path)],
                                  capture_output=True, text=True, check=True)
            (folder / f"{path.stem}.json").write_text(done.stdout)
            print(path.name, flush=True)
        return 0
    return base.diff(Path(rest[0]), Path(rest[1]))


if __name__ == "__main__":
    sys.exit(main())
