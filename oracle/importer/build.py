"""``oracle import-model``: from a SOURCE to the text of a checked model file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oracle import __version__
from oracle.compute.layers.shapes import fmt_shape
from oracle.errors import OracleError
from oracle.importer.write import render
from oracle.load.model import parse_model
from oracle.model import Model

DEFAULT_DATASET = ("ImageNet-1k", 1281167)  # an assumption the header says to edit
MAX_EXTENT = 10**6  # channels or pixels along one axis of --input: beyond any image or volume


@dataclass(frozen=True)
class Imported:
    text: str  # the model file
    model: Model  # as oracle loads it
    reference_parameters: int  # the source's own count (PyTorch's numel, ONNX initializers)
    unsupported: tuple[tuple[str, str], ...]  # (layer, operation) imported at zero cost


def parse_input(text: str) -> tuple[int, ...]:
    parts = text.split(",")
    if all(p.strip().isascii() and p.strip().isdigit() and len(p.strip()) <= 7 for p in parts):
        dims = tuple(int(v) for v in parts)
    else:
        dims = ()
    if not 2 <= len(dims) <= 4 or min(dims) < 1 or max(dims) > MAX_EXTENT:
        raise OracleError(
            f"got {text[:60]!r}; expected channels then 1-3 spatial extents of at most {MAX_EXTENT:,}, e.g. 3,224,224",
            path="--input",
        )
    return dims


def _check_source_file(source: str) -> None:
    """A source that names a file (``FILE.onnx``, ``FILE.py:CALLABLE``): refused before
    anything opens it unless it is a regular file (a FIFO would block, /dev/zero never
    ends), and remembered as an input, so that -o cannot replace it."""
    from oracle.load.source import check_readable

    where = source.rpartition(":")[0]
    if source.lower().endswith(".onnx"):
        check_readable(source, "model in ONNX format", remember=True)
    elif where.endswith(".py"):
        check_readable(where, "Python file", remember=True)


def import_model(
    source: str,
    input_shape: tuple[int, ...] | None,
    *,
    name: str | None = None,
    dataset: tuple[str, int] = DEFAULT_DATASET,
    allow_unsupported: bool = False,
    command: str = "",
    header: list[str] | None = None,
    description: str | None = None,
) -> Imported:
    """Import ``source``; ``header`` replaces the generated comment lines (the shipped
    files' script writes its own, free of versions, so they regenerate identically)."""
    _check_source_file(source)
    if source.lower().endswith(".onnx"):
        from oracle.importer import onnx as onnx_import

        got = onnx_import.load(source, input_shape, allow_unsupported)
    else:
        got = _from_torch(source, input_shape, allow_unsupported)
    layers, shapes, unsupported, input_shape, described, reference = got
    doc = {
        "name": name or _default_name(source),
        "input": list(input_shape),
        "dataset": {"name": dataset[0], "samples": dataset[1]},
        "source": f"imported from {source}",
    }
    if description:
        doc["description"] = description
    if unsupported:
        doc["notes"] = "zero-cost layers for unsupported operations: " + ", ".join(
            f"{layer} ({op})" for layer, op in unsupported
        )
    doc["layers"] = layers
    model = _check(doc, shapes, source)
    if header is None:
        header = _header(source, described, command, model, reference, unsupported)
    return Imported(render(doc, header), model, reference, tuple(unsupported))


def _default_name(source: str) -> str:
    """resnet50 for torchvision:resnet50, r3d_18 for torchvision:video.r3d_18, Net for
    nets.py:Net, the file's stem for an ONNX file."""
    if source.lower().endswith(".onnx"):
        return Path(source).stem
    return source.rsplit(":", 1)[-1].rsplit(".", 1)[-1]


def _from_torch(source: str, input_shape, allow_unsupported: bool):
    from oracle.importer import sources

    if input_shape is None:
        raise OracleError("needs --input C,H,W[,D] (the shape of one sample)", file=source, path="--input")
    built = sources.build(source)  # says which extra to install when torch is missing
    from oracle.importer import fx

    gm = fx.trace(built.module, input_shape, source)
    out = fx.convert(gm, source, allow_unsupported)
    reference = _used_parameters(gm)
    return out.layers, out.shapes, out.unsupported, input_shape, built.description, reference


def _used_parameters(gm) -> int:
    """Parameters of the modules the traced forward calls and of the tensors it reads
    directly (counted once each): heads the forward does not use in evaluation mode,
    as GoogLeNet's auxiliary classifiers, are not part of the imported model."""
    modules = dict(gm.named_modules())
    seen: dict[int, int] = {}
    for node in gm.graph.nodes:
        if node.op == "call_module":
            for p in modules[node.target].parameters():
                seen[id(p)] = p.numel()
        elif node.op == "get_attr":
            obj = gm
            for part in str(node.target).split("."):
                obj = getattr(obj, part)
            if getattr(obj, "requires_grad", False):
                seen[id(obj)] = obj.numel()
    return sum(seen.values())


def _check(doc: dict, shapes: dict, source: str) -> Model:
    """Load the layers as oracle would and compare every shape with the source's."""
    try:
        model = parse_model(doc, source)
    except OracleError as exc:
        raise OracleError(f"the imported layers do not check: {exc.path}: {exc.message}", file=source) from None
    for layer, info in zip(model.layers, model.info):
        want = shapes.get(layer.name)
        if want is not None and tuple(want) != tuple(info.output_shape):
            raise OracleError(
                f"layer {layer.name} ({layer.type}): oracle computes {fmt_shape(info.output_shape)},"
                f" the source {fmt_shape(want)}; this operation's arguments cannot be imported",
                file=source,
            )
    return model


def _header(source, described, command, model: Model, reference: int, unsupported) -> list[str]:
    lines = [
        f"Imported by `oracle import-model{' ' + command if command else ' ' + source}` (oracle {__version__}).",
        f"From: {described}.",
        f"Input {fmt_shape(model.input_shape)}; {len(model.layers)} layers; parameters"
        f" {model.parameters:,} (the source: {reference:,}); forward {model.flops / 1e9:.4g} GFLOPs per sample.",
        "The dataset is an assumption: edit dataset.name and dataset.samples to your data.",
    ]
    if unsupported:
        lines.append(f"{len(unsupported)} unsupported operation(s) imported as zero-cost layers:")
        lines += [f"  {layer}: {op}" for layer, op in unsupported]
    return lines
