"""Calibrating a system from measured training runs (issue 5: "fitted network
parameters"; ParaDL §4.4 empirical parametrization).

Benchmarks measure the network, but a framework's collectives may run far from it (a
different library version, another transport, no GPUDirect).  A few small training runs
measure what the framework really gets.  Each selected run is turned into evidence for
one parameter by inverting the cost model (compute from the profile, as in §4):

network (data-parallel runs, p >= 2, assumed not input-bound):
    t_comm = t_iteration - compute per iteration
    ring all-reduce of the gradients (docs/cost-model.md): t_comm = 2(p-1)(α + m/p · β)
    => β = (t_comm / (2(p-1)) - α) · p / m,  α kept from the base level
  one β for spans inside a node and one for spans across nodes (median of the runs).

input (runs assumed input-bound, loaders prefetching):
    t_iteration = n / rate,  n = samples per loader (compute/io.py)
  a data-parallel run with one loader on its node gives the loader rate, one with k
  loaders on a node the node rate k·n / t_iteration, a hybrid run (one leader loading
  per model-part group, ParaDL §3.2) the leader rate (median of the runs).

Every estimate keeps the run it came from, so the written system says where its
numbers come from; held-out runs then show whether they generalise.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from oracle.compute.calibration.compare import config_for, infeasibility
from oracle.compute.context import Context
from oracle.compute.io import EVERY_GPU, loaders
from oracle.compute.nccl import node_gpus
from oracle.compute.network import link, span_contiguous
from oracle.compute.strategies import REGISTRY
from oracle.compute.strategies.data import Data
from oracle.compute.strategies.serial import Serial
from oracle.compute.sweep import evaluate
from oracle.records import MeasuredRun
from oracle.vocabulary import RING

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

    def lines_for(self, parameter: str) -> list[int]:
        return [e.line for e in self.evidence if e.parameter == parameter]


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


def calibrate(kind: str, runs: list[tuple[MeasuredRun, Context]]) -> Calibration:
    evidence: list[Evidence] = []
    unused: list[tuple[int, str]] = []
    for run, ctx in runs:
        label = run_label(run, ctx)
        if run.strategy not in REPLICAS and not (kind == "input" and REGISTRY[run.strategy].hybrid):
            unused.append((run.line, f"{label}: calibrates with data-parallel and serial runs (and hybrids for the leader rate)"))
            continue
        if kind == "input" and excludes_io(run):  # issue 14: no loading rate from times without loading
            unused.append((run.line, f"{label}: its times exclude data loading (includes_io = {run.get('includes_io')})"))
            continue
        cfg = config_for(run, ctx)
        pt = evaluate(ctx, cfg)  # issue 27: the stack may cost with ParaDL's tool
        I = pt.iterations_per_epoch
        t = run.iteration_s if run.epoch_s is None else run.epoch_s / I
        compute = pt.compute_s / I
        if kind == "network":
            ev = network_evidence(run, ctx, label, t, compute)
        else:
            ev = input_evidence(run, ctx, cfg, label, t, compute + pt.communication_s / I)
        if isinstance(ev, str):
            unused.append((run.line, f"{label}: {ev}"))
        else:
            evidence.append(ev)

    def med(parameter: str) -> float | None:
        vals = [e.value for e in evidence if e.parameter == parameter]
        return statistics.median(vals) if vals else None

    return Calibration(
        kind=kind,
        beta_intra=med("beta_intra"),
        beta_inter=med("beta_inter"),
        loader_rate=med("loader_rate"),
        node_rate=med("node_rate"),
        leader_rate=med("leader_rate"),
        evidence=tuple(evidence),
        unused=tuple(unused),
        beta_levels=level_medians(evidence),
    )


def level_medians(evidence) -> tuple[tuple[str, float], ...]:
    """The median β of each network level the evidence comes from."""
    by_level: dict[str, list[float]] = {}
    for e in evidence:
        if e.parameter.startswith("beta") and e.level:
            by_level.setdefault(e.level, []).append(e.value)
    return tuple((name, statistics.median(v)) for name, v in by_level.items())


def network_evidence(run: MeasuredRun, ctx: Context, label: str, t: float, compute: float) -> Evidence | str:
    p = run.gpus
    if run.strategy != Data.name or p < 2:
        return "a network needs a data-parallel run on 2 or more GPUs"
    comm = t - compute
    if comm <= 0:
        return f"measured {t:.4g} s per iteration is not above the compute {compute:.4g} s: no communication to fit"
    gpn = ctx.system.gpus_per_node
    span = span_contiguous(p, gpn)
    lk = link(ctx.system, span, "allreduce")
    m = ctx.grad_delta * ctx.sum_w
    beta = (comm / (2 * (p - 1)) - lk.alpha_s) * p / m
    if ctx.algorithm != RING:  # the closed form is the ring's: invert the system's own algorithm
        beta = _through_algorithm(ctx, p, m, comm, lk.level)
    if beta is None or beta <= 0:
        return f"communication {comm:.4g} s is within the latency term of level {lk.level}"
    parameter = "beta_intra" if span <= node_gpus(ctx.system) else "beta_inter"  # an NVL72 rack is one node
    note = f"all-reduce of {m / 1e6:.1f} MB over span {span} ({lk.level}, α {lk.alpha_s:.3g} s): {comm:.4g} s"
    return Evidence(run.line, label, parameter, beta, t, compute, note, lk.level)


def _through_algorithm(ctx: Context, p: int, m: float, comm: float, level: str) -> float | None:
    """β of ``level`` (its protocol lines scaled alike, as fit runs writes them) at which
    the all-reduce the data strategy charges (strategies/data.py: the system's algorithm,
    e.g. nccl's choice per call, on GPUs 0..p-1) takes ``comm`` seconds; found by
    bisection on a log scale (the time grows with β). None when even a β 10^4 times
    smaller leaves more than ``comm`` (the latency alone is longer)."""
    from dataclasses import replace

    from oracle.compute.network import allreduce_algorithm, group_contiguous

    group = group_contiguous(p, ctx.system.gpus_per_node)
    base = next(lv for lv in ctx.system.network if lv.name == level)

    def seconds(k: float) -> float:
        lv = replace(base, beta_s_per_byte=base.beta_s_per_byte * k,
                     protocols=tuple(replace(pr, beta_s_per_byte=pr.beta_s_per_byte * k) for pr in base.protocols))
        system = replace(ctx.system, network=tuple(lv if x.name == level else x for x in ctx.system.network))
        return float(allreduce_algorithm(system, group, m, ctx.algorithm, contention=ctx.options.contention,
                                         purpose="gradient_allreduce")[0])  # fmt: skip

    lo, hi = -4.0, 4.0  # log10 of the factor on the level's β
    if seconds(10**lo) > comm:
        return None
    while seconds(10**hi) < comm and hi < 12:
        hi += 4.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if seconds(10**mid) < comm else (lo, mid)
    return base.beta_s_per_byte * 10 ** ((lo + hi) / 2)


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
