"""``oracle fit runs RUNS.csv --system S --calibrate compute -o PROFILE.yaml`` (issue 13).

Scales the runs' profile so that its projection reproduces the measured runs: per run,
the factor (measured - communication) / compute per iteration
(:func:`oracle.compute.calibration.calibrate.compute_scale`), the median over the selected runs.
The written profile keeps the original's device, precision and batch, so the compute
model still converts it when the GPU, precision or per-GPU batch change.

A ``precision`` column in RUNS.csv (fp32, tf32, fp16, bf16, or DeepLearningExamples'
FP32/TF32/AMP; AMP = mixed precision) sets each run's precision; without it the
profile's (issue 23).
"""

from __future__ import annotations

from statistics import median


def run_options(run, file: str, profile, flags: dict, system=None):
    """The Options of one run (its precision column, if any; else the profile's), under its
    stack column, else ``flags``' stack, else ``system``'s default stack (issue 25;
    compute/stack.py), and its option columns over ``flags`` (the command's options, issue 26)."""
    from dataclasses import replace

    from oracle.compute.calibration.compare import run_precision_options
    from oracle.compute.options import Flags, row_column
    from oracle.errors import OracleError

    try:
        precision, mixed = run_precision_options(run) or (None, None)
    except OracleError as exc:
        exc.file = file
        raise
    # the written profile is measured (a stack's efficiency, optimizer bytes and GPU overhead
    # per layer never apply to it): the runs are inverted under everything else the stack adds
    st = _stack_of(run, flags, system)
    st = replace(st, efficiency=(), update_bytes_per_parameter=(), gpu_overhead_s_per_layer=None) if st else None
    try:
        parsed = Flags.parse(**{**flags, **dict(run.flags), "stack": st})
        return parsed.resolve(profile, precision, mixed, system=system).options
    except OracleError as exc:
        exc.path = (row_column(exc.path, run.flags) if exc.file is None else None) or exc.path
        exc.file, exc.line = exc.file or file, exc.line or run.line
        raise


def calibrate_compute(runs_file: str, chosen, base_system: str, flags: dict):
    """(profile, factor, evidence, the stack the runs were inverted under) from the chosen
    runs, which must share one model and one profile.  Evidence: (line, label, factor) per run."""
    from oracle.compute.calibration.calibrate import (
        compute_scale,
        scaled_profile,
        stacks_in_force,
        stacks_text,
    )
    from oracle.compute.calibration.compare import config_for
    from oracle.compute.conversion import build_context
    from oracle.compute.stack import stack_system
    from oracle.compute.strategies import REGISTRY
    from oracle.errors import OracleError
    from oracle.load import load_model, load_system

    pairs = {(r.model, r.profile) for r in chosen}
    if len(pairs) > 1:
        raise OracleError("--calibrate compute needs runs of one model and one profile; use --where", file=runs_file)
    model, system = load_model(chosen[0].model), load_system(base_system)
    original = _first_profile(chosen[0], runs_file, model, system, flags)
    profile = _per_layer(model, system, original, run_options(chosen[0], runs_file, original, flags, system))
    evidence, stacks = [], []  # stacks: (run, context), for the stack each was inverted under
    doubled = scaled_profile(profile, 2.0, profile.source)
    for run in chosen:
        options = run_options(run, runs_file, profile, flags, system)
        on = stack_system(system, options.stack)  # the stack's kernels (activations) and NCCL_ALGO
        ctx = build_context(model, on, profile, options)
        pt = REGISTRY[run.strategy].evaluate(ctx, config_for(run, ctx))
        measured = run.measured_s / (pt.iterations_per_epoch if run.basis == "epoch" else 1.0)
        try:
            factor = compute_scale(pt, measured, _unscaled_s(model, on, doubled, options, run, pt))
        except ValueError as exc:
            raise OracleError(str(exc), file=runs_file, line=run.line) from None
        stacks.append((run, ctx))
        evidence.append((run.line, f"{model.name} {run.strategy} {run.gpus} GPUs B={run.global_batch:g}", factor))
    factor = median(f for _, _, f in evidence)
    lines = ", ".join(str(line) for line, _, _ in evidence)
    under = stacks_text(stacks_in_force(stacks))
    source = (f"{profile.source} Then compute calibrated by `oracle fit runs --calibrate compute` on"
              f" {runs_file} lines {lines} under {under} (times x {factor:.6g}, the median factor).").strip()  # fmt: skip
    return scaled_profile(profile, factor, source), factor, evidence, under


def _stack_of(run, flags: dict, system):
    """The stack a run is put under: its stack column, else the command's, else the system's
    default (issue 25); None for none."""
    from oracle.load import load_stack
    from oracle.vocabulary import NO_STACK

    name = run.stack or flags.get("stack") or (system.stack if system is not None else None)
    return load_stack(name) if name and name != NO_STACK else None


def _first_profile(first, runs_file: str, model, system, flags: dict):
    """The profile the runs name; ``estimate`` (a runs file without profiles) made at the first
    run's per-GPU batch and the precision it computes in: its precision and mixed-precision
    columns over the command's options, under its stack (as api.Inputs.context)."""
    from oracle.compute.calibration.compare import run_precision_options
    from oracle.compute.options import Flags
    from oracle.errors import OracleError
    from oracle.load import Files

    parsed = Flags.parse(**{**flags, **dict(first.flags), "stack": _stack_of(first, flags, system)})
    made = parsed.estimate_precision(system, *(run_precision_options(first) or (None, None)))
    try:
        return Files().profile_of(first.profile, model, system, made, first.global_batch / first.gpus)
    except OracleError as exc:
        exc.hint = (f"{exc.hint}; " if exc.hint else "") + f"named on line {first.line} of {runs_file}"
        raise


def _unscaled_s(model, system, doubled, options, run, pt) -> float:
    """Compute per iteration that does not scale with the profile's times (a stack's fixed
    cost, activation kernels its software adds): compute is affine in the profile's scale,
    c(1) = S + U and c(2) = 2S + U, so U = 2c(1) - c(2)."""
    from oracle.compute.calibration.compare import config_for
    from oracle.compute.conversion import build_context
    from oracle.compute.strategies import REGISTRY

    ctx = build_context(model, system, doubled, options)
    pt2 = REGISTRY[run.strategy].evaluate(ctx, config_for(run, ctx))
    return (2.0 * pt.compute_s - pt2.compute_s) / pt.iterations_per_epoch


def _per_layer(model, system, profile, options):
    """A total-only profile as per-layer times (spread as a projection spreads it)."""
    from dataclasses import replace

    from oracle.compute.conversion import prepare

    if profile.layers:
        return profile
    times, _ = prepare(model, system, profile, options)
    names = tuple(layer.name for layer in model.layers)
    return replace(profile, layers=tuple(zip(names, times)), total_fw_bw_per_sample_s=None,
                   total_wu_per_iteration_s=None)  # fmt: skip


def profile_text(runs_file: str, profile, factor: float, evidence, aside=()) -> str:
    """The calibrated profile as YAML, its header naming the runs and their factors (and
    the calibrate.SetAside runs left out, infeasible in the model)."""
    from oracle.render.profile_file import profile_yaml

    header = [
        f"Profile of {profile.model} calibrated by `oracle fit runs --calibrate compute` on {runs_file}:",
        (f"times x {factor:.6g} so the projection reproduces the runs; device {profile.device},"
         f" precision {profile.precision}, batch {profile.measured_samples_per_gpu} kept for the compute model."),
    ] + [f"  {runs_file}:{line} {label}: factor {f:.6g}" for line, label, f in evidence]
    if aside:
        header += ["Left out of the fit (infeasible in the model):"]
        header += [f"  {runs_file}:{a.line} {a.run}: {a.reason}" for a in aside]
    return profile_yaml(profile, header)
