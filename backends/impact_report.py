"""``topoc diff ... --impact``: a strategy's traffic lines and step on the design and on the
live system, as text or as the ``impact`` object of ``topoc.diff/1``."""

from __future__ import annotations

from ..compiler.analysis.impact import Impact


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f} ms"


def text(i: Impact) -> str:
    """The impact as a table after the diff's own lines."""
    if not i.valid:
        return f"impact on '{i.strategy}': the mapping no longer holds: {i.why}\n"
    out = [f"impact on '{i.strategy}':",
           f"  {'line':<24} {'before':>12} {'after':>12} {'change':>8}  limiting link (after)"]
    for line in i.lines:
        out.append(f"  {line.dim + ' ' + line.collective:<24} {_ms(line.before):>12} "
                   f"{_ms(line.after):>12} {'x' + format(line.change, '.3f'):>8}  "
                   f"{line.link_after}")
    step = "step" if i.tokens_before is not None else "exposed communication per step"
    out.append(f"  {step}: {_ms(i.step_before)} -> {_ms(i.step_after)}")
    if i.tokens_before and i.tokens_after:
        out.append(f"  tokens/s: {i.tokens_before:,.0f} -> {i.tokens_after:,.0f} "
                   f"({(i.tokens_after / i.tokens_before - 1) * 100:+.1f} %)")
    return "\n".join(out) + "\n"


def as_dict(i: Impact) -> dict:
    """The ``impact`` object of ``topoc.diff/1`` (docs/contracts.md)."""
    return {"strategy": i.strategy, "valid": i.valid, "why": i.why,
            "step_before": i.step_before, "step_after": i.step_after,
            "tokens_before": i.tokens_before, "tokens_after": i.tokens_after,
            "lines": [{"dim": x.dim, "collective": x.collective, "bytes": x.bytes,
                       "before": x.before, "after": x.after, "link_before": x.link_before,
                       "link_after": x.link_after} for x in i.lines]}
