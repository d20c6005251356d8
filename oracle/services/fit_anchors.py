"""The ``anchors:`` section ``oracle fit runs --calibrate all`` writes into a calibrated
system (issue 26; read back by load/anchors.py, used by compute/calibration/anchor_points.py): every
calibration run's measured time per iteration (and its compute and communication when
measured), its configuration and the options it ran with."""

from __future__ import annotations


def anchor_entries(pairs: list, flags: dict, runs_file: str) -> list[dict]:
    """One ``anchors:`` entry per (run, context) of ``pairs``; ``flags``: the command's
    options (Flags.parse keywords), under the run's own columns."""
    from oracle.compute.calibration.compare import config_for
    from oracle.compute.strategies import REGISTRY

    out = []
    for run, ctx in pairs:
        pt = REGISTRY[run.strategy].evaluate(ctx, config_for(run, ctx))
        per_it = 1.0 / pt.iterations_per_epoch if run.basis == "epoch" else 1.0
        entry: dict = {"source": f"{runs_file}:{run.line}", "model": pt.model, "strategy": run.strategy,
                       "gpus": run.gpus, "global_batch": _g(run.global_batch)}  # fmt: skip
        entry.update({k: getattr(run, k) for k in ("p1", "p2", "segments") if getattr(run, k) is not None})
        entry["iteration_s"] = _g(run.measured_s * per_it)
        if run.compute_s is not None and run.comm_s is not None:
            entry.update(compute_s=_g(run.compute_s * per_it), comm_s=_g(run.comm_s * per_it))
        entry.update(_options(run, flags))
        out.append(entry)
    return out


def _options(run, flags: dict) -> dict:
    """The precision, stack and option columns ``run`` ran with (its own, else the command's)."""
    from oracle.compute.options import OPTION_COLUMNS, given_flags

    out: dict = {}
    precision = run.get("precision") or flags.get("precision")
    if precision:
        out["precision"] = precision
    stack = run.stack or flags.get("stack")
    if stack:
        out["stack"] = str(getattr(stack, "name", stack))
    given = given_flags({**flags, **dict(run.flags)})
    columns = {col: given[key] for col, (key, _) in OPTION_COLUMNS.items() if key in given}
    if columns:
        out["options"] = {k: (v if isinstance(v, (bool, int, float)) else str(v)) for k, v in columns.items()}
    return out


def _g(x: float) -> float | int:
    """Six significant digits (as the calibrated parameters), whole numbers as integers."""
    y = float(f"{x:.6g}")
    return int(y) if y == int(y) and abs(y) < 1e15 else y
