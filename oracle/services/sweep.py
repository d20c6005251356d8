"""``oracle sweep CASES.yaml`` (issue 29): every combination of a sweep file
(load/sweepfile.py) projected in one process, each input file loaded once, the cases
one after another and each in runs of GPU counts (compute/engine.chunks), so that only
one run's points are in memory at a time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from oracle.load.sweepfile import Case

NAMED = ("model", "system", "profile", "stack")  # what a case names (files or shipped names)


def check_names(cases: list[Case], files, path: str) -> None:
    """Load every model, system, profile and stack the cases name, before projecting
    anything: an unknown one is an error naming the sweep file, the case's key and its
    line; a named file's own problem keeps that file's line and key, and says where the
    sweep file names it.  ``stack: none`` is no stack, as ``--stack none`` (api.with_stack)."""
    from oracle.api import with_stack
    from oracle.errors import OracleError
    from oracle.load import is_estimate

    for case in cases:
        for key in NAMED:
            value = case.values.get(key)
            if value is None or key == "profile" and is_estimate(value):  # made when projected
                continue
            try:
                with_stack(files, {key: value}) if key == "stack" else getattr(files, key)(value)
            except OracleError as exc:
                raise _named_error(exc, case, key, path) from None


def _named_error(exc, case: Case, key: str, path: str):
    """``exc`` (loading the case's ``key``) blamed on the sweep file where it names no file
    (an unknown name), else on the file it names with the case's key in the hint."""
    from pathlib import Path

    from oracle.errors import OracleError
    from oracle.resources import exists

    value = case.values[key]
    if exc.file is not None and not (exc.file == str(value) and not exists(Path(str(value)))):
        return _hinted(exc, case, key, path)
    return OracleError(f"{key} '{value}': {exc.message}", file=path, line=case.line_of(key), path=f"{case.where}.{key}",
                       hint=exc.hint)  # fmt: skip


def _hinted(exc, case: Case, key: str | None, path: str):
    """``exc``, about a file the case names, with where the sweep file names it in its hint."""
    line = case.line_of(key)
    named = f"named by {case.where}{f'.{key}' if key else ''} of {path}" + (f", line {line}" if line else "")
    exc.hint = f"{exc.hint}; {named}" if exc.hint else named
    return exc


def requests(cases: list[Case], files, path: str, every_point: bool = False, brief: bool = False) -> list:
    """Every case's oracle.api.SweepRequest, built before anything is projected: a bad
    value of a case (a batch, an option, GPU counts whose points would not fit in
    memory: compute/sweep.check_request) is an error naming the sweep file and the case before any output.
    ``brief``: points with only the details a CSV row shows (compute/sweep.sweep)."""
    from dataclasses import replace

    from oracle import api
    from oracle.compute.sweep import check_request

    out = []
    for case in cases:
        v = dict(case.values)
        model, system, profile = v.pop("model"), v.pop("system"), v.pop("profile")
        gpus, strategies, p2 = v.pop("gpus", None), str(v.pop("strategy", "all")), v.pop("p2", None)
        with _blamed(path, case):
            req = api.request(model, system, profile, gpus, strategies, p2, files=files, **v)
            check_request(req.counts, strategies, req.run.batch, req.run.per_gpu, p2, req.run.options,
                          None if every_point else 1, streamed=True)  # fmt: skip
        out.append(replace(req, brief=brief) if every_point else replace(req, top=1, brief=brief))  # best: the first per count
    return out


def run(cases: list[Case], reqs: list, path: str, every_point: bool = False) -> Iterator[tuple[Case, Iterator[list]]]:
    """(case, its points in runs of GPU counts, each evaluated as it is read: issue 29,
    oracle.api.stream_sweep) for each case in order: its fastest feasible configuration
    at each GPU count (rank 1), or with ``every_point`` every point."""
    for case, req in zip(cases, reqs):
        yield case, _points(req, path, case, every_point)


def _points(req, path: str, case: Case, every_point: bool) -> Iterator[list]:
    from oracle import api

    with _blamed(path, case):
        for points in api.stream_sweep(req):
            yield points if every_point else [pt for pt in points if pt.rank == 1]


@contextmanager
def _blamed(path: str, case: Case):
    """An error about a value of a case, named as an option (--batch), blamed on the
    sweep file, the case and its line (cases[0].batch)."""
    from oracle.errors import OracleError

    try:
        yield
    except OracleError as exc:
        if exc.file is None:
            key = (exc.path or "").lstrip("-").replace("-", "_")
            exc.file, exc.line, exc.path = path, case.line_of(key), case.where + (f".{key}" if key else "")
        elif exc.file != path:  # a file the case names (its system): the case in the hint
            _hinted(exc, case, None, path)
        raise
