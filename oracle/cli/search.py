"""``oracle search``: the fastest configuration for a model, a system and a GPU budget
(issue 8): uniform strategies at every factorization and pipeline segment count, and
per-layer assignments found by shortest paths / node and edge elimination."""

from __future__ import annotations

import click

from oracle.cli.common import (
    RegistryOption,
    batch_type,
    collective_option,
    contention_type,
    memory_model_options,
    model_system_profile_options,
    overlap_options,
    per_gpu_type,
    precision_option,
    samples_type,
    stack_option,
)
from oracle.cli.types import count_type, gpu_count_type, width_type

# A search budget, not a plausibility limit (every other GPU count goes to limits.MAX_GPUS,
# 10^7): the per-layer search keeps arrays of one entry per GPU for the redistribution
# costs, so its time and memory grow with the GPUs.  ResNet-50 on ABCI with the default
# distributions: 65,536 GPUs 2.5 s and 0.33 GB, 2^20 GPUs 31 s and 5.1 GB, 10^7 GPUs 79 s
# and 24 GB (2 shared cores).  Far beyond any machine oracle describes.
MAX_SEARCH_GPUS = 65536


def search_budget_problem(gpus: int) -> str | None:
    """Why the per-layer search does not take ``gpus``, or None."""
    if gpus <= MAX_SEARCH_GPUS:
        return None
    return (f"got {gpus:,}; the per-layer search takes at most {MAX_SEARCH_GPUS:,} GPUs, a budget on its time and"
            " memory, which grow with the GPUs (oracle predict projects the uniform strategies up to 10^7)")


def _search_budget(ctx, param, value):
    problem = None if value is None else search_budget_problem(value)
    if problem:
        raise click.BadParameter(problem)
    return value


def _default_kinds() -> str:
    from oracle.compute.layerwise.layerwise_build import default_kinds

    return ",".join(default_kinds())


def _distributions_help() -> str:
    from oracle.compute.layerwise.layerwise_build import default_kinds

    return (f"Per-layer distributions to consider ({', '.join(default_kinds())}), each at every p1 x p2 grid;"
            " also replicated (Lee et al.'s replicated weight gradients), spatial+filter (samples x height/width"
            " x filters on p1 x p2 x p3) and subsets (each of them on the first q GPUs, q dividing p): Jia et"
            " al.'s wider space.")  # fmt: skip


@click.command(context_settings={"max_content_width": 100})
@model_system_profile_options
@click.option(
    "--gpus", "-g", type=gpu_count_type(), callback=_search_budget,
    help="GPUs to use (p; at most 65,536, the search's budget). [default: 1 with --max-gpus]",
)  # fmt: skip
@click.option(
    "--max-gpus", type=gpu_count_type(), callback=_search_budget,
    help="Also try every power of two from --gpus up to N (and N); report the fastest.",
)  # fmt: skip
@click.option(
    "--batch-per-gpu",
    "-b",
    type=per_gpu_type,
    help="Weak scaling: B = b·p samples per iteration. [default: the profile's measured_samples_per_gpu, else 32]",
)
@click.option(
    "--batch", "-B", type=batch_type, help="Strong scaling: global mini-batch B, fixed."
)
@click.option(
    "--distributions", "kinds", show_default=True, metavar="KINDS", cls=RegistryOption,
    help_from=_distributions_help, default_from=_default_kinds,
)  # fmt: skip
@click.option(
    "--strategy", "strategies", default="all", show_default=True, metavar="NAMES",
    help="Uniform strategies to compare with (as oracle predict --strategy).",
)  # fmt: skip
@precision_option()
@memory_model_options
@click.option(
    "--contention",
    type=contention_type,
    help="Contention factor φ >= 1 (overrides the system).",
)
@click.option(
    "--samples", type=samples_type, help="Dataset size D (overrides the model's)."
)
@click.option(
    "--evaluate", "evaluate_file", metavar="FILE",
    help="Evaluate this layer-wise configuration file instead of searching (and compare it with the search's best).",
)  # fmt: skip
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(["table", "json"], case_sensitive=False),
    default="table",
    show_default=True,
)
@click.option(
    "--top",
    type=count_type(),
    default=5,
    show_default=True,
    help="Uniform strategies shown.",
)
@click.option(
    "--width",
    type=width_type(),
    help="Table width in characters. [default: terminal, 140 in pipes]",
)
@click.option(
    "--output", "-o", metavar="FILE",
    help="Write the winning per-layer configuration (YAML, loadable with --evaluate) to FILE.",
)  # fmt: skip
@collective_option()
@overlap_options()[0]
@overlap_options()[1]
@overlap_options()[2]
@overlap_options()[3]
@stack_option()
def search(
    model, system, profile, gpus, max_gpus, kinds, strategies, evaluate_file, fmt, top, width, output, **flags,
):  # fmt: skip
    """Find the fastest configuration for a GPU budget, per layer if that pays.

    Compares every uniform strategy (each hybrid factorization p1 x p2, pipeline at
    several segment counts) with the fastest per-layer assignment of distributions
    (data, spatial, filter, channel on every p1 x p2 grid), found by Dryden et al.'s
    shortest path on line graphs and Jia et al.'s node/edge elimination on DAGs, and
    explains the winner: per-layer table, time saved, memory headroom.

    \b
    Examples:
      oracle search -m resnet50 -s abci -p resnet50_v100 --gpus 64 -b 16
      oracle search -m vgg16 -s abci -p vgg16_v100 --gpus 64 -b 16 -o vgg16-64.yaml
      oracle search -m vgg16 -s abci -p vgg16_v100 --evaluate vgg16-64.yaml
    """
    from oracle.cli.search_plan import run_search_command
    from oracle.render import search as rs
    from oracle.render.output import emit

    results, meta, m, config = run_search_command(
        model, system, profile, gpus, max_gpus, kinds, strategies, evaluate_file, **flags
    )  # fmt: skip
    if fmt == "json":
        text = rs.to_json(results, meta, top)
    else:
        text = rs.render_text(results, meta, top, width=_width(width))
    if output:
        emit(_config_text(results, m, meta, config), output)
    emit(text, None)


def _width(width: int | None) -> int:
    import os
    import shutil
    import sys

    if width:
        return width
    if sys.stdout.isatty() or "COLUMNS" in os.environ:
        return shutil.get_terminal_size((140, 24)).columns
    return 140


def _config_text(results, model, meta: dict, config) -> str:
    """The per-layer configuration to write with -o: the fastest per-layer assignment
    (of the GPU count with the fastest winner)."""
    from oracle.load.layerwise import dump_layerwise
    from oracle.render.search import overall_winner
    from oracle.units import fmt_seconds

    best = overall_winner(results) or results[0]
    a = best.layerwise.assessment  # with --evaluate: the given configuration, normalised
    pt = a.point
    comments = [
        (
            "Layer-wise configuration written by `oracle search` (evaluate it with"
            " `oracle search ... --evaluate FILE`)."
        ),
        (
            f"{meta['model']} on {meta['system']}, profile {meta['profile']}, {best.gpus} GPUs,"
            f" B = {best.batch:g}: {fmt_seconds(pt.total_s)} per epoch,"
            f" {pt.memory_bytes / 1e9:.2f} GB per GPU."
        ),
    ]
    bu = best.best_uniform
    if bu is not None:
        saved = bu.total_s - pt.total_s
        comments.append(
            f"Best uniform strategy: {bu.strategy} {bu.p1}x{bu.p2}"
            + (f" (S={bu.segments})" if bu.segments else "")
            + f", {fmt_seconds(bu.total_s)} per epoch ({'saves' if saved >= 0 else 'loses'} {fmt_seconds(abs(saved))})."
        )
    if best.winner is not None and best.winner is not pt:
        comments.append("The uniform strategy is faster; this is the fastest per-layer assignment.")
    comments.append(
        "Distributions: data | spatial/filter/channel with p1 sample groups x p2 model parts (p1·p2 = gpus)."
    )
    if any(d.of for d in a.assignment):  # issue 18
        comments.append("A range with 'gpus: q' runs on the first q GPUs (p1·p2 = q).")
    if any(d.kind == "replicated" for d in a.assignment):
        comments.append("replicated: data parallelism, the weight gradient computed on every GPU (Lee et al. 2017).")
    return dump_layerwise(model, best.gpus, list(a.assignment), batch=best.batch, comments=comments)
