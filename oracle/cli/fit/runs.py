"""``oracle fit runs RUNS.csv``: a system calibrated from measured training runs
(:mod:`oracle.services.fit_runs`; ``--calibrate compute`` writes a profile instead,
:mod:`oracle.services.fit_compute`)."""

from __future__ import annotations

import click

from oracle.cli.common import echo, named, projection_options, with_options
from oracle.cli.fit import fit
from oracle.cli.types import width_type


@fit.command("runs", context_settings={"max_content_width": 100})
@click.argument("runs", metavar="RUNS.csv")
@click.option("--system", "-s", required=True, metavar="NAME|FILE", callback=named, help="Base system to calibrate.")
@click.option("--calibrate", "kind", type=click.Choice(["network", "input", "compute", "all"], case_sensitive=False), required=True,
              help="network: all-reduce bandwidth inside and across nodes (data-parallel runs that are not"
              " input-bound); input: loader and node sample rates (runs that are input-bound); compute: the runs'"
              " profile scaled to reproduce them, written to -o as a profile; all: every parameter"
              " the runs identify (each model's compute against its profile, network, input rates only from"
              " runs whose includes_io column is yes, model-parallel mechanisms).")
@click.option("--where", multiple=True, metavar="COL=VAL[,VAL]",
              help="The training runs to use (repeatable), e.g. model=vgg16 gpus=4,8. Keep the rest for validation.")
@click.option("--overlay", metavar="FILE", help="A YAML mapping merged into the written system (documented implementation facts).")
@click.option("--name", metavar="TEXT", help="Name of the written system. [default: BASE's name + ' (calibrated)']")
@click.option("--output", "-o", metavar="FILE", help="Write the calibrated system YAML (atomically).")
@click.option("--width", type=width_type(), help="Table width. [default: terminal]")
@with_options(projection_options(" A run's precision column comes first.", " The runs are inverted under it; a run's"
                                 " stack column comes first (and its option columns over the options)."))
def fit_runs_cmd(runs, system, kind, where, overlay, name, output, width, **flags) -> None:
    """Calibrate a system from measured training runs (held-out runs then validate it).

    Inverts the cost model on each selected run under the stack in force: a data-parallel
    run gives the β at which its projection (overlap and buckets included) takes its
    measured time (network), an input-bound run's time is its loading (input). One β per
    network level the runs span; one loader and one node rate; each the median of its
    runs; a bandwidth outside its physical bounds is refused. The written system records
    the runs each number comes from and the stack they were inverted under.

    \b
    Example (scripts/calibrate_abci2020.sh):
      oracle fit runs validation/abci-paradl.csv -s abci --calibrate network \\
        --where model=vgg16 --where gpus=4,8 -o abci-net.yaml
    """
    import sys

    from oracle.cli.common import print_renderable, warn
    from oracle.errors import OracleError
    from oracle.load.values import parse_where
    from oracle.render.fit import calibration
    from oracle.render.output import check_target, emit
    from oracle.services.fit_runs import RunsRequest, fit_runs

    command = "oracle " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["fit"] else f"oracle fit runs {runs} ..."
    result = fit_runs(RunsRequest(runs, system, kind, parse_where(where), overlay, name, output, command, flags), warn)
    if output:
        check_target(output)  # a refused -o before the explanation is printed: one error line
    if result.profile is not None:  # --calibrate compute
        return _write_profile(runs, *result.profile, output, result.infeasible)
    cal = result.calibration
    print_renderable(*calibration(cal, runs, result.infeasible), width=width)
    if not cal.evidence:
        what = "identifies a parameter" if kind == "all" else f"calibrates the {kind}"
        raise OracleError(f"none of the {result.selected} selected runs {what} (the table above says why)",
                          file=runs, line=cal.unused[0][0] if result.selected == 1 and cal.unused else None)  # fmt: skip
    if cal.unphysical:  # issue 26: refused, nothing written
        lines = {n for found, _ in cal.unphysical for n in found}
        raise OracleError("the runs give an unphysical system: " + "; ".join(t for _, t in cal.unphysical),
                          file=runs, line=lines.pop() if len(lines) == 1 else None,
                          hint="select other runs with --where, or add the measurement named")  # fmt: skip
    if output:
        emit(result.system_text, output)
        echo(f"wrote {output}", err=True)


def _write_profile(runs_file: str, profile, factor: float, evidence, under: str, output: str | None,
                   aside=()) -> None:
    """``under``: the stack the runs were inverted under (calibrate.stacks_text); ``aside``:
    the runs left out, infeasible in the model (calibrate.SetAside)."""
    from oracle.render.fit import left_out
    from oracle.render.output import emit
    from oracle.services.fit_compute import profile_text

    for line, label, f in evidence:
        echo(f"{runs_file}:{line} {label}: compute x {f:.4g}", err=True)
    for a in aside:
        echo(f"{runs_file}:{a.line} {a.run}: {left_out(a)}", err=True)
    echo(f"compute factor (median of {len(evidence)}, under {under}): {factor:.4g}", err=True)
    if not output:
        return
    emit(profile_text(runs_file, profile, factor, evidence, aside), output)
    echo(f"wrote {output}", err=True)
