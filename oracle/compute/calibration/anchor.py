"""Anchoring projections on the nearest measurement (issue 26, point 1).

A calibration's shared mechanisms (one network, one compute factor per model, one
split efficiency) rarely explain every calibration run; what they leave is a run's
residual: measured / projected.  A held-back run is projected as the measured time of
its *anchor*, the nearest calibration run of the same model and strategy family, times
the cost model's own ratio between the two configurations:

    anchored(run) = measured(anchor) x projected(run) / projected(anchor)

per phase where the anchor measured its phases (``compute_s`` and ``comm_s``: compute
and communication each by its own ratio, the rest, input stalls, as projected), else
on the whole time per iteration.  At the anchor itself the projection is its
measurement; the further a run lies from its anchor (GPUs, samples per replica, nodes:
said in the row's notes), the more rests on the cost model's ratio.

The nearest anchor: of the same model and strategy family (serial counts as data
parallelism), the same batch regime first (samples per data-parallel replica within
``REGIME`` x of the run's: per-sample rates are measured at a batch), then not larger
than the run (a projection extrapolates upwards, as the naive projection does), then
the nearest in GPU count, samples per replica and model-part width p2 (log scale).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

REGIME = 2.0  # samples per replica within 2x: one batch regime (an assumption, stated in notes)


@dataclass(frozen=True)
class Anchored:
    """A held-back run's anchored projection, on the run's basis (epoch or iteration)."""

    total_s: float
    compute_s: float
    comm_s: float
    note: str  # which run anchors it, and how far it extrapolates


def family(strategy: str) -> str:
    """Serial and data parallelism are one family: a data-parallel replica is a serial run."""
    from oracle.compute.strategies.data import Data
    from oracle.compute.strategies.serial import Serial

    return Data.name if strategy == Serial.name else strategy


def _log(a: float, b: float) -> float:
    return abs(math.log(a / b)) if a > 0 and b > 0 else math.inf


def nearest(run, anchors: list, per_replica):
    """The anchor row of ``run`` among ``anchors`` (CompareRows of calibration runs) by
    the module doc's order, or None without one of its model and family."""
    same = [a for a in anchors if a.run.model == run.model and family(a.run.strategy) == family(run.strategy)
            and math.isfinite(a.predicted_s) and a.predicted_s > 0]  # fmt: skip
    if not same:
        return None
    want = per_replica(run)

    def key(a):
        have = per_replica(a.run)
        return (_log(want, have) > math.log(REGIME), a.run.gpus > run.gpus, _log(run.gpus, a.run.gpus),
                _log(want, have), _log(run.p2 or a.point.p2 or 1, a.point.p2 or 1), a.run.line)  # fmt: skip

    return min(same, key=key)


def anchored(row, anchor, per_replica, gpus_per_node: int) -> Anchored | None:
    """``row`` (a held-back run's projection) anchored on ``anchor`` (a calibration run's
    projection on the same calibrated system), or None where the run has no finite
    projection."""
    if not math.isfinite(row.predicted_s):
        return None
    per_it_r = row.point.iterations_per_epoch if row.run.basis == "epoch" else 1.0
    pt_r = row.point
    it_r = pt_r.iterations_per_epoch
    c_r, m_r, t_r = pt_r.compute_s / it_r, pt_r.communication_s / it_r, pt_r.total_s / it_r
    kc, km, kin, how = phase_factors(anchor)
    compute, comm = c_r * kc, m_r * km
    total = compute + comm + (t_r - c_r - m_r) * kin
    note = f"anchor: line {anchor.run.line} ({how}{residual_note(anchor)}): " + reach(row.run, anchor.run, per_replica,
                                                                                   gpus_per_node)  # fmt: skip
    return Anchored(total * per_it_r, compute * per_it_r, comm * per_it_r, note)


def phase_factors(anchor) -> tuple[float, float, float, str]:
    """(compute, communication, input factor, how): measured / projected at ``anchor`` (a
    calibration run's CompareRow) per phase where it measured its phases (``compute_s`` and
    ``comm_s``; the input stall then as projected), else on its whole time."""
    a_run, pt = anchor.run, anchor.point
    it = pt.iterations_per_epoch
    per_it = 1.0 / it if a_run.basis == "epoch" else 1.0
    c, m = pt.compute_s / it, pt.communication_s / it
    if a_run.compute_s is not None and a_run.comm_s is not None and c > 0:
        return a_run.compute_s * per_it / c, a_run.comm_s * per_it / m if m > 0 else 1.0, 1.0, "compute, comm"
    k = a_run.measured_s * per_it / (pt.total_s / it)
    return k, k, k, "total"


def residual_note(anchor) -> str:
    k = anchor.measured_s / anchor.predicted_s
    return f", x{k:.3g} the model" if abs(k - 1.0) > 0.005 else ""


def reach(run, anchor, per_replica, gpn: int) -> str:
    """How far ``run`` extrapolates from ``anchor``: GPUs, samples per replica, nodes."""
    nodes = lambda g: max(1, math.ceil(g / gpn))  # noqa: E731
    a, r = per_replica(anchor), per_replica(run)
    batch = f"{a:g}→{r:g}" if a != r else f"{r:g}"
    return f"{anchor.gpus}→{run.gpus} GPUs, {batch} per replica, {nodes(anchor.gpus)}→{nodes(run.gpus)} nodes"


def residuals(anchors: list) -> list[tuple[int, float]]:
    """(line, measured / projected - 1) of each calibration run on the calibrated system:
    how far the shared mechanisms leave it (anchoring takes the rest)."""
    return [(a.run.line, a.measured_s / a.predicted_s - 1.0) for a in anchors
            if math.isfinite(a.predicted_s) and a.predicted_s > 0]  # fmt: skip


def anchor_rows(rows: list, anchors: list, per_replica, gpus_per_node, threshold: float) -> list:
    """``rows`` (held-back runs' CompareRows) each anchored on its nearest of ``anchors``
    (the calibration runs' CompareRows); ``gpus_per_node``: run -> its system's."""
    from dataclasses import replace

    from oracle.compute.calibration.compare import anomaly_of, phase_accuracies

    out = []
    for row in rows:
        a = nearest(row.run, anchors, per_replica)
        # a run the model finds infeasible is not scored (compare.CompareRow.scored): left as it is
        got = anchored(row, a, per_replica, gpus_per_node(row.run)) if a is not None and row.scored else None
        if got is None:
            out.append(row)
            continue
        cacc, macc = phase_accuracies(row.point, got.compute_s, got.comm_s, row.run)
        new = replace(row, predicted_s=got.total_s, predicted_compute_s=got.compute_s, predicted_comm_s=got.comm_s, compute_accuracy=cacc,
                      comm_accuracy=macc, anchor=got.note, unanchored_s=row.predicted_s, anomaly=None)  # fmt: skip
        out.append(replace(new, anomaly=anomaly_of(new, threshold)))
    return out


TOLERANCE = 0.05  # issue 26: a calibration run the shared fit leaves further off than 5% gets its model's own


def worst_residual(system, pairs: list) -> float:
    """The largest |measured / projected - 1| of the (run, context) ``pairs`` on ``system``."""
    from oracle.compute.calibration.calibrate_all import with_system
    from oracle.compute.calibration.compare import config_for
    from oracle.compute.sweep import evaluate

    worst = 0.0
    for run, ctx in pairs:
        c = with_system(ctx, system)
        pt = evaluate(c, config_for(run, c))
        projected = pt.total_s if run.basis == "epoch" else pt.iteration_s
        worst = max(worst, abs(run.measured_s / projected - 1.0) if projected > 0 else math.inf)
    return worst


def per_model_systems(calibrated, pairs: list) -> tuple[dict, list[str]]:
    """Where the shared calibration ``calibrated`` (a System) leaves a model's
    calibration runs further off than ``TOLERANCE``: that model's own mechanisms, fitted
    on its runs alone on top of the shared calibration (model name -> System), kept when
    they explain its runs better; and a note per model saying how far each is left."""
    from oracle.compute.calibration.calibrate_all import apply

    own, notes = per_model_calibrations(calibrated, pairs)
    return {m: apply(calibrated, cal) for m, cal in own.items()}, notes


def per_model_calibrations(calibrated, pairs: list) -> tuple[dict, list[str]]:
    """As :func:`per_model_systems`, each model's own Calibration (on top of
    ``calibrated``) in place of its System: what ``fit runs --calibrate all`` writes into
    the system file's ``models:``."""
    from oracle.compute.calibration.calibrate_all import apply, calibrate_all, with_system

    models = sorted({r.model for r, _ in pairs})
    out: dict = {}
    notes: list[str] = []
    for m in models:
        group = [(r, c) for r, c in pairs if r.model == m]
        shared = worst_residual(calibrated, group)
        if shared <= TOLERANCE or len(models) < 2:
            notes.append(f"{m}: its calibration runs within {shared:.1%} of the shared fit")
            continue
        cal = calibrate_all([(r, with_system(c, calibrated)) for r, c in group])
        left = worst_residual(apply(calibrated, cal), group)
        if left < shared:
            out[m] = cal
        notes.append(f"{m}: shared fit leaves its calibration runs {shared:.1%} off; "
                     + (f"its own mechanisms {left:.1%}" if left < shared else "no better fit of its own"))
    return out, notes


CONTRADICT = 2.0  # issue 26: two measurements of one configuration this far apart contradict each other


def contradictions(runs: list) -> list[str]:
    """Calibration runs of the same configuration (model, system, strategy, GPUs, p1, p2,
    batch, precision, stack and option columns) whose times per iteration differ by
    ``CONTRADICT`` x or more: which of them anchors a projection decides it, so each pair
    is named."""
    from oracle.compute.calibration.compare import precision_key

    seen: dict = {}
    out = []
    for r in runs:
        spelled = r.get("precision")
        precision = (precision_key(spelled) or spelled) if spelled else spelled  # "BF16" and "bfloat16" are one
        key = (r.model, r.system, r.strategy, r.gpus, r.p1, r.p2, r.global_batch, r.basis, precision,
               r.stack, r.flags)  # fmt: skip
        for other in seen.get(key, []):
            hi, lo = max(r.measured_s, other.measured_s), min(r.measured_s, other.measured_s)
            if lo > 0 and hi / lo >= CONTRADICT:
                out.append(f"lines {other.line} and {r.line} measure one configuration {hi / lo:.2g}x apart:"
                           " the anchor is the earlier; check or drop one of them")  # fmt: skip
        seen.setdefault(key, []).append(r)
    return out


# -- honest validation (`oracle compare --calibrate-on EXPR`) ---------------------------

_OPS = ("<=", ">=", "!=", "==", "<", ">", "=")


def run_filter(expr: str):
    """A predicate on measured runs from ``COL OP VALUE`` conditions joined by ``and``
    or ``;`` (OP one of <= >= < > = == !=; numbers compare as numbers), e.g.
    ``gpus<=8`` or ``model=vgg16 and gpus<16``.  Raises ValueError on bad syntax."""
    import operator
    import re

    funcs = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt,
             "=": operator.eq, "==": operator.eq, "!=": operator.ne}  # fmt: skip
    conds = []
    for part in re.split(r"\s+and\s+|;", expr.strip()):
        m = re.fullmatch(r"\s*([A-Za-z_][\w]*)\s*(<=|>=|!=|==|<|>|=)\s*([^\s<>=!](?:.*\S)?)\s*", part)
        if not m:
            raise ValueError(f"cannot read condition {part.strip()!r}; expected COL OP VALUE, e.g. gpus<=8")
        conds.append((m.group(1), funcs[m.group(2)], m.group(3)))

    def value(text):
        try:
            return float(text)
        except (TypeError, ValueError):
            return text

    def keep(run) -> bool:
        for col, fn, want in conds:
            got = run.get(col)
            if got is None:
                return False
            a, b = value(got), value(want)
            if isinstance(a, float) != isinstance(b, float):
                a, b = str(got), str(want)
            if not fn(a, b):
                return False
        return True

    return keep


def naive_projection(run, calibration_runs, iterations: float) -> tuple[float, object] | None:
    """The projection a user makes without a model: the time per iteration of the
    nearest smaller calibration run of the same model and strategy (serial counting as
    data parallelism; the largest GPU count not above the run's), times the run's
    iterations; (seconds on the run's basis, the run used) or None without such a run."""
    same = [c for c in calibration_runs
            if c.model == run.model and family(c.strategy) == family(run.strategy) and c.gpus <= run.gpus]  # fmt: skip
    if not same:
        return None
    ref = max(same, key=lambda c: (c.gpus, c.global_batch))
    ref_iter = ref.iteration_s if ref.iteration_s is not None else None
    if ref_iter is None:
        ref_iter = ref.epoch_s * ref.global_batch / _samples(ref, run, iterations)
    seconds = ref_iter * (iterations if run.basis == "epoch" else 1.0)
    return seconds, ref


def samples_per_replica(run) -> float:
    """Samples one data-parallel replica processes per iteration: B / p1, where p1 is
    the data-parallel width (p for data, the run's p1 for hybrids, 1 otherwise)."""
    from oracle.compute.strategies import REGISTRY
    from oracle.compute.strategies.data import Data

    strategy = REGISTRY[run.strategy]
    if run.strategy == Data.name:
        width = run.gpus
    elif strategy.hybrid:
        width = run.p1 or (run.gpus // run.p2 if run.p2 else 1)
    else:
        width = 1
    return run.global_batch / max(1, width)


def beyond_calibration(run, calibration_runs) -> str | None:
    """Why a held-back run lies outside what its calibration runs covered, or None.

    A calibration measures per-sample rates (loading, compute) at the samples per
    replica of its runs, and the cost model carries them to other batches linearly; a
    run whose samples per replica no calibration run of its model and strategy spans
    is an extrapolation in batch, not only in GPU count, and is reported apart."""
    same = [c for c in calibration_runs if c.model == run.model and family(c.strategy) == family(run.strategy)]
    if not same:
        return f"no calibration run of {run.model} {run.strategy}"
    have = sorted({samples_per_replica(c) for c in same})
    want = samples_per_replica(run)
    if have[0] <= want <= have[-1]:
        return None
    span = f"{have[0]:g}" if have[0] == have[-1] else f"{have[0]:g}-{have[-1]:g}"
    return f"{want:g} samples per replica; calibrated at {span}"


def _samples(ref, run, iterations: float) -> float:
    """Samples per epoch D of the reference run (the evaluated run's dataset: the same
    model), from the evaluated run's iterations I = D / B."""
    return iterations * run.global_batch
