"""Shape, parameter and FLOP inference for CNN layers of 1, 2 or 3 spatial dimensions.

Shapes are per sample, without the batch dimension: ``(channels, *spatial)``, or
``(features,)`` after ``flatten``/``fc``.

FLOP convention (forward pass, per sample):
- conv, fc: 2 FLOPs per multiply-add (the convention of torchvision/fvcore figures,
  which count multiply-adds: ResNet-50's 4.09 G multiply-adds = 8.18 GFLOPs here),
  plus 1 FLOP per output element for a bias.
- batchnorm: 2 per element (scale and shift, as at inference; the statistics are not
  counted), activations and dropout: 1 per element, softmax: 3 per element
  (exp, sum, divide), add: (inputs - 1) per output element,
- max/avg pooling: kernel volume per output element; global average pooling: one
  per input element; concat and flatten: 0 (data movement only).
These only matter for conv/fc-dominated totals and for spreading a total-only profile
over layers (SPEC §3.3).
"""

from __future__ import annotations

from collections.abc import Sequence

from oracle.model import ACTIVATIONS, MODEL_INPUT, Layer, LayerInfo


class ShapeError(ValueError):
    """A layer whose shape does not work out; carries the layer index."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


def fmt_shape(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape)


def _prod(values: Sequence[int]) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def _per_dim(values: tuple[int, ...], dims: int, what: str, index: int) -> tuple[int, ...]:
    if len(values) == 1:
        return values * dims
    if len(values) != dims:
        raise ShapeError(
            index, f"{what} has {len(values)} values but the input has {dims} spatial dimension(s)"
        )
    return values


def _window_output(
    layer: Layer,
    index: int,
    shape: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    ceil_mode: bool = False,
) -> tuple[int, ...]:
    """Output extents of a sliding-window layer (PyTorch's arithmetic)."""
    out = []
    spatial = shape[1:]
    for x, k, s, p, d in zip(spatial, kernel, stride, padding, dilation):
        span = d * (k - 1) + 1
        if span > x + 2 * p:
            padded = fmt_shape(tuple(e + 2 * q for e, q in zip(spatial, padding)))
            ks = fmt_shape(kernel) if len(set(kernel)) > 1 else str(kernel[0])
            raise ShapeError(index, f"kernel {ks} is larger than the padded input {padded}")
        if ceil_mode:
            n = -(-(x + 2 * p - span) // s) + 1
            if (n - 1) * s >= x + p:  # last window must start inside the input
                n -= 1
        else:
            n = (x + 2 * p - span) // s + 1
        out.append(n)
    return tuple(out)


def infer(
    input_shape: tuple[int, ...], layers: Sequence[Layer]
) -> tuple[LayerInfo, ...]:
    """Shapes, parameters and FLOPs of every layer, in order.

    ``layer.inputs`` must name earlier layers (or MODEL_INPUT); the loader checks names,
    this function checks that shapes fit together.
    """
    outputs: dict[str, tuple[int, ...]] = {MODEL_INPUT: tuple(input_shape)}
    infos: list[LayerInfo] = []
    for index, layer in enumerate(layers):
        in_shapes = tuple(outputs[name] for name in layer.inputs)
        info = _infer_one(index, layer, in_shapes)
        outputs[layer.name] = info.output_shape
        infos.append(info)
    return tuple(infos)


def _infer_one(index: int, layer: Layer, in_shapes: tuple[tuple[int, ...], ...]) -> LayerInfo:
    t = layer.type
    x = in_shapes[0]
    if t not in ("add", "concat") and len(in_shapes) != 1:
        raise ShapeError(index, f"{'an' if t[0] in 'aeiou' else 'a'} {t} layer takes one input, got {len(in_shapes)}")

    if t in ("conv", "maxpool", "avgpool"):
        if len(x) < 2:
            raise ShapeError(
                index,
                f"{'an' if t[0] in 'aeiou' else 'a'} {t} layer needs an input with spatial dimensions, got {fmt_shape(x)}"
                " (after flatten or fc)",
            )
        dims = len(x) - 1
        kernel = _per_dim(layer.kernel, dims, "kernel", index)
        stride = _per_dim(layer.stride, dims, "stride", index)
        padding = _per_dim(layer.padding, dims, "padding", index)
        dilation = _per_dim(layer.dilation or (1,), dims, "dilation", index)
        spatial_out = _window_output(
            layer, index, x, kernel, stride, padding, dilation, layer.ceil_mode
        )
        n_out = _prod(spatial_out)
        if t == "conv":
            c_in, f, g = x[0], layer.filters, layer.groups
            assert f is not None
            if c_in % g:
                raise ShapeError(index, f"groups {g} does not divide the {c_in} input channels")
            if f % g:
                raise ShapeError(index, f"groups {g} does not divide the {f} filters")
            weights = f * (c_in // g) * _prod(kernel)
            biases = f if layer.bias else 0
            flops = 2.0 * (c_in // g) * _prod(kernel) * f * n_out + biases * n_out
            return LayerInfo(in_shapes, (f, *spatial_out), weights, biases, flops)
        # pooling keeps channels
        flops = float(_prod(kernel)) * x[0] * n_out
        return LayerInfo(in_shapes, (x[0], *spatial_out), 0, 0, flops)

    n_in = _prod(x)
    if t == "fc":
        out = layer.outputs
        assert out is not None
        biases = out if layer.bias else 0
        return LayerInfo(in_shapes, (out,), n_in * out, biases, 2.0 * n_in * out + biases)
    if t == "globalavgpool":
        if len(x) < 2:
            raise ShapeError(index, f"globalavgpool needs spatial dimensions, got {fmt_shape(x)}")
        return LayerInfo(in_shapes, (x[0],) + (1,) * (len(x) - 1), 0, 0, float(n_in))
    if t == "batchnorm":
        c = x[0]
        return LayerInfo(in_shapes, x, c, c, 2.0 * n_in)
    if t in ACTIVATIONS or t == "dropout":
        return LayerInfo(in_shapes, x, 0, 0, float(n_in))
    if t == "softmax":
        return LayerInfo(in_shapes, x, 0, 0, 3.0 * n_in)
    if t == "flatten":
        return LayerInfo(in_shapes, (n_in,), 0, 0, 0.0)
    if t == "add":
        if len(in_shapes) < 2:
            raise ShapeError(index, "an add layer needs at least two inputs")
        for name, s in zip(layer.inputs[1:], in_shapes[1:]):
            if s != x:
                raise ShapeError(
                    index,
                    f"add inputs do not match: {fmt_shape(x)} from '{layer.inputs[0]}'"
                    f" vs {fmt_shape(s)} from '{name}'",
                )
        return LayerInfo(in_shapes, x, 0, 0, float((len(in_shapes) - 1) * n_in))
    if t == "concat":
        if len(in_shapes) < 2:
            raise ShapeError(index, "a concat layer needs at least two inputs")
        for name, s in zip(layer.inputs[1:], in_shapes[1:]):
            if len(s) != len(x) or s[1:] != x[1:]:
                raise ShapeError(
                    index,
                    f"concat inputs must agree in all but the channel dimension:"
                    f" {fmt_shape(x)} from '{layer.inputs[0]}' vs {fmt_shape(s)} from '{name}'",
                )
        channels = sum(s[0] for s in in_shapes)
        return LayerInfo(in_shapes, (channels, *x[1:]), 0, 0, 0.0)
    raise ShapeError(index, f"unknown layer type '{t}'")  # loader rejects these earlier
