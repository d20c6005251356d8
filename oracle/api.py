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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from oracle.model import Model, Profile, System
from oracle.vocabulary import ESTIMATE


def predict(
    model: str | Path | Model,
    system: str | Path | System,
    profile: str | Path | Profile = ESTIMATE,
    gpus: str | int | Sequence[int] | None = None,
    strategies: str | Sequence[str] = "all",
    *,
    p2: int | None = None,
    as_frame: bool = False,
    **flags: Any,
) -> Any:
    """Project every strategy at every GPU count and rank them (docs/cost-model.md-5).

    ``flags`` are the options of ``oracle predict`` (docs/cli.md) by their names:
    ``batch``, ``batch_per_gpu``, ``precision``, ``memory_model``, ``memory_reuse`` (for
    --memory-reuse), ``bucket_mb`` (--bucket-MB), ...; the CLI and this function build
    them with the same :meth:`oracle.compute.options.Flags.parse`.  Returns a list of
    :class:`oracle.compute.cost.Point` (or a pandas DataFrame with the columns of
    ``oracle predict --format csv`` when ``as_frame``).  Without a batch, weak scaling
    with the profile's ``measured_samples_per_gpu`` (else 32) samples per GPU; without
    ``precision``, the profile's; without ``gpus``, the powers of two up to the system's
    size (at most 1024).  ``profile`` "estimate" (the default): the compute model's
    estimate for the system's GPU at the run's precision and per-GPU batch.
    """
    points = run_sweep(request(model, system, profile, gpus, strategies, p2, **flags)).points
    if as_frame:
        from oracle.render.records import to_frame

        return to_frame(points)
    return points


@dataclass(frozen=True)
class SweepRequest:
    """What to project: the loaded inputs, the run (compute.options.Run: options and
    batch), the GPU counts, the strategies and p2."""

    model: Any
    system: Any
    profile: Any
    run: Any
    counts: list
    strategies: Any = "all"
    p2: int | None = None
    top: int | None = None  # issue 29: only the first ``top`` points of every GPU count are built
    brief: bool = False  # issue 29: points with only the details a CSV row shows (compute/sweep.sweep)


@dataclass(frozen=True)
class Sweep:
    """A projection's points and the compute conversion (compute/conversion.py) they used."""

    points: list
    conversion: Any


def request(model, system, profile, gpus=None, strategies="all", p2=None, files=None, **flags) -> SweepRequest:
    """What ``oracle predict`` (and plot, report, api.predict) projects, each input loaded
    and parsed once: the flags checked first (compute.options.Flags.parse), then model,
    system and profile (names, paths or loaded objects, read through ``files``, a
    load.Files; a profile file is checked against the model before the GPU counts are read),
    the GPU counts (None: the powers of two up to the system, at most 1024) and what the
    profile gives that the flags do not.  ``-p estimate`` is made once the counts are known
    (:func:`estimate_at`)."""
    from oracle.compute.stack import stack_system
    from oracle.load import Files, is_estimate
    from oracle.load.values import default_gpus, parse_gpus

    files = files or Files()
    checked = parse_flags(files, flags)
    m, s = files.model(model), files.system(system)
    estimated = is_estimate(profile)
    pr = None if estimated else files.bound_profile(profile, m, s)
    checked = system_flags(files, flags, s, checked)
    s = stack_system(s, checked.options.stack)  # issue 25: the stack's input pipeline, if any
    counts = default_gpus(s.total_gpus) if gpus is None else parse_gpus(gpus)  # '' is an error
    if estimated:
        pr = files.bound_profile(profile, m, s, *estimate_at(checked, counts, s))
    return SweepRequest(m, s, pr, checked.resolve(pr, system=s), counts, strategies, p2)


def estimate_at(checked, counts, system) -> tuple[str, float | None]:
    """(precision, per-GPU batch) ``-p estimate`` makes a run's profile at on ``system``
    (compute.options.Flags.estimate_precision), and the options' per-GPU batch,
    else their global batch over the fewest GPUs asked for (the compute model converts it to
    every other point's batch); None: compute.options.DEFAULT_BATCH_PER_GPU."""
    batch = checked.batch_per_gpu
    if batch is None and checked.batch is not None:
        batch = checked.batch / min(counts)
    return checked.estimate_precision(system), batch


def point_at_row(exc, run, file: str | None) -> None:
    """Point ``exc`` (raised projecting ``run``) at the row of ``file`` when it is the row's
    own problem or a name in one of its cells that is no file and no shipped name (a
    misspelled model, system, profile or stack: 'runs.csv:3: stack: ...'); a problem in a
    file the row names keeps that file, with the row in its hint."""
    from oracle.compute.options import row_column
    from oracle.resources import exists

    cells = {"model": run.model, "system": run.system, "profile": run.profile, "stack": run.stack}
    column = next((c for c, v in cells.items() if v and exc.file == v and not exists(Path(v))), None)
    if exc.file is None:  # an option the row's columns give: their column, not the command's flag
        exc.path = row_column(exc.path, run.flags) or exc.path
    if exc.file is None or (column and file):
        exc.file, exc.line, exc.path = file or exc.file, run.line, exc.path or column
    elif file:
        exc.hint = (f"{exc.hint}; " if exc.hint else "") + f"named on line {run.line} of {file}"


def with_stack(files, flags: dict) -> dict:
    """The flags with ``stack`` (a name or path, issue 25) loaded through ``files``;
    ``none`` (vocabulary.NO_STACK): no stack."""
    from oracle.errors import OracleError
    from oracle.stack import Stack
    from oracle.vocabulary import NO_STACK

    stack = flags.get("stack")
    if stack is None or isinstance(stack, Stack):
        return flags
    if not isinstance(stack, (str, Path)) or not str(stack).strip():
        raise OracleError(f"got {stack!r}; expected a stack name or path, or {NO_STACK}", path="--stack")
    return {**flags, "stack": None if str(flags["stack"]) == NO_STACK else files.stack(flags["stack"])}


def parse_flags(files, flags: dict):
    """``flags`` parsed (compute.options.Flags.parse), their ``stack`` loaded through
    ``files``; where they name none, checked as far as they can be before the system file's
    stack is read (Flags.pending: :func:`system_flags` parses them again under it)."""
    from oracle.compute.options import Flags

    return Flags.parse(**with_stack(files, flags), stack_pending=flags.get("stack") is None)


def system_flags(files, flags: dict, system, checked):
    """``checked`` (the flags :func:`parse_flags` parsed), or, when they name no stack, the
    flags parsed again under the stack in force: the system's default (its file's
    ``stack:``, else none; issue 25).  A rule on what the stack sets is checked here."""
    from oracle.compute.options import Flags

    if not checked.pending:
        return checked
    return Flags.parse(**with_stack(files, {**flags, "stack": system.stack}))


def model_system(system, model_name: str, stack):
    """``system``, or the model's own calibration in it (its ``models:``, issue 26) under
    ``stack`` again (the stack's paths and input pipeline apply to it too)."""
    from oracle.compute.stack import stack_system

    if model_name not in dict(system.models):
        return system
    return stack_system(system.for_model(model_name), stack)


def run_sweep(req: SweepRequest, stream: bool = False) -> Sweep:
    """The one pipeline of ``api.predict`` and the CLI (``oracle predict``, ``plot``,
    ``report``): the compute model, then the sweep.  ``stream``: the points an iterator
    of runs of GPU counts, each evaluated as it is read, one held at a time (issue 29:
    compute/sweep.sweep's ``stream``); a calibrated system's in one run."""
    req, points, conversion = _swept(req, stream=stream)
    if req.system.anchors:  # issue 26: a calibrated system's measured runs (a list: the whole sweep)
        from oracle.services.anchors import anchored_sweep

        points = anchored_sweep(points, req)
        return Sweep(iter([points]) if stream else points, conversion)
    return Sweep(points, conversion)


def stream_sweep(req: SweepRequest):
    """:func:`run_sweep`'s points in runs of GPU counts (oracle sweep), evaluated once read."""
    yield from run_sweep(req, stream=True).points


def _swept(req: SweepRequest, stream: bool):
    """(the request on the model's own calibration, the sweep's points or their
    iterator, the compute conversion); none evaluated yet where a stream is not read."""
    from oracle.compute.conversion import prepare
    from oracle.compute.sweep import sweep

    run = req.run
    req = replace(req, system=model_system(req.system, req.model.name, run.options.stack))
    times, conversion = prepare(req.model, req.system, req.profile, run.options)  # issue 13: the compute model
    plain = req.system.anchors  # anchors may reorder a count's points and add their own details
    points = sweep(req.model, req.system, times, req.counts, req.strategies, batch=run.batch,
                   batch_per_gpu=run.per_gpu, p2=req.p2, options=run.options, profile_kind=req.profile.kind,
                   conversion=conversion, top=None if plain else req.top, brief=req.brief and not plain,
                   stream=stream and not plain)  # fmt: skip
    return req, points, conversion


class Inputs:
    """Builds cost contexts for commands that evaluate many configurations (compare,
    fit runs), each input file loaded once (``files``, a load.Files) and the options
    built once: ``flags`` as :meth:`oracle.compute.options.Flags.parse` takes them."""

    def __init__(self, files=None, **flags) -> None:
        from oracle.load import Files

        self.files = files or Files()
        self._flags = flags  # a run's stack column parses them again under its stack (issue 25)
        self.flags = parse_flags(self.files, flags)
        self._contexts: dict = {}

    def context(self, model: str, system: str, profile: str, run=None):
        """The context of (model, system, profile); ``run``: a measured run whose
        ``precision`` column (issue 13) sets precision and mixed precision; else the
        ``precision`` option, else the profile's; likewise its ``stack`` column (issue 25)
        and option columns (issue 26) before the command's options."""
        from oracle.compute.calibration.compare import run_precision_options
        from oracle.load import is_estimate

        prec = run_precision_options(run) if run is not None else None
        precision, mixed = prec or (None, None)
        stack = run.stack if run is not None and run.stack else None
        own = run.flags if run is not None else ()
        batch = run.global_batch / run.gpus if run is not None and is_estimate(profile) else None
        key = (model, system, profile, precision, mixed, stack, own, batch)
        if key not in self._contexts:
            from oracle.compute.conversion import build_context
            from oracle.compute.stack import stack_system

            files = self.files
            flags = self.row_flags(stack, own)
            m, s = files.model(model), files.system(system)
            flags = flags if stack else system_flags(files, {**self._flags, **dict(own)}, s, flags)
            pr = files.profile_of(profile, m, s, flags.estimate_precision(s, precision, mixed), batch)
            s = s.for_model(m.name)  # issue 26: a model's own calibration
            options = flags.resolve(pr, precision, mixed, system=s).options
            s = stack_system(s, options.stack)
            self._contexts[key] = build_context(m, s, pr, options)
        return self._contexts[key]

    def row_flags(self, stack=None, own=()):
        """The command's Flags with a row's stack and option columns over them (pending,
        :func:`parse_flags`, where neither names a stack)."""
        if not stack and not own:
            return self.flags
        merged = {**self._flags, **dict(own), **({"stack": stack} if stack else {})}
        return parse_flags(self.files, merged)


def compare(
    runs, *, threshold: float | None = None, where: dict | None = None, exclude: dict | None = None,
    system=None, calibrate_on: str | None = None, files=None, warn=None, **flags,
):  # fmt: skip
    """Compare projections with measured runs (a RUNS.csv path or MeasuredRun list).

    ``where`` keeps runs whose column values are in the given sets, e.g.
    {"quality": {"A"}}, ``exclude`` drops runs likewise; ``system`` replaces every
    run's system; ``files``: a load.Files of input files already loaded; ``flags``: the
    options of ``oracle compare`` by their names (as :func:`predict`); ``warn``: gets
    each warning line (rows whose option or stack columns differ from ``flags``; default
    :func:`warnings.warn`).  Returns (rows, summary); see oracle.compute.calibration.compare."""
    from oracle.compute.calibration import compare as cmp
    from oracle.compute.strategies import names
    from oracle.errors import OracleError
    from oracle.load.runs import load_runs

    inputs = Inputs(files, **flags)  # the options first, before any file
    file = str(runs) if isinstance(runs, (str, Path)) else None
    if file is not None:
        runs = load_runs(file, names())
    _warn_clashes(runs, flags, file or "the runs", warn)
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
    limit = cmp.DEFAULT_ANOMALY if threshold is None else threshold
    held = None
    if calibrate_on is not None:
        held = HeldOut(everything, calibrate_on, inputs, file)
        for text in held.clashes:  # issue 26: anchors that contradict each other
            _say(warn, f"{file or 'the runs'}: {text}")
        runs = [r for r in runs if r.line not in held.selected]
        if not runs:
            raise OracleError(f"'{calibrate_on}' selects every run left to score", path="--calibrate-on", file=file)
    rows = []
    points: dict = {}  # projections shared by runs of the same configuration
    for run in runs:
        try:
            ctx = held.context(run) if held else inputs.context(run.model, run.system, run.profile, run)
            rows.append(cmp.compare_run(run, ctx, limit, points))
        except OracleError as exc:
            point_at_row(exc, run, file)
            raise
    if held is not None:
        rows = held.with_naive(rows, limit)
        return rows, held.summary(rows)
    return rows, cmp.summarize(rows)


def _warn_clashes(runs, flags: dict, file: str, warn) -> None:
    from oracle.services.fit_runs import clash_warnings

    for line in clash_warnings(runs, flags, file):
        _say(warn, line)


def _say(warn, line: str) -> None:
    """One warning line: to ``warn``, else :func:`warnings.warn`."""
    import warnings

    (warn or warnings.warn)(line)


class HeldOut:
    """``--calibrate-on EXPR``: calibrate each base system on the runs EXPR selects
    (compute/calibration/calibrate_all.py, ``--calibrate all``) and project only the others, next to
    the naive projection from the nearest smaller calibrated run."""

    def __init__(self, runs, expr: str, inputs: Inputs, file: str | None) -> None:
        from oracle.compute.calibration.anchor import contradictions, per_model_systems, run_filter
        from oracle.compute.calibration.calibrate import feasible_runs, none_feasible
        from oracle.compute.calibration.calibrate_all import apply, calibrate_all
        from oracle.errors import OracleError

        try:
            keep = run_filter(expr)
        except ValueError as exc:
            raise OracleError(str(exc), path="--calibrate-on") from None
        chosen_runs = [r for r in runs if keep(r)]
        self.selected = {r.line for r in chosen_runs}  # not scored, calibrated on where feasible
        self.evaluated = [r for r in runs if not keep(r)]
        for what, chosen in (("selects no run", chosen_runs), ("selects every run", self.evaluated)):
            if not chosen:
                raise OracleError(f"'{expr}' {what}", path="--calibrate-on", file=file,
                                  hint="calibrate on some runs, e.g. gpus<=8, and score the others")  # fmt: skip
        self.inputs = inputs
        self.systems: dict[str, object] = {}
        self.notes: list[tuple[str, str]] = []
        self.clashes: list[str] = []
        self.left_out: list[tuple[str, tuple]] = []  # (system, calibrate.SetAside runs it finds infeasible)
        feasible: set[int] = set()  # ids of the runs calibrated on
        for name in sorted({r.system for r in runs}):
            pairs = [(r, inputs.context(r.model, r.system, r.profile, r)) for r in chosen_runs if r.system == name]
            if not pairs:
                raise OracleError(f"no calibration run on system '{name}'", path="--calibrate-on", file=file)
            pairs, aside = feasible_runs(pairs)  # as fit runs: a run the model cannot project is not fitted
            if not pairs:
                raise none_feasible(aside, "calibration", "calibrate on", of=f" on system '{name}'", file=file,
                                    path="--calibrate-on", hint="calibrate on runs the model can project; oracle"
                                    " predict shows a configuration's limits")  # fmt: skip
            self.left_out += [(name, aside)] if aside else []
            feasible.update(id(r) for r, _ in pairs)
            cal = calibrate_all(pairs)
            self.systems[name] = apply(pairs[0][1].system, cal)
            own, residual = per_model_systems(self.systems[name], pairs)  # issue 26
            self.systems.update({(name, m): sys_m for m, sys_m in own.items()})
            clash = contradictions([r for r, _ in pairs])
            self.clashes += clash
            self.notes.append((name, "; ".join([_calibration_note(cal, aside), *residual, *clash])))
        self.calibration_runs = [r for r in chosen_runs if id(r) in feasible]  # in the file's order
        self._contexts: dict = {}

    def context(self, run):
        from oracle.compute.calibration.calibrate_all import with_system

        base = self.inputs.context(run.model, run.system, run.profile, run)
        if id(base) not in self._contexts:
            self._contexts[id(base)] = with_system(base, self.systems.get((run.system, run.model),
                                                                          self.systems[run.system]))
        return self._contexts[id(base)]

    def with_naive(self, rows, threshold: float):
        """Each row anchored on its nearest calibration run (issue 26), with its naive
        projection and whether it extrapolates in batch."""
        from dataclasses import replace

        from oracle.compute.calibration import compare as cmp
        from oracle.compute.calibration.anchor import (
            anchor_rows,
            beyond_calibration,
            naive_projection,
            samples_per_replica,
        )

        anchors = [cmp.compare_run(r, self.context(r), threshold) for r in self.calibration_runs]
        rows = anchor_rows(rows, anchors, samples_per_replica, lambda r: self.context(r).system.gpus_per_node,
                           threshold)  # fmt: skip
        out = []
        for row in rows:
            naive = naive_projection(row.run, self.calibration_runs, row.point.iterations_per_epoch)
            beyond = beyond_calibration(row.run, self.calibration_runs)
            out.append(replace(row, naive_s=naive[0] if naive else None, beyond_calibration=beyond))
        return out

    def summary(self, rows):
        from dataclasses import replace

        from oracle.compute.calibration import compare as cmp

        summary = cmp.summarize(rows)
        naive, model = _naive_stats(rows)
        within = [r for r in rows if r.beyond_calibration is None]
        beyond = [r for r in rows if r.beyond_calibration is not None]
        return replace(
            summary, calibration=tuple(self.notes), naive=naive, model_on_naive_runs=model,
            within_calibration=cmp.stats(within) if within and beyond else None,
            naive_within_calibration=_naive_stats(within)[0] if within and beyond else None,
            beyond_calibration=cmp.stats(beyond) if beyond else None,
            beyond_lines=tuple(r.run.line for r in beyond), calibration_left_out=tuple(self.left_out),
            unanchored=_unanchored(rows),
        )  # fmt: skip


def _unanchored(rows):
    """The calibrated model's own stats over the anchored rows (issue 26), or None."""
    from dataclasses import replace

    from oracle.compute.calibration import compare as cmp

    moved = [replace(r, predicted_s=r.unanchored_s) for r in rows if r.anchor is not None]
    return cmp.stats(moved) if moved else None


def _naive_stats(rows):
    """(the naive projection's stats, the model's on the same runs) over the rows that
    have a naive projection, or (None, None)."""
    from dataclasses import replace

    from oracle.compute.calibration import compare as cmp

    with_naive = [r for r in rows if r.naive_s is not None]
    if not with_naive:
        return None, None
    naive = cmp.stats([replace(r, predicted_s=r.naive_s) for r in with_naive])
    return naive, cmp.stats(with_naive)


def _calibration_note(cal, aside=()) -> str:
    """What a system's calibration identified on which lines; ``aside``: the selected runs
    left out, infeasible in the model (calibrate.SetAside), with their limits."""
    from oracle.compute.calibration.calibrate_all import identified

    lines = sorted({e.line for e in cal.evidence})
    found = ", ".join(identified(cal)) or "nothing"
    flagged = "".join(f"; flagged as unphysical: {u}" for _, u in cal.unphysical)  # issue 26
    on = f"line{'' if len(lines) == 1 else 's'} {', '.join(map(str, lines)) or '-'}"
    left = ", ".join(f"line {a.line} ({a.reason})" for a in aside)
    left = f"; left out, infeasible in the model: {left}" if left else ""
    return f"calibrated {found} on {on}{left}{flagged}"
