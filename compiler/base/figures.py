"""Nominal hardware figures the compiler, the cost model, the importers and the exports share,
so one table answers "how fast is a Gen4 x16 link" or "an NVLink5 lane" everywhere."""

from __future__ import annotations

#: PCIe x16 bandwidth per direction by generation, after line coding (hardware sheet R58:
#: Gen1/2 8b/10b, Gen3 on 128b/130b; Gen6 taken from its doubled rate).
PCIE_X16 = {1: 4e9, 2: 8e9, 3: 15.75e9, 4: 31.5e9, 5: 63e9, 6: 121e9}
#: Transfer rate per lane (GT/s) -> PCIe generation, as sysfs and NCCL dumps spell it.
GT_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
#: Nominal NVLink rate per lane and direction by compute capability (links.topo cites NVIDIA's
#: figures): NVLink5 50 GB/s (sm 100+), NVLink2-4 25 GB/s (sm 70-90), NVLink1 20 GB/s.
NVLINK_NOMINAL = ((100, 50e9, "NVLink5"), (70, 25e9, "NVLink2-4"), (60, 20e9, "NVLink1"))


def nvlink_nominal(sm: int | None) -> tuple[float, str]:
    """A lane's nominal bandwidth (bytes/s per direction) and generation for ``sm`` (90 when
    unknown)."""
    s = 90 if sm is None else int(sm)
    return next(((bw, name) for floor, bw, name in NVLINK_NOMINAL if s >= floor),
                (25e9, "unknown"))
