"""``oracle import-model``: a PyTorch module, an ONNX file or a ParaDL ``.net`` file -> a
model file (docs/cli.md)."""

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
@click.option("--dataset", metavar="NAME=SAMPLES",
              help="Training set the epoch time is for. [default: ImageNet-1k=1281167; a ParaDL file's own]")
@click.option("--allow-unsupported", is_flag=True,
              help="Import operations oracle does not know as zero-cost layers (listed in the file).")
@click.option("--profile-output", metavar="FILE",
              help="ParaDL .net: also write its measured time per sample as a profile file.")
@output_option
def import_model(source, input_, name, dataset, allow_unsupported, profile_output, output):
    """Import a model from PyTorch, ONNX or ParaDL as an oracle model file.

    \b
    SOURCE is one of
      torchvision:NAME        torchvision.models (also video.r3d_18, segmentation.fcn_resnet50)
      timm:NAME               a timm model (needs timm)
      FILE.py:CALLABLE        a function or class in FILE.py returning an nn.Module
      package.module:CALLABLE the same from an importable module
      FILE.onnx               an ONNX graph (needs oracle[onnx])
      FILE.net                a ParaDL model file (also .net_sc, .net_256: parallel_analysis.py's -net)
    Models are built without weights; nothing is downloaded.  One layer per operation
    that costs or changes a shape (docs/model-format.md); an operation oracle does not
    know stops the import unless --allow-unsupported.

    \b
    Example:
      oracle import-model torchvision:mobilenet_v2 --input 3,224,224 -o mobilenet_v2.yaml
      oracle import-model RESNET50_ImageNet_profall.net_sc -o resnet50-paradl.yaml
    """
    from oracle.importer.build import DEFAULT_DATASET
    from oracle.importer.build import import_model as run_import
    from oracle.importer.build import parse_input
    from oracle.importer.paradl import is_paradl_net
    from oracle.render.output import emit

    if is_paradl_net(source):
        return _paradl(source, input_, name, dataset, allow_unsupported, profile_output, output)
    if profile_output:
        raise click.UsageError("--profile-output is for a ParaDL .net file (PyTorch models: oracle profile)")
    shape = parse_input(input_) if input_ else None
    args = [source] + (["--input", input_] if input_ else []) + (["--allow-unsupported"] if allow_unsupported else [])
    got = run_import(source, shape, name=name, dataset=_dataset(dataset) if dataset else DEFAULT_DATASET,
                     allow_unsupported=allow_unsupported, command=" ".join(args))  # fmt: skip
    emit(got.text, output)
    _wrote(output, got.model, f", {len(got.unsupported)} unsupported operation(s) at zero cost" if got.unsupported else "")


def _wrote(output, model, extra: str = "") -> None:
    if output and output != "-":
        echo(f"wrote {output}: {len(model.layers)} layers, {model.parameters:,} parameters,"
             f" {model.flops / 1e9:.4g} GFLOPs per sample{extra}", err=True)  # fmt: skip


def _paradl(source, input_, name, dataset, allow_unsupported, profile, output) -> None:
    """A ParaDL .net file: its shapes, dataset and layers are the file's."""
    from pathlib import Path

    from oracle.errors import OracleError
    from oracle.importer.paradl import import_net, profile_text
    from oracle.render.output import atomic_write_all, emit

    if input_ or allow_unsupported:
        raise OracleError("a ParaDL model file gives its own input shape and knows every layer it lists",
                          path="--input" if input_ else "--allow-unsupported", hint="leave the option out")  # fmt: skip
    if profile == "-":
        raise OracleError("standard output is for the model file; give the profile a file name", path="--profile-output")
    got = import_net(source, name=name, dataset=_dataset(dataset) if dataset else None)
    if not profile:
        emit(got.text, output)
    elif output and output != "-":
        if Path(profile).resolve() == Path(output).resolve():
            raise OracleError("names the same file as --output", path="--profile-output")
        atomic_write_all({profile: profile_text(got, source), output: got.text})  # both or neither
        echo(f"wrote {profile}: {got.net.time_s_per_sample:g} s per sample", err=True)
    else:
        atomic_write_all({profile: profile_text(got, source)})
        emit(got.text, output)
    _wrote(output, got.model)
