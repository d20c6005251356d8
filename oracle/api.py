"""The Python API, mirroring the CLI (for notebooks and scripts).

    >>> import oracle
    >>> points = oracle.predict("resnet50", "abci", "resnet50_v100",
    ...                         gpus="4-1024", batch_per_gpu=32)
    >>> df = oracle.predict("resnet50", "abci", "resnet50_v100", gpus=[8, 16],
    ...                     batch_per_gpu=32, as_frame=True)

Models, systems and profiles are shipped names, paths, or already loaded objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle.model import Model, Profile, System


def predict(
    model: str | Path | Model,
    system: str | Path | System,
    profile: str | Path | Profile,
    gpus: str | int | Sequence[int] | None = None,
    strategies: str | Sequence[str] = "all",
    *,
    batch: float | None = None,
    batch_per_gpu: float | None = None,
    p2: int | None = None,
    segments: int | None = None,
    precision: str | None = None,
    memory_reuse: float = 1.0,
    contention: float | None = None,
    samples: int | None = None,
    collective: str | None = None,
    optimizer: str = "sgd",
    mixed_precision: bool = False,
    zero: int = 0,
    checkpointing: bool = False,
    overlap: str = "none",
    bucket_mb: float = 25.0,
    memory_model: str = "framework",
    as_frame: bool = False,
    compute_scaling: str = "model",
    stack: Any = None,
) -> Any:
    """Project every strategy at every GPU count and rank them (docs/cost-model.md-5).

    Returns a list of :class:`oracle.compute.cost.Point` (or a pandas DataFrame with
    the columns of ``oracle predict --format csv`` when ``as_frame``).  Without a
    batch, weak scaling with the profile's ``measured_samples_per_gpu`` (else 32)
    samples per GPU; without ``precision``, the profile's; without ``gpus``, the
    powers of two up to the system's size (at most 1024); ``stack``: a software stack
    (name, path or Stack) for the options left at their defaults (docs/cost-model.md).
    """
    from oracle.compute.context import Options
    from oracle.compute.options import profile_defaults
    from oracle.compute.stack import apply_stack
    from oracle.errors import OracleError
    from oracle.load import load_profile, load_stack, load_system

    profile = load_profile(profile)
    options = Options(
        memory_model=memory_model,
        precision=profile_defaults(profile, precision).precision.value,
        memory_reuse=memory_reuse,
        contention=contention,
        segments=segments,
        samples=samples,
        collective=collective,
        optimizer=optimizer,
        mixed_precision=mixed_precision,
        zero=zero,
        checkpointing=checkpointing,
        overlap=overlap,
        bucket_bytes=bucket_mb * 2**20,
        compute_scaling=compute_scaling,
    )
    options, system = apply_stack(options, load_system(system), load_stack(stack) if stack is not None else None)
    if memory_reuse != 1.0 and options.memory_model != "paradl":
        raise OracleError("memory_reuse (γ) scales ParaDL's bound", path="memory_reuse", hint="memory_model='paradl'")
    points = run_sweep(SweepRequest(model, system, profile, options, gpus, strategies, batch, batch_per_gpu, p2)).points
    if as_frame:
        from oracle.render.records import to_frame

        return to_frame(points)
    return points


@dataclass(frozen=True)
class SweepRequest:
    """What to project: inputs (names, paths or loaded objects), options, GPU counts
    (None: the powers of two up to the system, at most 1024), strategies and batch
    (neither batch nor batch_per_gpu: the profile's measured samples per GPU, else 32)."""

    model: Any
    system: Any
    profile: Any
    options: Any  # compute.context.Options
    gpus: Any = None
    strategies: Any = "all"
    batch: float | None = None
    batch_per_gpu: float | None = None
    p2: int | None = None


@dataclass(frozen=True)
class Sweep:
    """A projection and what it was made from (batch_per_gpu with its default filled in)."""

    model: Any
    system: Any
    profile: Any
    options: Any
    counts: list
    batch: float | None
    batch_per_gpu: float | None
    conversion: Any
    points: list


def run_sweep(req: SweepRequest) -> Sweep:
    """The one pipeline of ``api.predict`` and the CLI (``oracle predict``, ``plot``,
    ``report``): load, GPU counts, default batch, compute model, sweep."""
    from oracle.compute.conversion import prepare
    from oracle.compute.options import profile_defaults
    from oracle.compute.sweep import sweep
    from oracle.load import load_model, load_profile, load_system
    from oracle.load.values import default_gpus, parse_gpus

    m, s, pr = load_model(req.model), load_system(req.system), load_profile(req.profile)
    counts = default_gpus(s.total_gpus) if req.gpus is None else parse_gpus(req.gpus)  # '' is an error
    batch_per_gpu = req.batch_per_gpu  # both batches given: the sweep says which to drop
    if req.batch is None:
        batch_per_gpu = profile_defaults(pr, batch_per_gpu=batch_per_gpu).batch_per_gpu.value  # type: ignore[union-attr]
    times, conversion = prepare(m, s, pr, req.options)  # issue 13: the compute model
    points = sweep(m, s, times, counts, req.strategies, batch=req.batch, batch_per_gpu=batch_per_gpu, p2=req.p2,
                   options=req.options, profile_kind=pr.kind, conversion=conversion)  # fmt: skip
    return Sweep(m, s, pr, req.options, counts, req.batch, batch_per_gpu, conversion, points)


class Inputs:
    """Loads models, systems and profiles once per name and builds cost contexts,
    for commands that evaluate many configurations (compare, snapshot, check)."""

    def __init__(self, **options) -> None:
        from oracle.compute.context import Options

        self.precision = options.pop("precision", None)  # None: each profile's
        self.stack = options.pop("stack", None)  # issue 25: a run's stack column comes first
        self.options = Options(**options)
        self._contexts: dict = {}

    def context(self, model: str, system: str, profile: str, run=None):
        """The context of (model, system, profile); ``run``: a measured run whose
        ``precision`` column (issue 13) sets precision and mixed precision; else the
        ``precision`` option, else the profile's; likewise its ``stack`` column (issue 25),
        else the ``stack`` option, else none."""
        from dataclasses import replace

        from oracle.compute.compare import run_precision_options

        prec = run_precision_options(run) if run is not None else None
        precision, mixed = prec if prec is not None else (self.precision, self.options.mixed_precision)
        stack = (run.stack if run is not None else "") or self.stack
        key = (model, system, profile, precision, mixed, stack)
        if key not in self._contexts:
            from oracle.compute.conversion import build_context
            from oracle.compute.options import profile_defaults
            from oracle.compute.stack import apply_stack
            from oracle.load import load_model, load_profile, load_stack, load_system

            m, s, pr = load_model(model), load_system(system), load_profile(profile)
            precision = profile_defaults(pr, precision).precision.value
            options = replace(self.options, precision=precision, mixed_precision=mixed)
            options, s = apply_stack(options, s, load_stack(stack) if stack else None)
            self._contexts[key] = build_context(m, s, pr, options)
        return self._contexts[key]


def compare(
    runs, *, threshold: float | None = None, where: dict | None = None, exclude: dict | None = None,
    system=None, calibrate_on: str | None = None, **options,
):  # fmt: skip
    """Compare projections with measured runs (a RUNS.csv path or MeasuredRun list).

    ``where`` keeps runs whose column values are in the given sets, e.g.
    {"quality": {"A"}}, ``exclude`` drops runs likewise; ``system`` replaces every
    run's system.  Returns (rows,
    summary); see oracle.compute.compare."""
    from oracle.compute import compare as cmp
    from oracle.compute.strategies import NAMES
    from oracle.errors import OracleError
    from oracle.load.runs import load_runs

    file = str(runs) if isinstance(runs, (str, Path)) else None
    if file is not None:
        runs = load_runs(file, NAMES)
    everything = runs  # --calibrate-on picks its runs from all of them; where/exclude: what is scored
    if where:
        runs = [r for r in runs if all(r.get(k) in v for k, v in where.items())]
        if not runs:
            raise OracleError("no run matches the --where filter", file=file)
    if exclude:
        runs = [r for r in runs if not any(r.get(k) in v for k, v in exclude.items())]
        if not runs:
            raise OracleError("--exclude drops every run", file=file)
    if system is not None:  # one system for every run (e.g. a calibrated one)
        from dataclasses import replace

        runs = [replace(r, system=str(system)) for r in runs]
        everything = [replace(r, system=str(system)) for r in everything]
    inputs = Inputs(**options)
    limit = cmp.DEFAULT_ANOMALY if threshold is None else threshold
    held = None
    if calibrate_on is not None:
        held = HeldOut(everything, calibrate_on, inputs, file)
        calibration = {r.line for r in held.calibration_runs}
        runs = [r for r in runs if r.line not in calibration]
        if not runs:
            raise OracleError(f"'{calibrate_on}' selects every run left to score", path="--calibrate-on", file=file)
    rows = []
    points: dict = {}  # projections shared by runs of the same configuration
    for run in runs:
        try:
            ctx = held.context(run) if held else inputs.context(run.model, run.system, run.profile, run)
            rows.append(cmp.compare_run(run, ctx, limit, points))
        except OracleError as exc:
            if exc.file is None:  # a problem of the row itself: point at it
                exc.file, exc.line = file, run.line
            elif file and not exc.hint:  # a problem of a file the row names
                exc.hint = f"named on line {run.line} of {file}"
            raise
    if held is not None:
        rows = held.with_naive(rows)
        return rows, held.summary(rows)
    return rows, cmp.summarize(rows)


class HeldOut:
    """``--calibrate-on EXPR``: calibrate each base system on the runs EXPR selects
    (compute/calibrate_all.py, ``--calibrate all``) and project only the others, next to
    the naive projection from the nearest smaller calibrated run."""

    def __init__(self, runs, expr: str, inputs: Inputs, file: str | None) -> None:
        from oracle.compute.calibrate_all import apply, calibrate_all, run_filter
        from oracle.errors import OracleError

        try:
            keep = run_filter(expr)
        except ValueError as exc:
            raise OracleError(str(exc), path="--calibrate-on") from None
        self.calibration_runs = [r for r in runs if keep(r)]
        self.evaluated = [r for r in runs if not keep(r)]
        for what, chosen in (("selects no run", self.calibration_runs), ("selects every run", self.evaluated)):
            if not chosen:
                raise OracleError(f"'{expr}' {what}", path="--calibrate-on", file=file,
                                  hint="calibrate on some runs, e.g. gpus<=8, and score the others")  # fmt: skip
        self.inputs = inputs
        self.systems: dict[str, object] = {}
        self.notes: list[tuple[str, str]] = []
        for name in sorted({r.system for r in runs}):
            pairs = [(r, inputs.context(r.model, r.system, r.profile, r)) for r in self.calibration_runs if r.system == name]
            if not pairs:
                raise OracleError(f"no calibration run on system '{name}'", path="--calibrate-on", file=file)
            cal = calibrate_all(pairs)
            self.systems[name] = apply(pairs[0][1].system, cal)
            self.notes.append((name, _calibration_note(cal)))
        self._contexts: dict = {}

    def context(self, run):
        from oracle.compute.calibrate_all import with_system

        base = self.inputs.context(run.model, run.system, run.profile, run)
        if id(base) not in self._contexts:
            self._contexts[id(base)] = with_system(base, self.systems[run.system])
        return self._contexts[id(base)]

    def with_naive(self, rows):
        """Each row with its naive projection and whether it extrapolates in batch."""
        from dataclasses import replace

        from oracle.compute.calibrate_all import beyond_calibration, naive_projection

        out = []
        for row in rows:
            naive = naive_projection(row.run, self.calibration_runs, row.point.iterations_per_epoch)
            beyond = beyond_calibration(row.run, self.calibration_runs)
            out.append(replace(row, naive_s=naive[0] if naive else None, beyond_calibration=beyond))
        return out

    def summary(self, rows):
        from dataclasses import replace

        from oracle.compute import compare as cmp

        summary = cmp.summarize(rows)
        naive, model = _naive_stats(rows)
        within = [r for r in rows if r.beyond_calibration is None]
        beyond = [r for r in rows if r.beyond_calibration is not None]
        return replace(
            summary, calibration=tuple(self.notes), naive=naive, model_on_naive_runs=model,
            within_calibration=cmp.stats(within) if within and beyond else None,
            naive_within_calibration=_naive_stats(within)[0] if within and beyond else None,
            beyond_calibration=cmp.stats(beyond) if beyond else None,
            beyond_lines=tuple(r.run.line for r in beyond),
        )  # fmt: skip


def _naive_stats(rows):
    """(the naive projection's stats, the model's on the same runs) over the rows that
    have a naive projection, or (None, None)."""
    from dataclasses import replace

    from oracle.compute import compare as cmp

    with_naive = [r for r in rows if r.naive_s is not None]
    if not with_naive:
        return None, None
    naive = cmp.stats([replace(r, predicted_s=r.naive_s, accuracy=cmp.accuracy(r.naive_s, r.measured_s))
                       for r in with_naive])  # fmt: skip
    return naive, cmp.stats(with_naive)


def _calibration_note(cal) -> str:
    from oracle.compute.calibrate_all import identified

    lines = sorted({e.line for e in cal.evidence})
    found = ", ".join(identified(cal)) or "nothing"
    return f"calibrated {found} on lines {', '.join(map(str, lines)) or '-'}"
