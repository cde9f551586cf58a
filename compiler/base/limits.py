"""Hard limits on input size, checked before the work they bound is done (docs/errors.md)."""

from __future__ import annotations

import attrs


@attrs.frozen
class Limits:
    """Every explicit limit, with the diagnostic code that reports crossing it."""

    file_bytes: int = 8 * 2**20          # E290: one source file
    devices: int = 4_000_000             # E291: devices in the elaborated system
    links: int = 16_000_000              # E292: links (each may carry many lanes): 8,192 NVL72
    #                                      racks are 13.7 M, 16,384 DGX H100 nodes 1.6 M
    nesting: int = 24                    # E293: group instantiation depth
    imports: int = 16                    # E294: import chain depth
    array: int = 1_000_000               # E295: elements in one array declaration
    expression: int = 48                 # E296: nesting depth of one expression or selector
    number_digits: int = 30              # E297: characters in one number literal
    number_magnitude: int = 24           # E297: a literal's value below 10^(this + 1) ...
    number_fraction: int = 30            # ... and, when not zero, at least 10^-(this)
    lanes: int = 100_000                 # E298: lanes in one connection
    enumeration: int = 20_000_000        # E299: selector combinations in one connection
    hostname: int = 253                  # E217: characters in one hostname (DNS's limit), its
    #                                      pattern's field widths included, checked before filling
    #: E292: the memory a system takes to compile, estimated from its counts (``memory_cost``)
    #: before anything is built. 3 GB: the 8,192-rack four-tier NVL72 file (2.9 GB by the
    #: estimate, 2.47 GB measured with lint and cost) fits; 15,996,000 links written one by
    #: one by a group's connections (8 GB measured at scale) do not.
    memory: int = 3_000_000_000


@attrs.frozen
class MemoryCost:
    """Peak bytes a system costs while it is compiled and linted, per counted thing: measured
    as the process's peak RSS (``/usr/bin/time``, ``topoc compile`` and ``topoc lint``) over
    files that grow one count at a time (docs/scale.md, "Limits", has the rows)."""

    #: a device: its object, id string and index entry (250,000 GPUs and no links, compile:
    #: 77 MB over the empty file's 60 MB; 1,024 four-tier NVL72 racks fit within the sum)
    device: int = 300
    #: a link copied with its group's instance, a row of integer arrays (1,000,000 links in
    #: 15,625 instances of an 8 x 8 bipartite group: 123 MB over their devices)
    link: int = 120
    #: a link a group's connection writes out one by one (``a[*] <-> b[*]``), on top of
    #: ``link``: the template's tuple, its row and the merge check's key (250,000 links in
    #: one 250 x 1,000 bipartite group: 128 MB, 512 bytes each)
    written: int = 400
    #: the interpreter, the parser and the compiler's modules
    base: int = 64_000_000

    def __call__(self, devices: int, links: int, written: int) -> int:
        """Estimated peak bytes of a system of these counts."""
        return self.base + devices * self.device + links * self.link + written * self.written


LIMITS = Limits()
MEMORY_COST = MemoryCost()
