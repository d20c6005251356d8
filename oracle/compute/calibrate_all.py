"""``--calibrate all``: every parameter a set of measured runs identifies, in turn.

Each run's measured iteration is compute (the profile), communication and, for runs
whose times include data loading (the runs file's ``includes_io`` column), the input
stall (compute/io.py: with prefetching an iteration lasts max(busy, loading)).  Which
mechanism a run measures follows from what is already known, so the parameters are
identified in an order in which each step needs only earlier ones:

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

Parameters no run identifies keep the base system's values and are listed as such;
runs that identify nothing are listed with the reason (compute/calibrate.py).
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from oracle.compute.calibrate import Calibration, Evidence, _input, _label, _network
from oracle.compute.compare import config_for
from oracle.compute.context import Context
from oracle.compute.io import EVERY_GPU, loaders
from oracle.compute.strategies import REGISTRY
from oracle.model import InputPipeline, NetworkLevel, Protocol, System

SLOWER = 1.5  # a run implying a β this much above the tightest one is not network-bound
PARAMETERS = ("loader_rate", "beta_intra", "beta_inter", "node_rate", "leader_rate")
TRUE = ("yes", "true", "1", "y")


def includes_io(run) -> bool:
    return str(run.get("includes_io") or "").strip().lower() in TRUE


def with_system(ctx: Context, system: System) -> Context:
    """The same model, times, compute conversion and options on another system of the
    same GPUs (a calibrated network or input pipeline): a copy of the context, whose
    cached sums depend on the model and the times only."""
    import copy

    out = copy.copy(ctx)
    out.system = system
    out.algorithm = ctx.options.collective or system.collective_algorithm
    return out


def calibrated_system(system: System, beta_intra=None, beta_inter=None, loader=None, node=None, leader=None) -> System:
    """``system`` with the calibrated β per level (its protocol lines scaled alike: the
    transport is slower or faster as a whole) and input rates."""
    levels = []
    for level in system.network:
        beta = beta_intra if level.max_gpus <= system.gpus_per_node else beta_inter
        if beta is None:
            levels.append(level)
            continue
        scale = beta / level.beta_s_per_byte
        protocols = tuple(Protocol(p.name, p.alpha_s, p.beta_s_per_byte * scale) for p in level.protocols)
        levels.append(NetworkLevel(level.name, level.max_gpus, level.alpha_s, beta, level.source, protocols))
    pipe = system.input
    if any(v is not None for v in (loader, node, leader)):
        pipe = replace(
            pipe or InputPipeline(overlap=True),
            loader_samples_per_s=loader if loader is not None else (pipe.loader_samples_per_s if pipe else None),
            node_samples_per_s=node if node is not None else (pipe.node_samples_per_s if pipe else None),
            leader_samples_per_s=leader if leader is not None else (pipe.leader_samples_per_s if pipe else None),
        )
    return replace(system, network=tuple(levels), input=pipe)


def _iteration(run, ctx: Context):
    cfg = config_for(run, ctx)
    pt = REGISTRY[run.strategy].evaluate(ctx, cfg)
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
    data = [(r, c) for r, c in pairs if r.strategy in ("data", "serial")]
    # 1. loader rate: one loading process on its node
    for run, ctx in data:
        cfg, t, compute, comm = _iteration(run, ctx)
        per_node = loaders(EVERY_GPU, cfg.gpus, cfg.p1, cfg.p2, ctx.system.gpus_per_node)[1]
        if includes_io(run) and per_node == 1:
            ev = _input(run, ctx, cfg, _label(run, ctx), t, compute + comm)
            _keep(ev, run, evidence, unused)
    loader = _median(evidence, "loader_rate")
    # 2. network: a run's time beyond its compute is at least its all-reduce, so the
    #    network is no slower than the fastest β any run implies (per span class);
    #    runs far slower than that (> SLOWER x) lose time elsewhere: their loading
    _network_or_input(data, evidence, unused, loader)
    # 3. leader rate, on the network calibrated so far
    beta_intra, beta_inter = _median(evidence, "beta_intra"), _median(evidence, "beta_inter")
    node = _median(evidence, "node_rate")
    for run, ctx in pairs:
        if (run.strategy, run.line) in {(r.strategy, r.line) for r, _ in data}:
            continue
        label = _label(run, ctx)
        if not (includes_io(run) and REGISTRY[run.strategy].hybrid):
            unused[run.line] = f"{label}: identifies no parameter of --calibrate all (model-parallel efficiency is not fitted yet)"
            continue
        cal_ctx = with_system(ctx, calibrated_system(ctx.system, beta_intra, beta_inter, loader, node))
        cfg, t, compute, comm = _iteration(run, cal_ctx)
        _keep(_input(run, cal_ctx, cfg, label, t, compute + comm), run, evidence, unused)
    return Calibration(
        kind="all",
        beta_intra=beta_intra,
        beta_inter=beta_inter,
        loader_rate=loader,
        node_rate=node,
        leader_rate=_median(evidence, "leader_rate"),
        evidence=tuple(evidence),
        unused=tuple(sorted(unused.items())),
    )


def _network_or_input(data: list, evidence: list, unused: dict, loader: float | None) -> None:
    """Step 2 of the module doc."""
    done = {e.line for e in evidence}
    implied = []
    for run, ctx in data:
        if run.line in done:
            continue
        if run.gpus < 2:
            unused[run.line] = f"{_label(run, ctx)}: one GPU, and its time is not input-bound or not marked includes_io"
            continue
        cfg, t, compute, comm = _iteration(run, ctx)
        implied.append((run, ctx, cfg, t, compute, comm, _network(run, ctx, _label(run, ctx), t, compute)))
    tight: dict[str, float] = {}
    for *_, ev in implied:
        if not isinstance(ev, str):
            tight[ev.parameter] = min(tight.get(ev.parameter, ev.value), ev.value)
    for run, ctx, cfg, t, compute, comm, ev in implied:
        if isinstance(ev, str) or ev.value <= SLOWER * tight[ev.parameter]:
            _keep(ev, run, evidence, unused)
            continue
        why = f"implies β {ev.value / tight[ev.parameter]:.1f}x the tightest run's: time is lost elsewhere"
        if not includes_io(run):
            unused[run.line] = f"{_label(run, ctx)}: {why}, and it is not marked includes_io"
            continue
        net = calibrated_system(ctx.system, tight.get("beta_intra"), tight.get("beta_inter"), loader)
        cal_ctx = with_system(ctx, net)
        cfg, t, compute, comm = _iteration(run, cal_ctx)
        _keep(_input(run, cal_ctx, cfg, _label(run, ctx), t, compute + comm), run, evidence, unused)


def _keep(ev, run, evidence: list, unused: dict) -> None:
    if isinstance(ev, str):
        unused[run.line] = ev if ev.startswith(run.model) else f"{run.model} {run.strategy} {run.gpus} GPUs: {ev}"
    else:
        evidence.append(ev)
        unused.pop(run.line, None)


def apply(system: System, cal: Calibration) -> System:
    """The base system with everything ``cal`` identified."""
    return calibrated_system(system, cal.beta_intra, cal.beta_inter, cal.loader_rate, cal.node_rate, cal.leader_rate)


def identified(cal: Calibration) -> list[str]:
    return [p for p in PARAMETERS if getattr(cal, p) is not None]


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
    nearest smaller calibration run of the same model and strategy (the largest GPU
    count not above the run's), times the run's iterations; (seconds on the run's
    basis, the run used) or None without such a run."""
    same = [c for c in calibration_runs
            if c.model == run.model and c.strategy == run.strategy and c.gpus <= run.gpus]  # fmt: skip
    if not same:
        return None
    ref = max(same, key=lambda c: (c.gpus, c.global_batch))
    ref_iter = ref.iteration_s if ref.iteration_s is not None else None
    if ref_iter is None:
        ref_iter = ref.epoch_s * ref.global_batch / _samples(ref, run, iterations)
    seconds = ref_iter * (iterations if run.basis == "epoch" else 1.0)
    return seconds, ref


def _samples(ref, run, iterations: float) -> float:
    """Samples per epoch D of the reference run (the evaluated run's dataset: the same
    model), from the evaluated run's iterations I = D / B."""
    return iterations * run.global_batch
