"""Fit the α, β of network levels to measured collective times (``oracle fit network``).

Model (docs/cost-model.md ring collectives, ParaDL §4.3 after Thakur, Rabenseifner and Gropp,
"Optimization of collective communication operations in MPICH", IJHPCA 2005), with m
the message bytes of :mod:`oracle.load.benchlogs` and p the GPUs of the log:

    all-reduce       t = 2(p-1)·α + 2(p-1)/p · m·β     docs/cost-model.md AR(p, m) = 2(p-1)(α + (m/p)β)
    all-gather       t =  (p-1)·α +  (p-1)/p · m·β     docs/cost-model.md AG(p, m_i) = (p-1)(α + m_i β), m = p·m_i
    reduce-scatter   t =  (p-1)·α +  (p-1)/p · m·β     ring reduce-scatter = first half of the
                                                       ring all-reduce (Thakur et al. 2005 §4)
    broadcast/reduce t =  (p-1)·α +          m·β       pipelined ring: p-1 hops, every link
                                                       carries m once (approximation; the
                                                       bandwidth term matches nccl-tests'
                                                       bus factor 1, doc/PERFORMANCE.md)

i.e. t = A_op(p)·α + B_op(p)·m·β.  B_op(p) is also nccl-tests' "bus factor": busbw =
B_op(p)·m/t, which tends to 1/β for large m.

**Levels.** Each log is assigned the docs/cost-model.md span of its GPUs (p when all sit on one
node, else nodes × GPUs per node) and every distinct span becomes one network level
``n{span}`` with ``max_gpus = span`` (the outermost level is widened to the whole base
system), so bandwidth that degrades with scale is kept.  Logs with the same span are
fitted together.

**Weights.** Weighted least squares with weights 1/t², i.e. minimise Σ ((t̂ - t)/t)²,
the relative error: without it the largest messages alone would decide the fit.

**Fit range** (default): the message sizes from the smallest one whose bus bandwidth
B_op(p)·m/t reaches half of the log's largest measured bus bandwidth, to the largest
size.  In the α-β model busbw = m / (m·β + (A_op/B_op)·α) reaches half of its asymptote
1/β exactly where the bandwidth term equals the latency term -- Hockney's half-
performance message length n½ (R. W. Hockney, "The communication challenge for MPP:
Intel Paragon and Meiko CS-2", Parallel Computing 20(3), 1994).  Below it NCCL switches
to tree and low-latency protocols that the ring model does not describe; above it the
bandwidth term, which dominates gradient all-reduces, is what the fit must get right.
``min_bytes``/``max_bytes`` override the rule; ``bw_fraction`` changes the fraction.

**Positivity.** α and β must be positive (the system loader rejects anything else).
If the unconstrained fit gives α below ``alpha_floor_s`` (1 ns, far below any real
per-hop latency), α is fixed at the floor and β refitted -- for this 2-parameter convex
problem that is the non-negative least-squares solution on the active bound.  A β <= 0
means times do not grow with message size over the range: an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from oracle.errors import OracleError
from oracle.records import BenchLog

MIB = 1 << 20


def coefficients(operation: str, p: int) -> tuple[float, float]:
    """(A_op(p), B_op(p)) of t = A·α + B·m·β; see the module doc for the sources."""
    if p < 2:
        raise ValueError("a collective over one GPU costs nothing; nothing to fit")
    if operation == "allreduce":
        return 2.0 * (p - 1), 2.0 * (p - 1) / p  # docs/cost-model.md AR
    if operation in ("allgather", "reducescatter"):
        return float(p - 1), (p - 1) / p  # docs/cost-model.md AG with m = p·m_i; ring RS (Thakur 2005)
    if operation in ("broadcast", "reduce"):
        return float(p - 1), 1.0  # pipelined ring, nccl-tests bus factor 1
    raise ValueError(f"unknown operation {operation!r}")


def predict_time(operation: str, p: int, m_bytes, alpha_s: float, beta_s_per_byte: float, protocols=()):
    """t = A·α + B·m·β, or with protocol lines the cheapest of them (compute/protocols.py)."""
    a, b = coefficients(operation, p)
    m = np.asarray(m_bytes, dtype=float)
    t = a * alpha_s + b * m * beta_s_per_byte
    for line in protocols:
        t = np.minimum(t, a * line.alpha_s + b * m * line.beta_s_per_byte)
    return t


def _fit_protocols(group, opt: FitOptions) -> tuple[float, float, tuple, str]:
    """α, β of the level's own (largest-message) line and the protocol lines below it,
    fitted to every measured size of the span's logs (compute/protocols.py)."""
    from oracle.compute.protocols import fit_regimes

    a_all, b_all, m_all, t_all = [], [], [], []
    one_line = FitOptions(min_bytes=opt.min_bytes, max_bytes=opt.max_bytes, bw_fraction=opt.bw_fraction)
    starts = [rows[_fit_range(log, rows, one_line)[0], 0] for log, _, rows, _m, _p in group]
    last_from = min((float(s.min()) for s in starts if s.size), default=None)
    for log, _, rows, _mask, _peak in group:
        a, b = coefficients(log.operation, log.gpus)
        a_all.append(np.full(len(rows), a))
        b_all.append(np.full(len(rows), b))
        m_all.append(rows[:, 0])
        t_all.append(rows[:, 1])
    lines = fit_regimes(*(np.concatenate(x) for x in (a_all, b_all, m_all, t_all)), opt.protocols,
                        opt.alpha_floor_s, last_from=last_from)  # fmt: skip
    return lines[-1].alpha_s, lines[-1].beta_s_per_byte, tuple(lines[:-1]), ""


def span_of(log: BenchLog, gpus_per_node: int | None = None) -> int:
    """docs/cost-model.md: the GPU count on one node, else nodes × GPUs per node."""
    if log.nodes == 1:
        return log.gpus
    return log.nodes * (gpus_per_node or log.gpus_per_node)


@dataclass(frozen=True)
class FitOptions:
    min_bytes: int | None = None  # fit only sizes >= this (overrides the n½ rule)
    max_bytes: int | None = None  # fit only sizes <= this
    bw_fraction: float = 0.5  # n½ rule: busbw >= this fraction of the log's peak
    in_place: bool = False  # nccl-tests: fit the in-place times instead of out-of-place
    alpha_floor_s: float = 1e-9
    check_bytes: int = MIB  # residuals are also reported over sizes >= this
    # lines per level (compute/protocols.py): 1 = the ring model over the fit range;
    # K > 1 = K protocol regimes fitted to every measured size
    protocols: int = 1

    def rule(self, short: bool = False) -> str:
        """The fit-range rule in words (``short`` for per-level provenance)."""
        if self.protocols > 1:
            return f"every size, {self.protocols} protocol regimes (lower envelope)"
        parts = []
        if self.min_bytes is not None:
            parts.append(f"m >= {self.min_bytes} B (--min-bytes)")
        elif short:
            parts.append(f"busbw >= {self.bw_fraction:g} x peak")
        else:
            parts.append(
                f"from the smallest size whose bus bandwidth reaches {self.bw_fraction:g} x the"
                " log's peak" + (" (Hockney's n½)" if self.bw_fraction == 0.5 else "")
            )
        if self.max_bytes is not None:
            parts.append(f"m <= {self.max_bytes} B (--max-bytes)")
        return ", ".join(parts)


@dataclass(frozen=True)
class Residuals:
    """|t̂ - t| / t over a set of points; None when the set is empty."""

    points: int
    median: float | None
    max: float | None

    @staticmethod
    def of(rel: np.ndarray) -> Residuals:
        if rel.size == 0:
            return Residuals(0, None, None)
        a = np.abs(rel)
        return Residuals(int(a.size), float(np.median(a)), float(a.max()))


@dataclass(frozen=True)
class LogFit:
    file: str
    tool: str
    operation: str
    gpus: int
    nodes: int
    span: int
    level: str
    peak_busbw_Bps: float
    range_bytes: tuple[int, int]  # smallest and largest size fitted
    in_range: Residuals
    large: Residuals  # over sizes >= check_bytes
    sizes: tuple[int, ...]
    measured_s: tuple[float, ...]
    predicted_s: tuple[float, ...]
    fitted: tuple[bool, ...]  # per size: inside the fit range


@dataclass(frozen=True)
class LevelFit:
    name: str
    span: int
    max_gpus: int
    alpha_s: float
    beta_s_per_byte: float
    tool: str
    operations: tuple[str, ...]
    files: tuple[str, ...]
    range_bytes: tuple[int, int]
    in_range: Residuals
    large: Residuals
    constrained: str = ""  # "" or why α was fixed at the floor
    protocols: tuple = ()  # compute/protocols.Line below the level's own line

    @property
    def bandwidth_Bps(self) -> float:
        return 1.0 / self.beta_s_per_byte


@dataclass(frozen=True)
class NetworkFit:
    levels: tuple[LevelFit, ...]
    logs: tuple[LogFit, ...]
    overall_large: Residuals  # every log's points >= check_bytes
    options: FitOptions
    timing: str  # "out-of-place" | "in-place" | "average latency"
    warnings: tuple[str, ...] = field(default=())

    @property
    def overall_all(self) -> Residuals:
        """Every log's points, all message sizes (fitted or not)."""
        rel = [(np.array(lf.predicted_s) - np.array(lf.measured_s)) / np.array(lf.measured_s) for lf in self.logs]
        return Residuals.of(np.concatenate(rel) if rel else np.zeros(0))


# -- fitting ----------------------------------------------------------------------------


def _fit_range(log: BenchLog, rows: np.ndarray, opt: FitOptions) -> tuple[np.ndarray, float]:
    """Mask of the rows inside the fit range, and the log's peak bus bandwidth."""
    m, t = rows[:, 0], rows[:, 1]
    _, b = coefficients(log.operation, log.gpus)
    busbw = b * m / t  # nccl-tests doc/PERFORMANCE.md: busbw = algbw · bus factor
    upper = m <= opt.max_bytes if opt.max_bytes is not None else np.ones_like(m, dtype=bool)
    peak = float(busbw[upper].max()) if upper.any() else 0.0
    if opt.min_bytes is not None:
        return upper & (m >= opt.min_bytes), peak
    reached = upper & (busbw >= opt.bw_fraction * peak)
    if not reached.any() or peak <= 0:
        return reached, peak
    lo = m[reached].min()
    return upper & (m >= lo), peak


def _solve(a: np.ndarray, bm: np.ndarray, t: np.ndarray, floor: float) -> tuple[float, float, str]:
    """Weighted least squares of t ≈ a·α + bm·β with weights 1/t² (relative error)."""
    w = 1.0 / t
    X = np.column_stack([a * w, bm * w])
    y = t * w  # = 1
    scale = np.linalg.norm(X, axis=0)
    scale[scale == 0] = 1.0
    sol, *_ = np.linalg.lstsq(X / scale, y, rcond=None)
    alpha, beta = (sol / scale).tolist()
    note = ""
    if not alpha >= floor:
        # α at its floor; β minimises Σ ((t - a·α0 - bm·β)/t)² in closed form.
        alpha = floor
        xb = bm * w
        beta = float(np.dot(xb, (t - a * alpha) * w) / np.dot(xb, xb))
        note = f"unconstrained fit gave α = {sol[0] / scale[0]:.3g} s; α fixed at the {floor:g} s floor"
    return float(alpha), float(beta), note


def fit_network(
    logs: list[BenchLog] | tuple[BenchLog, ...],
    options: FitOptions | None = None,
    *,
    gpus_per_node: int | None = None,
    total_gpus: int | None = None,
) -> NetworkFit:
    """One level per measured span (see the module doc).

    ``gpus_per_node`` (the base system's) defines spans of multi-node logs; ``total_gpus``
    (the base system's) widens the outermost level to the whole system.
    """
    opt = options or FitOptions()
    by_span, warnings = checked_logs(logs, opt, gpus_per_node=gpus_per_node, total_gpus=total_gpus)
    tools = {item.log.tool for items in by_span.values() for item in items}
    if len(tools) > 1:
        warnings.append(
            "levels come from different tools (" + ", ".join(sorted(tools)) + "); their α, β are not comparable"
        )
    spans = sorted(by_span)
    levels: list[LevelFit] = []
    log_fits: dict[str, LogFit] = {}
    for i, span in enumerate(spans):
        outermost = i == len(spans) - 1
        level, fits = _fit_level(span, by_span[span], opt, total_gpus if outermost else None)
        if level.constrained:
            warnings.append(f"level {level.name}: {level.constrained}")
        levels.append(level)
        log_fits.update((lf.file, lf) for lf in fits)
    ordered = sorted((log_fits[log.file] for log in logs), key=lambda lf: lf.span)
    return NetworkFit(
        levels=tuple(levels),
        logs=tuple(ordered),
        overall_large=_overall(ordered, opt),
        options=opt,
        timing=_timing(logs, opt),
        warnings=tuple(warnings),
    )


def checked_logs(logs, opt: FitOptions, *, gpus_per_node: int | None = None,
                 total_gpus: int | None = None) -> tuple[dict[int, list[_Prepared]], list[str]]:  # fmt: skip
    """The logs by span, checked as every fit needs them (each given once, on 2 GPUs or
    more, on the base system's nodes and within its size), and the warnings on their spans;
    nothing of the ring model's fit range is checked here (NCCL's model fits take the same
    checks, services/fit_network.py)."""
    _check_inputs(logs, opt)
    warnings: list[str] = []
    prepared = [_prepare(log, opt, gpus_per_node, warnings) for log in logs]
    return _by_span(prepared, total_gpus), warnings


@dataclass(frozen=True)
class _Prepared:
    """One log ready to fit: its span, its (bytes, seconds) rows, the rows in the fit
    range and its peak bus bandwidth."""

    log: BenchLog
    span: int
    rows: np.ndarray
    mask: np.ndarray
    peak: float


def _check_inputs(logs, opt: FitOptions) -> None:
    if not logs:
        raise OracleError("no benchmark logs given")
    if opt.min_bytes is not None and opt.max_bytes is not None and opt.min_bytes > opt.max_bytes:
        raise OracleError(f"--min-bytes {opt.min_bytes} is larger than --max-bytes {opt.max_bytes}")
    if not 0 < opt.bw_fraction <= 1:
        raise OracleError(f"bandwidth fraction {opt.bw_fraction:g} must be in (0, 1]")
    names = [log.file for log in logs]
    for f in names:
        if names.count(f) > 1:
            raise OracleError("given twice; give each log once", file=f)


def _prepare(log: BenchLog, opt: FitOptions, gpus_per_node: int | None, warnings: list[str]) -> _Prepared:
    if log.gpus < 2:
        raise OracleError(
            "the log measured a collective on 1 GPU, which costs nothing in the model;"
            " it says nothing about the network",
            file=log.file,
        )
    if gpus_per_node is not None and log.gpus_per_node > gpus_per_node and log.nodes > 1:
        raise OracleError(
            f"the log has {log.gpus_per_node} GPUs per node; the system has {gpus_per_node}",
            file=log.file,
        )
    if gpus_per_node is not None and log.nodes == 1 and log.gpus > gpus_per_node:
        raise OracleError(
            f"the log has {log.gpus} GPUs on one node; the system has {gpus_per_node} per node",
            file=log.file,
        )
    rows = np.array(log.times(opt.in_place), dtype=float)
    span = span_of(log, gpus_per_node)
    if span != log.gpus:  # issue 17: the log's nodes hold more GPUs on the base system
        keep = log.gpus_per_node * log.nodes == log.gpus and log.gpus_per_node != gpus_per_node
        warnings.append(
            f"{log.file}: {log.gpus} GPUs on {log.nodes} nodes ({log.gpus_per_node} per node) are fitted as level"
            f" n{span}, the span of {log.nodes} whole nodes of the base system ({gpus_per_node} GPUs each),"
            f" not n{log.gpus}" + (f"; a base system with {log.gpus_per_node} GPUs per node keeps n{log.gpus}" if keep else "")
        )
    mask, peak = _fit_range(log, rows, opt)
    if opt.protocols > 1:  # every size is fitted (and reported as "in range")
        mask = np.ones(len(rows), dtype=bool)
    return _Prepared(log, span, rows, mask, peak)


def _by_span(prepared: list[_Prepared], total_gpus: int | None) -> dict[int, list[_Prepared]]:
    by_span: dict[int, list[_Prepared]] = {}
    for item in prepared:
        by_span.setdefault(item.span, []).append(item)
    largest = max(by_span)
    if total_gpus is not None and largest > total_gpus:
        raise OracleError(
            f"the log spans {largest} GPUs; the base system has only {total_gpus}", file=by_span[largest][0].log.file
        )
    for span, group in by_span.items():
        gtools = {g.log.tool for g in group}
        if len(gtools) > 1:
            files = ", ".join(g.log.file for g in group)
            raise OracleError(
                f"logs {files} measure the same span ({span} GPUs) with different tools"
                f" ({', '.join(sorted(gtools))}); fit them separately"
            )
    return by_span


def _fit_level(span: int, group: list[_Prepared], opt: FitOptions, total_gpus: int | None):
    """The level of one span fitted to its logs: (LevelFit, the logs' LogFits).  With
    ``total_gpus`` (the outermost level) the level reaches the whole system."""
    files = ", ".join(g.log.file for g in group)
    a_all, bm_all, t_all, m_all = [], [], [], []
    for g in group:
        a, b = coefficients(g.log.operation, g.log.gpus)
        a_all.append(np.full(int(g.mask.sum()), a))
        bm_all.append(b * g.rows[g.mask, 0])
        t_all.append(g.rows[g.mask, 1])
        m_all.append(g.rows[g.mask, 0])
    a_v, bm_v, t_v, m_v = (np.concatenate(x) for x in (a_all, bm_all, t_all, m_all))
    if np.unique(m_v).size < 2:
        raise OracleError(
            f"the fit range ({opt.rule()}) holds {np.unique(m_v).size} message size(s) of the"
            f" {span}-GPU log(s) {files}; need at least 2",
            hint="widen it with --min-bytes/--max-bytes or a smaller --bw-fraction",
        )
    protocols: tuple = ()
    if opt.protocols > 1:
        alpha, beta, protocols, note = _fit_protocols([(g.log, g.span, g.rows, g.mask, g.peak) for g in group], opt)
    else:
        alpha, beta, note = _solve(a_v, bm_v, t_v, opt.alpha_floor_s)
    if not (beta > 0 and math.isfinite(beta) and math.isfinite(alpha)):
        raise OracleError(
            f"the times of {files} do not grow with message size over the fit range"
            f" ({int(m_v.min())}..{int(m_v.max())} B); cannot fit a positive β"
        )
    name = f"n{span}"
    fits = [_log_fit(g, name, alpha, beta, protocols, opt) for g in group]
    level = LevelFit(
        name=name,
        span=span,
        max_gpus=span if total_gpus is None else max(span, total_gpus),
        alpha_s=alpha,
        beta_s_per_byte=beta,
        tool=group[0].log.tool,
        operations=tuple(sorted({g.log.operation for g in group})),
        files=tuple(g.log.file for g in group),
        range_bytes=(int(m_v.min()), int(m_v.max())),
        in_range=Residuals.of(np.concatenate([rel[g.mask] for g, (_, rel) in zip(group, fits)])),
        large=Residuals.of(np.concatenate([rel[g.rows[:, 0] >= opt.check_bytes] for g, (_, rel) in zip(group, fits)])),
        constrained=note,
        protocols=protocols,
    )
    return level, [lf for lf, _ in fits]


def _log_fit(g: _Prepared, level: str, alpha: float, beta: float, protocols: tuple, opt: FitOptions):
    """One log against its level's fitted line: (LogFit, relative error per size)."""
    log, rows, mask = g.log, g.rows, g.mask
    pred = predict_time(log.operation, log.gpus, rows[:, 0], alpha, beta, protocols)
    rel = (pred - rows[:, 1]) / rows[:, 1]
    large = rows[:, 0] >= opt.check_bytes
    fitted_sizes = rows[mask, 0]
    fit = LogFit(
        file=log.file,
        tool=log.tool,
        operation=log.operation,
        gpus=log.gpus,
        nodes=log.nodes,
        span=g.span,
        level=level,
        peak_busbw_Bps=g.peak,
        range_bytes=(int(fitted_sizes.min()), int(fitted_sizes.max())) if fitted_sizes.size else (0, 0),
        in_range=Residuals.of(rel[mask]),
        large=Residuals.of(rel[large]),
        sizes=tuple(int(x) for x in rows[:, 0]),
        measured_s=tuple(float(x) for x in rows[:, 1]),
        predicted_s=tuple(float(x) for x in pred),
        fitted=tuple(bool(x) for x in mask),
    )
    return fit, rel


def _overall(ordered: list[LogFit], opt: FitOptions) -> Residuals:
    """Relative errors of every log over messages >= the check size."""
    rel = np.concatenate(
        [(np.array(lf.predicted_s) - np.array(lf.measured_s)) / np.array(lf.measured_s) for lf in ordered]
    )
    return Residuals.of(rel[np.concatenate([np.array(lf.sizes) >= opt.check_bytes for lf in ordered])])


def median_error_failures(fit: NetworkFit, limit: float) -> list[str]:
    """'file: 12.3%' for every log (and 'overall') whose median |rel. error| over messages
    >= the check size exceeds ``limit`` (``oracle fit network --max-median-error``)."""
    bad = [
        f"{lf.file}: {100 * lf.large.median:.1f}%"
        for lf in fit.logs
        if lf.large.median is not None and not lf.large.median <= limit  # NaN fails
    ]
    overall = fit.overall_large.median
    if overall is not None and not overall <= limit:
        bad.append(f"overall: {100 * overall:.1f}%")
    return bad


def _timing(logs, opt: FitOptions) -> str:
    if {log.tool for log in logs} == {"osu"}:
        return "average latency"
    return "in-place" if opt.in_place else "out-of-place"


__all__ = [
    "FitOptions",
    "LevelFit",
    "LogFit",
    "NetworkFit",
    "Residuals",
    "coefficients",
    "fit_network",
    "median_error_failures",
    "predict_time",
    "span_of",
]
