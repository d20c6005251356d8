"""``--calibrate all``: every parameter a set of measured runs identifies, in turn.

Each run's measured iteration is compute (the profile), communication and, for runs
whose times include data loading (the runs file's ``includes_io`` column), the input
stall (compute/io.py: with prefetching an iteration lasts max(busy, loading)).  Which
mechanism a run measures follows from what is already known, so the parameters are
identified in an order in which each step needs only earlier ones:

0. **compute**: serial and data-parallel runs that measure compute give each model's
   time factor on its profile (the framework or kernels of the runs against the
   profile's): a measured ``compute_s`` column, or the whole time of a one-GPU run
   that is not marked includes_io or is faster than the profile (with prefetching an
   iteration lasts max(compute, loading): no time is left for loading).  Every later
   step projects with it.
1. **loader rate**: runs that include I/O, with one loading process per node (data
   parallelism on one GPU): an iteration beyond its compute is loading, rate = B / t.
2. **network** (β inside a node, β across nodes): data-parallel runs on 2 or more GPUs.
   A run's time beyond its compute is *at least* its gradient all-reduce (other stalls
   only add), so each run bounds β from above and the tightest bound per span class
   is the network; runs implying a β over ``SLOWER`` x that lose the rest elsewhere:
   when they include I/O they give the **node rate** (several loaders sharing a
   node), else they are listed as unexplained.
3. **leader rate**: hybrid runs that include I/O (one leader loads per model-part
   group, ParaDL §3.2), projected with the network of step 2, whose time exceeds
   compute and communication.
4. **model-parallel mechanisms** (compute/calibration/calibrate_split.py): the other runs of filter,
   channel, spatial, pipeline and hybrid strategies, projected with everything before,
   give the split layers' Amdahl fraction and overhead and the time factors of layer
   collectives, halo and pipeline sends (a bounded least-squares fit).

β is kept per network level its runs span (a rack and the spine above it apart).

Parameters no run identifies keep the base system's values and are listed as such;
runs that identify nothing are listed with the reason (compute/calibration/calibrate.py).
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from oracle.compute.calibration.anchor import (  # noqa: F401  (re-exported: the held-out validation lives there)
    beyond_calibration,
    naive_projection,
    run_filter,
    samples_per_replica,
)
from oracle.compute.calibration.calibrate import (
    REPLICAS,
    Calibration,
    Evidence,
    includes_io,
    input_evidence,
    level_medians,
    network_evidence,
    network_order,
    run_label,
    stacks_in_force,
)
from oracle.compute.calibration.calibrate_physics import prefer_compute, violations
from oracle.compute.calibration.calibrate_split import MECHANISMS, with_mechanisms
from oracle.compute.calibration.compare import config_for
from oracle.compute.context import Context
from oracle.compute.io import EVERY_GPU, loaders
from oracle.compute.nccl import node_gpus
from oracle.compute.strategies import REGISTRY
from oracle.compute.sweep import evaluate
from oracle.model import InputPipeline, NetworkLevel, Protocol, System

SLOWER = 1.5  # a run implying a β this much above the tightest one is not network-bound
PARAMETERS = ("loader_rate", "beta_intra", "beta_inter", "node_rate", "leader_rate", *MECHANISMS)


def with_system(ctx: Context, system: System) -> Context:
    """The same model, times, compute conversion and options on another system of the
    same GPUs (a calibrated network or input pipeline): a copy of the context, whose
    cached sums depend on the model and the times only; rebuilt when the system's
    compute factor for the model differs (the times change)."""
    import copy

    from oracle.compute.conversion import recalibrated

    conversion = recalibrated(ctx.conversion, system, ctx.model.name)
    if system.implementation.compute_factor(ctx.model.name) != ctx.compute_factor or conversion is not ctx.conversion:
        return Context(ctx.model, system, ctx.times, ctx.options, ctx.profile_kind, conversion=conversion)
    out = copy.copy(ctx)
    out.system = system
    out.algorithm = ctx.options.collective or system.collective_algorithm
    return out


def level_betas(system: System, beta_intra=None, beta_inter=None, levels=()) -> list[float | None]:
    """The calibrated β of each of ``system``'s levels, None where it stays: a level
    that runs span has its own (``levels``: name -> β, issue 14: a rack and the spine
    above it calibrate apart); another level takes the β of the nearest calibrated level
    on its side of the node boundary (below it first), else ``beta_intra`` or
    ``beta_inter``.  A contiguous ring crosses an over-subscribed spine on a few links
    only, so a ring calibrated on one rack does not see the spine's over-subscription;
    runs that span the spine measure it."""
    own = dict(levels)
    node = node_gpus(system)  # an NCCL node: a host, or an NVLink domain across hosts
    out: list[float | None] = []
    for i, level in enumerate(system.network):
        inside = level.max_gpus <= node
        side = [j for j, lv in enumerate(system.network) if (lv.max_gpus <= node) == inside and lv.name in own]
        if level.name in own:
            out.append(own[level.name])
        elif side:
            below = [j for j in side if j < i]
            nearest = max(below) if below else min(side)
            out.append(own[system.network[nearest].name])
        else:
            out.append(beta_intra if inside else beta_inter)
    return out


def calibrated_system(system: System, beta_intra=None, beta_inter=None, loader=None, node=None, leader=None,
                      levels=()) -> System:  # fmt: skip
    """``system`` with the calibrated β per level (its protocol lines scaled alike: the
    transport is slower or faster as a whole) and input rates."""
    levels_out = []
    for level, beta in zip(system.network, level_betas(system, beta_intra, beta_inter, levels)):
        if beta is None:
            levels_out.append(level)
            continue
        scale = beta / level.beta_s_per_byte
        protocols = tuple(Protocol(p.name, p.alpha_s, p.beta_s_per_byte * scale) for p in level.protocols)
        levels_out.append(NetworkLevel(level.name, level.max_gpus, level.alpha_s, beta, level.source, protocols))
    pipe = system.input
    if any(v is not None for v in (loader, node, leader)):
        pipe = replace(
            pipe or InputPipeline(overlap=True),
            loader_samples_per_s=loader if loader is not None else (pipe.loader_samples_per_s if pipe else None),
            node_samples_per_s=node if node is not None else (pipe.node_samples_per_s if pipe else None),
            leader_samples_per_s=leader if leader is not None else (pipe.leader_samples_per_s if pipe else None),
        )
    return replace(system, network=tuple(levels_out), input=pipe)


def _iteration(run, ctx: Context):
    cfg = config_for(run, ctx)
    pt = evaluate(ctx, cfg)  # issue 27: the stack may cost with ParaDL's tool
    I = pt.iterations_per_epoch
    t = run.iteration_s if run.epoch_s is None else run.epoch_s / I
    return cfg, t, pt.compute_s / I, pt.communication_s / I


def _median(evidence: list[Evidence], parameter: str) -> float | None:
    vals = [e.value for e in evidence if e.parameter == parameter]
    return statistics.median(vals) if vals else None


def calibrate_all(pairs: list) -> Calibration:
    """The staged calibration of the module doc over (run, context) pairs."""
    evidence: list[Evidence] = []
    unused: dict[int, str] = {}
    data = [(r, c) for r, c in pairs if r.strategy in REPLICAS]
    # 0. compute: each model's factor on its profile, then every step projects with it
    notes: list[str] = []
    factors, whole = _compute_factors(data, evidence, notes)
    prefer_compute(data, factors, whole, evidence, notes, _iteration, network_evidence)  # 0b: issue 26
    batches = _compute_batches(data, evidence, notes)
    if factors:
        systems = {id(c.system): with_compute_factors(c.system, factors, batches) for _, c in pairs}
        pairs = [(r, with_system(c, systems[id(c.system)])) for r, c in pairs]
        data = [(r, c) for r, c in pairs if r.strategy in REPLICAS and r.line not in whole]
    # 1. loader rate: one loading process on its node
    for run, ctx in data:
        cfg, t, compute, comm = _iteration(run, ctx)
        per_node = loaders(EVERY_GPU, cfg.gpus, cfg.p1, cfg.p2, ctx.system.gpus_per_node)[1]
        if includes_io(run) and per_node == 1:
            ev = input_evidence(run, ctx, cfg, run_label(run, ctx), t, compute + comm)
            _keep(ev, run, evidence, unused)
    loader = _median(evidence, "loader_rate")
    # 2. network: a run's time beyond its compute is at least its all-reduce, so the
    #    network is no slower than the fastest β any run implies (per level);
    #    runs far slower than that (> SLOWER x) lose time elsewhere: their loading
    _network_or_input(data, evidence, unused, loader)
    so_far = dict(beta_intra=_median(evidence, "beta_intra"), beta_inter=_median(evidence, "beta_inter"),
                  loader=loader, node=_median(evidence, "node_rate"), levels=level_medians(evidence))  # fmt: skip
    # 3. leader rate (input-bound hybrids), on the network calibrated so far
    used = {r.line for r, _ in pairs if r.strategy in REPLICAS}
    rest = [(r, c) for r, c in pairs if r.line not in used]
    split_runs = _leader_rate(rest, so_far, evidence, unused)
    # 4. model-parallel mechanisms (compute/calibration/calibrate_split.py), on everything before
    leader = _median(evidence, "leader_rate")
    fit = _mechanisms(split_runs, so_far, leader, evidence, unused)
    cal = Calibration(
        kind="all",
        beta_intra=so_far["beta_intra"],
        beta_inter=so_far["beta_inter"],
        loader_rate=loader,
        node_rate=so_far["node"],
        leader_rate=leader,
        evidence=tuple(evidence),
        unused=tuple(sorted(unused.items())),
        beta_levels=so_far["levels"],
        not_identified=tuple(fit.not_identified.items()),
        compute_factors=tuple(sorted(factors.items())),
        compute_batches=tuple(sorted(batches.items())),
        notes=tuple(notes),
        stacks=stacks_in_force(pairs),
        **fit.values,
    )
    return replace(cal, unphysical=tuple(violations(cal, pairs)))


def _compute_factors(data: list, evidence: list, notes: list) -> tuple[dict[str, float], set[int]]:
    """Step 0: (model name -> median factor, the lines whose whole time was compute)."""
    per_model: dict[str, list[float]] = {}
    whole: set[int] = set()
    for run, ctx in data:
        _, t, compute, _ = _iteration(run, ctx)
        if not compute > 0:
            continue
        if run.compute_s is not None:
            measured = run.compute_s * (t / run.epoch_s if run.basis == "epoch" else 1.0)  # per iteration
            note = f"measured compute {measured:.4g} s per iteration"
        elif run.gpus == 1 and (not includes_io(run) or t < compute):
            measured = t
            why = "faster than the profile: no time left for loading" if includes_io(run) else "no I/O, no communication"
            note = f"one GPU, {why}: its {t:.4g} s per iteration are compute"
            whole.add(run.line)
        else:
            continue
        label = run_label(run, ctx)
        if not 1e-3 <= measured / compute <= 1e3:  # the bounds a system file accepts
            notes.append(f"line {run.line}: {note}, {measured / compute:.3g}x its profile: set aside as not"
                         " this model's compute (compute_s is per epoch or per iteration, as the run's time)")  # fmt: skip
            whole.discard(run.line)
            continue
        evidence.append(Evidence(run.line, label, "compute_factor", measured / compute, t, compute, note))
        per_model.setdefault(ctx.model.name, []).append(measured / compute)
    return {m: statistics.median(v) for m, v in per_model.items()}, whole


def _compute_batches(data: list, evidence: list, notes: list) -> dict[str, float]:
    """Step 0, issue 26: the samples per GPU each model's compute factor was measured at,
    for a profile that records none (with one, the compute model's batch curve already
    carries the factor from the measured batch); one batch per model, else flat."""
    lines = {e.line for e in evidence if e.parameter == "compute_factor"}
    found: dict[str, tuple] = {}
    for run, ctx in data:
        if run.line in lines:
            found.setdefault(ctx.model.name, (ctx, set()))[1].add(run.global_batch / run.gpus)
    out = {}
    for name, (ctx, at) in found.items():
        conv = ctx.conversion
        if conv is None or not conv.active or conv.origin.batch is not None:
            continue
        if len(at) == 1:
            out[name] = at.pop()
            notes.append(f"{name}: compute measured at {out[name]:g} samples per GPU; its profile records no batch,"
                         " so the compute model's batch curve carries the factor from there")  # fmt: skip
        else:
            notes.append(f"{name}: compute measured at {', '.join(f'{b:g}' for b in sorted(at))} samples per GPU;"
                         " the factor is their median, flat in batch")  # fmt: skip
    return out


def with_compute_factors(system: System, factors: dict[str, float], batches: dict | None = None) -> System:
    """``system`` whose implementation runs each model's profile ``factors`` times as long
    (``batches``: the samples per GPU each was measured at, issue 26)."""
    impl = system.implementation
    merged = {**dict(impl.compute_factors), **factors}
    at = {**dict(impl.compute_batches), **(batches or {})}
    return replace(system, implementation=replace(impl, compute_factors=tuple(sorted(merged.items())),
                                                  compute_batches=tuple(sorted(at.items()))))  # fmt: skip


def _leader_rate(rest: list, so_far: dict, evidence: list, unused: dict) -> list:
    """Step 3: input-bound hybrid runs give the leader rate; the other runs are returned
    for step 4."""
    left = []
    for run, ctx in rest:
        if not (includes_io(run) and REGISTRY[run.strategy].hybrid):
            left.append((run, ctx))
            continue
        cal_ctx = with_system(ctx, calibrated_system(ctx.system, **so_far))
        cfg, t, compute, comm = _iteration(run, cal_ctx)
        ev = input_evidence(run, cal_ctx, cfg, run_label(run, ctx), t, compute + comm)
        if isinstance(ev, str):  # not input-bound: its time is compute and communication
            left.append((run, ctx))
        else:
            _keep(ev, run, evidence, unused)
    return left


def _mechanisms(runs: list, so_far: dict, leader, evidence: list, unused: dict):
    """Step 4: split efficiency and operation factors from the remaining runs."""
    from oracle.compute.calibration.calibrate_split import fit_mechanisms, rows_for

    rows = []
    for run, ctx in runs:
        cal_ctx = with_system(ctx, calibrated_system(ctx.system, leader=leader, **so_far))
        got = rows_for(run, cal_ctx)
        if isinstance(got, str):
            unused[run.line] = got
        else:
            rows.extend(got)
    fit = fit_mechanisms(rows)
    for row, resid in zip(fit.rows, fit.residuals):
        for name, coeff in zip(MECHANISMS, row.coefficients):
            if name in fit.values and coeff != 0.0:
                note = f"joint fit over {len(fit.rows)} measured times; this {row.what} {resid:+.1%} at the fit"
                evidence.append(Evidence(row.line, row.label, name, fit.values[name], row.measured, row.constant, note))
                unused.pop(row.line, None)
    for row in fit.rows:
        if not any(e.line == row.line for e in evidence):
            unused[row.line] = f"{row.label}: its time depends on no identified mechanism"
    return fit


def _network_or_input(data: list, evidence: list, unused: dict, loader: float | None) -> None:
    """Step 2 of the module doc, level by level from the lowest (calibrate.network_order):
    a run is inverted on the levels below it as calibrated so far."""
    done = {e.line for e in evidence if e.parameter != "compute_factor"}  # a measured compute_s leaves comm
    levels: dict[int, list] = {}
    for run, ctx in data:
        if run.line in done:
            continue
        if run.gpus < 2:
            _, t, compute, _ = _iteration(run, ctx)
            unused[run.line] = (
                f"{run_label(run, ctx)}: one GPU, neither input-bound nor faster than its profile: its time is its"
                f" compute ({t / compute:.3g}x the profile's)"
            )
            continue
        levels.setdefault(network_order(run, ctx), []).append((run, ctx))
    tight: dict[tuple[str, str], float] = {}  # per (parameter, level): a spine may be slower than its rack
    start = len(evidence)
    for _, runs in sorted(levels.items()):
        _level_step(runs, tight, evidence, unused, loader)
    at = {run.line: i for i, (run, _) in enumerate(data)}
    evidence[start:] = sorted(evidence[start:], key=lambda e: at[e.line])  # reported in the runs' order


def _level_step(runs: list, tight: dict, evidence: list, unused: dict, loader: float | None) -> None:
    """Step 2 for the runs of one level: the tightest β each implies, then the runs it explains."""
    below = level_medians(evidence)
    implied = []
    for run, ctx in runs:
        _, t, compute, _ = _iteration(run, ctx)
        implied.append((run, ctx, network_evidence(run, ctx, run_label(run, ctx), t, compute, below)))
    for *_, ev in implied:
        if not isinstance(ev, str):
            key = (ev.parameter, ev.level)
            tight[key] = min(tight.get(key, ev.value), ev.value)
    for run, ctx, ev in implied:
        if isinstance(ev, str) or ev.value <= SLOWER * tight[(ev.parameter, ev.level)]:
            _keep(ev, run, evidence, unused)
            continue
        tightest = tight[(ev.parameter, ev.level)]
        why = f"implies β {ev.value / tightest:.1f}x the tightest run's over {ev.level}: time is lost elsewhere"
        if not includes_io(run):
            unused[run.line] = f"{run_label(run, ctx)}: {why}, and it is not marked includes_io"
            continue
        side = lambda name: min((v for (p, _), v in tight.items() if p == name), default=None)  # noqa: E731
        known = tuple((lv, v) for (_, lv), v in tight.items())
        net = calibrated_system(ctx.system, side("beta_intra"), side("beta_inter"), loader, levels=known)
        cal_ctx = with_system(ctx, net)
        cfg, t, compute, comm = _iteration(run, cal_ctx)
        _keep(input_evidence(run, cal_ctx, cfg, run_label(run, ctx), t, compute + comm), run, evidence, unused)


def _keep(ev, run, evidence: list, unused: dict) -> None:
    if isinstance(ev, str):
        unused[run.line] = ev if ev.startswith(run.model) else f"{run.model} {run.strategy} {run.gpus} GPUs: {ev}"
    else:
        evidence.append(ev)
        unused.pop(run.line, None)


def apply(system: System, cal: Calibration) -> System:
    """The base system with everything ``cal`` identified."""
    out = calibrated_system(system, cal.beta_intra, cal.beta_inter, cal.loader_rate, cal.node_rate,
                            cal.leader_rate, cal.beta_levels)  # fmt: skip
    if cal.compute_factors:
        out = with_compute_factors(out, dict(cal.compute_factors), dict(cal.compute_batches))
    return with_mechanisms(out, mechanisms(cal))


def mechanisms(cal: Calibration) -> dict[str, float]:
    """The model-parallel parameters ``cal`` identified (compute/calibration/calibrate_split.py)."""
    return {k: getattr(cal, k) for k in MECHANISMS if getattr(cal, k) is not None}


def identified(cal: Calibration) -> list[str]:
    compute = [f"compute_factor ({', '.join(m for m, _ in cal.compute_factors)})"] if cal.compute_factors else []
    return compute + [p for p in PARAMETERS if getattr(cal, p) is not None]

