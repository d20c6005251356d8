"""Load a CNN description (docs/model-format.md) into a frozen :class:`oracle.model.Model`."""

from __future__ import annotations

from pathlib import Path

from oracle.compute.layers.shapes import ShapeError, infer
from oracle.errors import OracleError, did_you_mean
from oracle.limits import SAMPLES
from oracle.load.fields import (
    MAX_MAGNITUDE,
    Fields,
    boolean,
    choice,
    integer,
    number,
    of,
    per_dim,
    string,
)
from oracle.load.yamlfile import load_yaml
from oracle.model import LAYER_TYPES, MODEL_INPUT, MULTI_INPUT_TYPES, Layer, Model

_pos = integer(ge=1)
_nonneg = integer(ge=0)


def load_model(path: str | Path) -> Model:
    name = str(path)
    doc = load_yaml(path, "model file")
    return parse_model(doc, name)


def parse_model(doc: dict, file: str) -> Model:
    top = Fields(doc, file, "")
    model_name = top.req("name", string())
    input_shape = _input_shape(top)
    ds = top.sub("dataset")
    assert ds is not None
    dataset_name = ds.opt("name", string(), "")
    samples = ds.req("samples", of(SAMPLES), "the number of training samples")
    bytes_per_sample = ds.opt("bytes_per_sample", number(gt=0))
    ds.done(allowed_extra=("source",))
    source = top.opt("source", string(nonempty=False), "")
    top.opt("description", string(nonempty=False), "")
    top.opt("notes", string(nonempty=False), "")

    layers: list[Layer] = []
    seen: dict[str, int] = {}
    items = list(top.items("layers"))
    if not items:
        raise top.error("layers", "has no layers; expected a list of layers")
    all_names = _all_names(items)
    for index, raw, line in items:
        layer = _parse_layer(raw, file, index, line, layers, seen, all_names)
        seen[layer.name] = index
        layers.append(layer)
    top.done()

    try:
        info = infer(input_shape, layers)
    except ShapeError as exc:
        bad = layers[exc.index]
        raise OracleError(
            exc.message, file=file, line=bad.line, path=f"layers[{exc.index}] ({bad.name})"
        ) from None
    _check_sizes(layers, info, file)
    return Model(
        name=model_name,
        input_shape=input_shape,
        dataset_name=dataset_name,
        dataset_samples=samples,
        layers=tuple(layers),
        info=info,
        source=source,
        file=file,
        dataset_bytes_per_sample=bytes_per_sample,
    )


def _check_sizes(layers: list[Layer], info, file: str) -> None:
    """Sizes each within bounds can still multiply out of them (a padding of 3e9 makes a
    10^18-element feature map); no layer plausibly has more than 10^15 elements or
    parameters per sample, and beyond that the cost model's integers overflow."""
    for index, (layer, li) in enumerate(zip(layers, info)):
        for what, n in (("output elements", li.output_elements), ("parameters", li.parameters)):
            if n > MAX_MAGNITUDE:
                raise OracleError(
                    f"has {n:.3g} {what} per sample, which is not plausible (at most {MAX_MAGNITUDE:g})",
                    file=file,
                    line=layer.line,
                    path=f"layers[{index}] ({layer.name})",
                )


def _input_shape(top: Fields) -> tuple[int, ...]:
    raw = top.req("input", lambda v: v, "channels then 1-3 spatial extents, e.g. [3, 224, 224]")
    if not isinstance(raw, list) or not 2 <= len(raw) <= 4:
        raise top.error(
            "input",
            f"got {raw!r}; expected a list of channels then 1, 2 or 3 spatial extents"
            " (e.g. [3, 224, 224])",
        )
    shape = []
    for i, v in enumerate(raw):
        try:
            shape.append(_pos(v))
        except ValueError as exc:
            raise top.error("input", f"item {i}: {exc}") from None
    return tuple(shape)


def _all_names(items: list) -> dict[str, int]:
    out: dict[str, int] = {}
    for index, raw, _ in items:
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            out.setdefault(raw["name"], index)
    return out


def _parse_layer(
    raw: object,
    file: str,
    index: int,
    line: int | None,
    previous: list[Layer],
    seen: dict[str, int],
    all_names: dict[str, int],
) -> Layer:
    path = f"layers[{index}]"
    f = Fields(raw, file, path, line)
    name = f.req("name", string())
    f.path = f"{path} ({name})"
    if name == MODEL_INPUT:
        raise f.error("name", f"'{MODEL_INPUT}' is reserved for the model's input; rename the layer")
    if name in seen:
        raise f.error("name", f"duplicate layer name '{name}'", hint=f"first used by layers[{seen[name]}]")
    kind = f.req("type", string())
    if kind not in LAYER_TYPES:
        hint = did_you_mean(kind, LAYER_TYPES) or "types: " + ", ".join(LAYER_TYPES) + " (docs/model-format.md)"
        raise f.error("type", f"unknown layer type '{kind}'", hint=hint)

    inputs = _inputs(f, previous, seen, all_names, kind)
    kw: dict = {}
    reader = _KEYS.get(kind)
    if reader is not None:
        reader(f, kw)
    f.done(allowed_extra=("comment",))
    return Layer(name=name, type=kind, inputs=inputs, line=f.line, **kw)


def _conv_keys(f: Fields, kw: dict) -> None:
    kw["filters"] = f.req("filters", _pos, "the number of output channels")
    kw["kernel"] = f.req("kernel", per_dim(_pos, "a kernel size"))
    kw["stride"] = f.opt("stride", per_dim(_pos, "a stride"), (1,))
    kw["padding"] = f.opt("padding", per_dim(_nonneg, "a padding"), (0,))
    kw["dilation"] = f.opt("dilation", per_dim(_pos, "a dilation"), (1,))
    kw["groups"] = f.opt("groups", _pos, 1)
    kw["bias"] = f.opt("bias", boolean(), True)
    if f.map.get("type") == "convtranspose":
        kw["output_padding"] = f.opt("output_padding", per_dim(_nonneg, "an output padding"), (0,))


def _fc_keys(f: Fields, kw: dict) -> None:
    kw["outputs"] = f.req("outputs", _pos, "the number of output features")
    kw["bias"] = f.opt("bias", boolean(), True)


def _pool_keys(f: Fields, kw: dict) -> None:
    kernel = f.req("kernel", per_dim(_pos, "a kernel size"))
    kw["kernel"] = kernel
    kw["stride"] = f.opt("stride", per_dim(_pos, "a stride"), kernel)
    kw["padding"] = f.opt("padding", per_dim(_nonneg, "a padding"), (0,))
    kw["dilation"] = (1,)
    kw["ceil_mode"] = f.opt("ceil_mode", boolean(), False)


def _size_keys(f: Fields, kw: dict) -> None:
    kw["size"] = f.req("size", per_dim(_pos, "an output extent"))


def _upsample_keys(f: Fields, kw: dict) -> None:
    if f.has("size") == f.has("scale"):
        raise f.error(None, "an upsample layer needs exactly one of 'size:' and 'scale:'")
    kw["size"] = f.opt("size", per_dim(_pos, "an output extent"), ())
    kw["scale"] = f.opt("scale", per_dim(number(gt=0), "a scale factor"), ())
    kw["mode"] = f.opt("mode", choice(("nearest", "linear")), "nearest")


def _norm_keys(f: Fields, kw: dict) -> None:
    if f.map.get("type") == "groupnorm":
        kw["groups"] = f.req("groups", _pos, "the number of channel groups")
    else:
        kw["dims"] = f.opt("dims", integer(ge=1, le=4), 1)
    kw["affine"] = f.opt("affine", boolean(), True)
    f.opt("eps", number(gt=0), None)


def _lrn_keys(f: Fields, kw: dict) -> None:
    """Cross-channel local response normalisation (PyTorch's LocalResponseNorm, Caffe's LRN
    ACROSS_CHANNELS): ``size`` channels per window; alpha, beta and k change no cost and
    are checked, not kept."""
    kw["size"] = (f.req("size", _pos, "the channels in the normalisation window"),)
    f.opt("alpha", number(gt=0), None)
    f.opt("beta", number(gt=0), None)
    f.opt("k", number(gt=0), None)


def _groups_keys(f: Fields, kw: dict) -> None:
    kw["groups"] = f.req("groups", _pos, "the number of channel groups")


def _axis_keys(f: Fields, kw: dict) -> None:
    kw["axis"] = f.opt("axis", integer(ge=0, le=3), 0)


def _reshape_keys(f: Fields, kw: dict) -> None:
    kw["shape"] = f.req("shape", per_dim(integer(ge=-1), "an extent (-1: the rest)"))


def _permute_keys(f: Fields, kw: dict) -> None:
    kw["perm"] = f.req("perm", per_dim(_nonneg, "a dimension index"))


def _unsupported_keys(f: Fields, kw: dict) -> None:
    kw["op"] = f.req("op", string(), "the operation oracle does not know")
    kw["shape"] = f.req("shape", per_dim(_pos, "an output extent"))


def _attention_keys(f: Fields, kw: dict) -> None:
    kw["heads"] = f.req("heads", _pos, "the number of attention heads")
    kw["window"] = f.opt("window", per_dim(_pos, "a window extent"), ())
    kw["shift"] = f.opt("shift", per_dim(_nonneg, "a shift"), ())
    kw["bias"] = f.opt("bias", boolean(), True)
    kw["position_bias"] = f.opt("position_bias", _nonneg, 0)
    kw["position_mlp"] = f.opt("position_mlp", _nonneg, 0)
    kw["cosine"] = f.opt("cosine", boolean(), False)
    kw["fused"] = f.opt("fused", boolean(), False)
    if kw["fused"] and kw["cosine"]:
        raise f.error("fused", "cosine attention scales its scores itself; it runs unfused")


def _classtoken_keys(f: Fields, kw: dict) -> None:
    kw["tokens"] = f.opt("tokens", _pos, 1)
    _axis_keys(f, kw)


def _slice_keys(f: Fields, kw: dict) -> None:
    _axis_keys(f, kw)
    kw["start"] = f.req("start", _nonneg, "the first index")
    kw["stop"] = f.req("stop", _pos, "one past the last index")


def _dropout_keys(f: Fields, kw: dict) -> None:
    f.opt("rate", number(ge=0, lt=1), 0.5)


def _slope_keys(f: Fields, kw: dict) -> None:
    f.opt("slope", number(), None)


# The keys each layer type reads (docs/model-format.md); types without a row have none.
_KEYS = {
    "conv": _conv_keys,
    "convtranspose": _conv_keys,
    "fc": _fc_keys,
    "maxpool": _pool_keys,
    "avgpool": _pool_keys,
    "adaptiveavgpool": _size_keys,
    "adaptivemaxpool": _size_keys,
    "upsample": _upsample_keys,
    "groupnorm": _norm_keys,
    "layernorm": _norm_keys,
    "lrn": _lrn_keys,
    "channelshuffle": _groups_keys,
    "concat": _axis_keys,
    "softmax": _axis_keys,
    "reshape": _reshape_keys,
    "permute": _permute_keys,
    "unsupported": _unsupported_keys,
    "attention": _attention_keys,
    "scale": _axis_keys,
    "classtoken": _classtoken_keys,
    "slice": _slice_keys,
    "dropout": _dropout_keys,
    "leakyrelu": _slope_keys,
    "elu": _slope_keys,
}


def _inputs(
    f: Fields, previous: list[Layer], seen: dict[str, int], all_names: dict[str, int], kind: str
) -> tuple[str, ...]:
    if not f.has("inputs"):
        f.used.add("inputs")
        if kind in MULTI_INPUT_TYPES:
            raise f.error(None, f"{_article(kind)} {kind} layer needs 'inputs:' naming the layers it joins")
        return (previous[-1].name if previous else MODEL_INPUT,)
    raw = f.map["inputs"]
    f.used.add("inputs")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise f.error("inputs", f"got {raw!r}; expected a list of layer names")
    names = []
    for item in raw:
        if not isinstance(item, str):
            raise f.error("inputs", f"got {item!r}; expected layer names")
        if item != MODEL_INPUT and item not in seen:
            if item == f.map.get("name"):
                raise f.error("inputs", f"layer '{item}' takes its own output as input (a cycle)")
            if item in all_names:
                raise f.error(
                    "inputs",
                    f"'{item}' is defined later (layers[{all_names[item]}]); a layer may only"
                    " take the outputs of layers listed before it (this also rules out cycles)",
                )
            hint = did_you_mean(item, list(seen) + [MODEL_INPUT])
            raise f.error("inputs", f"unknown layer '{item}'", hint=hint)
        names.append(item)
    if kind not in MULTI_INPUT_TYPES and len(names) != 1:
        raise f.error("inputs", f"{_article(kind)} {kind} layer takes exactly one input, got {len(names)}")
    return tuple(names)


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"
