"""``oracle sweep CASES.yaml``: models x systems x stacks x batches x precisions x GPU
counts in one process (issue 29; the file: oracle/load/sweepfile.py)."""

from __future__ import annotations

import click

from oracle.cli.common import output_option

FORMATS = ("csv", "json", "markdown")


@click.command(context_settings={"max_content_width": 100})
@click.argument("cases_file", metavar="CASES.yaml")
@click.option("--format", "-f", "fmt", type=click.Choice(FORMATS, case_sensitive=False), default="csv", show_default=True)
@click.option("--all", "every_point", is_flag=True,
              help="Every point of every case, not only the fastest configuration at each GPU count.")
@click.option("--plot", "plot_file", metavar="FILE.png|svg|pdf",
              help="Also draw time per epoch against GPUs, a line per case coloured by system, the best strategy"
              " marked (plot extra).")
@output_option
def sweep(cases_file, fmt, every_point, plot_file, output):
    """Project every combination of a sweep file, one case after another.

    Each case of CASES.yaml is an `oracle predict` whose model, system, stack,
    precision, batch and batch_per_gpu may be lists (profile: one, or a mapping of
    each model to its profile); every combination is projected.  Writes, per case, the fastest feasible configuration at each GPU count
    (rank 1; --all: every point), streamed as it is projected, a run of GPU counts at a time
    (memory stays flat however many points a case has).

    \b
    Example CASES.yaml:
      cases:
        - model: resnet50
          profile: resnet50_v100
          system: [abci, dgx-h100-superpod]
          batch_per_gpu: [32, 64]
          gpus: 1..1024
    """
    from oracle.load import Files
    from oracle.load.sweepfile import load_sweep
    from oracle.services.sweep import check_names, requests

    cases = load_sweep(cases_file)
    files = Files()
    check_names(cases, files, cases_file)
    reqs = requests(cases, files, cases_file, every_point, brief=True)  # issue 29: rows from the arrays
    if plot_file:  # its mistakes before the sweep runs
        from oracle.render.output import check_target
        from oracle.render.plots import format_for, require

        require()
        plot_fmt = format_for(plot_file)
        check_target(plot_file)
    best = _stream(cases, reqs, cases_file, fmt, every_point, output)
    if plot_file:
        from oracle.render.output import write_file
        from oracle.render.plots_sweep import sweep_png

        write_file(plot_file, sweep_png(best, plot_fmt))


def _stream(cases, reqs, cases_file, fmt, every_point, output) -> list:
    """Write the rows case by case; return the (label, system, gpus, total_s, strategy) of each
    case's fastest point per GPU count (for the plot)."""
    from oracle.render import sweep as rs
    from oracle.render.output import sink
    from oracle.services.sweep import run

    best, wrote = [], False
    with sink(output) as write, _Progress([req.counts for req in reqs]) as bar:
        head = rs.begin(fmt)  # written with the first case's rows: an error in it leaves no output
        for i, (case, runs) in enumerate(run(cases, reqs, cases_file, every_point)):
            for points in runs:  # issue 29: a run of GPU counts at a time, memory flat
                text, head = head + rs.rows(fmt, case.label, case.where, points, not wrote), ""
                wrote = wrote or bool(points)
                write(text)
                best += [(case.label, pt.system, pt.gpus, pt.total_s, pt.strategy) for pt in points if pt.rank == 1]
                bar.reach(i, max((pt.gpus for pt in points), default=0), case.label)
            bar.reach(i, None, case.label)
        write(head + rs.end(fmt, wrote))
    return best


class _Progress:
    """A progress bar (render/progress.py) counting GPU counts over all cases, so that one
    large case shows it too; it appears once the sweep has run for ``AFTER_S`` seconds."""

    AFTER_S = 1.0

    def __init__(self, counts: list) -> None:
        import time
        from itertools import accumulate

        self.counts = [sorted(set(c)) for c in counts]  # each case's distinct GPU counts, in run order
        self.offsets = [0, *accumulate(len(c) for c in self.counts)]  # the counts before each case; all
        self.total, self.done = self.offsets[-1], 0
        self.start, self._cm, self._bar = time.monotonic(), None, None

    def __enter__(self):
        return self

    def reach(self, case: int, gpus: int | None, label: str) -> None:
        """Case ``case`` has written its GPU counts up to ``gpus`` (None: all of them)."""
        import bisect
        import time

        from oracle.render.progress import progress, wanted

        mine = self.counts[case]
        done = self.offsets[case] + (len(mine) if gpus is None else bisect.bisect_right(mine, gpus))
        if self._bar is None and time.monotonic() - self.start > self.AFTER_S and done < self.total and wanted():
            self._cm = progress("sweeping", total=self.total)
            self._bar = self._cm.__enter__()
            self._bar.advance(steps=self.done)
        if self._bar is not None and done > self.done:
            self._bar.advance(label, steps=done - self.done)
        self.done = max(self.done, done)

    def __exit__(self, *exc) -> None:
        if self._cm is not None:
            self._cm.__exit__(*exc)
