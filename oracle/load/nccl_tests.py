"""Parse nccl-tests logs (``all_reduce_perf`` and its siblings) into a :class:`BenchLog`.

The format, and how GPUs, nodes and the operation are found, are described in
:mod:`oracle.load.benchlogs`: a scan of the lines (:func:`_scan`), then the layout
(:func:`_layout`: the rank table, else the caller and the file-name rule), then the
operation (:func:`_operation`: header line > caller > file name > data).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from oracle.errors import OracleError
from oracle.load.benchlogs import (
    BUS_FACTOR,
    COLL_START,
    DATA_START,
    NTHREAD,
    OPERATIONS,
    RANK,
    REDUCTIONS,
    BenchLog,
    op_from_name,
    parse_number,
    parse_size,
    parse_time_us,
    resolve_layout,
)


@dataclass
class _Scan:
    """What the lines of one log say."""

    ranks: dict[int, str] = field(default_factory=dict)
    declared_op: str | None = None
    declared_line: int | None = None
    per_process: int = 1
    rows: list[tuple[int, float]] = field(default_factory=list)
    in_place: list[tuple[int, float]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    redops: set[str] = field(default_factory=set)
    last_bw: tuple[float, float] | None = None  # (algbw, busbw) of the largest measured size
    last_bw_size: int = -1
    header_line: int | None = None
    size_lines: dict[tuple, int] = field(default_factory=dict)  # (size, type, redop) -> its row's line


def parse_nccl_tests(
    text: str,
    file: str,
    *,
    operation: str | None = None,
    gpus: int | None = None,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
) -> BenchLog:
    scan = _scan(text, file)
    p, n, k, layout_from, hosts = _layout(scan, file, gpus, nodes, gpus_per_node)
    op, op_from = _operation(scan, file, operation, p)
    return BenchLog(
        file=file,
        tool="nccl-tests",
        operation=op,
        gpus=p,
        nodes=n,
        gpus_per_node=k,
        rows=tuple(scan.rows),
        in_place_rows=tuple(scan.in_place),
        row_lines=tuple(scan.lines),
        operation_from=op_from,
        layout_from=layout_from,
        hosts=hosts,
    )


def _scan(text: str, file: str) -> _Scan:
    scan = _Scan()
    for no, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s:
            continue
        if s.startswith("#"):
            _comment(scan, s, no, file)
        elif DATA_START.match(raw):  # else UCX/NCCL/MPI warnings and other noise
            _row(scan, s, no, file)
    if not scan.rows:
        raise OracleError(
            "nccl-tests log has no data rows; expected lines 'size count type redop time algbw"
            " busbw ...' after the header",
            file=file,
            line=scan.header_line,
        )
    return scan


def _comment(scan: _Scan, s: str, no: int, file: str) -> None:
    m = RANK.match(s)
    if m:
        scan.ranks[int(m.group(1))] = m.group(2)
        return
    m = NTHREAD.match(s)
    if m:
        scan.per_process = int(m.group(1)) * int(m.group(2))
        return
    m = COLL_START.match(s)
    if m:
        op = op_from_name(m.group(1))
        if op is None or op.startswith("unsupported:"):
            raise OracleError(
                f"collective '{m.group(1)}' is not supported; expected one of"
                " all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf,"
                " reduce_perf",
                file=file,
                line=no,
            )
        if scan.declared_op is not None and op != scan.declared_op:
            raise OracleError(
                f"holds several collectives ({scan.declared_op} and {op}); give one log per collective",
                file=file,
                line=no,
            )
        scan.declared_op, scan.declared_line = op, no
        return
    size = _SIZE.search(s)  # "size ... count", in linear time (not \bsize\b.*\bcount\b: quadratic)
    if size and _COUNT.search(s, size.end()):
        scan.header_line = no


_SIZE = re.compile(r"\bsize\b")
_COUNT = re.compile(r"\bcount\b")


def _row(scan: _Scan, s: str, no: int, file: str) -> None:
    tok = s.split()
    if len(tok) < 12:
        raise OracleError(
            f"data row has {len(tok)} columns; expected at least 12 (size count type redop"
            " time algbw busbw #wrong time algbw busbw #wrong)",
            file=file,
            line=no,
        )
    size = parse_size(tok[0], file, no)
    key = (size, tok[2].lower(), tok[3].lower())  # -d all / -o all: one row per type and reduction
    if key in scan.size_lines:  # nccl-tests measures each size once a run: two runs in one file, or an edit
        raise OracleError(f"size {size} B ({tok[2]}, {tok[3]}) is measured twice (line {scan.size_lines[key]} and"
                          " this one); expected each size once, as one run of nccl-tests writes it", file=file,
                          line=no, hint="give each run its own log")  # fmt: skip
    scan.size_lines[key] = no
    parse_size(tok[1], file, no)  # count (elements)
    scan.redops.add(tok[3].lower())
    oop = parse_time_us(tok[-8], file, no, "out-of-place time")
    algbw = parse_number(tok[-7], file, no, "out-of-place algbw")
    busbw = parse_number(tok[-6], file, no, "out-of-place busbw")
    ip = parse_time_us(tok[-4], file, no, "in-place time")
    parse_number(tok[-3], file, no, "in-place algbw")
    parse_number(tok[-2], file, no, "in-place busbw")
    scan.rows.append((size, oop))
    scan.in_place.append((size, ip))
    scan.lines.append(no)
    if size >= scan.last_bw_size and algbw > 0:
        scan.last_bw, scan.last_bw_size = (algbw, busbw), size


def _layout(scan: _Scan, file: str, gpus, nodes, gpus_per_node):
    """(GPUs, nodes, GPUs per node, where they come from, hosts)."""
    if not scan.ranks:
        p, n, k, layout_from = resolve_layout(file, "nccl-tests", gpus, nodes, gpus_per_node, scan.per_process)
        return p, n, k, layout_from, ()
    hosts = tuple(scan.ranks[r] for r in sorted(scan.ranks))
    per_host: dict[str, int] = {}
    for h in hosts:
        per_host[h] = per_host.get(h, 0) + 1
    p, n, k = len(hosts), len(per_host), max(per_host.values())
    if gpus_per_node is not None and k > gpus_per_node:
        raise OracleError(
            f"the rank table puts {k} GPUs on one host, more than the {gpus_per_node}"
            " GPUs per node of the system",
            file=file,
        )
    return p, n, k, f"rank table: {p} ranks on {n} host(s)", hosts


def _operation(scan: _Scan, file: str, operation: str | None, p: int) -> tuple[str, str]:
    """The operation and where it comes from: header line > caller > file name > data."""
    name_op = op_from_name(Path(file).name)
    if scan.declared_op is not None:
        if operation is not None and operation != scan.declared_op:
            raise OracleError(
                f"log says '{scan.declared_op}' but --operation {operation} was given",
                file=file,
                line=scan.declared_line,
            )
        return scan.declared_op, "'# Collective test starting' line"
    if operation is not None:
        return operation, "--operation"
    if name_op is not None and not name_op.startswith("unsupported:"):
        return name_op, "file name"
    if name_op is not None:
        raise OracleError(
            "the file name names an unsupported collective; supported: all-reduce, all-gather,"
            " reduce-scatter, broadcast, reduce",
            file=file,
        )
    return _infer_op(file, p, scan.redops, scan.last_bw)


def _infer_op(file: str, p: int, redops: set[str], bw: tuple[float, float] | None) -> tuple[str, str]:
    """The operation from busbw/algbw (nccl-tests doc/PERFORMANCE.md) and the redop column."""
    hint = "say which with --operation (allreduce, allgather, reducescatter, broadcast, reduce)"
    if bw is None or bw[0] <= 0 or p < 2:
        raise OracleError("cannot tell which collective this nccl-tests log measured", file=file, hint=hint)
    ratio = bw[1] / bw[0]
    reduction = bool(redops) and not redops <= {"none", "n/a", "-"}
    cands = [
        op
        for op in OPERATIONS
        if (op in REDUCTIONS) == reduction and abs(BUS_FACTOR[op](p) - ratio) <= 0.02 * BUS_FACTOR[op](p) + 0.01
    ]
    if len(cands) != 1:
        raise OracleError(
            f"cannot tell which collective this nccl-tests log measured (busbw/algbw = {ratio:.3f}"
            f" on {p} GPUs, redop {'/'.join(sorted(redops)) or '?'})",
            file=file,
            hint=hint,
        )
    return cands[0], f"busbw/algbw = {ratio:.3f} = bus factor of {cands[0]} on {p} GPUs"
