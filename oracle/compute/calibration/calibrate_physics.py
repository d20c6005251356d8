"""What measured runs cannot separate, and the physical bounds of a calibration (issue 26).

Totals of data-parallel runs inside one node are compute plus an all-reduce over the
node's link (NVLink/NVSwitch): without a measured ``compute_s`` or a one-GPU run, a
slow run is slow compute or a slow link, and the totals cannot tell which.  A
framework's compute is far more often off its profile (an estimated profile, the
framework's kernels, input stalls) than a GPU's own link is off its datasheet, so when
the link it would take lies outside the physical bounds below, the excess is taken as
compute (:func:`prefer_compute`), with a note naming the runs and the measurement that
would separate the two causes.

Physical bounds (:func:`violations`) of a fitted value:

- a level's bandwidth no faster than the base system's (its datasheet or benchmark:
  a training run's collective does not beat the link; ``FASTER_TOLERANCE`` for the
  noise of a measured time), and no slower than ``SLOWEST`` of it: a link that slow is
  broken, or the time was lost elsewhere (compute, loading, stragglers);
- a model's compute no faster than the GPU's peak: training FLOPs (forward and twice
  as much backward: 3x the forward FLOPs, Kaplan et al. 2020 §2.1) per second at most
  the highest dense peak the GPU lists.
"""

from __future__ import annotations

SLOWEST = 0.1  # issue 26: a bandwidth below a tenth of the link's is not the link
FASTER_TOLERANCE = 1.05  # a measured time's noise: 5% above the base's bandwidth passes
TRAINING_FLOPS = 3.0  # forward + backward ≈ 3x forward FLOPs (Kaplan et al. 2020, §2.1)
SEPARATE = ("a compute_s column (the time of forward, backward and update per iteration), a 1-GPU run,"
            " or an nccl-tests log of the link (oracle fit network)")  # fmt: skip


def gb_per_s(beta: float) -> str:
    return f"{1 / beta / 1e9:.3g} GB/s"


def _level(system, name: str):
    return next(lv for lv in system.network if lv.name == name)


def out_of_bounds(system, level_name: str, beta: float) -> str | None:
    """Why β on ``level_name`` of ``system`` (the base) is unphysical, or None."""
    base = _level(system, level_name).beta_s_per_byte
    if beta * FASTER_TOLERANCE < base:
        return f"faster than the base's {gb_per_s(base)} (datasheet or benchmark)"
    if beta * SLOWEST > base:
        return f"below a tenth of the base's {gb_per_s(base)}"
    return None


def prefer_compute(data: list, factors: dict, done: set, evidence: list, notes: list, iteration, network) -> None:
    """Step 0b of --calibrate all: a model without a compute factor whose runs inside
    one node (not input-bound) imply a link outside its physical bounds gets the
    factor that explains them with the base's link instead (the module doc); their
    lines join ``done`` (they calibrate no network).  ``iteration`` and ``network`` are
    calibrate_all._iteration and calibrate.network_evidence."""
    from oracle.compute.calibration.calibrate import Evidence, includes_io, run_label
    from oracle.compute.nccl import node_gpus

    per_model: dict[str, list] = {}
    for run, ctx in data:
        name = ctx.model.name
        if name in factors or run.gpus < 2 or run.gpus > node_gpus(ctx.system) or includes_io(run):
            continue
        _, t, compute, comm = iteration(run, ctx)
        ev = network(run, ctx, run_label(run, ctx), t, compute)
        why = out_of_bounds(ctx.system, ev.level, ev.value) if not isinstance(ev, str) else ev
        if why is None or not compute > 0 or t <= comm:
            continue
        shown = gb_per_s(ev.value) if not isinstance(ev, str) else "none"
        per_model.setdefault(name, []).append((run, t, compute, comm, shown, why))
    import statistics

    for name, found in per_model.items():
        values = [(t - comm) / compute for _, t, compute, comm, _, _ in found]
        factors[name] = statistics.median(values)
        lines = ("lines " if len(found) > 1 else "line ") + ", ".join(str(r.line) for r, *_ in found)
        for (run, t, compute, comm, shown, why), value in zip(found, values):
            done.add(run.line)
            note = (f"inferred: one node's totals cannot tell compute from the link ({shown}, {why});"
                    " taken as compute at the base's link")  # fmt: skip
            evidence.append(Evidence(run.line, f"{name} {run.strategy} {run.gpus} GPUs B={run.global_batch:g}",
                                     "compute_factor", value, t, compute, note))  # fmt: skip
        notes.append(
            f"{lines}: one node's totals cannot tell {name}'s compute from its link (the link would be"
            f" {found[0][4]}, {found[0][5]}); the physically likely cause is taken: compute"
            f" {factors[name]:.3g}x the profile. To separate them, give {SEPARATE}"
        )


def _lines(lines) -> str:
    return ("lines " if len(lines) > 1 else "line ") + ", ".join(map(str, lines))


def violations(cal, pairs: list) -> list[tuple[tuple[int, ...], str]]:
    """Every fitted value of ``cal`` outside its physical bounds (the module doc): (its
    runs' lines, why, naming them and the measurement that would separate the causes)."""
    out = []
    base = {}
    for _, ctx in pairs:
        base.setdefault(ctx.system.name, ctx.system)
    for level, beta in cal.beta_levels:
        for system in base.values():
            if not any(lv.name == level for lv in system.network):
                continue
            why = out_of_bounds(system, level, beta)
            if why:
                lines = sorted({e.line for e in cal.evidence if e.level == level and e.parameter.startswith("beta")})
                out.append((tuple(lines), f"{level} at {gb_per_s(beta)} from {_lines(lines)} is {why}:"
                           f" the time these runs lose lies elsewhere (compute, loading or stragglers); to separate"
                           f" the causes, give {SEPARATE}"))  # fmt: skip
    out += _above_peak(cal, pairs)
    return out


def _above_peak(cal, pairs: list) -> list:
    """Compute factors that make a run's training FLOP/s exceed the GPU's highest peak."""
    from oracle.compute.strategies.data import Data

    factors = dict(cal.compute_factors)
    out = []
    for run, ctx in pairs:
        f = factors.get(ctx.model.name)
        peaks = [v for _, v in ctx.system.gpu_peaks] or [ctx.system.gpu_peak_flops or 0.0]
        if f is None or not max(peaks) > 0 or not any(e.line == run.line for e in cal.evidence
                                                      if e.parameter == "compute_factor"):  # fmt: skip
            continue
        e = next(e for e in cal.evidence if e.line == run.line and e.parameter == "compute_factor")
        seconds = e.value * e.compute_iteration_s  # this run's compute per iteration
        per_gpu = run.global_batch / max(1, run.gpus if run.strategy == Data.name else 1)
        rate = TRAINING_FLOPS * ctx.model.flops * per_gpu / seconds
        if rate > max(peaks):
            out.append(((run.line,), f"line {run.line}: {ctx.model.name}'s compute {e.value:.3g}x its profile means"
                       f" {rate / 1e12:.4g} TFLOP/s per GPU, above the GPU's peak {max(peaks) / 1e12:.4g}:"
                       " its time per iteration, or its batch, is not this model's; check the row"))  # fmt: skip
    return out
