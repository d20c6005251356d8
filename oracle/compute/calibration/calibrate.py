"""Calibrating a system from measured training runs (issue 5: "fitted network
parameters"; ParaDL §4.4 empirical parametrization).

Benchmarks measure the network, but a framework's collectives may run far from it (a
different library version, another transport, no GPUDirect).  A few small training runs
measure what the framework really gets.  Each selected run is turned into evidence for
one parameter by inverting the cost model (compute from the profile, as in §4):

network (data-parallel runs, p >= 2, assumed not input-bound):
    the β of the level the run's all-reduce spans at which the run's projection, under
    the options and stack in force (compute, the stack's fixed costs, the all-reduce by
    the system's algorithm, less what overlap and buckets hide, a cycle's wait), takes
    the measured time per iteration; α kept from the base level.  Without a stack or
    overlap, on the ring (docs/cost-model.md), that is the closed form
        t_iteration - compute = 2(p-1)(α + m/p · β)  =>  β = ((t - compute)/(2(p-1)) - α) · p / m
    The levels are inverted from the lowest up, each run on the levels below it as
    calibrated so far (its all-reduce crosses them), so that the written system projects
    each calibration run at its measured time (one run per level: exactly).  One β per
    level the runs span (their median), inside a node and across nodes apart.  A run over
    several NVLink domains that fills its last one partly calibrates nothing (as oracle
    fit network refuses such a log).

input (runs assumed input-bound, loaders prefetching):
    t_iteration = n / rate,  n = samples per loader (compute/io.py)
  a data-parallel run with one loader on its node gives the loader rate, one with k
  loaders on a node the node rate k·n / t_iteration, a hybrid run (one leader loading
  per model-part group, ParaDL §3.2) the leader rate (median of the runs).

Every estimate keeps the run it came from, so the written system says where its
numbers come from; held-out runs then show whether they generalise.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from oracle.compute.calibration.compare import config_for, infeasibility
from oracle.compute.context import Context
from oracle.compute.cost import Point
from oracle.compute.io import EVERY_GPU, loaders
from oracle.compute.nccl import domains_text, node_gpus, partial_domain
from oracle.compute.network import group_contiguous, link, span_contiguous
from oracle.compute.strategies import REGISTRY
from oracle.compute.strategies.data import Data
from oracle.compute.strategies.serial import Serial
from oracle.compute.sweep import evaluate
from oracle.records import MeasuredRun

KINDS = ("network", "input")
REPLICAS = (Data.name, Serial.name)  # the strategies whose every GPU holds the whole model


@dataclass(frozen=True)
class Evidence:
    line: int
    run: str  # short label of the run
    parameter: str  # beta_intra, beta_inter, loader_rate, node_rate
    value: float
    measured_iteration_s: float
    compute_iteration_s: float
    note: str = ""
    level: str = ""  # the network level a β comes from (its span's level)


@dataclass(frozen=True)
class Calibration:
    kind: str
    beta_intra: float | None
    beta_inter: float | None
    loader_rate: float | None
    node_rate: float | None
    leader_rate: float | None
    evidence: tuple[Evidence, ...]
    unused: tuple[tuple[int, str], ...]
    # per network level that runs span, the median β of its runs (issue 14: a rack and
    # the spine above it calibrate apart when runs span both)
    beta_levels: tuple[tuple[str, float], ...] = ()
    # model-parallel mechanisms (compute/calibration/calibrate_split.py), None where not identified
    split_serial_fraction: float | None = None
    split_overhead_s: float | None = None
    layer_collectives_factor: float | None = None
    halo_factor: float | None = None
    pipeline_p2p_factor: float | None = None
    not_identified: tuple[tuple[str, str], ...] = ()  # mechanism -> why the runs leave it
    # issue 14, step 0 of --calibrate all: (model name, time factor on its profile)
    compute_factors: tuple[tuple[str, float], ...] = ()
    compute_batches: tuple[tuple[str, float], ...] = ()  # issue 26: (model, samples per GPU measured at)
    notes: tuple[str, ...] = ()  # measurements a step set aside, with the reason
    # issue 26: fitted values outside physical bounds (compute/calibration/calibrate_physics.py)
    unphysical: tuple[tuple[tuple[int, ...], str], ...] = ()  # (lines, why)
    # the stack each run was inverted under, as outputs name it (:func:`stacks_in_force`): (name, lines)
    stacks: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def lines_for(self, parameter: str) -> list[int]:
        return [e.line for e in self.evidence if e.parameter == parameter]


def stacks_in_force(pairs) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The stack each (run, context) is inverted under as every output names it
    (oracle/stack.stack_label, ``none`` for none), with the options given over it
    (compute/stack.given_over_stack): (name, the runs' lines), in the runs' order."""
    from oracle.compute.stack import given_over_stack
    from oracle.stack import stack_label

    found: dict[str, list[int]] = {}
    for run, ctx in pairs:
        over = ", ".join(f"{flag} {mine}" for flag, mine, _ in given_over_stack(ctx.options))
        name = stack_label(ctx.options.stack) + (f" ({over} given over it)" if over else "")
        found.setdefault(name, []).append(run.line)
    return tuple((name, tuple(lines)) for name, lines in found.items())


def stacks_text(stacks) -> str:
    """``stack pytorch``, or ``stacks pytorch (lines 2, 3), none (line 4)``: what
    :func:`stacks_in_force` found, for titles and provenance."""
    if len(stacks) == 1:
        return f"stack {stacks[0][0]}"
    return "stacks " + ", ".join(f"{name} (line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))})"
                                 for name, lines in stacks)  # fmt: skip


def run_label(run: MeasuredRun, ctx: Context) -> str:
    return f"{ctx.model.name} {run.strategy} {run.gpus} GPUs B={run.global_batch:g}"


TRUE = ("yes", "true", "1", "y")


def includes_io(run) -> bool:
    """The runs file's ``includes_io`` column says the run's times include data loading."""
    return str(run.get("includes_io") or "").strip().lower() in TRUE


def excludes_io(run) -> bool:
    """The runs file has an ``includes_io`` column, and it says no for this run."""
    return bool(str(run.get("includes_io") or "").strip()) and not includes_io(run)


@dataclass(frozen=True)
class SetAside:
    """A selected run left out of the fit: the model finds its configuration infeasible."""

    line: int
    run: str  # run_label
    reason: str  # its limits, as predict and compare show them


def feasible_runs(pairs: list[tuple[MeasuredRun, Context]]) -> tuple[list, tuple[SetAside, ...]]:
    """(the (run, context) pairs the model finds feasible, those it does not): a run it says
    cannot run (out of memory, more GPUs than a layer's filters, ...) has no time to invert,
    as compare does not score it (compare.infeasibility).  A run whose configuration does not
    resolve is kept: the calibration says what is wrong with it, as before."""
    from oracle.errors import OracleError

    kept, aside = [], []
    for run, ctx in pairs:
        try:
            cfg = config_for(run, ctx)
        except OracleError:
            kept.append((run, ctx))
            continue
        why = infeasibility(evaluate(ctx, cfg))
        if why is None:
            kept.append((run, ctx))
        else:
            aside.append(SetAside(run.line, run_label(run, ctx), why))
    return kept, tuple(aside)


def none_feasible(aside: tuple[SetAside, ...], runs: str, goal: str, *, of: str = "", **where):
    """The error where every run chosen to calibrate on is infeasible in the model (``aside``,
    from :func:`feasible_runs`), naming each with its limits: "none of the 3 ``runs`` runs
    ``of`` is feasible in the model, so there is nothing to ``goal``"; ``where``: the
    OracleError's file, path and hint (one run: its line too)."""
    from oracle.errors import OracleError

    n = len(aside)
    head = f"the {runs} run{of} is not" if n == 1 else f"none of the {n} {runs} runs{of} is"
    return OracleError(f"{head} feasible in the model, so there is nothing to {goal}: "
                       + "; ".join(f"line {a.line} {a.run}: {a.reason}" for a in aside),
                       line=aside[0].line if n == 1 else None, **where)  # fmt: skip


def calibrate(kind: str, runs: list[tuple[MeasuredRun, Context]]) -> Calibration:
    found: dict[int, Evidence | str] = {}  # by position in ``runs``
    evidence: list[Evidence] = []
    order = sorted(range(len(runs)), key=lambda i: network_order(*runs[i])) if kind == "network" else range(len(runs))
    for i in order:
        run, ctx = runs[i]
        found[i] = ev = _evidence(kind, run, ctx, level_medians(evidence))
        if not isinstance(ev, str):
            evidence.append(ev)
    evidence = [ev for _, ev in sorted(found.items()) if not isinstance(ev, str)]
    unused = [(runs[i][0].line, f"{run_label(*runs[i])}: {ev}") for i, ev in sorted(found.items()) if isinstance(ev, str)]

    def med(parameter: str) -> float | None:
        vals = [e.value for e in evidence if e.parameter == parameter]
        return statistics.median(vals) if vals else None

    cal = Calibration(
        kind=kind,
        beta_intra=med("beta_intra"),
        beta_inter=med("beta_inter"),
        loader_rate=med("loader_rate"),
        node_rate=med("node_rate"),
        leader_rate=med("leader_rate"),
        evidence=tuple(evidence),
        unused=tuple(unused),
        beta_levels=level_medians(evidence),
        stacks=stacks_in_force(runs),
    )
    if kind != "network":
        return cal
    from oracle.compute.calibration.calibrate_physics import violations

    return replace(cal, unphysical=tuple(violations(cal, runs)))  # issue 26's bounds, as --calibrate all's


def _evidence(kind: str, run: MeasuredRun, ctx: Context, below: tuple) -> Evidence | str:
    """One run's evidence for ``kind`` (``below``: the levels' β calibrated so far), or why none."""
    if run.strategy not in REPLICAS and not (kind == "input" and REGISTRY[run.strategy].hybrid):
        return "calibrates with data-parallel and serial runs (and hybrids for the leader rate)"
    if kind == "input" and excludes_io(run):  # issue 14: no loading rate from times without loading
        return f"its times exclude data loading (includes_io = {run.get('includes_io')})"
    cfg = config_for(run, ctx)
    pt = evaluate(ctx, cfg)  # issue 27: the stack may cost with ParaDL's tool
    I = pt.iterations_per_epoch
    t = run.iteration_s if run.epoch_s is None else run.epoch_s / I
    compute = pt.compute_s / I
    if kind == "network":
        return network_evidence(run, ctx, run_label(run, ctx), t, compute, below)
    return input_evidence(run, ctx, cfg, run_label(run, ctx), t, compute + pt.communication_s / I)


def level_medians(evidence) -> tuple[tuple[str, float], ...]:
    """The median β of each network level the evidence comes from."""
    by_level: dict[str, list[float]] = {}
    for e in evidence:
        if e.parameter.startswith("beta") and e.level:
            by_level.setdefault(e.level, []).append(e.value)
    return tuple((name, statistics.median(v)) for name, v in by_level.items())


def network_order(run: MeasuredRun, ctx: Context) -> int:
    """Where in the system's network the level a data-parallel run's all-reduce spans lies
    (-1 for a run that calibrates no network): runs are inverted lowest level first, each
    on the levels below it as calibrated so far (its all-reduce crosses them too)."""
    if run.strategy != Data.name or run.gpus < 2:
        return -1
    name = link(ctx.system, span_contiguous(run.gpus, ctx.system.gpus_per_node), "allreduce").level
    return next(i for i, lv in enumerate(ctx.system.network) if lv.name == name)


def network_evidence(run: MeasuredRun, ctx: Context, label: str, t: float, compute: float,
                     below: tuple = ()) -> Evidence | str:  # fmt: skip
    """The β of the level the run's all-reduce spans at which its projection takes the
    measured ``t`` per iteration (:func:`invert_level`: under the options and stack in
    force, overlap and buckets included); ``below``: (level, β) calibrated before it."""
    p = run.gpus
    if run.strategy != Data.name or p < 2:
        return "a network needs a data-parallel run on 2 or more GPUs"
    partial = partial_domain(ctx.system, group_contiguous(p, ctx.system.gpus_per_node))
    if partial is not None:  # as oracle fit network refuses such a log (calibration/nccl_fit.log_nodes)
        return (f"{p} GPUs do not fill whole NVLink domains of {node_gpus(ctx.system)} GPUs (the system's NCCL"
                f" nodes): {domains_text(partial)}; the network across nodes is a full domain's, and a partial"
                " one reaches it through fewer NICs, which the model does not tell apart")  # fmt: skip
    span = span_contiguous(p, ctx.system.gpus_per_node)
    lk = link(ctx.system, span, "allreduce")
    found = invert_level(ctx, config_for(run, ctx), lk.level, t, below)
    if isinstance(found, str):
        return found
    beta, pt = found
    parameter = "beta_intra" if span <= node_gpus(ctx.system) else "beta_inter"  # an NVL72 rack is one node
    m = ctx.grad_delta * ctx.sum_w
    I = pt.iterations_per_epoch
    exposed, total = pt.communication_s / I, float(pt.detail("communication_total_s", pt.communication_s)) / I
    hidden = f", {exposed:.4g} s of it not hidden (overlap)" if total > exposed * (1 + 1e-6) else ""
    note = f"all-reduce of {m / 1e6:.1f} MB over span {span} ({lk.level}, α {lk.alpha_s:.3g} s): {total:.4g} s{hidden}"
    return Evidence(run.line, label, parameter, beta, t, compute, note, lk.level)


LOWEST = 1e-6  # the smallest factor on a level's β tried: the network all but free
HIGHEST = 1e12  # the largest: a link slower than this explains no time


def invert_level(ctx: Context, cfg, level: str, t: float, below: tuple = ()) -> tuple[float, Point] | str:
    """(β of ``level``, the projection at it) at which the projection of ``cfg``
    (compute/sweep.evaluate: compute, the stack's fixed costs, the all-reduce by the
    system's algorithm less what overlap and buckets hide, a cycle's wait) takes ``t`` per
    iteration, its input stall left out: the run is taken as not input-bound (the input
    rates are calibrated apart, calibrate_all step 2).  The level's protocol lines scale
    with it, and the levels on its side of the node boundary that no run spans follow it,
    as fit runs writes them (calibrate_all.level_betas).  The projection grows with β: the
    factor on the level's β is found by regula falsi (Illinois) between :data:`LOWEST`
    and :data:`HIGHEST`.  Why not, when ``t`` lies outside what any β projects."""
    from oracle.compute.calibration.calibrate_all import calibrated_system, with_system

    base = next(lv for lv in ctx.system.network if lv.name == level).beta_s_per_byte
    known = tuple((name, b) for name, b in below if name != level)
    I = evaluate(ctx, cfg).iterations_per_epoch

    def point(k: float):
        return evaluate(with_system(ctx, calibrated_system(ctx.system, levels=(*known, (level, base * k)))), cfg)

    def excess(k: float) -> float:
        pt = point(k)
        return (pt.compute_s + pt.communication_s) / I - t

    low = excess(LOWEST)
    if not math.isfinite(low) or low >= 0:
        floor = "is not computable" if not math.isfinite(low) else f"takes {low + t:.4g} s"
        return (f"measured {t:.4g} s per iteration, and the projection with level {level} all but free {floor}"
                " (compute, what the stack adds, the other levels' communication; no input stall): no communication"
                " to fit")  # fmt: skip
    k = increasing_root(excess, LOWEST, low, HIGHEST, t * 1e-10)
    if k is None:
        return f"no β of level {level} makes the projection take the measured {t:.4g} s per iteration"
    return base * k, point(k)


def increasing_root(f, lo: float, f_lo: float, top: float, tol: float) -> float | None:
    """x in [lo, top] where the non-decreasing ``f`` crosses 0 (within ``tol``), given
    ``f_lo = f(lo) < 0``: the bracket is closed from 1 up by factors of 1000, then
    narrowed by regula falsi with the Illinois halving (linear pieces converge at once).
    None when f(top) < 0."""
    x, f_x = 1.0, f(1.0)
    while f_x < 0:  # below the root: the bracket's low end
        if x >= top:
            return None
        lo, f_lo = x, f_x
        x = min(top, x * 1e3)
        f_x = f(x)
    if f_x == 0:
        return x
    hi, f_hi, side = x, f_x, 0
    for _ in range(200):
        x = hi - f_hi * (hi - lo) / (f_hi - f_lo)
        if not lo < x < hi:
            x = (lo + hi) / 2
        fx = f(x)
        if abs(fx) <= tol or hi - lo <= 1e-12 * hi:
            return x
        if fx < 0:
            lo, f_lo = x, fx
            f_hi, side = (f_hi / 2 if side < 0 else f_hi), -1
        else:
            hi, f_hi = x, fx
            f_lo, side = (f_lo / 2 if side > 0 else f_lo), 1
    return x


def input_evidence(run: MeasuredRun, ctx: Context, cfg, label: str, t: float, busy: float) -> Evidence | str:
    if t <= busy:
        return (
            f"measured {t:.4g} s per iteration is not above compute+communication {busy:.4g} s:"
            " not input-bound, gives only a lower bound on the loader rate"
        )
    kind = REGISTRY[run.strategy].loading
    n_loaders, per_node = loaders(kind, cfg.gpus, cfg.p1, cfg.p2, ctx.system.gpus_per_node)
    n = run.global_batch / n_loaders
    if kind != EVERY_GPU:
        if per_node != 1:
            return "group leaders share a node: cannot separate the leader rate from the node rate"
        return Evidence(run.line, label, "leader_rate", n / t, t, busy, f"{n:g} samples per group leader in {t:.4g} s")
    if per_node == 1:
        return Evidence(run.line, label, "loader_rate", n / t, t, busy, f"{n:g} samples per loader in {t:.4g} s")
    return Evidence(
        run.line, label, "node_rate", per_node * n / t, t, busy,
        f"{per_node} loaders on a node, {n:g} samples each in {t:.4g} s",
    )  # fmt: skip


__all__ = ["Calibration", "Evidence", "KINDS", "calibrate", "EVERY_GPU"]


def compute_scale(point, measured_iteration_s: float, unscaled_s: float = 0.0) -> float:
    """The factor on a profile's times that makes ``point`` (its projection with that
    profile) take ``measured_iteration_s`` per iteration: (measured - communication) /
    compute, with compute and communication per iteration (issue 13, --calibrate compute);
    ``unscaled_s``: compute per iteration that does not scale with the profile (a stack's
    fixed costs and the kernels it adds, issue 25).
    Raises ValueError when the run leaves no time for compute."""
    I = point.iterations_per_epoch
    compute = point.compute_s / I - unscaled_s
    rest = point.iteration_s - compute  # communication, input waits, fixed costs
    if not compute > 0 or measured_iteration_s <= rest:
        raise ValueError(
            f"the run's {measured_iteration_s:.4g} s per iteration leaves no time for compute"
            f" (the projection's communication alone takes {rest:.4g} s)"
        )
    return (measured_iteration_s - rest) / compute


def scaled_profile(profile, factor: float, source: str):
    """``profile`` with every time multiplied by ``factor``; device, precision and batch
    kept, so the compute model still converts it to other GPUs, precisions and batches."""
    from dataclasses import replace

    from oracle.model import LayerTimes

    layers = tuple((n, LayerTimes(t.fw_s * factor, t.bw_s * factor, t.wu_s * factor)) for n, t in profile.layers)
    total = profile.total_fw_bw_per_sample_s
    wu = profile.total_wu_per_iteration_s
    return replace(profile, layers=layers, kind="measured" if layers else profile.kind,
                   total_fw_bw_per_sample_s=None if total is None else total * factor,
                   total_wu_per_iteration_s=None if wu is None else wu * factor, source=source)  # fmt: skip
