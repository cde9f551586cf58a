"""Print the median and worst |error| per class for validation and fit rows apart, against
issue 27's targets, then the cost model's prediction next to every published row of
library/calibration.csv (validation rows, fit rows, rows moved out of validation because their
own run contradicts them, counted apart and with the numbers that contradict them, and
excluded rows with the reason). Where the source prints nccl-tests' in-place column too, the
row is scored against the faster call and ``published`` shows both.
docs/cost.md carries this output.

With ``--loso``, leave-one-source-out instead (benchmarks/loso.py): every fitted constant of
compiler/collectives/constants.py refit without each source's rows, that source predicted; per
class the LOSO median |error| and the share of rows within 30 %, the in-sample figures beside
them, the refit values and every row. docs/cost.md quotes those figures.

    .venv/bin/python benchmarks/calibration.py
    nice -n 10 .venv/bin/python benchmarks/calibration.py --loso
    nice -n 10 .venv/bin/python benchmarks/calibration.py --loso --classes "all-to-all"

``--classes`` (a comma-separated list of classes) leaves out only the sources with rows of
those classes: quicker while iterating; the full run is the one docs/cost.md quotes.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.calibration_rows import (TARGETS, WORST, error, median, predict, row_class,  # noqa: E402
                                    rows, size_of)
from topoc.compiler.collectives.cost import CostError  # noqa: E402


def table(role: str) -> dict[str, list[float]]:
    """One Markdown line per row of ``role``; returns |error| by class."""
    print(f"\n### {role} rows\n")
    why = role == "inconsistent"
    print("| system | -D | GPUs | collective | size | NCCL | asked | predicted | time us | "
          "busbw GB/s | published | error | class |" + (" why moved out |" if why else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if why else ""))
    errors: dict[str, list[float]] = {}
    for row in rows(role):
        published = f"{row['busbw'] or '-'} GB/s" + (f", {row['time_us']} us"
                                                     if row["time_us"] else "")
        if row.get("inplace"):          # scored against the faster call (docs/cost.md)
            published += f" (in place {row['inplace']}{' us' if row['time_us'] else ''})"
        head = (f"| {row['system']} | {row['defines']} | {row['gpus']} | {row['collective']} | "
                f"{row['size']} | {row['nccl'] or 'latest'} | {row['algorithm']} |")
        if role == "exclude":
            print(f"{head} | | | {published} | {row['note']} | |")
            continue
        try:
            c = predict(row)
        except CostError as exc:
            print(f"{head} not modelled: {exc} | | | {published} | | {row_class(row)} |")
            continue
        err = error(row, c)
        kind = "busbw" if size_of(row["size"]) >= 64 * 2**20 and row["busbw"] else "time"
        errors.setdefault(row_class(row), []).append(abs(err))
        print(f"{head} {c.algorithm}, {c.protocol} | {c.time * 1e6:.1f} | {c.busbw / 1e9:.1f} | "
              f"{published} | {kind} {err:+.1%} | {row_class(row)} |"
              + (f" {row['note']} |" if why else ""))
    return errors


def summarise(title: str, errors: dict[str, list[float]], targets: bool) -> None:
    print(f"\n### {title}\n")
    print("| class | rows | median abs error | worst abs error |" + (" target | met |" if targets
                                                                   else ""))
    print("|---|---|---|---|" + ("---|---|" if targets else ""))
    for name in sorted(errors):
        e = errors[name]
        line = f"| {name} | {len(e)} | {median(e):.1%} | {max(e):.1%} |"
        if targets and name in TARGETS:
            ok = median(e) <= TARGETS[name]
            line += f" <= {TARGETS[name]:.0%} | {'yes' if ok else 'NO'} |"
        print(line)
    if targets:
        worst = max(max(e) for e in errors.values())
        print(f"\nWorst validation row: {worst:.1%} (target <= {WORST:.0%}: "
              f"{'met' if worst <= WORST else 'NOT met'}).")


def main() -> None:
    if "--loso" in sys.argv[1:]:
        from benchmarks import loso
        argv = sys.argv[1:]
        classes: tuple[str, ...] = ()
        if "--classes" in argv:
            at = argv.index("--classes") + 1
            classes = tuple(c.strip() for c in (argv[at] if at < len(argv) else "").split(",")
                            if c.strip())
            unknown = [c for c in classes if c not in loso.LOSO_TARGETS]
            if unknown or not classes:
                sys.exit(f"--classes: give one or more of {', '.join(loso.LOSO_TARGETS)} "
                         f"(got {', '.join(unknown) or 'none'})")
        loso.report(loso.run(classes))
        return
    rows_text = io.StringIO()
    with contextlib.redirect_stdout(rows_text):
        validation = table("validate")
        fit = table("fit")
        moved = table("inconsistent")
        table("exclude")
    summarise("Validation rows (held out)", validation, True)
    summarise("Fit rows", fit, False)
    count = sum(len(e) for e in moved.values())
    print(f"\nMoved out of validation as contradicted by their own run: {count} rows, "
          f"worst {max((max(e) for e in moved.values()), default=0):.1%} (table "
          "'inconsistent rows' below gives the numbers).")
    print(rows_text.getvalue(), end="")


if __name__ == "__main__":
    main()
