"""Model-parallel mechanisms fitted from measured runs (issue 14, ``--calibrate all`` step 4).

What decides a filter, channel, spatial, pipeline or hybrid run's time besides the
network is how well split layers compute and what the layer-level operations really
cost (docs/calibration.md):

- ``split_serial_fraction`` f and ``split_overhead_s`` o: a layer split q ways takes
  (f + (1-f)/q) of its full time plus o per split layer and iteration (Amdahl; ParaDL
  §5.3.3 and Fig. 8: split convolutions barely speed up; Dryden et al. §V);
- ``layer_collectives_factor``: the time factor of the layer all-gathers, all-reduces
  and the tail gather (operations ``layer_allgather``, ``layer_allreduce``,
  ``tail_gather``); ``halo_factor`` (``halo``); ``pipeline_p2p_factor``
  (``pipeline_p2p``).

A run's projected compute and communication are linear in all five (the split time is
linear in f and o; an operation's factor multiplies every α-β line of its link), so
each run gives linear equations y = c + Σ_j a_j θ_j: one per measured column
(``compute_s``, ``comm_s``) or, without them, one for the iteration time.  The
coefficients come from the cost model itself (the run projected with θ_j = 1 and
with θ = 0).  The parameters are then a bounded least-squares fit of the errors
relative to each run's iteration (f in [0, 1], o >= 0, factors >= FACTOR_FLOOR).  A parameter no run's time
depends on, or whose effect on every run is proportional to another's (one split
width and totals only), is not identified and keeps the base system's value; the
report says which and why.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from oracle.compute.calibration.compare import config_for
from oracle.compute.network import primitive
from oracle.compute.strategies import REGISTRY
from oracle.model import OperationOverride, System

# in the order the fit takes them when the runs cannot tell them all apart: the Amdahl
# fraction first, the per-layer overhead (a refinement of it) last
MECHANISMS = ("split_serial_fraction", "layer_collectives_factor", "halo_factor", "pipeline_p2p_factor",
              "split_overhead_s")  # fmt: skip
# the operations (compute/network.PURPOSES) each factor scales
OPERATIONS = {
    "layer_collectives_factor": ("layer_allgather", "layer_allreduce", "tail_gather"),
    "halo_factor": ("halo",),
    "pipeline_p2p_factor": ("pipeline_p2p",),
}
# the step of each parameter for its coefficient (the model is linear in each)
UNIT = {"split_serial_fraction": 1.0, "split_overhead_s": 1e-3, "layer_collectives_factor": 1.0,
        "halo_factor": 1.0, "pipeline_p2p_factor": 1.0}  # fmt: skip
# a fitted factor below 1/100 would make the operation free; it stays an operation
FACTOR_FLOOR = 0.01
BOUNDS = {"split_serial_fraction": (0.0, 1.0), "split_overhead_s": (0.0, np.inf)} | {
    k: (FACTOR_FLOOR, np.inf) for k in OPERATIONS
}
WHAT = {
    "split_serial_fraction": "a split layer's compute (filter, channel, spatial or a hybrid of them)",
    "split_overhead_s": "a split layer's compute (filter, channel, spatial or a hybrid of them)",
    "layer_collectives_factor": "layer all-gathers, all-reduces or a tail gather",
    "halo_factor": "a halo exchange",
    "pipeline_p2p_factor": "pipeline sends and receives",
}
# relative tolerance of the rank test on the normalised coefficient columns
RANK_TOL = 1e-6


@dataclass(frozen=True)
class Row:
    line: int
    label: str
    what: str  # compute, communication or iteration
    measured: float  # seconds per iteration
    constant: float  # the projection with every parameter at 0
    coefficients: tuple[float, ...]  # ∂ seconds / ∂ parameter, in MECHANISMS order
    iteration_s: float = 0.0  # the run's measured iteration: errors are relative to it


@dataclass(frozen=True)
class MechanismFit:
    values: dict[str, float]  # identified parameters
    not_identified: dict[str, str]  # parameter -> why
    rows: tuple[Row, ...]
    residuals: tuple[float, ...]  # each row's error at the fitted values, relative to its run's iteration


def with_mechanisms(system: System, values: dict[str, float]) -> System:
    """``system`` with the given split efficiency and operation factors (absolute: a
    factor replaces the operation's factor; its transport and algorithm stay)."""
    if not values:
        return system
    impl = system.implementation
    if "split_serial_fraction" in values:
        impl = replace(impl, split_serial_fraction=values["split_serial_fraction"])
    if "split_overhead_s" in values:
        impl = replace(impl, split_overhead_s=values["split_overhead_s"])
    ops = dict(system.operations)
    for key, purposes in OPERATIONS.items():
        if key not in values:
            continue
        for op in purposes:
            base = system.operation(op) or system.operation(primitive(op)) or OperationOverride()
            ops[op] = replace(base, factor=values[key])
    return replace(system, implementation=impl, operations=tuple(ops.items()))


def rows_for(run, ctx) -> list[Row] | str:
    """The equations one run gives (module doc), or why it gives none."""
    from oracle.compute.calibration.calibrate import run_label
    from oracle.compute.calibration.calibrate_all import includes_io, with_system

    label = run_label(run, ctx)
    strategy = REGISTRY[run.strategy]
    cfg = config_for(run, ctx)
    base = strategy.evaluate(ctx, cfg)
    I = base.iterations_per_epoch
    if includes_io(run) and base.input_s > 0:
        return f"{label}: its time is its loading (includes_io, input-bound): identifies no mechanism"
    zero = dict.fromkeys(MECHANISMS, 0.0)
    points = [strategy.evaluate(with_system(ctx, with_mechanisms(ctx.system, zero)), cfg)]
    for k in MECHANISMS:
        points.append(strategy.evaluate(with_system(ctx, with_mechanisms(ctx.system, {**zero, k: UNIT[k]})), cfg))
    comp = np.array([p.compute_s / I for p in points])
    comm = np.array([p.communication_s / I for p in points])
    if not (np.all(np.isfinite(comp)) and np.all(np.isfinite(comm))):
        return f"{label}: its projection has no finite time"
    units = np.array([UNIT[k] for k in MECHANISMS])
    per_unit = lambda v: tuple(float(x) for x in (v[1:] - v[0]) / units)  # noqa: E731
    scale = 1.0 if run.basis == "iteration" else 1.0 / I
    measured = run.iteration_s if run.epoch_s is None else run.epoch_s / I
    rows = []
    if run.compute_s is not None:
        rows.append(Row(run.line, label, "compute", run.compute_s * scale, float(comp[0]), per_unit(comp), measured))
    if run.comm_s is not None:
        rows.append(Row(run.line, label, "communication", run.comm_s * scale, float(comm[0]), per_unit(comm), measured))
    if run.compute_s is None or run.comm_s is None:
        rows.append(Row(run.line, label, "iteration", measured, float(comp[0] + comm[0]), per_unit(comp + comm),
                        measured))  # fmt: skip
    return rows


def fit_mechanisms(rows: list[Row]) -> MechanismFit:
    """The bounded least-squares fit of the module doc over ``rows``."""
    if not rows:
        return MechanismFit({}, {k: "no model-parallel run selected" for k in MECHANISMS}, (), ())
    y = np.array([r.measured - r.constant for r in rows])
    # errors relative to each run's iteration (a measured communication may be 0)
    weight = 1.0 / np.array([r.iteration_s or r.measured for r in rows])
    A = np.array([r.coefficients for r in rows]) * weight[:, None]
    chosen, why = _identifiable(A)
    x = _bounded_lstsq(A[:, chosen], y * weight, [BOUNDS[MECHANISMS[j]] for j in chosen])
    values = {MECHANISMS[j]: float(v) for j, v in zip(chosen, x)}
    theta = np.array([values.get(k, 0.0) for k in MECHANISMS])
    coeff = np.array([r.coefficients for r in rows])
    projected = np.array([r.constant for r in rows]) + coeff @ theta
    residuals = tuple(float(v) for v in (projected - [r.measured for r in rows]) * weight)
    return MechanismFit(values, why, tuple(rows), residuals)


def _identifiable(A: np.ndarray) -> tuple[list[int], dict[str, str]]:
    """Columns the rows identify, in MECHANISMS order: a column that is zero, or adds
    no rank to those before it, is not identified (the reason names it)."""
    why: dict[str, str] = {}
    chosen: list[int] = []
    norms = np.linalg.norm(A, axis=0)
    for j, name in enumerate(MECHANISMS):
        if norms[j] <= 1e-12:
            why[name] = f"no selected run has {WHAT[name]}"
            continue
        cols = A[:, chosen + [j]] / norms[chosen + [j]]
        sv = np.linalg.svd(cols, compute_uv=False)
        if len(sv) < len(chosen) + 1 or sv[-1] < RANK_TOL * sv[0]:
            others = ", ".join(MECHANISMS[i] for i in chosen)
            why[name] = (
                f"its effect on these runs cannot be told apart from {others}'s: give runs at more"
                " split widths, or measured compute_s and comm_s columns"
            )
            continue
        chosen.append(j)
    return chosen, why


def _bounded_lstsq(A: np.ndarray, y: np.ndarray, bounds: list[tuple[float, float]]) -> np.ndarray:
    """min |A x - y| with lo <= x <= hi, by trying every set of parameters held at a
    bound (at most 3^5 small solves): the best feasible one is the optimum of this
    convex problem (its KKT point has some set of active bounds)."""
    n = A.shape[1]
    best, best_r = None, np.inf
    for states in itertools.product((None, 0, 1), repeat=n):
        if any(s is not None and not np.isfinite(bounds[i][s]) for i, s in enumerate(states)):
            continue
        x = np.array([bounds[i][s] if s is not None else 0.0 for i, s in enumerate(states)], dtype=float)
        free = [i for i, s in enumerate(states) if s is None]
        if free:
            rhs = y - A[:, [i for i in range(n) if i not in free]] @ x[[i for i in range(n) if i not in free]]
            x[free] = np.linalg.lstsq(A[:, free], rhs, rcond=None)[0]
        if any(x[i] < bounds[i][0] - 1e-12 or x[i] > bounds[i][1] + 1e-12 for i in free):
            continue
        r = float(np.sum((A @ x - y) ** 2))
        if r < best_r - 1e-15:
            best, best_r = x, r
    if best is None:
        return np.zeros(n)
    return np.clip(best, [lo for lo, _ in bounds], [hi for _, hi in bounds])


def into_doc(doc: dict, values: dict[str, float], lines: dict[str, list[int]], runs: str) -> None:
    """Write the fitted mechanisms into a system file's YAML document ``doc`` (its
    ``implementation:`` and ``operations:`` sections), each with the runs it comes from."""
    where = lambda k: f"`oracle fit runs --calibrate all` on {runs} lines {', '.join(map(str, sorted(set(lines[k]))))}"  # noqa: E731
    impl_keys = [k for k in ("split_serial_fraction", "split_overhead_s") if k in values]
    if impl_keys:
        impl = dict(doc.get("implementation") or {})
        for k in impl_keys:
            impl[k] = float(f"{values[k]:.6g}")
        note = f"{' and '.join(impl_keys)} fitted by {where(impl_keys[0])}"
        impl["source"] = f"{impl['source']}; {note}" if impl.get("source") else note
        doc["implementation"] = impl
    ops = dict(doc.get("operations") or {})
    for key, purposes in OPERATIONS.items():
        if key not in values:
            continue
        for op in purposes:
            entry = dict(ops.get(op) or ops.get(primitive(op)) or {})
            entry["factor"] = float(f"{values[key]:.6g}")
            fitted = f"factor ({key}) fitted by {where(key)}"
            entry["source"] = f"{entry['source']}; {fitted}" if entry.get("source") else fitted
            ops[op] = entry
    if ops:
        doc["operations"] = ops


__all__ = ["MECHANISMS", "MechanismFit", "Row", "fit_mechanisms", "into_doc", "rows_for", "with_mechanisms"]
