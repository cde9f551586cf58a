"""CSV of ranked rows (``topoc plan`` and ``topoc infer``): one line per row, rank first."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence


def ranked_csv(rows: Iterable, fields: Sequence[str]) -> str:
    """``fields`` of each row's ``as_dict()`` plus its 1-based ``rank``, in the order given."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(fields)
    for i, r in enumerate(rows):
        d = {"rank": i + 1, **r.as_dict()}
        w.writerow([d[k] for k in fields])
    return buf.getvalue()
