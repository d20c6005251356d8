"""``oracle fit network LOG...``: α, β per network level from collective benchmark logs.

Reads nccl-tests or OSU micro-benchmark logs (:mod:`oracle.load.benchlogs`), fits the
ring model of docs/cost-model.md per measured span (:mod:`oracle.compute.fit`) and prints the
fit and its residuals.  With ``--system BASE`` and ``-o FILE`` it writes a complete
system file: the base system with its ``network:`` replaced by the fitted levels.
Without ``--system``, ``-o FILE`` writes only the ``network:`` list (to paste into a
system file); its outermost level then covers only the largest measured span.
``-o -`` writes the YAML to standard output instead of the report.
"""

from __future__ import annotations

from pathlib import Path

import click

from oracle.cli.types import FiniteRange, PlainIntRange

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
    """A bad option value: one 'oracle: error: ...' line and exit 2 (docs/errors-and-robustness.md)."""
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
    """Fit model parameters to measurements.

    \b
    network  α, β per level from collective benchmark logs (nccl-tests, OSU)
    runs     collective bandwidths or input-loader rates from measured training runs
    """


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
@click.option("--bw-fraction", type=FiniteRange(0, 1, min_open=True), default=0.5, show_default=True,
              help="n½ rule: fit from the smallest size whose bus bandwidth reaches this fraction of the log's peak.")
@click.option("--in-place", is_flag=True, help="nccl-tests: fit the in-place times. [default: out-of-place]")
@click.option("--operation", type=click.Choice(["allreduce", "allgather", "reducescatter", "broadcast", "reduce"]),
              help="The collective, for nccl-tests logs that do not say (else inferred from busbw/algbw).")
@click.option("--gpus", "gpus", type=_Count(), multiple=True,
              help="GPUs of logs without a rank table (OSU): N for all, FILE=N for one; repeatable.")
@click.option("--nodes", "nodes", type=_Count(), multiple=True,
              help="Nodes of logs without a rank table: N or FILE=N. [default: file-name rule]")
@click.option("--gpus-per-node", type=PlainIntRange(min=1),
              help="GPUs per node for logs without a rank table. [default: the base system's]")
@click.option("--name", metavar="TEXT", help="Name of the written system. [default: BASE's name + ' (fitted network)']")
@click.option("--source", metavar="TEXT", help="Where the logs come from (written into the file's provenance).")
@click.option("--max-median-error", type=FiniteRange(min=0), metavar="FRACTION",
              help="Check: exit 1 (and write nothing) if the median |rel. error| over messages >= 1 MiB,"
              " of any log or overall, exceeds FRACTION (e.g. 0.12).")
@click.option("--collectives", type=click.Choice(["alpha-beta", "table"]), default="alpha-beta", show_default=True,
              help="table: also write the measured times (collectives: table), used instead of α-β for"
              " collectives on exactly a benchmarked GPU count and span.")
@click.option("--protocols", type=PlainIntRange(1, 4), default=1, show_default=True,
              help="α-β lines per level: 1 = the ring model above n½; 3 = NCCL's LL, LL128 and Simple"
              " regimes fitted to every message size (collectives take the cheapest line).")
@click.option("--width", type=PlainIntRange(min=60), help="Table width. [default: terminal]")
@click.pass_context
def fit_network_cmd(
    ctx, logs, system, output, fmt, min_bytes, max_bytes, bw_fraction, in_place, operation, gpus, nodes,
    gpus_per_node, name, source, max_median_error, collectives, protocols, width,
):  # fmt: skip
    """Fit α and β per network level to nccl-tests or OSU collective logs.

    Each log's GPUs give a span (docs/cost-model.md) and each span one level n{span}, fitted by
    least squares of the relative error to the ring model of docs/cost-model.md over the sizes
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

    from oracle.compute.fit import FitOptions, fit_network
    from oracle.errors import CheckFailed
    from oracle.load.benchlogs import load_benchlog
    from oracle.load.source import read_bytes
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
    options = FitOptions(min_bytes=min_bytes, max_bytes=max_bytes, bw_fraction=bw_fraction, in_place=in_place,
                         protocols=protocols)  # fmt: skip
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
            from oracle.cli.common import print_renderable

            print_renderable(rf.tables(result), width=width)
    for w in result.warnings:
        click.echo(f"oracle: warning: {w}", err=True)

    if max_median_error is not None:
        bad = [
            f"{lf.file}: {100 * lf.large.median:.1f}%"
            for lf in result.logs
            if lf.large.median is not None and not lf.large.median <= max_median_error  # NaN fails
        ]
        overall = result.overall_large.median
        if overall is not None and not overall <= max_median_error:
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
        digest = hashlib.sha256(read_bytes(log.file, "benchmark log")).hexdigest()[:16]
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
        if collectives == "table":
            text += _tables_yaml(parsed, in_place)
        _check_loads(text, str(output))
    else:
        text = rf.header(result, command, date, info, source, None) + rf.network_yaml(result)
    emit(text, None if yaml_to_stdout else output)
    if not yaml_to_stdout and fmt == "table":
        click.echo(f"wrote {output}", err=True)


def _tables_yaml(parsed, in_place: bool) -> str:
    """The ``collectives: table`` section: every all-reduce/all-gather log as measured."""
    import yaml

    tables = []
    for log in parsed:
        if log.operation not in ("allreduce", "allgather"):
            continue
        rows = log.times(in_place)
        tables.append({
            "operation": log.operation,
            "gpus": log.gpus,
            "nodes": log.nodes,
            "source": f"{log.file} ({log.tool}, {'in-place' if in_place else 'out-of-place'} times)",
            "bytes": [int(b) for b, _ in rows],
            "seconds": [float(f"{t:.6g}") for _, t in rows],
        })  # fmt: skip
    doc = {"collectives": {"mode": "table", "tables": tables}}
    head = (
        "# Measured collective times, used instead of α-β for a collective on exactly a\n"
        "# benchmarked GPU count and span (interpolated log-log in message size).\n"
    )
    return head + yaml.safe_dump(doc, sort_keys=False, width=100, default_flow_style=None)


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


@fit.command("runs", context_settings={"max_content_width": 100})
@click.argument("runs", metavar="RUNS.csv")
@click.option("--system", "-s", required=True, metavar="NAME|FILE", help="Base system to calibrate.")
@click.option("--calibrate", "kind", type=click.Choice(["network", "input", "compute", "all"]), required=True,
              help="network: all-reduce bandwidth inside and across nodes (data-parallel runs that are not"
              " input-bound); input: loader and node sample rates (runs that are input-bound); compute: the runs'"
              " profile scaled to reproduce them, written to -o as a profile (issue 13); all: every parameter"
              " the runs identify, input rates only from runs whose includes_io column is yes.")
@click.option("--where", multiple=True, metavar="COL=VAL[,VAL]",
              help="The training runs to use (repeatable), e.g. model=vgg16 gpus=4,8. Keep the rest for validation.")
@click.option("--overlay", metavar="FILE", help="A YAML mapping merged into the written system (documented implementation facts).")
@click.option("--name", metavar="TEXT", help="Name of the written system. [default: BASE's name + ' (calibrated)']")
@click.option("--output", "-o", metavar="FILE", help="Write the calibrated system YAML (atomically).")
@click.option("--width", type=PlainIntRange(min=60), help="Table width. [default: terminal]")
def fit_runs_cmd(runs, system, kind, where, overlay, name, output, width) -> None:
    """Calibrate a system from measured training runs (held-out runs then validate it).

    Inverts the cost model on each selected run: a data-parallel run's time beyond its
    compute is its gradient all-reduce (network), an input-bound run's time is its
    loading (input). One β for spans inside a node and one across nodes; one loader
    and one node rate; each the median of its runs. The written system records the runs
    each number comes from.

    \b
    Example (scripts/calibrate_abci2020.sh):
      oracle fit runs validation/abci-paradl.csv -s abci --calibrate network \\
        --where model=vgg16 --where gpus=4,8 -o abci-net.yaml
    """
    import datetime
    import sys

    import yaml

    from oracle.api import Inputs
    from oracle.cli.compare import _where
    from oracle.compute.calibrate import calibrate
    from oracle.compute.strategies import NAMES
    from oracle.errors import OracleError
    from oracle.load.runs import load_runs
    from oracle.load.yamlfile import load_yaml
    from oracle.render.fit import plain
    from oracle.render.output import emit
    from oracle.resources import resolve

    measured = load_runs(runs, NAMES)
    extra = plain(load_yaml(overlay, "YAML overlay file")) if overlay else None  # fail before the work
    filters = _where(where)
    chosen = [r for r in measured if all(r.get(k) in v for k, v in filters.items())]
    if not chosen:
        raise OracleError("no run matches the --where filter", file=runs)
    base_path = resolve("systems", system)
    from oracle.load import load_system

    load_system(str(base_path))  # a bad base system is the error, before any warning
    _warn_other_systems(chosen, base_path, runs)
    if kind == "compute":  # issue 13: writes a profile, not a system (oracle/cli/fit_compute.py)
        from oracle.cli.fit_compute import write_profile
        return write_profile(runs, chosen, str(base_path), output)
    inputs = Inputs()
    pairs = [(r, inputs.context(r.model, str(base_path), r.profile, r)) for r in chosen]
    if kind == "all":
        from oracle.compute.calibrate_all import calibrate_all

        cal = calibrate_all(pairs)
    else:
        cal = calibrate(kind, pairs)
    _print_calibration(cal, runs, width)
    if not cal.evidence:
        raise OracleError(f"none of the {len(chosen)} selected runs calibrates the {kind}", file=runs)
    if not output:
        return
    doc = plain(load_yaml(base_path, "system file"))
    base_name = doc.get("name", "system")
    doc["name"] = name or f"{base_name} (calibrated)"
    base_source = str(doc.get("source", "")).rstrip(". ")
    lines = lambda p: ", ".join(str(x) for x in cal.lines_for(p))  # noqa: E731
    if kind in ("network", "all"):
        gpn = doc["gpus_per_node"]
        for level in doc["network"]:
            inside = level["max_gpus"] <= gpn
            beta = cal.beta_intra if inside else cal.beta_inter
            if beta is None:
                continue
            old = level.pop("bandwidth_GB_per_s", None)
            old = 1.0 / (old * 1e9) if old else level.get("beta_s_per_byte")
            level["beta_s_per_byte"] = float(f"{beta:.6g}")
            # the transport is slower or faster as a whole: its protocol lines by as much
            for pr in level.get("protocols") or []:
                pr_beta = pr.pop("bandwidth_GB_per_s", None)
                pr_beta = 1.0 / (pr_beta * 1e9) if pr_beta else pr["beta_s_per_byte"]
                pr["beta_s_per_byte"] = float(f"{pr_beta * beta / old:.6g}")
            which = "inside a node" if inside else "across nodes"
            level["source"] = (
                f"α: {base_name}. β {which} ({1 / beta / 1e9:.3g} GB/s): calibrated by `oracle fit runs`"
                f" on {runs} lines {lines('beta_intra' if inside else 'beta_inter')} (data-parallel runs)"
            )
    if kind in ("input", "all") and any(v is not None for v in (cal.loader_rate, cal.node_rate, cal.leader_rate)):
        section = dict(doc.get("input") or {})
        earlier = section.get("source")
        if cal.loader_rate is not None:
            section["loader_samples_per_s"] = float(f"{cal.loader_rate:.6g}")
        if cal.node_rate is not None:
            section["node_samples_per_s"] = float(f"{cal.node_rate:.6g}")
        if cal.leader_rate is not None:
            section["leader_samples_per_s"] = float(f"{cal.leader_rate:.6g}")
        section.setdefault("overlap", True)
        found = [
            f"{label} from line{'s' if ',' in lines(key) else ''} {lines(key)}"
            for label, key in (("loader rate", "loader_rate"), ("node rate", "node_rate"),
                               ("leader rate", "leader_rate"))
            if lines(key)
        ]  # fmt: skip
        section["source"] = (
            f"calibrated by `oracle fit runs --calibrate {kind}` on {runs}: {', '.join(found)}"
            " (input-bound runs, loaders prefetching)"
        )
        if earlier:  # chained calibrations keep every step's provenance
            section["source"] = f"{earlier}; then {section['source']}"

        doc["input"] = section
    used = sorted({e.line for e in cal.evidence})
    doc["source"] = (
        f"{base_source}. Then {kind} calibrated by `oracle fit runs` on {runs}"
        f" lines {', '.join(map(str, used))} (see the sources below)"
    )
    if overlay:
        doc["source"] += f"; implementation facts from {overlay}"
        assert extra is not None
        for key, value in extra.items():
            if isinstance(value, dict) and isinstance(doc.get(key), dict):
                doc[key] = {**doc[key], **value}
            else:
                doc[key] = value
    command = "oracle " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["fit"] else f"oracle fit runs {runs} ..."
    head = [
        f"# {doc['name']}: {base_name} calibrated from measured training runs"
        " (earlier calibration steps are in the source fields).",
        f"# Generated by `{command}`",
        f"# on {datetime.date.today().isoformat()}. Do not edit by hand; regenerate instead.",
        "# Evidence (run -> parameter):",
    ]
    for e in cal.evidence:
        head.append(f"#   {runs}:{e.line} {e.run}: {e.parameter} = {_fmt_param(e.parameter, e.value)} ({e.note})")
    text = "\n".join(head) + "\n" + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    try:
        _check_loads(text, str(output))
    except OracleError as exc:
        if not overlay:
            raise
        # the base system loaded and the calibration is computed: the overlay broke it
        raise OracleError(f"merged into the system, {exc.message}", file=overlay, path=exc.path,
                          hint=exc.hint) from None
    emit(text, output)
    click.echo(f"wrote {output}", err=True)


def _warn_other_systems(chosen, base_path, runs: str) -> None:
    """Runs measured on another system than the base calibrate it all the same: say so
    (issue 17), naming the systems and the lines."""
    from oracle.errors import OracleError
    from oracle.resources import resolve

    other: dict[str, list[int]] = {}
    for r in chosen:
        try:
            same = resolve("systems", r.system).resolve() == Path(base_path).resolve()
        except OracleError:
            same = False
        if not same:
            other.setdefault(r.system, []).append(r.line)
    for name, lines in other.items():
        click.echo(
            f"oracle: warning: {runs} lines {_ranges(lines)} were measured on '{name}', not on the base"
            f" system {base_path}: their numbers calibrate it all the same",
            err=True,
        )


def _ranges(lines: list[int]) -> str:
    """2, 3, 4, 7 -> '2-4, 7'."""
    out: list[str] = []
    start = prev = lines[0]
    for n in [*lines[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start}-{prev}" if prev > start else str(start))
        if n is not None:
            start = prev = n
    return ", ".join(out)


def _fmt_param(parameter: str, value: float) -> str:
    if parameter.startswith("beta"):
        return f"{value:.4g} s/B ({1 / value / 1e9:.3g} GB/s)"
    return f"{value:.4g} samples/s"


def _print_calibration(cal, runs: str, width: int | None) -> None:
    from rich.text import Text

    from oracle.cli.common import print_renderable
    from oracle.render.columns import Column, FitTable, Section

    rows = [
        {"line": str(e.line), "run": e.run, "measured": f"{e.measured_iteration_s:.4g} s",
         "compute": f"{e.compute_iteration_s:.4g} s", "parameter": e.parameter,
         "value": _fmt_param(e.parameter, e.value), "how": e.note}
        for e in cal.evidence
    ]  # fmt: skip
    unused = [{"line": str(line), "parameter": "unused", "how": why} for line, why in cal.unused]
    t = FitTable(
        (Column("line", "line", "right"), Column("run", "run"), Column("measured", "measured/it", "right", 8),
         Column("compute", "compute/it", "right", 5), Column("parameter", "parameter", priority=7),
         Column("value", "value", "right")),
        [Section(rows + unused)],
        notes=Column("how", "how"),
        title=f"calibration ({cal.kind}) from {runs}",
        styles={id(r): "dim" for r in unused},
    )  # fmt: skip
    lines = []
    if cal.kind == "all":
        from oracle.compute.calibrate_all import PARAMETERS

        missing = [p for p in PARAMETERS if getattr(cal, p) is None]
        if missing:
            lines.append(f"not identified by these runs (the base system's values stay): {', '.join(missing)}")
    for label, value in (("β inside a node", cal.beta_intra), ("β across nodes", cal.beta_inter),
                         ("loader rate", cal.loader_rate), ("node rate", cal.node_rate),
                         ("leader rate", cal.leader_rate)):  # fmt: skip
        if value is not None:
            key = "beta" if label.startswith("β") else "rate"
            lines.append(f"{label}: {_fmt_param(key, value)}")
    print_renderable(t, *(Text(line) for line in lines), width=width)


__all__ = ["fit"]
