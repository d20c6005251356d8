"""Projections against measured runs: accuracy, error, bias, ranking agreement, anomalies.

Accuracy is ParaDL's (§5.2): 1 - |projected - measured| / measured, floored at 0.  A run
the model finds infeasible (a limit: out of memory, more GPUs than a layer's filters, ...;
also one whose time it cannot compute) has no accuracy: it is shown with its limits and
left out of every statistic below (:attr:`CompareRow.scored`), counted apart (``Stats.unscored``),
as predict ranks only feasible points and anchors only feasible ones (anchor_points.py).
MAPE is the mean of |projected - measured| / measured; bias the mean of
(projected - measured) / measured (negative: the model under-predicts, i.e. runs are
slower than projected).  Said to people as a ratio (issue 23): the geometric mean of
measured / projected, with its lowest and highest; a run that took 2.7x its projection
is a bias of -63%, and bias never goes below -100% however slow the runs.  Ranking agreement: within each group of runs with the same
model, system and GPU count, the share of pairs of runs of different strategies that
measurement and projection order the same way (Kendall-style concordance).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from oracle.compute.context import Context
from oracle.compute.cost import Point
from oracle.compute.strategies import REGISTRY
from oracle.compute.strategies.base import Config
from oracle.compute.strategies.pipeline import Pipeline, default_segments
from oracle.compute.sweep import evaluate
from oracle.errors import OracleError
from oracle.records import MeasuredRun
from oracle.units import fmt_ratio
from oracle.vocabulary import BF16, FP16, FP32, PRECISIONS

if TYPE_CHECKING:
    import numpy as np

DEFAULT_ANOMALY = 0.5  # flag runs whose error exceeds 50% of the measured time


@dataclass(frozen=True)
class CompareRow:
    run: MeasuredRun
    point: Point
    predicted_s: float  # on the run's basis (epoch or iteration)
    compute_accuracy: float | None = None
    comm_accuracy: float | None = None
    predicted_compute_s: float | None = None
    predicted_comm_s: float | None = None
    anomaly: str | None = None
    naive_s: float | None = None  # --calibrate-on: the nearest smaller calibrated run's time
    beyond_calibration: str | None = None  # --calibrate-on: why the run extrapolates in batch
    anchor: str | None = None  # --calibrate-on: the run it is anchored on, how far (compute/calibration/anchor.py)
    unanchored_s: float | None = None  # --calibrate-on: the calibrated model's own projection

    @property
    def measured_s(self) -> float:
        return self.run.measured_s

    @property
    def scored(self) -> bool:
        """Whether the run counts in the statistics: the model finds its configuration
        feasible (no limit) and projects a finite time."""
        return self.point.feasible and math.isfinite(self.predicted_s)

    @property
    def accuracy(self) -> float:
        """ParaDL's accuracy of the projection; NaN for a run not :attr:`scored`."""
        return accuracy(self.predicted_s, self.measured_s) if self.scored else math.nan

    def limits_note(self) -> str:
        """Why a run not :attr:`scored` has no accuracy (its limits, as predict shows them), or ""."""
        if self.scored:
            return ""
        return f"infeasible in the model: {infeasibility(self.point) or NOT_COMPUTABLE} (not scored)"

    @property
    def ratio(self) -> float:
        """measured / projected."""
        return self.measured_s / self.predicted_s if self.predicted_s > 0 else math.inf

    @property
    def relative_error(self) -> float:
        """(projected - measured) / measured."""
        return (self.predicted_s - self.measured_s) / self.measured_s


@dataclass(frozen=True)
class Stats:
    n: int
    mean_accuracy: float
    min_accuracy: float
    mape: float
    bias: float
    # measured / projected over the runs with a projection: geometric mean, lowest, highest
    ratio: float = math.nan
    ratio_min: float = math.nan
    ratio_max: float = math.nan
    unscored: int = 0  # runs left out: infeasible in the model (CompareRow.scored)


@dataclass(frozen=True)
class Summary:
    overall: Stats
    by_strategy: dict[str, Stats]
    by_model: dict[str, Stats]
    ranking_agreement: float | None
    ranking_pairs: int
    anomalies: int
    groups: dict[str, Stats] = field(default_factory=dict)
    # --calibrate-on: what was calibrated on which runs, and the naive projection's
    # accuracy over the evaluated runs that have one
    calibration: tuple[tuple[str, str], ...] = ()
    naive: Stats | None = None
    model_on_naive_runs: Stats | None = None
    # --calibrate-on: the runs whose samples per replica a calibration run of their
    # model and strategy spans (the model, the naive projection), and the others
    within_calibration: Stats | None = None
    naive_within_calibration: Stats | None = None
    beyond_calibration: Stats | None = None
    beyond_lines: tuple[int, ...] = ()
    unanchored: Stats | None = None  # --calibrate-on: the calibrated model without its anchors
    unscored_lines: tuple[int, ...] = ()  # the runs the model finds infeasible (CompareRow.scored)
    # --calibrate-on: per system, the runs it selects that the model finds infeasible, left out of
    # the calibration (calibrate.SetAside)
    calibration_left_out: tuple[tuple[str, tuple], ...] = ()


NOT_COMPUTABLE = "the projection is not computable"


def infeasibility(point: Point) -> str | None:
    """Why the model says a run of ``point``'s configuration cannot run (its limits, as
    predict shows them; or that its time is not computable), None where it projects a
    finite time: what compare does not score and ``oracle fit runs`` does not fit."""
    if point.feasible and math.isfinite(point.total_s):
        return None
    return "; ".join(lim.reason for lim in point.limits) or NOT_COMPUTABLE


def accuracy(predicted: float, measured: float) -> float:
    """ParaDL §5.2: 1 - |predicted - measured| / measured, floored at 0."""
    if not math.isfinite(predicted):
        return 0.0
    return max(0.0, 1.0 - abs(predicted - measured) / measured)


def config_for(run: MeasuredRun, ctx: Context) -> Config:
    """The configuration a measured run used, checked for consistency."""
    name = run.strategy
    where = dict(line=run.line)
    p, p1, p2 = run.gpus, run.p1, run.p2
    strategy = REGISTRY[name]
    if strategy.hybrid:
        if p1 is None and p2 is None:
            raise OracleError(f"a {name} run needs p1 or p2 (the data-parallel and model-part sizes)", **where)
        if p1 is None:
            if p % p2:  # type: ignore[operator]
                raise OracleError(f"p2={p2} does not divide gpus={p}", **where)
            p1 = p // p2  # type: ignore[operator]
        if p2 is None:
            if p % p1:
                raise OracleError(f"p1={p1} does not divide gpus={p}", **where)
            p2 = p // p1
    else:
        p1, p2 = strategy.parts(p)
    if p1 * p2 != p:
        raise OracleError(f"p1={p1} x p2={p2} is not gpus={p}", **where)
    segments = None
    if name == Pipeline.name:
        segments = run.segments or ctx.options.segments or default_segments(run.global_batch, p)
    return Config(name, p, p1, p2, float(run.global_batch), segments)


# a measured run's optional ``precision`` column (issue 13): fp32, tf32, fp16, bf16, or
# DeepLearningExamples' FP32/TF32/AMP (AMP = mixed precision, fp16; amp-bf16 the bf16 kind):
# (precision, mixed); mixed None: the column does not say (the row's mixed_precision column,
# else --mixed-precision, decides)
PRECISION_COLUMN = {**{p: (p, None) for p in PRECISIONS}, "amp": (FP32, True), "amp-bf16": (BF16, True)}
# other spellings benchmark tables use, by their letters and digits only (precision_key)
PRECISION_SPELLINGS = {
    "mixed": "amp", "mixedprecision": "amp", "fp16amp": "amp", "ampfp16": "amp", "fp16mixed": "amp",
    "mixedfp16": "amp", "bf16amp": "amp-bf16", "ampbf16": "amp-bf16", "bf16mixed": "amp-bf16",
    "mixedbf16": "amp-bf16", "float32": FP32, "single": FP32, "float16": FP16, "half": FP16, "bfloat16": BF16,
}  # fmt: skip
PRECISION_SPELLINGS |= {"".join(ch for ch in k if ch.isalnum()): k for k in PRECISION_COLUMN}  # the keys too


def precision_key(raw: str) -> str | None:
    """The PRECISION_COLUMN key ``raw`` spells, by its letters and digits in any case ("FP-16",
    "FP16-AMP", "mixed", "bfloat16"), else None."""
    return PRECISION_SPELLINGS.get("".join(ch for ch in str(raw).lower() if ch.isalnum()))


def run_precision_options(run: MeasuredRun) -> tuple[str, bool | None] | None:
    """(precision, mixed) from the run's ``precision`` column (mixed None where it does not
    say), None without one."""
    from oracle.errors import OracleError

    raw = run.get("precision")
    if not raw:
        return None
    key = precision_key(raw)
    if key is None:
        raise OracleError(f"precision '{raw}' is not one of {', '.join(PRECISION_COLUMN)} (or mixed, fp16-amp,"
                          " bf16-amp)", line=run.line, path="precision")  # fmt: skip
    return PRECISION_COLUMN[key]


def compare_run(
    run: MeasuredRun, ctx: Context, threshold: float = DEFAULT_ANOMALY, points: dict | None = None,
) -> CompareRow:  # fmt: skip
    """One run against its projection; ``points`` (optional) memoizes projections of
    runs that share context and configuration (repeated measurements)."""
    cfg = config_for(run, ctx)
    key = (id(ctx), cfg)
    hit = points.get(key) if points is not None else None
    if hit is not None and hit[0] is ctx:  # the context is kept alive with its points
        pt = hit[1]
    else:
        pt = evaluate(ctx, cfg)  # issue 27: the stack may cost with ParaDL's tool
        if points is not None:
            points[key] = (ctx, pt)
    per_iteration = run.basis == "iteration"
    scale = 1.0 / pt.iterations_per_epoch if per_iteration else 1.0
    predicted = pt.total_s * scale
    pc, pm = pt.compute_s * scale, pt.communication_s * scale
    cacc, macc = phase_accuracies(pt, pc, pm, run)
    row = CompareRow(run, pt, predicted, cacc, macc, pc, pm)
    text = anomaly_of(row, threshold)
    # a new record rather than dataclasses.replace: the difference shows on 1e6 runs
    return row if text is None else CompareRow(run, pt, predicted, cacc, macc, pc, pm, anomaly=text)


def phase_accuracies(point: Point, compute_s: float, comm_s: float, run: MeasuredRun) -> tuple:
    """(compute, communication) accuracy where the run measured them and the model finds
    its configuration feasible (else None each, as :attr:`CompareRow.accuracy`)."""
    if not point.feasible:
        return None, None
    return (accuracy(compute_s, run.compute_s) if run.compute_s else None,
            accuracy(comm_s, run.comm_s) if run.comm_s else None)  # fmt: skip


def anomaly_of(row: CompareRow, threshold: float) -> str | None:
    """Why the run is off its projection by more than ``threshold``, or None (also for a
    run not scored: its limits say why, CompareRow.limits_note)."""
    if not row.scored:
        return None
    err = abs(row.relative_error)
    if err <= threshold:
        return None
    r = row.ratio
    why = "congestion, input loading or an implementation overhead?" if r > 1 else (
        "a slow profile, or overlap the model does not see?")
    text = f"measured {fmt_ratio(r)} the projection: {why}"
    run = row.run
    if run.compute_s is not None and run.comm_s is not None:
        d_comp = run.compute_s - (row.predicted_compute_s or 0.0)
        d_comm = run.comm_s - (row.predicted_comm_s or 0.0)
        phase = "communication" if abs(d_comm) >= abs(d_comp) else "compute"
        text += f" {phase} explains most of the gap ({d_comm if phase == 'communication' else d_comp:+.3g} s)"
    return text


def compare(
    runs: Sequence[MeasuredRun],
    context_for: Callable[[MeasuredRun], Context],
    threshold: float = DEFAULT_ANOMALY,
) -> list[CompareRow]:
    return [compare_run(run, context_for(run), threshold) for run in runs]


def stats(rows: Sequence[CompareRow]) -> Stats:
    """Accuracy, MAPE, bias and the ratios over the :attr:`CompareRow.scored` runs (NaN
    when none is); ``unscored`` counts the others (infeasible in the model)."""
    kept = [r for r in rows if r.scored]
    accs = [r.accuracy for r in kept]
    errs = [r.relative_error for r in kept]
    logs = [math.log(r.ratio) for r in kept if r.predicted_s > 0 and r.measured_s > 0]
    n = len(kept)
    return Stats(
        n=n,
        unscored=len(rows) - n,
        mean_accuracy=sum(accs) / n if n else math.nan,
        min_accuracy=min(accs) if n else math.nan,
        mape=sum(abs(e) for e in errs) / len(errs) if errs else math.nan,
        bias=sum(errs) / len(errs) if errs else math.nan,
        ratio=math.exp(sum(logs) / len(logs)) if logs else math.nan,
        ratio_min=math.exp(min(logs)) if logs else math.nan,
        ratio_max=math.exp(max(logs)) if logs else math.nan,
    )


def ranking_agreement(rows: Sequence[CompareRow]) -> tuple[float | None, int]:
    """Share of concordant pairs of different strategies within (model, system, gpus).

    Runs are compared on their epoch time (a measured iteration time is scaled by the
    iterations per epoch), so runs with different batch sizes are ordered fairly.  A pair
    counts when the measured times differ and both runs are scored; it agrees when
    both order the two runs the same way (tied projections: when the earlier run of the
    file measured slower).  Counted in O(n log n): pairs of the group minus pairs of the
    same strategy, each by merge-counting (:func:`_pair_counts`)."""
    import numpy as np

    kept = [r for r in rows if r.scored and math.isfinite(r.point.total_s)]
    if len(kept) < 2:
        return None, 0
    measured = np.array([_epoch(r, r.measured_s) for r in kept], dtype=float)
    projected = np.array([r.point.total_s for r in kept], dtype=float)
    group = _ids([(r.point.model, r.point.system, r.run.gpus) for r in kept])
    same = _ids([(r.point.model, r.point.system, r.run.gpus, r.run.strategy) for r in kept])
    agree_all, total_all = _pair_counts(group, measured, projected)
    agree_same, total_same = _pair_counts(same, measured, projected)
    agree, total = agree_all - agree_same, total_all - total_same
    return (agree / total if total else None), total


def _ids(keys: list) -> np.ndarray:
    """Dense integer ids of hashable keys, in order of first appearance."""
    import numpy as np

    seen: dict = {}
    return np.array([seen.setdefault(k, len(seen)) for k in keys], dtype=np.int64)


def _combine(*columns) -> np.ndarray:
    """Dense integer ids of the rows' tuples of (integer) columns."""
    import numpy as np

    key = np.asarray(columns[0], dtype=np.int64)
    for col in columns[1:]:
        col = np.asarray(col, dtype=np.int64)
        key = np.unique(key * (int(col.max()) + 1) + col, return_inverse=True)[1].astype(np.int64)
    return key


def _pairs(*columns) -> int:
    """Pairs of rows that agree on every column: sum of C(k, 2) over the groups."""
    import numpy as np

    counts = np.unique(_combine(*columns), return_counts=True)[1].astype(np.int64)
    return int((counts * (counts - 1) // 2).sum())


def _pair_counts(group, measured, projected) -> tuple[int, int]:
    """(agreeing, counted) pairs i < j (file order) inside each group, as in
    ranking_agreement, without the strategy condition."""
    import numpy as np

    n = len(group)
    m = np.unique(measured, return_inverse=True)[1].astype(np.int64)
    p = np.unique(projected, return_inverse=True)[1].astype(np.int64)
    in_groups = _pairs(group)
    counted = in_groups - _pairs(group, m)  # measured times differ
    # both orders agree: sorted by (group, m, p), pairs with p_i < p_j, less the pairs
    # of equal m (which the sort also puts in increasing p)
    order = np.lexsort((p, m, group))
    rising = _increasing_pairs(group[order] * n + p[order]) - (n * (n - 1) // 2 - in_groups)
    concordant = rising - (_pairs(group, m) - _pairs(group, m, p))
    # tied projections: the earlier run measured slower (m_i > m_j for i < j)
    order = np.lexsort((np.arange(n), p, group))
    tie = _combine(group[order], p[order])
    slower_first = _increasing_pairs(tie * n + (m.max() - m[order])) - (n * (n - 1) // 2 - _pairs(group, p))
    return concordant + slower_first, counted


def _increasing_pairs(keys) -> int:
    """Number of pairs i < j with keys[i] < keys[j] (bottom-up merge counting with numpy:
    log2(n) rounds of a sort and two binary searches)."""
    import numpy as np

    a = np.asarray(keys, dtype=np.int64)
    n = len(a)
    if n < 2:
        return 0
    a = np.unique(a, return_inverse=True)[1].astype(np.int64)  # ranks 0..n-1: keys * n fits
    idx = np.arange(n, dtype=np.int64)
    total = 0
    width = 1
    while width < n:
        block = idx // (2 * width)
        right = (idx // width) % 2 == 1
        key = block * n + a  # each half sorted, halves in block order: left keys sorted overall
        left = key[~right]
        lo = np.searchsorted(left, block[right] * n, "left")
        total += int((np.searchsorted(left, key[right], "left") - lo).sum())
        a = np.sort(key, kind="stable") - block * n  # timsort: merges the sorted runs
        width *= 2
    return total


def _epoch(row: CompareRow, value: float) -> float:
    return value * row.point.iterations_per_epoch if row.run.basis == "iteration" else value


def summarize(rows: Sequence[CompareRow]) -> Summary:
    if not rows:
        raise OracleError("no runs to compare")
    by_strategy: dict[str, list[CompareRow]] = {}
    by_model: dict[str, list[CompareRow]] = {}
    for r in rows:
        by_strategy.setdefault(r.run.strategy, []).append(r)
        by_model.setdefault(r.point.model, []).append(r)
    agreement, pairs = ranking_agreement(rows)
    return Summary(
        overall=stats(rows),
        by_strategy={k: stats(v) for k, v in by_strategy.items()},
        by_model={k: stats(v) for k, v in by_model.items()},
        ranking_agreement=agreement,
        ranking_pairs=pairs,
        anomalies=sum(1 for r in rows if r.anomaly),
        unscored_lines=tuple(r.run.line for r in rows if not r.scored),
    )
