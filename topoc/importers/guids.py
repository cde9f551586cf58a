"""The join between a node's hwloc export and the fabric's ibnetdiscover dump: HCA node GUIDs.

``topoc import hwloc node.xml --guids guids.txt`` writes one line per HCA, ``<node GUID>
<hostname> <NIC index>``; ``topoc import ibnetdiscover dump.txt --guids guids.txt`` (files of
every node concatenated) then places each HCA in its host by GUID, which matters when node
descriptions are not ``<hostname> mlx5_<n>`` (a host that never set them reports the adapter's
name). GUIDs compare as hex digits without separators or leading zeros.
"""

from __future__ import annotations

import re

from .base import ImportFailure


def normalize(guid: str) -> str:
    """``0002:c903:0010:f2a2``, ``0x0002c9030010f2a2``, ``H-0002c9030010f2a2`` ->
    ``2c9030010f2a2``."""
    digits = re.sub(r"^(0x|[SHR]-)", "", guid.strip(), flags=re.I).replace(":", "").lower()
    if not re.fullmatch(r"[0-9a-f]{1,16}", digits):
        raise ImportFailure(f"'{guid}' is not a GUID")
    return digits.lstrip("0") or "0"


def write_guids(guids: dict[str, tuple[str, int]]) -> str:
    """The ``--guids`` file text."""
    return "".join(f"0x{g.zfill(16)} {host} {idx}\n" for g, (host, idx) in guids.items())


def read_guids(text: str, path: str = "<guids>") -> dict[str, tuple[str, int]]:
    """A ``--guids`` file: ``<GUID> <hostname> <NIC index>`` per line, ``#`` comments."""
    out: dict[str, tuple[str, int]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 3 or not parts[2].isdigit():
            raise ImportFailure(f"{path}:{number}: expected '<GUID> <hostname> <NIC index>'")
        out[normalize(parts[0])] = (parts[1], int(parts[2]))
    return out
