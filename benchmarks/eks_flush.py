"""How much the forced GPUDirect RDMA flush can add to the p5 EKS run (2 x p5.48xlarge, NCCL
2.18.5, aws-ofi-nccl 1.7.3; calibration.csv [aws_p5eks_2n_ar-*]), against what the model
misses there. Issue 27, sixth pass: the flush was the candidate left for the run's ~190-290 us
a chunk (docs/cost.md, Calibration); this prints the figures that rule it out.

What the sources say (read at the tags named):

- NCCL v2.18.5-1 flushes every network receive in Simple when the GPU needs it
  (src/transport/net.cc recvProxyProgress: ``totalSize > 0 && p == NCCL_PROTO_SIMPLE &&
  needFlush`` -> ``ncclNet->iflush``), and on Hopper it needs it unless NCCL_NET_FORCE_FLUSH=0
  (src/graph/paths.cc ncclTopoNeedFlush; the parameter defaults to 1 there, to 0 from
  v2.19.1-1). aws-ofi-nccl sets it to 0 on p5 only from v1.8.0-aws (commit 74fd41a6, PR #314:
  "Hopper GPUs do not require a network flush"; neither the commit nor the release notes give a
  figure). NVLS-tree runs Simple with one step a chunk (enqueue.cc: chunkSteps = sliceSteps = 1
  outside Simple rings), so one flush per chunk per receiving connection.
- aws-ofi-nccl v1.7.3-aws drives p5 with its RDMA protocol (nccl_ofi_net.c: EFA, fewer GPUs
  than EFA devices, libfabric API >= 1.18). Its flush (nccl_ofi_rdma.c ``flush``,
  ``post_flush_req``) is one ``fi_read`` of NCCL_OFI_FLUSH_SIZE = 4 bytes from the received GPU
  buffer into a registered host page, on the local endpoint of ONE rail (the scheduler's
  schedule for 4 bytes, checked to be one rail), posted and returned at once: NCCL polls it
  with ``test`` like a receive. Not blocking, not striped, no larger than 4 bytes.
- NCCL does not wait for the flush before posting the next receive: it posts up to
  ``maxDepth = min(NCCL_STEPS, NCCL_SHARED_STEPS / nsubs)`` receives ahead of the GPU's
  progress, and a collective's connections are not shared (net.cc: ``shared = graph ? 0 : ...``;
  proxy.cc ProxyAppend groups subs only for shared connections), so nsubs = 1 and maxDepth = 8.
  The flush delays the hand-off of its own step to the GPU (the tail is written only once the
  flush request tests done); later steps' receives are already posted. Same at every NCCL tag
  since (the depth rule is unchanged at v2.30.7-1).
- Its size on EFA: one local 4-byte RDMA read. No published EFA RDMA-read latency was found;
  the bound used here is the calibration's own: on p4de (A100, where NCCL always flushes Simple
  receives, and the plugin flushes with the same 4-byte ``fi_read`` over its SENDRECV protocol)
  a whole Simple network step, flush included, costs 15 us beyond NCCL's hops (efa_sendrecv's
  ``step_us``, fitted on the p4de 8 B all-reduce, transports.py). That bound leans on the
  model's split of the p4de row (NCCL's hops, the per-operation cost fitted on p5); without it,
  the p4de 8 B all-reduce (two flushed network steps) against the p5 one (no flush: NCCL 2.27
  on Hopper) leaves at most their difference over two, about 47 us, a loose bound that also
  carries Simple's against LL's hops and the older EFA.

So the flush adds at most F = 15 us (47 us loosely) to each chunk's path across a connection.
Two ways to charge it:
``pipelined``, what the 8-deep window gives (the flush adds its latency on the two network legs
of the tree's critical path, up and down: 2F in all), and ``serial``, as if every chunk waited
for the last one's flush on both legs (2 x chunks x F), which the sources contradict but which
bounds it from above. Then the F each row would need, serial: a per-flush figure no row agrees
on with another; and, for completeness, the rows with F fitted serially on the 1 GiB row (the
fit the sources do not support: it is twice the bound, and the serialisation is not NCCL's).

    .venv/bin/python benchmarks/eks_flush.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.calibration_rows import (EKS_RUN, eks_chunks, loose_flush_bound_us,  # noqa: E402
                                    predict, rows)
from topoc.compiler.collectives import transports  # noqa: E402

#: The EKS run's six sizes, the faster of nccl-tests' two calls in us
EKS_FASTER = {size: min(calls) for size, calls in EKS_RUN.items()}
LEGS = 2                        # a chunk crosses the network up and down the 2-node tree


def flush_bound_us() -> float:
    """The p4de Simple network step's fitted cost, flush included: the bound on one flush."""
    return transports.TRANSPORTS["efa_sendrecv"].step_us


def eks_rows() -> list[dict]:
    """One row a size, the calibration row where there is one, else the 64 MiB row resized."""
    base = [r for r in rows() if "[aws_p5eks_2n_ar-" in (r.get("source") or "")]
    by_size = {r["size"]: r for r in base}
    out = []
    for size in EKS_FASTER:
        label = f"{size >> 30}GiB" if size >= 1 << 30 else f"{size >> 20}MiB"
        out.append(by_size.get(label) or dict(by_size["64MiB"], size=label))
    return out


def figures() -> list[dict]:
    """Per size: chunks a connection, the model's time, measured, what is missing, what the
    flush adds at most (pipelined and serial) and the busbw errors then, and the flush each row
    would need if serial."""
    f, loose = flush_bound_us(), loose_flush_bound_us()
    out = []
    for row, (size, measured) in zip(eks_rows(), EKS_FASTER.items()):
        chunk, chunks = eks_chunks(size)
        model = predict(row).time * 1e6
        pipelined, serial = model + LEGS * f, model + LEGS * chunks * f
        out.append(dict(size=size, chunk=chunk, chunks=chunks, model=model, measured=measured,
                        missing=measured - model, error=measured / model - 1,
                        pipelined=measured / pipelined - 1, serial=measured / serial - 1,
                        loose=measured / (model + LEGS * loose) - 1,
                        needed=(measured - model) / (LEGS * chunks)))
    fitted = next(r["needed"] for r in out if r["size"] == 1 << 30)
    for r in out:
        r["fitted"] = r["measured"] / (r["model"] + LEGS * r["chunks"] * fitted) - 1
    return out


def main() -> None:
    f, loose = flush_bound_us(), loose_flush_bound_us()
    print(f"### The forced flush against the p5 EKS run (F <= {f:g} us a flush; loosely "
          f"{loose:.1f})\n")
    print("| size | chunk | chunks a connection | model us | measured us | missing us | "
          "busbw error | + flush, pipelined | pipelined, loose F | + flush, serial bound | "
          "F needed, serial | serial, F fitted on 1 GiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in figures():
        size = r["size"]
        label = f"{size >> 30} GiB" if size >= 1 << 30 else f"{size >> 20} MiB"
        print(f"| {label} | {r['chunk'] >> 10} KiB | {r['chunks']} | {r['model']:.1f} | "
              f"{r['measured']} | {r['missing']:.0f} | {r['error']:+.1%} | "
              f"{r['pipelined']:+.1%} | {r['loose']:+.1%} | {r['serial']:+.1%} | "
              f"{r['needed']:.0f} us | "
              f"{r['fitted']:+.1%} |")


if __name__ == "__main__":
    main()
