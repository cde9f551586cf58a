"""``topoc cost``: a sweep of predicted collectives as a table, ``topoc.cost/1`` JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from ..compiler.base.units import human_size
from ..compiler.collectives.cost import Cost
from ..compiler.collectives import algos

SCHEMA = "topoc.cost/1"
NVLS_VALID_FROM = 64 * 2**20     # the NVLS start-up fit holds from here (docs/cost.md)
NVLS_NOTE_LATENCY = 100e-6
FIELDS = ("collective", "group", "ranks", "size", "algorithm", "protocol", "time", "algbw",
          "busbw", "bottleneck")


def _row(c: Cost) -> dict:
    row = {k: getattr(c, k) for k in FIELDS}
    row["bottleneck_link"] = c.bottleneck_link
    row["latency"] = c.latency
    # why this algorithm and protocol: the chooser and what it weighed (issue 45)
    row["choice"] = c.choice
    row["weighed"] = [{"algorithm": a, "protocol": p, "nccl_time": t, "time": time}
                      for a, p, t, time in c.weighed]
    return row


def as_json(rows: Sequence[Cost]) -> str:
    """The ``topoc.cost/1`` document: times in seconds, bandwidths in bytes/s."""
    return json.dumps({"schema": SCHEMA, "rows": [_row(c) for c in rows]}, indent=1) + "\n"


def as_csv(rows: Sequence[Cost]) -> str:
    """One header line, then one line per row, columns as the JSON keys."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIELDS)
    for c in rows:
        writer.writerow([repr(v) if isinstance(v, float) else v for v in
                         (getattr(c, k) for k in FIELDS)])
    return out.getvalue()


def as_table(rows: Sequence[Cost], title: str = "", notes: Sequence[str] = ()) -> str:
    """An nccl-tests-like table: size, algorithm, protocol, time (us), algbw and busbw (GB/s,
    1e9 bytes/s as nccl-tests prints them) and the bottleneck link class."""
    lines = [f"# {title}"] if title else []
    lines.append(f"# {'size':>12} {'':>9}  {'collective':<13} {'group':<8} {'ranks':>6}  "
                 f"{'algorithm':<12} {'proto':<6} {'time(us)':>11} {'algbw(GB/s)':>11} "
                 f"{'busbw(GB/s)':>11}  bottleneck")
    for c in rows:
        lines.append(f"  {c.size:>12} {human_size(c.size):>9}  {c.collective:<13} "
                     f"{c.group:<8} {c.ranks:>6}  {c.algorithm:<12} {c.protocol:<6} "
                     f"{c.time * 1e6:>11.2f} {c.algbw / 1e9:>11.2f} {c.busbw / 1e9:>11.2f}  "
                     f"{c.bottleneck}")
    worst = max(rows, key=lambda c: c.size, default=None)
    if worst is not None and worst.bottleneck_link:     # a group of one rank crosses no link
        lines.append(f"# bottleneck at {human_size(worst.size)}: {worst.bottleneck_link}")
    for algo in sorted({c.algorithm for c in rows} & algos.not_nccl()):
        whose = "a serving engine's own kernel" if algos.get(algo).owner == "engine" \
            else "topoc's own algorithm"
        lines.append(f"# {algo} is {whose}: NCCL does not run it")
    # NVLS and NVLS-tree pay NVLS's start-up per host (their records' ``hosts``)
    if any(algos.get(c.algorithm).hosts is not None and c.latency > NVLS_NOTE_LATENCY and
           c.size < NVLS_VALID_FROM for c in rows):
        lines.append("# nvls below 64 MiB across many hosts: its start-up (25 us per host, fitted "
                     "at 512 MiB-8 GiB on NVL72) overstates small messages; docs/cost.md")
    lines += [f"# {note}" for note in notes]
    return "\n".join(lines) + "\n"


FORMATS = {"table": as_table, "json": as_json, "csv": as_csv}


def render(rows: Sequence[Cost], fmt: str = "table", title: str = "",
           notes: Sequence[str] = ()) -> str:
    """The rows in ``fmt`` (table, json or csv); ``notes`` end a table."""
    return as_table(rows, title, notes) if fmt == "table" else FORMATS[fmt](rows)
