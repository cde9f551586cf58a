"""What the published measurements alone say about issue 23's ranking criterion ("every
published strategy's predicted step is within 15 % of plan's best"), with no model at all.

Rows that ran the same work (same GPU, GPU count, model, sequence, global batch and precision)
with different strategies are compared on their measured seconds per step: each against the
fastest of its own source, and against a faster one from another source. Where a published
strategy was measured more than 15 % slower than another published strategy of the same work,
an accurate model must rank it more than 15 % from the best: for both rows' predictions to stay
within 15 % of each other, the model has to err on one of the pair by at least

    e = (r - 1.15) / (r + 1.15),     r = measured slower / measured faster

(each prediction off by e in the direction that closes the gap). Pairs from one source (one
table, one software stack) are the clean evidence; pairs across sources are printed apart,
since their software differs.

    .venv/bin/python benchmarks/rank_floor.py
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.training_rows import measured_time, predict, rows, training  # noqa: E402

LIMIT = 0.15


def _work(row) -> tuple:
    """The work a row ran: what a strategy may not change."""
    return (row.gpu, row.gpus, row.model, training(row).model.seq, row.batch, row.fp8)


def _seconds(row) -> float:
    """The row's measured seconds per step (an MFU figure reads its GPU's peak from the
    row's library system; no other metric needs it)."""
    return predict(row).measured if row.metric == "mfu" else measured_time(row, 1.0)


def floor_rows():
    """(slower, faster, ratio, same source, error needed) for each row of a work measured more
    than LIMIT slower than the fastest row of the same work: first against the fastest of its
    own source (one table, one software stack), then, where another source's row is faster
    still, against that one; slowest first."""
    groups = collections.defaultdict(list)
    for row in rows():
        groups[_work(row)].append(row)
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        timed = [(_seconds(r), r) for r in members]
        for t, r in timed:
            mine = [(u, q) for u, q in timed if q.source == r.source]
            for same, pool in ((True, mine), (False, timed)):
                fast_t, fast = min(pool, key=lambda x: x[0])
                ratio = t / fast_t
                if fast is r or ratio <= 1 + LIMIT or (not same and fast.source == r.source):
                    continue
                out.append((r, fast, ratio, same, (ratio - 1 - LIMIT) / (ratio + 1 + LIMIT)))
    return sorted(out, key=lambda x: -x[2])


def main() -> None:
    found = floor_rows()
    for clean in (True, False):
        title = "same source (one table)" if clean else \
            "against a faster run from another source (software differs)"
        print(f"\n{title}:")
        print("| published strategy | measured faster strategy of the same work | "
              "measured ratio | model error needed to put it within 15 % |")
        print("|---|---|---|---|")
        for slow, fast, ratio, same, need in found:
            if same == clean:
                print(f"| {slow.id} | {fast.id} | {ratio:.2f}x | >= {need:.1%} |")
    n = sum(1 for x in found if x[3])
    print(f"\n{n} published strategies were measured more than {LIMIT:.0%} slower than "
          f"another of the same work in the same source; {len(found) - n} more across sources.")


if __name__ == "__main__":
    main()
