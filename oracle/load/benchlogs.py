"""Parse collective-benchmark logs: nccl-tests and OSU micro-benchmarks.

The result is a frozen :class:`BenchLog`: which tool and collective, on how many GPUs
and nodes, and one (message bytes, seconds) pair per measured size.  ``oracle fit``
(:mod:`oracle.compute.calibration.fit`) turns these into α, β per network level.

**nccl-tests** (github.com/NVIDIA/nccl-tests, ``all_reduce_perf``, ``all_gather_perf``,
``reduce_scatter_perf``, ``broadcast_perf``, ``reduce_perf``): raw stdout.

- GPUs = number of distinct ranks in the rank table (``#   Rank  3 Pid ... on g0037
  device  3 [0xb2] Tesla V100-SXM2-16GB``; newer versions add ``Group N``); nodes =
  distinct host names there; GPUs per node = the most ranks on one host.
- Without a rank table (a truncated log) the number of MPI processes is not in the log:
  the header ``# nThread T nGpus G`` gives T·G GPUs per process only, so the GPU count
  must come from ``--gpus`` or the file-name rule below (and must be a multiple of T·G).
- Operation: the ``# Collective test starting: all_reduce_perf`` line of newer versions;
  else the file name (``all_reduce``, ``allgather``, ... in any spelling); else the
  caller's ``operation``; else inferred from the data: nccl-tests prints busbw = algbw ·
  factor with the factor of its doc/PERFORMANCE.md (all-reduce 2(p-1)/p; all-gather and
  reduce-scatter (p-1)/p; broadcast and reduce 1), and the ``redop`` column is ``sum``
  etc. for reductions and ``none`` otherwise; together they tell the operation except
  all-reduce from reduce at p = 2 (then give ``--operation``).
- Rows: ``size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong``
  -- out-of-place then in-place; times in microseconds.  UCX/NCCL/MPI warnings and
  other lines that do not start with two numbers are skipped.

**OSU micro-benchmarks** (osu_allreduce, osu_allgather, osu_reduce_scatter, osu_bcast,
osu_reduce; ``# OSU MPI-CUDA Allreduce Latency Test v5.7`` header, then ``# Size  Avg
Latency(us) ...``): the log has no rank table, so GPUs and nodes come from the caller
(``--gpus``/``--nodes``) or the file-name rule.

**File-name rule** (for logs without a rank table), on the file name without its suffix,
words separated by ``_ - .``: a word starting with ``intra`` means one node (it wins over
``{n}nodes``: ABCI's ``intra_vnode_4nodes.txt`` is one node, "4nodes" is the job name);
a word ``{n}nodes`` (or ``{n}node``) means n nodes; a word ``{n}gpus`` means n GPUs.
GPUs = nodes × GPUs per node when only the nodes are known; GPUs per node come from the
caller (``--gpus-per-node``, else the base system's ``gpus_per_node``) and it is an error
when they are needed and unknown.

**Message bytes.** Every row's bytes are the ``m`` of the ring model in
:mod:`oracle.compute.calibration.fit`: for all-reduce, broadcast and reduce the buffer each rank
holds; for all-gather and reduce-scatter the *total* gathered/scattered bytes (p·m_i).
nccl-tests prints exactly that as ``size`` (max of send and receive bytes, nccl-tests
src/common.cu); OSU's ``Size`` of osu_allgather is the bytes each rank sends, so it is
multiplied by p (OSU osu_allgather.c: ``MPI_Allgather(sendbuf, size, ...)``); OSU's
reduce-scatter ``Size`` is already the total (osu_reduce_scatter.c: recvcounts = size/p).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from oracle.errors import OracleError
from oracle.load.yamlfile import read_text
from oracle.records import BenchLog

TOOLS = ("nccl-tests", "osu")
OPERATIONS = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce")

# nccl-tests doc/PERFORMANCE.md: busbw = algbw x factor (p ranks).
BUS_FACTOR = {
    "allreduce": lambda p: 2.0 * (p - 1) / p,
    "allgather": lambda p: (p - 1) / p,
    "reducescatter": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1.0,
    "reduce": lambda p: 1.0,
}
REDUCTIONS = ("allreduce", "reducescatter", "reduce")


# -- helpers ----------------------------------------------------------------------------

DATA_START = re.compile(r"^\s*\d+\s+[-+.\d]")  # "size  number ...": looks like a data row
RANK = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)", re.I
)
NTHREAD = re.compile(r"^#\s*nThreads?\s+(\d+)\s+nGpus\s+(\d+)", re.I)
COLL_START = re.compile(r"^#\s*Collective test starting:\s*(\S+)", re.I)
_OSU_HEADER = re.compile(r"^#\s*OSU\b(.*?)\bLatency Test\b", re.I)
_OSU_OPS = {
    "allreduce": "allreduce",
    "allgather": "allgather",
    "reduce_scatter": "reducescatter",
    "reduce-scatter": "reducescatter",
    "reducescatter": "reducescatter",
    "broadcast": "broadcast",
    "bcast": "broadcast",
    "reduce": "reduce",
}


def op_from_name(text: str) -> str | None:
    """'all_reduce_perf', 'allreduce', 'All-Gather', ... -> operation (None if none)."""
    s = re.sub(r"[_\-\s]", "", text.lower())
    for key, op in (
        ("reducescatter", "reducescatter"),
        ("allreduce", "allreduce"),
        ("allgather", "allgather"),
        ("broadcast", "broadcast"),
        ("bcast", "broadcast"),
    ):
        if key in s:
            return op
    if re.search(r"(?:^|[_\-.])reduce(?:$|[_\-.]|perf)", text.lower()):
        return "reduce"
    if re.search(r"alltoall|sendrecv|hypercube|scatter|gather", s):
        return "unsupported:" + text
    return None


def name_layout(file: str) -> tuple[int | None, int | None, str]:
    """The file-name rule: (nodes, gpus, explanation); None where the name says nothing."""
    stem = Path(file).name
    for suffix in (".txt", ".log", ".out"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    words = [w for w in re.split(r"[_\-.\s]+", stem.lower()) if w]
    nodes = gpus = None
    why = []
    if any(w.startswith("intra") for w in words):
        nodes = 1
        why.append("'intra' in the file name: one node")
    else:
        for w in words:
            m = re.fullmatch(r"(\d+)nodes?", w)
            if m:
                nodes = int(m.group(1))
                why.append(f"'{w}' in the file name: {nodes} nodes")
                break
    for w in words:
        m = re.fullmatch(r"(\d+)gpus?", w)
        if m:
            gpus = int(m.group(1))
            why.append(f"'{w}' in the file name: {gpus} GPUs")
            break
    return nodes, gpus, "; ".join(why)


def resolve_layout(
    file: str,
    tool: str,
    gpus: int | None,
    nodes: int | None,
    gpus_per_node: int | None,
    per_process: int = 1,
) -> tuple[int, int, int, str]:
    """GPUs, nodes, GPUs per node of a log without a rank table (see module doc):
    the caller's counts win over the file-name rule; GPUs per node fill in the rest."""
    name_nodes, name_gpus, name_why = name_layout(file)
    why = []
    if gpus is not None:
        why.append(f"--gpus {gpus}")
    elif name_gpus is not None:
        gpus = name_gpus
    if nodes is not None:
        why.append(f"--nodes {nodes}")
    elif name_nodes is not None:
        nodes = name_nodes
    if name_why and (
        (name_gpus is not None and gpus == name_gpus) or (name_nodes is not None and nodes == name_nodes)
    ):
        why.append(name_why)
    k = gpus_per_node
    if gpus is None and nodes is None:
        raise OracleError(
            f"{tool} log has no rank table, so the number of GPUs is unknown",
            file=file,
            hint="give --gpus N (or --gpus FILE=N), or name the file with '{n}nodes' or"
            " 'intra' and give --gpus-per-node K",
        )
    if k is None and (gpus is None or nodes is None):
        known = f"{nodes} node(s)" if gpus is None else f"{gpus} GPUs"
        raise OracleError(
            f"{tool} log has no rank table; {known} known, but not how many GPUs each node has",
            file=file,
            hint="give --gpus-per-node K, or --system BASE to take it from a system file",
        )
    if gpus is None:
        assert nodes is not None and k is not None
        gpus = nodes * k
        why.append(f"{k} GPUs per node")
    elif nodes is None:
        assert k is not None
        nodes = -(-gpus // k)
        why.append(f"{k} GPUs per node")
    if gpus < 1 or nodes < 1:
        raise OracleError(f"GPU and node counts must be >= 1 (got {gpus} GPUs on {nodes} nodes)", file=file)
    if nodes > gpus:
        raise OracleError(f"{gpus} GPUs cannot span {nodes} nodes", file=file)
    if k is None:
        k = -(-gpus // nodes)
    elif gpus > nodes * k:
        raise OracleError(f"{gpus} GPUs do not fit on {nodes} node(s) of {k} GPUs", file=file)
    if gpus % per_process:
        raise OracleError(
            f"{gpus} GPUs is not a multiple of the {per_process} GPUs per process of the"
            " header (nThread x nGpus)",
            file=file,
        )
    return gpus, nodes, k, "; ".join(why)


def parse_number(tok: str, file: str, line: int, what: str) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise OracleError(f"cannot read {what} '{tok}'; expected a number", file=file, line=line) from None
    if not math.isfinite(v):
        raise OracleError(f"{what} is '{tok}'; expected a finite number", file=file, line=line)
    return v


def parse_size(tok: str, file: str, line: int) -> int:
    if not tok.isdigit():
        raise OracleError(f"cannot read message size '{tok}'; expected a byte count", file=file, line=line)
    if len(tok) > 16 or int(tok) > 10**15:
        raise OracleError(
            f"message size {tok[:20]}{'...' if len(tok) > 20 else ''} bytes is not plausible; expected at most 1e+15",
            file=file,
            line=line,
        )
    return int(tok)


# Times a benchmark can report: from a picosecond to about eleven days (in us).  Outside
# them the fit's weights 1/t^2 overflow.
_MIN_US, _MAX_US = 1e-6, 1e12


def parse_time_us(tok: str, file: str, line: int, what: str) -> float:
    v = parse_number(tok, file, line, what)
    if v <= 0:
        raise OracleError(f"{what} is {tok} us; expected a positive time", file=file, line=line)
    if not _MIN_US <= v <= _MAX_US:
        raise OracleError(
            f"{what} is {tok} us, which is not plausible; expected {_MIN_US:g} to {_MAX_US:g} us",
            file=file,
            line=line,
        )
    return v * 1e-6


# -- parsers ----------------------------------------------------------------------------


def detect_tool(text: str, file: str) -> str:
    for line in text.splitlines():
        s = line.strip()
        if _OSU_HEADER.match(s):
            return "osu"
        if (
            RANK.match(s)
            or NTHREAD.match(s)
            or COLL_START.match(s)
            or re.match(r"^#\s*nccl-tests", s, re.I)
            or re.match(r"^#.*\bout-of-place\b", s)
        ):
            return "nccl-tests"
    raise OracleError(
        "not a benchmark log: found neither an nccl-tests header ('# nThread ...', '#  Rank ...',"
        " 'out-of-place') nor an OSU header ('# OSU ... Latency Test')",
        file=file,
    )


@dataclass
class _OsuScan:
    """What the comment lines of an OSU log say."""

    op: str | None = None
    op_line: int | None = None
    avg_col: int = 1
    header_line: int | None = None


def parse_osu(
    text: str,
    file: str,
    *,
    operation: str | None = None,
    gpus: int | None = None,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
) -> BenchLog:
    scan = _OsuScan()
    rows: list[tuple[int, float]] = []
    lines: list[int] = []
    for no, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s:
            continue
        if s.startswith("#"):
            _osu_comment(scan, s, no, file)
            continue
        if not DATA_START.match(raw):
            continue  # MPI/UCX warnings and other noise
        tok = s.split()
        if len(tok) <= scan.avg_col:
            raise OracleError(
                f"data row has {len(tok)} columns; expected Size and Avg Latency(us)", file=file, line=no
            )
        rows.append((parse_size(tok[0], file, no), parse_time_us(tok[scan.avg_col], file, no, "average latency")))
        for t in tok[1:]:
            parse_number(t, file, no, "value")
        lines.append(no)
    op = scan.op
    if op is None:
        raise OracleError("OSU log has no '# OSU ... Latency Test' header", file=file)
    if operation is not None and operation != op:
        raise OracleError(f"log is an OSU {op} test but --operation {operation} was given", file=file, line=scan.op_line)
    if not rows:
        raise OracleError(
            "OSU log has no data rows; expected lines 'Size  Avg Latency(us) ...' after the header",
            file=file,
            line=scan.header_line or scan.op_line,
        )
    p, n, k, layout_from = resolve_layout(file, "OSU", gpus, nodes, gpus_per_node)
    if op == "allgather":  # OSU Size = bytes each rank sends; the model's m is the total
        rows = [(size * p, t) for size, t in rows]
    return BenchLog(
        file=file,
        tool="osu",
        operation=op,
        gpus=p,
        nodes=n,
        gpus_per_node=k,
        rows=tuple(rows),
        row_lines=tuple(lines),
        operation_from="OSU header",
        layout_from=layout_from,
    )


def _osu_comment(scan: _OsuScan, s: str, no: int, file: str) -> None:
    """The test's header (its operation) and the column header (where the average is)."""
    m = _OSU_HEADER.match(s)
    if m:
        words = m.group(1).split()
        name = words[-1].lower() if words else ""
        this = _OSU_OPS.get(name)
        if this is None:
            raise OracleError(
                f"OSU test '{s.lstrip('# ')}' is not supported; expected an Allreduce,"
                " Allgather, Reduce_scatter, Broadcast or Reduce latency test",
                file=file,
                line=no,
            )
        if scan.op is not None and this != scan.op:
            raise OracleError(
                f"holds several OSU tests ({scan.op} and {this}); give one log per test",
                file=file,
                line=no,
            )
        scan.op, scan.op_line = this, no
        return
    if re.match(r"^#\s*Size\b", s, re.I):
        scan.header_line = no
        cols = [c.strip().lower() for c in re.split(r"\s{2,}", s.lstrip("# ").strip())]
        scan.avg_col = next((i for i, c in enumerate(cols) if c.startswith("avg latency")), 1)


def parse_benchlog(
    text: str,
    file: str,
    *,
    operation: str | None = None,
    gpus: int | None = None,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
) -> BenchLog:
    """Parse the text of an nccl-tests or OSU log (the tool is detected from its header).

    ``gpus``/``nodes`` apply only to logs without a rank table; ``gpus_per_node`` fills in
    what such a log and its file name do not say (and bounds a rank table's per-host
    count); ``operation`` is used when the log does not name its collective.
    """
    if operation is not None and operation not in OPERATIONS:
        raise OracleError(f"unknown operation '{operation}'; expected one of {', '.join(OPERATIONS)}")
    from oracle.load.nccl_tests import parse_nccl_tests

    tool = detect_tool(text, file)
    parse = parse_osu if tool == "osu" else parse_nccl_tests
    return parse(text, file, operation=operation, gpus=gpus, nodes=nodes, gpus_per_node=gpus_per_node)


def load_benchlog(path: str | Path, **kwargs) -> BenchLog:
    """Read and parse one log file (see :func:`parse_benchlog` for the keywords)."""
    return parse_benchlog(read_text(path, "benchmark log"), str(path), **kwargs)


__all__ = ["OPERATIONS", "TOOLS", "load_benchlog", "parse_benchlog", "name_layout"]
