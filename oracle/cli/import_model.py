"""``oracle import-model``: a PyTorch module or an ONNX file -> a model file (docs/cli.md)."""

from __future__ import annotations

import click

from oracle.cli.common import echo, output_option


def _dataset(text: str) -> tuple[str, int]:
    name, sep, samples = text.rpartition("=")
    if not sep or not name or not samples.isdigit() or int(samples) < 1:
        raise click.BadParameter(f"got {text!r}; expected NAME=SAMPLES, e.g. ImageNet-1k=1281167")
    return name, int(samples)


@click.command("import-model", context_settings={"max_content_width": 100})
@click.argument("source", metavar="SOURCE")
@click.option("--input", "-i", "input_", metavar="C,H,W[,D]",
              help="Shape of one sample: channels, then 1-3 spatial extents (ONNX: from the file if fixed).")
@click.option("--name", "-n", help="Model name written to the file. [default: the builder's name]")
@click.option("--dataset", default="ImageNet-1k=1281167", show_default=True, metavar="NAME=SAMPLES",
              help="Training set the epoch time is for.")
@click.option("--allow-unsupported", is_flag=True,
              help="Import operations oracle does not know as zero-cost layers (listed in the file).")
@output_option
def import_model(source, input_, name, dataset, allow_unsupported, output):
    """Import a model from PyTorch or ONNX as an oracle model file.

    \b
    SOURCE is one of
      torchvision:NAME        torchvision.models (also video.r3d_18, segmentation.fcn_resnet50)
      timm:NAME               a timm model (needs timm)
      FILE.py:CALLABLE        a function or class in FILE.py returning an nn.Module
      package.module:CALLABLE the same from an importable module
      FILE.onnx               an ONNX graph (needs oracle[onnx])
    Models are built without weights; nothing is downloaded.  One layer per operation
    that costs or changes a shape (docs/model-format.md); an operation oracle does not
    know stops the import unless --allow-unsupported.

    \b
    Example:
      oracle import-model torchvision:mobilenet_v2 --input 3,224,224 -o mobilenet_v2.yaml
    """
    from oracle.importer.build import import_model as run_import
    from oracle.importer.build import parse_input
    from oracle.render.output import emit

    shape = parse_input(input_) if input_ else None
    args = [source] + (["--input", input_] if input_ else []) + (["--allow-unsupported"] if allow_unsupported else [])
    got = run_import(source, shape, name=name, dataset=_dataset(dataset),
                     allow_unsupported=allow_unsupported, command=" ".join(args))  # fmt: skip
    emit(got.text, output)
    if output and output != "-":
        echo(
            f"wrote {output}: {len(got.model.layers)} layers, {got.model.parameters:,} parameters,"
            f" {got.model.flops / 1e9:.4g} GFLOPs per sample"
            + (f", {len(got.unsupported)} unsupported operation(s) at zero cost" if got.unsupported else ""),
            err=True,
        )
