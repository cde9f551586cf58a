"""Pause Python's cyclic garbage collector while a stage builds millions of objects.

The stages that scale with the system (elaboration, the link graph, locality, lint, schedules,
the cost model) allocate one or more objects per link and free almost nothing until they
return. Reference counting still frees memory as usual during the pause; the few cycles (a
System and the locality tables cached on it) wait for the collector's next pass after it. With
the collector running, each of its full passes walks every object allocated so far, so a
1,024-rack NVL72 cluster spent about half of elaboration and graph building in the collector
and those stages grew faster than the link count (benchmarks/README.md). Pausing it makes them
linear; the pause ends with the stage, and a nested pause leaves the outer one in charge.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block (or, as ``@gc_paused()``, the function) with the cyclic collector off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
