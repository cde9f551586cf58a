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
    #: ``compile --format json`` holds every device and link as objects: about 3.5 KB a link
    #: (1.34 GB for 256 NVL72 racks, 380 k links), so 750 k links stay near 2.6 GB on a
    #: machine whose 4 GiB the compact IR of 8,192 racks already nearly fills
    json_links: int = 750_000
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


LIMITS = Limits()
