"""Progress feedback for anything that may take more than a second.

A rich progress bar on standard error when it is a terminal; nothing at all when
standard error is piped, redirected or captured (CI logs, tests), when ``TERM=dumb``,
or when ``ORACLE_PROGRESS=0``.  ``ORACLE_PROGRESS=1`` forces the bar on (for trying it
out under a pager).  The bar is transient: it disappears when the work is done, so the
terminal keeps only the command's real output.

Two ways to use it::

    from oracle.render.progress import progress, track

    with progress("writing report", total=5) as bar:
        ...
        bar.advance("plotting scaling")   # one step done; describe the next
        ...

    for item in track(items, "profiling layers"):
        ...

Both cost nothing when no bar is shown (rich is imported only when one is).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

ENV = "ORACLE_PROGRESS"


def wanted(stream=None) -> bool:
    """Whether a progress bar should be drawn on ``stream`` (default: stderr)."""
    flag = os.environ.get(ENV, "").strip().lower()
    if flag in ("0", "no", "off", "false"):
        return False
    if flag in ("1", "yes", "on", "true"):
        return True
    if os.environ.get("TERM", "") == "dumb":
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced stream
        return False


class Bar:
    """Handle of one task: ``advance()`` one or more steps, ``describe()`` the next."""

    def __init__(self, progress=None, task=None) -> None:
        self._progress = progress
        self._task = task

    @property
    def shown(self) -> bool:
        return self._progress is not None

    def advance(self, description: str | None = None, steps: float = 1) -> None:
        if self._progress is None:
            return
        kwargs = {"advance": steps}
        if description is not None:
            kwargs["description"] = description
        self._progress.update(self._task, **kwargs)

    def describe(self, description: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=description)

    def set_total(self, total: float | None) -> None:
        if self._progress is not None:
            self._progress.update(self._task, total=total)


@contextmanager
def progress(description: str, total: float | None = None, *, enabled: bool | None = None) -> Iterator[Bar]:
    """A context manager yielding a :class:`Bar`; a bar is drawn only when ``enabled``
    (default: :func:`wanted`).  ``total=None`` draws an indeterminate (pulsing) bar."""
    if enabled is None:
        enabled = wanted()
    if not enabled:
        yield Bar()
        return
    from oracle.textsafe import console as safe_console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn()]
    if total is not None:
        columns.append(MofNCompleteColumn())
    columns.append(TimeElapsedColumn())
    forced = os.environ.get(ENV, "").strip().lower() in ("1", "yes", "on", "true")
    console = safe_console(stderr=True, force_terminal=True) if forced else safe_console(stderr=True)
    with Progress(*columns, console=console, transient=True) as prog:
        task = prog.add_task(description, total=total)
        yield Bar(prog, task)


def track(
    items: Iterable[T],
    description: str,
    total: float | None = None,
    *,
    enabled: bool | None = None,
) -> Iterator[T]:
    """Iterate over ``items`` showing a bar (the length of ``items`` when it has one)."""
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    with progress(description, total, enabled=enabled) as bar:
        for item in items:
            yield item
            bar.advance()
