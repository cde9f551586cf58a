"""Checks on the ``host`` instances of an elaborated system (elaborate calls them): hosts do
not nest, and a hostname pattern reads only what the host's path gives it."""

from __future__ import annotations

from ..base.diagnostics import CompileError, error
from ..ir.hosts import HostnameError, format_hostname, pattern_fields
from ..ir.system import Host


def check_patterns(hosts: list[Host]) -> None:
    """A hostname pattern may read the indices of the arrays on the host's path and
    ``{host}``; anything else is E217 at the host statement (checked once per statement), as is
    a pattern without fields on a statement that makes several hosts (a literal name is right
    for a single host, as the importers write them)."""
    seen: set[int] = set()
    per_statement: dict[int, int] = {}
    for h in hosts:
        per_statement[id(h.span)] = per_statement.get(id(h.span), 0) + 1
    errors = []
    for h in hosts:
        if h.pattern is None or id(h.span) in seen:
            continue
        seen.add(id(h.span))
        known = {name for name, idx in h.indices if idx is not None} | {"host"}
        try:
            fields = pattern_fields(h.pattern)
            bad = next((f for f in fields if f not in known), None)
            if bad is not None or (not fields and per_statement[id(h.span)] > 1):
                raise HostnameError(
                    f"hostname pattern \"{h.pattern}\" reads '{{{bad}}}', but the arrays on this "
                    f"host's path are {', '.join(sorted(known - {'host'})) or 'none'} "
                    "(and {host} counts hosts)" if bad is not None else
                    f"hostname pattern \"{h.pattern}\" has no {{field}}: every host would get "
                    "one name (use {host} or an array index, as in \"node{node:02}\")")
            format_hostname(h.pattern, h.indices, 0)
        except HostnameError as exc:
            errors.append(error("E217", str(exc), h.span))
    if errors:
        raise CompileError(errors)


def nested_host(hosts: list[Host]) -> tuple[Host, Host] | None:
    """The first host inside another host (hosts come in depth-first order), or None."""
    open_: list[Host] = []
    for h in hosts:
        while open_ and not h.id.startswith(open_[-1].id + "."):
            open_.pop()
        if open_:
            return h, open_[-1]
        open_.append(h)
    return None
