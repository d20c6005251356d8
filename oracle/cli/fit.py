"""``oracle fit network LOG...``: α, β per network level from collective benchmark logs.

Reads nccl-tests or OSU micro-benchmark logs (:mod:`oracle.load.benchlogs`), fits the
ring model of SPEC §4.1 per measured span (:mod:`oracle.compute.fit`) and prints the
fit and its residuals.  With ``--system BASE`` and ``-o FILE`` it writes a complete
system file: the base system with its ``network:`` replaced by the fitted levels.
Without ``--system``, ``-o FILE`` writes only the ``network:`` list (to paste into a
system file); its outermost level then covers only the largest measured span.
``-o -`` writes the YAML to standard output instead of the report.
"""

from __future__ import annotations

import click

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gib": 1 << 30,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
}


def _bad(param, message: str):
    """A bad option value: one 'oracle: error: ...' line and exit 2 (SPEC §7)."""
    from oracle.errors import OracleError

    raise OracleError(message, path=param.opts[0] if param is not None else None)


class _ByteSize(click.ParamType):
    """1048576, 1M, 1MiB (binary, as nccl-tests' -b/-e), 1MB (decimal)."""

    name = "BYTES"

    def convert(self, value, param, ctx):
        import re

        if isinstance(value, int):
            return value
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(value))
        if not m or m.group(2).lower() not in _UNITS:
            _bad(param, f"{value!r} is not a byte count (e.g. 1048576, 1M, 1MiB, 1MB)")
        n = float(m.group(1)) * _UNITS[m.group(2).lower()]
        if n != int(n):
            _bad(param, f"{value!r} is not a whole number of bytes")
        return int(n)


class _Count(click.ParamType):
    """N (every log without a rank table) or FILE=N (that log only)."""

    name = "[FILE=]N"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        text = str(value)
        file, sep, num = text.rpartition("=")
        if not sep:
            file, num = "", text
        if not num.isdigit() or int(num) < 1:
            _bad(param, f"got {value!r}; expected N or FILE=N with N a positive integer")
        return (file, int(num))


def _per_file(values, logs: list[str], option: str) -> tuple[int | None, dict[str, int]]:
    """Split --gpus/--nodes values into a default and per-file counts."""
    from pathlib import Path

    from oracle.errors import OracleError

    default = None
    per: dict[str, int] = {}
    resolved = {str(Path(f).resolve()): f for f in logs}
    for file, n in values:
        if not file:
            if default is not None and default != n:
                raise OracleError(f"{option} given twice without a file ({default} and {n})", path=option)
            default = n
            continue
        target = file if file in logs else resolved.get(str(Path(file).resolve()))
        if target is None:
            raise OracleError(f"{option} {file}={n}: '{file}' is not one of the logs given", path=option)
        per[target] = n
    return default, per


def _command_line(params: dict, logs: list[str]) -> str:
    """The command as a user would type it (from the parsed options, so it is exact)."""
    import shlex

    words = ["oracle", "fit", "network"]
    spec = [
        ("system", "--system"),
        ("operation", "--operation"),
        ("gpus_per_node", "--gpus-per-node"),
        ("min_bytes", "--min-bytes"),
        ("max_bytes", "--max-bytes"),
        ("bw_fraction", "--bw-fraction"),
        ("name", "--name"),
        ("source", "--source"),
        ("output", "-o"),
    ]
    for key, flag in spec:
        v = params.get(key)
        if v is None or (key == "bw_fraction" and v == 0.5):
            continue
        words += [flag, str(v)]
    if params.get("in_place"):
        words.append("--in-place")
    for key, flag in (("gpus", "--gpus"), ("nodes", "--nodes")):
        for file, n in params.get(key) or ():
            words += [flag, f"{file}={n}" if file else str(n)]
    words += logs
    return " ".join(shlex.quote(w) for w in words)


@click.group()
def fit() -> None:
    """Fit model parameters to measurements (network: α, β per level from benchmark logs)."""


@fit.command("network", context_settings={"max_content_width": 100})
@click.argument("logs", nargs=-1, required=True, metavar="LOG...")
@click.option("--system", "-s", metavar="NAME|FILE", help="Base system (shipped name or path): -o then writes a whole system file.")
@click.option("--output", "-o", metavar="FILE",
              help="Write the fitted system (with --system) or the network: list as YAML to FILE,"
              " atomically; '-' for standard output (instead of the report).")
@click.option("--format", "-f", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Format of the report on standard output.")
@click.option("--min-bytes", type=_ByteSize(), help="Fit only message sizes >= this (e.g. 1MiB). [default: n½ rule]")
@click.option("--max-bytes", type=_ByteSize(), help="Fit only message sizes <= this.")
@click.option("--bw-fraction", type=click.FloatRange(0, 1, min_open=True), default=0.5, show_default=True,
              help="n½ rule: fit from the smallest size whose bus bandwidth reaches this fraction of the log's peak.")
@click.option("--in-place", is_flag=True, help="nccl-tests: fit the in-place times. [default: out-of-place]")
@click.option("--operation", type=click.Choice(["allreduce", "allgather", "reducescatter", "broadcast", "reduce"]),
              help="The collective, for nccl-tests logs that do not say (else inferred from busbw/algbw).")
@click.option("--gpus", "gpus", type=_Count(), multiple=True,
              help="GPUs of logs without a rank table (OSU): N for all, FILE=N for one; repeatable.")
@click.option("--nodes", "nodes", type=_Count(), multiple=True,
              help="Nodes of logs without a rank table: N or FILE=N. [default: file-name rule]")
@click.option("--gpus-per-node", type=click.IntRange(min=1),
              help="GPUs per node for logs without a rank table. [default: the base system's]")
@click.option("--name", metavar="TEXT", help="Name of the written system. [default: BASE's name + ' (fitted network)']")
@click.option("--source", metavar="TEXT", help="Where the logs come from (written into the file's provenance).")
@click.option("--max-median-error", type=click.FloatRange(min=0), metavar="FRACTION",
              help="Check: exit 1 (and write nothing) if the median |rel. error| over messages >= 1 MiB,"
              " of any log or overall, exceeds FRACTION (e.g. 0.12).")
@click.option("--width", type=click.IntRange(min=60), help="Table width. [default: terminal]")
@click.pass_context
def fit_network_cmd(
    ctx, logs, system, output, fmt, min_bytes, max_bytes, bw_fraction, in_place, operation, gpus, nodes,
    gpus_per_node, name, source, max_median_error, width,
):  # fmt: skip
    """Fit α and β per network level to nccl-tests or OSU collective logs.

    Each log's GPUs give a span (SPEC §4.2) and each span one level n{span}, fitted by
    least squares of the relative error to the ring model of SPEC §4.1 over the sizes
    where bandwidth dominates (from half the peak bus bandwidth up; see --min-bytes).

    GPUs and nodes: from the rank table of nccl-tests logs; for logs without one (OSU)
    from --gpus/--nodes or the file name ('{n}nodes' = n nodes, 'intra' = one node,
    '{n}gpus' = n GPUs) with --gpus-per-node or the base system's GPUs per node.

    \b
    Example:
      oracle fit network --system abci-nominal --name ABCI -o systems/abci.yaml data/nccl-tests/abci-v100/*.txt
    """
    import datetime
    import hashlib
    from pathlib import Path

    from oracle.compute.fit import FitOptions, fit_network
    from oracle.errors import CheckFailed
    from oracle.load.benchlogs import load_benchlog
    from oracle.render import fit as rf
    from oracle.render.output import emit

    logs = list(logs)
    base_doc = base = None
    if system:
        from oracle.load.system import parse_system
        from oracle.load.yamlfile import load_yaml
        from oracle.resources import resolve

        path = resolve("systems", system)
        base_doc = load_yaml(path, "system file")
        base = parse_system(base_doc, str(path))
        base_label = _label(path, system)
    per_node = gpus_per_node or (base.gpus_per_node if base else None)
    gpus_default, gpus_per = _per_file(gpus, logs, "--gpus")
    nodes_default, nodes_per = _per_file(nodes, logs, "--nodes")

    parsed = [
        load_benchlog(
            f,
            operation=operation,
            gpus=gpus_per.get(f, gpus_default),
            nodes=nodes_per.get(f, nodes_default),
            gpus_per_node=per_node,
        )
        for f in logs
    ]
    options = FitOptions(min_bytes=min_bytes, max_bytes=max_bytes, bw_fraction=bw_fraction, in_place=in_place)
    result = fit_network(
        parsed,
        options,
        gpus_per_node=base.gpus_per_node if base else gpus_per_node,
        total_gpus=base.nodes * base.gpus_per_node if base else None,
    )

    yaml_to_stdout = output is not None and str(output) == "-"
    if not yaml_to_stdout:
        if fmt == "json":
            emit(rf.to_json(result), None)
        else:
            from oracle.cli.common import make_console

            make_console(width).print(rf.tables(result))
    for w in result.warnings:
        click.echo(f"oracle: warning: {w}", err=True)

    if max_median_error is not None:
        bad = [
            f"{lf.file}: {100 * lf.large.median:.1f}%"
            for lf in result.logs
            if lf.large.median is not None and lf.large.median > max_median_error
        ]
        overall = result.overall_large.median
        if overall is not None and overall > max_median_error:
            bad.append(f"overall: {100 * overall:.1f}%")
        if bad:
            raise CheckFailed(
                f"median |rel. error| over messages >= 1 MiB above {100 * max_median_error:g}%: "
                + "; ".join(bad)
                + (" (nothing written)" if output else "")
            )

    if output is None:
        return
    command = _command_line(ctx.params, logs)
    info = []
    for log in parsed:
        digest = hashlib.sha256(Path(log.file).read_bytes()).hexdigest()[:16]
        info.append(
            f"{log.file}: {log.tool} {log.operation}, {log.gpus} GPUs on {log.nodes} node(s)"
            f" ({log.layout_from}), sha256 {digest}…"
        )
    date = datetime.date.today().isoformat()
    if base is not None:
        assert base_doc is not None
        head = rf.header(result, command, date, info, source, f"{base.name} ({base_label})")
        new_name = name or f"{base.name} (fitted network)"
        new_source = (
            f"{base.name} as in {base_label} (see its sources) with its network levels fitted by"
            " `oracle fit network` to "
            + (source or ", ".join(log.file for log in parsed))
            + "."
        )
        text = rf.system_yaml(base_doc, result, head, new_name, new_source)
        _check_loads(text, str(output))
    else:
        text = rf.header(result, command, date, info, source, None) + rf.network_yaml(result)
    emit(text, None if yaml_to_stdout else output)
    if not yaml_to_stdout and fmt == "table":
        click.echo(f"wrote {output}", err=True)


def _label(path, given: str) -> str:
    """How to name the base system in provenance: 'systems/abci.yaml' for a shipped one
    (not this machine's absolute path), else the path as the user gave it."""
    from pathlib import Path

    from oracle.resources import shipped_dir

    try:
        if Path(path).resolve().parent == shipped_dir("systems").resolve():
            return f"systems/{Path(path).name}"
    except OSError:
        pass
    return given


def _check_loads(text: str, name: str) -> None:
    """The written system must load with the system loader (a failure here is a bug)."""
    import yaml

    from oracle.load.system import parse_system

    parse_system(yaml.safe_load(text), name)


__all__ = ["fit"]
