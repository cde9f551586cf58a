"""Issue 25's speed figures: inputs at the limits answer in bounded time, growing linearly.

Prints seconds for: fmt of link lines each with a comment (2x the lines should take about 2x),
the NCCL importer on 100,000 sibling elements (its element limit), the nvidia-smi importer on a
512-column matrix (its column limit), and the bounded reader on /dev/zero.
Run: .venv/bin/python benchmarks/robust.py
"""

from __future__ import annotations

import time

from topoc.compiler.base.limits import LIMITS
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.lang import pipeline
from topoc.compiler.lang.fmt import fmt
from topoc.importers import from_nccl_xml, from_smi, nccl_xml, smi


def timed(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def commented(n: int) -> str:
    return ("link l : nvlink { bandwidth = 1 GB/s }\ndevice X : gpu { }\ngroup G {\n"
            "  a[10] : X\n" + "".join(f"  a[1] <-> a[2] : l  # c{i}\n" for i in range(n)) + "}\n")


def main() -> None:
    for n in (5_000, 10_000, 20_000):
        text = commented(n)
        print(f"fmt, {n:,} commented lines ({len(text) / 1e6:.2f} MB): "
              f"{timed(lambda: fmt(text)):.2f} s")
    gpu = ('<pci busid="0000:01:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" '
           'link_width="16"><gpu sm="90"/></pci>')
    xml = ('<system version="1"><cpu numaid="0" arch="x86_64">' + gpu
           + '<pci busid="0000:ff:00.0" class="0x010000"/>' * (nccl_xml.MAX_ELEMENTS - 10)
           + "</cpu></system>")
    print(f"import nccl-topo, {nccl_xml.MAX_ELEMENTS:,} sibling elements "
          f"({len(xml) / 1e6:.1f} MB): {timed(lambda: from_nccl_xml(xml, 'wide.xml')):.2f} s")
    n = smi.MAX_COLUMNS
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n))
    rows = [f"GPU{i}\t" + "\t".join("X" if i == j else "NV18" if i % 7 and j % 7 else "NODE"
                                    for j in range(n)) for i in range(n)]
    matrix = "\n".join([head, *rows])
    print(f"import nvidia-smi, {n} x {n} matrix ({len(matrix) / 1e6:.1f} MB): "
          f"{timed(lambda: from_smi(matrix, 'wide.txt')):.2f} s")

    def zero():
        try:
            pipeline.read("/dev/zero")
        except CompileError:
            pass
    print(f"read /dev/zero: E290 after {LIMITS.file_bytes + 1:,} bytes in {timed(zero):.2f} s")


if __name__ == "__main__":
    main()
