"""The ``oracle`` command: a click group whose subcommands are imported on demand.

Start-up matters (docs/development.md): ``oracle --help`` imports only click; each command module
is imported when that command runs, and heavy libraries (numpy, pandas, rich,
matplotlib, torch) only inside the commands that need them.

Errors: an :class:`~oracle.errors.OracleError` (a user mistake) prints one line on
stderr and exits 2; a failed check exits 1; anything else is a bug and prints a short
request for a bug report (the traceback with ``--debug`` or ``ORACLE_DEBUG=1``).
"""

from __future__ import annotations

import importlib
import io
import os
import sys

import click

# command name -> (module, attribute, one-line help shown by `oracle --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "predict": ("oracle.cli.predict", "predict", "Project time and memory of every strategy, ranked."),
    "show": ("oracle.cli.show", "show", "Show a model, system or profile as a table."),
    "compare": ("oracle.cli.compare", "compare", "Compare projections with measured runs."),
    "import": ("oracle.cli.import_", "import_", "Turn training logs into measured-runs CSV rows."),
    "import-model": ("oracle.cli.import_model", "import_model", "Import a PyTorch, ONNX or ParaDL model as a model file."),
    "import-layers": ("oracle.cli.import_paradl", "import_layers", "Turn a ParaDL layer configuration (.lc) into a layer-wise file."),
    "import-system": ("oracle.cli.import_paradl", "import_system", "Turn a ParaDL platform file (.plat) into a system file."),
    "snapshot": ("oracle.cli.snapshot", "snapshot", "Write projections to a JSON baseline."),
    "check": ("oracle.cli.snapshot", "check", "Recompute a baseline; fail if projections moved."),
    "fit": ("oracle.cli.fit", "fit", "Fit network parameters to benchmark logs or training runs."),
    "profile": ("oracle.cli.profile", "profile", "Measure or estimate per-layer timings."),
    "plot": ("oracle.cli.plot", "plot", "Draw scaling, breakdown, memory and compare plots."),
    "report": ("oracle.cli.report", "report", "Write a self-contained HTML/Markdown report."),
    "search": ("oracle.cli.search", "search", "Find the fastest configuration for a GPU budget."),
    "sweep": ("oracle.cli.sweep", "sweep", "Project every combination of a sweep file (models x systems x ...)."),
    "list": ("oracle.cli.list_", "list_", "List the shipped models, systems and profiles."),
}

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _available() -> dict[str, tuple[str, str, str]]:
    """Commands whose module exists (so --help never lists a missing command)."""
    import importlib.util

    out = {}
    for name, spec in COMMANDS.items():
        if importlib.util.find_spec(spec[0]) is not None:
            out[name] = spec
    return out


# a group without its command: click 8.2+ raises this (help on stderr, exit 2), click 8.1
# printed the help on stdout and exited 0; oracle keeps 8.1's (docs/errors-and-robustness.md)
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_available())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = _available().get(cmd_name)
        if spec is None:
            return None
        module = importlib.import_module(spec[0])
        return getattr(module, spec[1])

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, spec[2]) for name, spec in sorted(_available().items())]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        """Run the subcommand, mapping exceptions to one-line messages and exit codes."""
        import warnings

        from oracle.errors import CheckFailed, OracleError, one_line
        from oracle.load.source import forget_inputs

        forget_inputs()  # -o refuses to overwrite the inputs of this command only
        try:
            with warnings.catch_warnings():
                if not (ctx.params.get("debug") or _debug_wanted([])):
                    # numpy's "overflow encountered in multiply": the cost model turns
                    # non-finite results into limits; the warning would only add lines
                    warnings.filterwarnings("ignore", r"(overflow|invalid value|divide by zero) encountered",
                                            RuntimeWarning)
                return super().invoke(ctx)
        except OracleError as exc:
            click.echo(f"oracle: error: {exc}", err=True)
            ctx.exit(2)
        except CheckFailed as exc:
            click.echo(f"oracle: check failed: {one_line(str(exc))}", err=True)
            ctx.exit(1)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("oracle: interrupted", err=True)
            ctx.exit(130)
        except Exception as exc:  # noqa: BLE001 - last line of defence: never a traceback
            if ctx.params.get("debug") or _debug_wanted([]):
                raise
            if _stdout_failure(exc):  # closed, full or broken standard output: not a bug
                _stdout_lost(exc)
                ctx.exit(2)
            click.echo(
                f"oracle: internal error: {type(exc).__name__}: {one_line(str(exc))}\n"
                "This is a bug in oracle. Please report it with the command you ran;"
                " run it again with --debug (oracle --debug COMMAND ...) to see the traceback.",
                err=True,
            )
            ctx.exit(3)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # type: ignore[override]
        """Run without click's own error printing: a usage mistake is one line on stderr
        ('oracle: error: ...', exit 2), like every other user mistake (docs/errors-and-robustness.md)."""
        from oracle.errors import one_line

        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _NO_ARGS_IS_HELP as exc:  # `oracle`, `oracle fit`: the group's help, as --help shows it
            click.echo(exc.ctx.get_help(), color=exc.ctx.color)
            code = 0
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "oracle"
            click.echo(f"oracle: error: {one_line(exc.format_message())} (see '{where} --help')", err=True)
            code = 2
        except click.ClickException as exc:
            click.echo(f"oracle: error: {one_line(exc.format_message())}", err=True)
            code = exc.exit_code
        except click.exceptions.Abort:
            click.echo("oracle: interrupted", err=True)
            code = 130
        else:
            code = rv if isinstance(rv, int) else 0
        if not standalone_mode:
            return code
        sys.exit(code)

    def resolve_command(self, ctx, args):  # type: ignore[override]
        name = args[0] if args else None
        if name and not name.startswith("-") and name not in _available():
            import difflib

            close = difflib.get_close_matches(name, list(_available()), n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise click.UsageError(f"No such command '{name}'.{hint}", ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="oracle", prog_name="oracle")
@click.option("--debug", is_flag=True, help="Show Python tracebacks of internal errors.")
def cli(debug: bool) -> None:
    """Project how each way of parallelizing CNN training performs on your cluster.

    Per-epoch compute, communication and per-GPU memory of data, spatial, filter,
    channel, pipeline and hybrid parallelism, ranked per GPU count, with the limits
    each strategy hits (after ParaDL, Kahira et al., HPDC 2021).

    \b
    Example:
      oracle predict -m resnet50 -s abci -p resnet50_v100 --gpus 4-1024 --batch-per-gpu 32
    """


def _debug_wanted(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("ORACLE_DEBUG", "") not in ("", "0")


def _stdout_failure(exc: BaseException) -> bool:
    """An error writing standard output (closed, full, broken pipe), not a file's."""
    import errno

    if isinstance(exc, OSError):
        return exc.filename is None and exc.errno in (errno.EPIPE, errno.ENOSPC, errno.EBADF, errno.EIO,
                                                      getattr(errno, "EDQUOT", -1))
    return isinstance(exc, ValueError) and "closed file" in str(exc)


def _stdout_lost(exc: BaseException) -> None:
    """Say once that the output is lost, and stop writing to that standard output."""
    from oracle.errors import one_line

    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "it is closed"
    try:
        sys.stderr.write(f"oracle: error: cannot write to standard output: {one_line(reason)}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - nothing more reaches the lost stdout
    except OSError:
        pass


class _ClosedStdout(io.TextIOBase):
    """Standard output when the process started without one (``>&-``): writing fails
    like a closed descriptor would, so the command reports it; -o still works."""

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        import errno

        raise OSError(errno.EBADF, "it is closed")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point.  Output that cannot reach standard output (a closed
    pipe, /dev/full, a closed descriptor) is one error line and exit status 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()
    try:
        cli.main(args=args, prog_name="oracle")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except (OSError, ValueError) as exc:
        if not _stdout_failure(exc):
            raise
        _stdout_lost(exc)
        code = 2
    if sys.stdout is not None:
        try:
            sys.stdout.flush()  # buffered output fails here, not silently at exit (status 120)
        except (OSError, ValueError) as exc:
            _stdout_lost(exc)
            code = code or 2
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
