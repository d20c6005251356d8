"""``oracle report``: project, compare with measured runs, draw and write the report
(oracle/render/report.py renders it), advancing a progress bar between the steps."""

from __future__ import annotations

from pathlib import Path


def write_report(sweep: dict, measured: str | None, where, exclude, output: str, command: str, bar,
                 warn=None) -> None:  # fmt: skip
    """Write the report of the sweep ``sweep`` (predict's options) to ``output`` (.html or
    .md, the plots as PNG files next to a Markdown report), all files at once; ``warn``
    gets the measured runs' warning lines (api.compare's)."""
    from oracle import __version__
    from oracle.render import report as rr
    from oracle.render.output import atomic_write_all
    from oracle.services.project import project

    markdown = Path(output).suffix.lower() in (".md", ".markdown")
    points, meta, inputs = project(**sweep)
    bar.advance("comparing measured runs" if measured else "drawing plots")
    meas = _measured(measured, where, exclude, sweep, inputs["files"], warn) if measured else None
    data = rr.ReportData(
        points=points, meta=meta, model=inputs["model"], system=inputs["system"], profile=inputs["profile"],
        options=inputs["options"], gpus=inputs["gpus"], strategies=sweep["strategies"], args=inputs["args"],
        command=command, measured=meas, version=__version__,
    )  # fmt: skip
    bar.set_total(2 + rr.steps(data) + 1)
    bar.advance("drawing plots")
    images = rr.figures(data, "png", dpi=110 if markdown else 90, step=lambda what: bar.advance(what))
    files: dict = {}
    if markdown:
        names = rr.image_names(output, images) if images is not None else None
        folder = Path(output).parent
        files = {folder / name: images[kind] for kind, name in (names or {}).items()}
        text = rr.markdown_report(data, names)
    else:
        text = rr.html_report(data, images)
    bar.advance("writing")
    files[output] = text  # last: the report appears only once its images are in place
    atomic_write_all(files)


# the sweep's options that describe the software and the run, which the measured runs are
# projected with too (their own columns first); not the dataset size (each run's own) nor
# the options that name layers (of the report's model, not of every run's)
MEASURED_OPTIONS = ("precision", "mixed_precision", "stack", "collective", "overlap", "bucket_mb", "bucket_layers",
                    "memory_model", "memory_reuse", "contention", "compute_scaling", "memory_format", "optimizer",
                    "zero", "checkpointing")  # fmt: skip


def _measured(measured: str, where, exclude, sweep: dict, files, warn=None):
    """The measured runs projected on the sweep's system with its MEASURED_OPTIONS, reading
    the files the sweep read once (``files``)."""
    from oracle import api
    from oracle.load.values import parse_where
    from oracle.render import report as rr

    flags = {k: sweep[k] for k in MEASURED_OPTIONS if k in sweep}
    rows, summary = api.compare(
        measured, where=parse_where(where), exclude=parse_where(exclude, "--exclude"), system=sweep["system"],
        files=files, warn=warn, **flags,
    )  # fmt: skip
    return rr.Measured(measured, rows, summary)
