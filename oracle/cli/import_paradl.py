"""``oracle import-layers`` and ``oracle import-system``: ParaDL's ``.lc`` and ``.plat``
files as oracle's layer-wise and system files (docs/cli.md)."""

from __future__ import annotations

import click

from oracle.cli.common import echo, output_option
from oracle.cli.types import count_type, gpu_count_type


@click.command("import-layers", context_settings={"max_content_width": 100})
@click.argument("lc", metavar="FILE.lc")
@click.option("--net", required=True, metavar="FILE.net", help="The ParaDL model file the configuration is for.")
@click.option("--strategy", required=True, metavar="NAME",
              help="The strategy that splits the layers marked 1: ParaDL's --paratype s, f or c (ds, df with --p2).")
@click.option("--gpus", required=True, type=gpu_count_type(), help="GPUs, p.")
@click.option("--p2", type=count_type(min=2),
              help="GPUs per group that split a layer; p1 = p / p2 groups share the samples. [default: p]")
@output_option
def import_layers(lc, net, strategy, gpus, p2, output):
    """Turn a ParaDL layer configuration into an oracle layer-wise file.

    \b
    The layers up to the last one marked 1 take --strategy on a p1 x p2 grid (as
    ParaDL splits its "first partition"); the rest run unsplit, each group's samples
    on one GPU (distribution data on the first p1 GPUs).  Layer names are those
    `oracle import-model FILE.net` writes; rank the file with `oracle predict --layers`
    or `oracle search --evaluate` (docs/search.md).

    \b
    Example:
      oracle import-model VGG_ImageNet_profall.net_sc -o vgg-paradl.yaml
      oracle import-layers filter_vgg.lc --net VGG_ImageNet_profall.net_sc --strategy filter --gpus 16 -o vgg-filter.yaml
    """
    from oracle.importer.paradl import layerwise_text
    from oracle.render.output import emit

    emit(layerwise_text(lc, net, strategy, gpus, p2), output)
    if output and output != "-":
        echo(f"wrote {output}", err=True)


@click.command("import-system", context_settings={"max_content_width": 100})
@click.argument("plat", metavar="FILE.plat")
@click.option("--name", "-n", help="System name written to the file. [default: FILE (ParaDL platform file)]")
@output_option
def import_system(plat, name, output):
    """Turn a ParaDL platform file (parallel_analysis.py's -plat) into a system file.

    \b
    GPU memory and speed, GPUs per node, nodes (MAX_NODE GPUs) and one network level
    with α = LATENCY and 1/β = BANDWIDTH, each value citing its line.

    \b
    Example:
      oracle import-system ABCI.plat -o abci-paradl.yaml
    """
    from oracle.importer.paradl_system import system_text
    from oracle.render.output import emit

    emit(system_text(plat, name), output)
    if output and output != "-":
        echo(f"wrote {output}", err=True)
