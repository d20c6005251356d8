"""Chainer ``LogReport`` JSON -> :class:`oracle.load.logs.LogTiming` (the rules are in
the docstring of :mod:`oracle.load.logs`)."""

from __future__ import annotations

import json
import math
import re

from oracle.errors import OracleError
from oracle.load.logs import LogTiming, fmt_value, json_kind, load_json, median


def _item_lines(text: str, count: int) -> list[int]:
    """Line number where each item of a top-level JSON list starts (text is valid JSON)."""
    dec = json.JSONDecoder()
    ws = re.compile(r"\s*")
    i = ws.match(text, 0).end() + 1  # past '['
    lines = []
    line, counted = 1, 0  # lines up to position `counted` (counted once: linear in the text)
    for _ in range(count):
        i = ws.match(text, i).end()
        line += text.count("\n", counted, i)
        counted = i
        lines.append(line)
        _, i = dec.raw_decode(text, i)
        i = ws.match(text, i).end()
        if i < len(text) and text[i] == ",":
            i += 1
    return lines


def _entry_number(
    entry: dict, key: str, name: str, line: int, index: int, whole: bool = False
) -> float:
    if key not in entry:
        raise OracleError(
            f"LogReport entry {index + 1} has no '{key}'",
            file=name,
            line=line,
            hint="each entry needs epoch, iteration and elapsed_time",
        )
    v = entry[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise OracleError(
            f"LogReport entry {index + 1}: '{key}' is {json.dumps(v)[:40]}; expected a number",
            file=name,
            line=line,
        )
    try:
        f = float(v)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f) or f < 0:
        raise OracleError(
            f"LogReport entry {index + 1}: '{key}' is {v!r}; expected a finite number >= 0",
            file=name,
            line=line,
        )
    if whole and f != int(f):
        raise OracleError(
            f"LogReport entry {index + 1}: '{key}' is {v!r}; expected a whole number",
            file=name,
            line=line,
        )
    return f


def _finite_or_none(value: object) -> float | None:
    """A JSON number as a finite float, or None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def parse_chainer(text: str, name: str) -> LogTiming:
    """Import a Chainer LogReport JSON (rules in the module docstring)."""
    doc = load_json(text, name)
    if not isinstance(doc, list):
        raise OracleError(
            f"top level is a JSON {json_kind(doc)}; expected a list of LogReport entries", file=name
        )
    if not doc:
        raise OracleError("has no LogReport entries (an empty JSON list)", file=name)
    lines = _item_lines(text, len(doc))
    epochs, iters, elapsed, details = _entries(doc, lines, name)
    n = len(doc)
    if n < 2:
        raise OracleError(
            "has a single LogReport entry; at least 2 are needed (the first entry's time"
            " includes start-up, so only differences between entries are steady state)",
            file=name,
            line=lines[0],
        )
    pairs = range(1, n)
    dt = [elapsed[i] - elapsed[i - 1] for i in pairs]
    dit = [iters[i] - iters[i - 1] for i in pairs]
    dep = [epochs[i] - epochs[i - 1] for i in pairs]
    per_iter = [t / m for t, m in zip(dt, dit)]
    iteration_s = median(per_iter)
    notes = [f"{n} LogReport entries; steady state = the {n - 1} differences between successive entries"]
    notes.append(f"first entry (incl. start-up) {fmt_value(elapsed[0])} s at iteration {iters[0]:g}")

    epoch_s, ipe = _epoch(iters, epochs, details, dt, dit, dep, iteration_s, notes)
    notes.append(
        f"s/iteration median {fmt_value(iteration_s)}"
        f" (min {fmt_value(min(per_iter))}, max {fmt_value(max(per_iter))})"
    )
    return LogTiming(
        file=name,
        format="chainer",
        epoch_s=epoch_s,
        iteration_s=iteration_s,
        iterations_per_epoch=ipe,
        entries=n,
        steady_entries=n - 1,
        notes="; ".join(notes),
    )


def _entries(doc: list, lines: list[int], name: str):
    """(epochs, iterations, elapsed times, epoch details) of the entries, checked to be
    numbers that never go back."""
    epochs: list[float] = []
    iters: list[float] = []
    elapsed: list[float] = []
    details: list[float | None] = []
    for k, (entry, line) in enumerate(zip(doc, lines)):
        if not isinstance(entry, dict):
            raise OracleError(
                f"LogReport entry {k + 1} is a {type(entry).__name__}; expected an object"
                " with epoch, iteration and elapsed_time",
                file=name,
                line=line,
            )
        e = _entry_number(entry, "epoch", name, line, k, whole=True)
        it = _entry_number(entry, "iteration", name, line, k, whole=True)
        t = _entry_number(entry, "elapsed_time", name, line, k)
        details.append(_finite_or_none(entry.get("epoch_detail")))
        if k:
            if it <= iters[-1]:
                raise OracleError(
                    f"LogReport entry {k + 1}: iteration {it:g} does not increase"
                    f" (previous entry: {iters[-1]:g})",
                    file=name,
                    line=line,
                )
            if e < epochs[-1]:
                raise OracleError(
                    f"LogReport entry {k + 1}: epoch {e:g} goes back (previous entry: {epochs[-1]:g})",
                    file=name,
                    line=line,
                )
            if t <= elapsed[-1]:
                raise OracleError(
                    f"LogReport entry {k + 1}: elapsed_time {t:g} does not increase"
                    f" (previous entry: {elapsed[-1]:g})",
                    file=name,
                    line=line,
                )
        epochs.append(e)
        iters.append(it)
        elapsed.append(t)
    return epochs, iters, elapsed, details


def _epoch(iters, epochs, details, dt, dit, dep, iteration_s: float, notes: list[str]):
    """(epoch_s, iterations per epoch) of the log, the rule used added to ``notes``."""
    ratios = [m / d for m, d in zip(dit, dep) if d > 0]
    epoch_triggered = all(d >= 1 for d in dep) and max(ratios) - min(ratios) <= 1.0 + 1e-9
    if epoch_triggered:
        per_epoch = [t / d for t, d in zip(dt, dep)]
        epoch_s = median(per_epoch)
        ipe = (iters[-1] - iters[0]) / (epochs[-1] - epochs[0])
        notes.append(
            f"epoch-triggered: epoch diffs n={len(per_epoch)} min={fmt_value(min(per_epoch))}"
            f" max={fmt_value(max(per_epoch))} median={fmt_value(epoch_s)}"
        )
    else:
        ipe = _iterations_per_epoch(iters, epochs, details)
        if ipe is not None and not math.isfinite(iteration_s * ipe):
            ipe = None
        if ipe is None:
            epoch_s = None
            notes.append(
                "iteration-triggered and shorter than one epoch: iterations per epoch"
                " unknown, so no epoch_s (iteration_s only)"
            )
        else:
            epoch_s = iteration_s * ipe
            notes.append(
                "iteration-triggered (whole epochs not bracketed): epoch_s ="
                f" iteration_s x {fmt_value(ipe)} iterations per epoch"
            )
    return epoch_s, ipe


def _iterations_per_epoch(
    iters: list[float], epochs: list[float], details: list[float | None]
) -> float | None:
    """Iterations per epoch of an iteration-triggered LogReport (module docstring)."""
    if all(d is not None for d in details):
        ratios = [
            (iters[i] - iters[i - 1]) / (details[i] - details[i - 1])  # type: ignore[operator]
            for i in range(1, len(iters))
            if details[i] > details[i - 1]  # type: ignore[operator]
        ]
        if ratios:
            return median(ratios)
    lo, hi = 0.0, math.inf
    for it, e in zip(iters, epochs):
        lo = max(lo, it / (e + 1))
        if e >= 1:
            hi = min(hi, it / e)
    if math.isinf(hi) or lo > hi:
        return None
    return (lo + hi) / 2
