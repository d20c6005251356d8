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
    precision: str = "fp32",
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
    as_frame: bool = False,
) -> Any:
    """Project every strategy at every GPU count and rank them (SPEC §4-5).

    Returns a list of :class:`oracle.compute.cost.Point` (or a pandas DataFrame with
    the columns of ``oracle predict --format csv`` when ``as_frame``).  Without a
    batch, weak scaling with the profile's ``measured_samples_per_gpu`` (else 32)
    samples per GPU; without ``gpus``, the powers of two up to the system's size
    (at most 1024).
    """
    from oracle.compute.context import Options
    from oracle.compute.sweep import sweep
    from oracle.load import load_model, load_profile, load_system
    from oracle.load.profile import bind_profile
    from oracle.load.values import default_gpus, parse_gpus

    m = load_model(model)
    s = load_system(system)
    pr = load_profile(profile)
    times = bind_profile(m, pr)
    counts = default_gpus(s.total_gpus) if gpus is None else parse_gpus(gpus)
    if batch is None and batch_per_gpu is None:
        batch_per_gpu = pr.measured_samples_per_gpu or 32
    options = Options(
        precision=precision,
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
    )
    points = sweep(
        m, s, times, counts, strategies, batch=batch, batch_per_gpu=batch_per_gpu, p2=p2, options=options,
        profile_kind=pr.kind,
    )
    if as_frame:
        from oracle.render.records import to_frame

        return to_frame(points)
    return points


class Inputs:
    """Loads models, systems and profiles once per name and builds cost contexts,
    for commands that evaluate many configurations (compare, snapshot, check)."""

    def __init__(self, **options) -> None:
        from oracle.compute.context import Options

        self.options = Options(**options)
        self._contexts: dict = {}

    def context(self, model: str, system: str, profile: str):
        key = (model, system, profile)
        if key not in self._contexts:
            from oracle.compute.context import Context
            from oracle.load import load_model, load_profile, load_system
            from oracle.load.profile import bind_profile

            m, s, pr = load_model(model), load_system(system), load_profile(profile)
            self._contexts[key] = Context(m, s, bind_profile(m, pr), self.options, pr.kind)
        return self._contexts[key]


def compare(
    runs, *, threshold: float | None = None, where: dict | None = None, exclude: dict | None = None,
    system=None, **options,
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
    inputs = Inputs(**options)
    limit = cmp.DEFAULT_ANOMALY if threshold is None else threshold
    rows = []
    points: dict = {}  # projections shared by runs of the same configuration
    for run in runs:
        try:
            rows.append(cmp.compare_run(run, inputs.context(run.model, run.system, run.profile), limit, points))
        except OracleError as exc:
            if exc.file is None:  # a problem of the row itself: point at it
                exc.file, exc.line = file, run.line
            elif file and not exc.hint:  # a problem of a file the row names
                exc.hint = f"named on line {run.line} of {file}"
            raise
    return rows, cmp.summarize(rows)
