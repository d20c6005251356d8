"""``oracle snapshot`` and ``oracle check``: a projection regression gate for CI.

    oracle snapshot baselines/cases.yaml -o baselines/shipped.json
    oracle check baselines/shipped.json            # exit 1 naming every moved point

A cases file lists predict invocations:

    cases:
      - {model: resnet50, system: abci, profile: resnet50_v100, gpus: 1-1024,
         strategy: all, batch_per_gpu: 32}

Relative paths in a cases file are taken from the cases file's folder; the baseline
stores them relative to its own folder, so a repository can move as a whole.
"""

from __future__ import annotations

import click

from oracle.cli.common import echo, output_option
from oracle.cli.types import FiniteRange, count_type


@click.command()
@click.argument("cases_file", metavar="CASES.yaml")
@output_option
def snapshot(cases_file: str, output: str | None) -> None:
    """Write the projections of every case in CASES.yaml to a JSON baseline."""
    from oracle.render.output import emit
    from oracle.services.baseline import snapshot_text

    text, n_points, n_cases = snapshot_text(cases_file, output)
    emit(text, output)
    if output:
        echo(f"wrote {n_points} points of {n_cases} cases to {output}", err=True)


@click.command()
@click.argument("baseline", metavar="BASELINE.json")
@click.option("--rtol", type=FiniteRange(min=0), default=1e-6, show_default=True, help="Relative tolerance.")
@click.option("--max-lines", type=count_type(), default=50, show_default=True, help="Moved points listed at most.")
def check(baseline: str, rtol: float, max_lines: int) -> None:
    """Recompute a baseline; exit 1 listing every point that moved by more than --rtol."""
    from oracle.errors import CheckFailed
    from oracle.services.baseline import check_baseline

    n_points, n_cases, by_point = check_baseline(baseline, rtol)
    if not by_point:
        echo(f"baseline {baseline}: {n_points} points of {n_cases} cases unchanged (rtol {rtol:g})")
        return
    for i, ((case, point), ms) in enumerate(by_point.items()):
        if i == max_lines:
            echo(f"... and {len(by_point) - max_lines} more points")
            break
        more = f" (and {len(ms) - 2} more fields)" if len(ms) > 2 else ""
        echo(f"{case}: {point}: " + "; ".join(m.describe_change() for m in ms[:2]) + more)
    raise CheckFailed(
        f"{len(by_point)} point(s) moved by more than rtol {rtol:g} against {baseline};"
        " if the change is intended, regenerate it with oracle snapshot"
    )
