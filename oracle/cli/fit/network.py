"""``oracle fit network LOG...``: α, β per network level from collective benchmark logs.

Reads nccl-tests or OSU micro-benchmark logs (:mod:`oracle.load.benchlogs`), fits the
ring model of docs/cost-model.md per measured span (:mod:`oracle.compute.calibration.fit`) and prints the
fit and its residuals.  With ``--system BASE`` and ``-o FILE`` it writes a complete
system file: the base system with its ``network:`` replaced by the fitted levels.
Without ``--system``, ``-o FILE`` writes only the ``network:`` list (to paste into a
system file); its outermost level then covers only the largest measured span.
``-o -`` writes the YAML to standard output instead of the report.
"""

from __future__ import annotations

import click

from oracle.cli.common import echo, named
from oracle.cli.fit import fit
from oracle.cli.types import ByteSize, Count, FiniteRange, PlainIntRange, count_type, width_type


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
        ("max_bandwidth_gb_per_s", "--max-bandwidth-GB-per-s"),
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
    for proto in params.get("fit_protocols") or ():
        words += ["--fit-protocol", proto]
    for key, flag in (("gpus", "--gpus"), ("nodes", "--nodes")):
        for file, n in params.get(key) or ():
            words += [flag, f"{file}={n}" if file else str(n)]
    words += logs
    return " ".join(shlex.quote(w) for w in words)


@fit.command("network", context_settings={"max_content_width": 100})
@click.argument("logs", nargs=-1, required=True, metavar="LOG...")
@click.option("--system", "-s", metavar="NAME|FILE", callback=named, help="Base system (shipped name or path): -o then writes a whole system file.")
@click.option("--output", "-o", metavar="FILE",
              help="Write the fitted system (with --system) or the network: list as YAML to FILE,"
              " atomically; '-' for standard output (instead of the report).")
@click.option("--format", "-f", "fmt", type=click.Choice(["table", "json"], case_sensitive=False), default="table", show_default=True,
              help="Format of the report on standard output.")
@click.option("--min-bytes", type=ByteSize(),
              help="Fit only message sizes >= this (e.g. 1MiB); both models. [default: the ring model the n½ rule,"
              " NCCL's model every size]")
@click.option("--max-bytes", type=ByteSize(), help="Fit only message sizes <= this; both models.")
@click.option("--bw-fraction", type=FiniteRange(0, 1, min_open=True),
              help="Ring model only: fit from the smallest size whose bus bandwidth reaches this fraction of the"
              " log's peak (the n½ rule). [default: 0.5]")
@click.option("--in-place", is_flag=True, help="nccl-tests: fit the in-place times. [default: out-of-place]")
@click.option("--operation", type=click.Choice(["allreduce", "allgather", "reducescatter", "broadcast", "reduce"], case_sensitive=False),
              help="The collective, for nccl-tests logs that do not say (else inferred from busbw/algbw).")
@click.option("--gpus", "gpus", type=Count(), multiple=True,
              help="GPUs of logs without a rank table (OSU): N for all, FILE=N for one; repeatable.")
@click.option("--nodes", "nodes", type=Count(), multiple=True,
              help="Nodes of logs without a rank table: N or FILE=N. [default: file-name rule]")
@click.option("--gpus-per-node", type=count_type(),
              help="GPUs per node for logs without a rank table. [default: the base system's]")
@click.option("--name", metavar="TEXT", help="Name of the written system. [default: BASE's name + ' (fitted network)']")
@click.option("--source", metavar="TEXT", help="Where the logs come from (written into the file's provenance).")
@click.option("--max-median-error", type=FiniteRange(min=0), metavar="FRACTION",
              help="Check: exit 1 (and write nothing) if the median |rel. error| over messages >= 1 MiB,"
              " of any log or overall, exceeds FRACTION (e.g. 0.12).")
@click.option("--max-bandwidth-GB-per-s", "max_bandwidth_gb_per_s", type=FiniteRange(min=0, min_open=True), metavar="GB/S",
              help="NCCL model fits: no fitted inter-node line faster than this (the node's NICs, e.g. 400 for"
              " 32 x 100 Gb/s); logs of large messages alone leave the LL and LL128 lines free. [default: unbounded]")
@click.option("--fit-protocol", "fit_protocols", type=click.Choice(["LL", "LL128", "Simple"]), multiple=True,
              help="NCCL model fits: fit only these protocols' lines (Simple always); the others keep the base"
              " system's, LL128 its latency at 0.92 of the fitted Simple bandwidth. For logs of large messages"
              " only: --fit-protocol Simple. [default: all three]")
@click.option("--collectives", type=click.Choice(["alpha-beta", "table"], case_sensitive=False), default="alpha-beta", show_default=True,
              help="table: also write the measured times (collectives: table), used instead of α-β for"
              " collectives on exactly a benchmarked GPU count and span.")
@click.option("--protocols", type=PlainIntRange(1, 4), default=1, show_default=True,
              help="Ring model only: α-β lines per level: 1 = the ring model above n½; 3 = NCCL's LL, LL128 and"
              " Simple regimes fitted to every message size (collectives take the cheapest line).")
@click.option("--width", type=width_type(), help="Table width. [default: terminal]")
@click.pass_context
def fit_network_cmd(
    ctx, logs, system, output, fmt, min_bytes, max_bytes, bw_fraction, in_place, operation, gpus, nodes,
    gpus_per_node, name, source, max_median_error, max_bandwidth_gb_per_s, fit_protocols, collectives, protocols,
    width,
):  # fmt: skip
    """Fit α and β per network level to nccl-tests or OSU collective logs.

    Each log's GPUs give a span (docs/cost-model.md) and each span one level n{span}, fitted by
    least squares of the relative error to the ring model of docs/cost-model.md over the sizes
    where bandwidth dominates (from half the peak bus bandwidth up; see --min-bytes).

    When the base system's collectives are nccl and every log is an all-reduce, NCCL's
    collective model (per protocol, lines inside a node and across nodes) is fitted to every
    log and size at once instead (within --min-bytes/--max-bytes; --bw-fraction and --protocols
    are the ring model's): each level of the base within a node (an NVLink domain across hosts
    is one node, NCCL's) takes the intra-node lines (kept at the base's when no log runs inside
    one node), each level beyond it the inter-node lines, and --max-median-error checks each
    log over the sizes fitted. A log over several NVLink domains must fill whole ones.

    GPUs and nodes: from the rank table of nccl-tests logs; for logs without one (OSU)
    from --gpus/--nodes or the file name ('{n}nodes' = n nodes, 'intra' = one node,
    '{n}gpus' = n GPUs) with --gpus-per-node or the base system's GPUs per node.

    \b
    Example:
      oracle fit network --system abci-nominal --name ABCI -o systems/abci.yaml data/nccl-tests/abci-v100/*.txt
    """
    from oracle.cli.common import print_renderable, warn
    from oracle.errors import CheckFailed
    from oracle.render import fit as rf
    from oracle.render import nccl_fit as rn
    from oracle.render.output import emit
    from oracle.services.fit_network import NetworkRequest, fit_network_logs

    job = fit_network_logs(NetworkRequest(
        logs=tuple(logs), system=system, operation=operation, gpus=gpus, nodes=nodes, gpus_per_node=gpus_per_node,
        min_bytes=min_bytes, max_bytes=max_bytes, bw_fraction=bw_fraction, in_place=in_place, protocols=protocols,
        collectives=collectives, max_median_error=max_median_error, max_bandwidth_GB_per_s=max_bandwidth_gb_per_s,
        fit_protocols=tuple(fit_protocols), output=output, name=name, source=source,
        command=_command_line(ctx.params, list(logs)),
    ))  # fmt: skip
    yaml_to_stdout = output is not None and str(output) == "-"
    if not yaml_to_stdout:
        if fmt == "json":
            emit(rf.to_json(job.result) if job.nccl is None else rn.to_json(job.nccl), None)
        else:
            print_renderable(rf.tables(job.result) if job.nccl is None else rn.tables(job.nccl), width=width)
    for w in job.warnings + tuple(rn.runaway_warnings(job.nccl) if job.nccl is not None else ()):
        warn(w)
    if job.failure:
        raise CheckFailed(job.failure)
    if job.text is None:
        return
    emit(job.text, None if yaml_to_stdout else output)
    if not yaml_to_stdout and fmt == "table":
        echo(f"wrote {output}", err=True)
