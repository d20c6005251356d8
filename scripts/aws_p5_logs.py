"""Write data/nccl-tests/h100-aws-p5/all_reduce_{n}nodes.txt from its nccl_all_reduce.csv.

The CSV (copied verbatim, data/README.md) tabulates nccl-tests all_reduce_perf runs on n
p5.48xlarge instances: per row Nodes, GPUs, size(MB), iterations, blocking and the out- and
in-place algbw and busbw.  ``oracle fit network`` reads nccl-tests' own output, so each node
count becomes one log in that format, its rows in nccl-tests' columns:

- size in bytes: the CSV's MB are nccl-tests' M (its ``-b 32M`` is 32 x 2^20 bytes: the
  run's manifest k8s/nccl_all_reduce_perf.yaml passes -b 32M -e 8192M -f 2);
- count = size / 4 (float), redop sum, root -1, #wrong 0 (nccl-tests checks with -c 1);
- time (us) = size / (algbw x 1e9) x 1e6, as nccl-tests defines algbw (src/common.cu),
  printed to 0.1 us; algbw and busbw as the CSV gives them.

No rank table is written (the CSV names no hosts): the GPUs come from the file name's
``{n}nodes`` and the base system's 8 GPUs per node (``oracle fit network --gpus-per-node``).

    python scripts/aws_p5_logs.py
"""

from __future__ import annotations

import csv
import hashlib
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "data" / "nccl-tests" / "h100-aws-p5"
SOURCE = HERE / "nccl_all_reduce.csv"
COLUMNS = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
)


def row(r: dict) -> str:
    size = int(float(r["size(MB)"])) * 2**20
    oa, ob, ia, ib = (float(r[k].strip()) for k in ("out algbw(GB/s)", "out busbw(GB/s)", "in algbw(GB/s)", "in busbw(GB/s)"))
    ot, it = size / (oa * 1e9) * 1e6, size / (ia * 1e9) * 1e6
    return (f"{size:12d} {size // 4:13d}     float     sum      -1 {ot:8.1f} {oa:7.2f} {ob:7.2f}      0"
            f" {it:8.1f} {ia:7.2f} {ib:7.2f}      0")  # fmt: skip


def main() -> None:
    text = SOURCE.read_bytes()
    digest = hashlib.sha256(text).hexdigest()
    groups: dict[int, list[dict]] = defaultdict(list)
    for r in csv.DictReader(text.decode().splitlines()):
        groups[int(r["Nodes"])].append(r)
    for nodes, rows in sorted(groups.items()):
        gpus = {int(r["GPUs"]) for r in rows}
        assert gpus == {8 * nodes}, (nodes, gpus)
        lines = [
            (f"# WRITTEN by scripts/aws_p5_logs.py from nccl_all_reduce.csv (sha256 {digest}), its {len(rows)} rows"
             f" with Nodes = {nodes} ({8 * nodes} GPUs, 8 per p5.48xlarge); not nccl-tests' own output"),
            (f"# nThread 1 nGpus 1 minBytes {32 * 2**20} maxBytes {8192 * 2**20} step: 2(factor) warmup iters: 5"
             " iters: 1000 agg iters: 1 validation: 1 graph: 0"),
            "#",
            "#                                                              out-of-place                       in-place",
            *COLUMNS,
            *(row(r) for r in sorted(rows, key=lambda r: float(r["size(MB)"]))),
        ]
        (HERE / f"all_reduce_{nodes}nodes.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
