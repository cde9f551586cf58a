"""The whole hostile corpus of issue 44 (``tests/hostile_corpus.py``): 2,000 generated dumps and
2,000 .topo files through every importer, lint, the language server, every cluster export and
diff, in workers capped at 3 GB with each case under 20 s. Prints, per kind, how many cases
were refused with a message, compiled, got through the exports, failed (with each failure),
how many language-server batches answered, the slowest case and the time.

    .venv/bin/python benchmarks/hostile_corpus.py                    # 2,000 of each
    .venv/bin/python benchmarks/hostile_corpus.py --cases 200 --no-lsp
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import hostile_corpus as corpus  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000, help="cases per kind")
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--kind", choices=["dumps", "topo"], action="append")
    ap.add_argument("--no-lsp", action="store_true")
    ap.add_argument("--budget", type=float, help="seconds per kind before no new case starts")
    args = ap.parse_args()
    failed = 0
    for kind in args.kind or ["dumps", "topo"]:
        t = time.monotonic()
        rows = corpus.run(kind, args.cases, args.seed, not args.no_lsp, args.budget)
        cases = [r for r in rows if "i" in r]
        batches = [r for r in rows if "lsp" in r]
        outcomes = collections.Counter(r["outcome"] for r in cases)
        labels = collections.Counter(r.get("label", "?") for r in cases)
        slowest = max(cases, key=lambda r: r.get("s", 0), default={})
        bad = [r for r in rows if r.get("outcome") == "FAIL"]
        failed += len(bad)
        print(f"{kind}: {len(cases)} cases in {time.monotonic() - t:.0f} s; "
              + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
              + f"; language server: {sum(r['lsp'] for r in batches if 'outcome' not in r)} "
              f"documents in {len(batches)} batches, "
              f"{sum(r.get('outcome') == 'FAIL' for r in batches)} failed; slowest case "
              f"{slowest.get('s')} s ({slowest.get('label')}); by generator: "
              + ", ".join(f"{k} {v}" for k, v in sorted(labels.items())), flush=True)
        for r in bad:
            print(f"  FAIL {r.get('i', 'lsp batch')} {r.get('label', '')}: "
                  f"{r.get('error', '')[:300]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
