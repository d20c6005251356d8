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
- convtranspose: 2 per multiply-add, C_in/groups · kernel volume · F per *input*
  position (each input element is scattered through the kernel; fvcore's
  ``conv_flop_jit`` with ``transposed=True`` counts the same), plus the bias.
- matmul: 2·n·k·m per (broadcast) product; mul: 1 per output element;
  hardswish/hardsigmoid: 1 per element, like the other activations.
- groupnorm, layernorm: 5 per element with an affine scale and shift, 4 without
  (fvcore's ``norm_flop_counter``, jit_handles.py: "5 is just a rough estimate").
- lrn (across channels, Krizhevsky et al. 2012 §3.3): size + 5 per element (the square,
  the window's size terms summed, the scale and offset, the power, the division).
- adaptive pools: one per element of every output's window (PyTorch's windows run from
  floor(i·X/Y) to ceil((i+1)·X/Y), aten/src/ATen/native/AdaptivePooling.h), i.e. one per
  input element when the output divides the input; upsample: nearest 0, linear 2^dims
  per output element
  (fvcore counts 4 for ``upsample_bilinear2d``, 2^2).
- reshape, permute, channelshuffle, unsupported: 0 (views or copies, no arithmetic).
- attention, scale, posembedding, classtoken, slice: oracle/compute/layers/shapes_tokens.py.
These only matter for conv/fc-dominated totals and for spreading a total-only profile
over layers (docs/file-formats.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from oracle.compute.layers.shape_base import ShapeError, fmt_shape, per_dim, prod
from oracle.compute.layers.shapes_tokens import TOKEN_RULES
from oracle.model import ACTIVATIONS, MODEL_INPUT, MULTI_INPUT_TYPES, Layer, LayerInfo


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


def _article(t: str) -> str:
    return "an" if t[0] in "aeiou" else "a"


def _infer_one(index: int, layer: Layer, in_shapes: tuple[tuple[int, ...], ...]) -> LayerInfo:
    t = layer.type
    if t not in MULTI_INPUT_TYPES and len(in_shapes) != 1:
        raise ShapeError(index, f"{_article(t)} {t} layer takes one input, got {len(in_shapes)}")
    if t in _NEEDS_SPATIAL and len(in_shapes[0]) < 2:
        raise ShapeError(
            index,
            f"{_article(t)} {t} layer needs an input with spatial dimensions, got"
            f" {fmt_shape(in_shapes[0])} (after flatten or fc)",
        )
    rule = SHAPE_RULES.get(t)
    if rule is None:  # pragma: no cover - the loader rejects unknown types
        raise ShapeError(index, f"unknown layer type '{t}'")
    return rule(index, layer, in_shapes)


def _window(index: int, layer: Layer, x: tuple[int, ...]):
    dims = len(x) - 1
    kernel = per_dim(layer.kernel, dims, "kernel", index)
    stride = per_dim(layer.stride or (1,), dims, "stride", index)
    padding = per_dim(layer.padding or (0,), dims, "padding", index)
    dilation = per_dim(layer.dilation or (1,), dims, "dilation", index)
    return kernel, stride, padding, dilation


def _check_groups(index: int, c_in: int, f: int, g: int) -> None:
    if c_in % g:
        raise ShapeError(index, f"groups {g} does not divide the {c_in} input channels")
    if f % g:
        raise ShapeError(index, f"groups {g} does not divide the {f} filters")


def _conv(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    kernel, stride, padding, dilation = _window(index, layer, x)
    out = _window_output(layer, index, x, kernel, stride, padding, dilation, layer.ceil_mode)
    n_out = prod(out)
    c_in, f, g = x[0], layer.filters, layer.groups
    assert f is not None
    _check_groups(index, c_in, f, g)
    weights = f * (c_in // g) * prod(kernel)
    biases = f if layer.bias else 0
    flops = 2.0 * (c_in // g) * prod(kernel) * f * n_out + biases * n_out
    return LayerInfo(in_shapes, (f, *out), weights, biases, flops)


def _convtranspose(index: int, layer: Layer, in_shapes) -> LayerInfo:
    """PyTorch's ConvTranspose arithmetic: out = (x-1)·s - 2p + d·(k-1) + output_padding + 1."""
    x = in_shapes[0]
    kernel, stride, padding, dilation = _window(index, layer, x)
    dims = len(x) - 1
    extra = per_dim(layer.output_padding or (0,), dims, "output_padding", index)
    out = []
    for e, k, s, p, d, op in zip(x[1:], kernel, stride, padding, dilation, extra):
        if op >= max(s, d):
            raise ShapeError(index, f"output_padding {op} must be smaller than the stride or the dilation")
        n = (e - 1) * s - 2 * p + d * (k - 1) + op + 1
        if n < 1:
            raise ShapeError(index, f"padding {p} leaves no output of the {e}-wide input")
        out.append(n)
    c_in, f, g = x[0], layer.filters, layer.groups
    assert f is not None
    _check_groups(index, c_in, f, g)
    weights = c_in * (f // g) * prod(kernel)
    biases = f if layer.bias else 0
    flops = 2.0 * c_in * (f // g) * prod(kernel) * prod(x[1:]) + biases * prod(out)
    return LayerInfo(in_shapes, (f, *out), weights, biases, flops)


def _pool(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    kernel, stride, padding, dilation = _window(index, layer, x)
    out = _window_output(layer, index, x, kernel, stride, padding, dilation, layer.ceil_mode)
    flops = float(prod(kernel)) * x[0] * prod(out)
    return LayerInfo(in_shapes, (x[0], *out), 0, 0, flops)


def _adaptive_pool(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    size = per_dim(layer.size, len(x) - 1, "size", index)
    flops = float(x[0])
    for e, o in zip(x[1:], size):
        # window lengths along this dimension, summed: Σ_i ceil((i+1)e/o) - floor(ie/o)
        # telescopes to e plus the o - gcd(e, o) windows whose end is not a whole number
        flops *= e + o - math.gcd(e, o)
    return LayerInfo(in_shapes, (x[0], *size), 0, 0, flops)


def _upsample(index: int, layer: Layer, in_shapes) -> LayerInfo:
    """Output extents: ``size``, or floor(extent · scale) (PyTorch's interpolate)."""
    x = in_shapes[0]
    dims = len(x) - 1
    if layer.size:
        out = per_dim(layer.size, dims, "size", index)
    else:
        scale = per_dim(layer.scale, dims, "scale", index)
        out = tuple(int(math.floor(e * s)) for e, s in zip(x[1:], scale))
        if min(out) < 1:
            raise ShapeError(index, f"scale {layer.scale} leaves no output of {fmt_shape(x)}")
    per_out = 0.0 if layer.mode == "nearest" else float(2**dims)
    return LayerInfo(in_shapes, (x[0], *out), 0, 0, per_out * x[0] * prod(out))


def _fc(index: int, layer: Layer, in_shapes) -> LayerInfo:
    n_in = prod(in_shapes[0])
    out = layer.outputs
    assert out is not None
    biases = out if layer.bias else 0
    return LayerInfo(in_shapes, (out,), n_in * out, biases, 2.0 * n_in * out + biases)


def _globalavgpool(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    return LayerInfo(in_shapes, (x[0],) + (1,) * (len(x) - 1), 0, 0, float(prod(x)))


def _batchnorm(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    return LayerInfo(in_shapes, x, x[0], x[0], 2.0 * prod(x))


def _groupnorm(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    if x[0] % layer.groups:
        raise ShapeError(index, f"groups {layer.groups} does not divide the {x[0]} channels")
    c = x[0] if layer.affine else 0
    return LayerInfo(in_shapes, x, c, c, (5.0 if layer.affine else 4.0) * prod(x))


def _layernorm(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    if not 1 <= layer.dims <= len(x):
        raise ShapeError(index, f"dims {layer.dims} is not between 1 and the input's {len(x)} dimensions")
    c = prod(x[-layer.dims :]) if layer.affine else 0
    return LayerInfo(in_shapes, x, c, c, (5.0 if layer.affine else 4.0) * prod(x))


def _lrn(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    return LayerInfo(in_shapes, x, 0, 0, (layer.size[0] + 5.0) * prod(x))


def _per_element(flops: float):
    def rule(index: int, layer: Layer, in_shapes) -> LayerInfo:
        x = in_shapes[0]
        return LayerInfo(in_shapes, x, 0, 0, flops * prod(x))

    return rule


def _flatten(index: int, layer: Layer, in_shapes) -> LayerInfo:
    return LayerInfo(in_shapes, (prod(in_shapes[0]),), 0, 0, 0.0)


def _reshape(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    target = list(layer.shape)
    if target.count(-1) > 1:
        raise ShapeError(index, "a reshape may leave at most one extent as -1")
    known = prod([d for d in target if d != -1])
    if -1 in target:
        if known == 0 or prod(x) % known:
            raise ShapeError(index, f"cannot reshape {fmt_shape(x)} to {target}")
        target[target.index(-1)] = prod(x) // known
    if prod(target) != prod(x):
        raise ShapeError(index, f"cannot reshape {fmt_shape(x)} ({prod(x)} elements) to {fmt_shape(target)}")
    return LayerInfo(in_shapes, tuple(target), 0, 0, 0.0)


def _permute(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    if sorted(layer.perm) != list(range(len(x))):
        raise ShapeError(index, f"perm {list(layer.perm)} is not an order of the {len(x)} dimensions of {fmt_shape(x)}")
    return LayerInfo(in_shapes, tuple(x[i] for i in layer.perm), 0, 0, 0.0)


def _channelshuffle(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    if x[0] % layer.groups:
        raise ShapeError(index, f"groups {layer.groups} does not divide the {x[0]} channels")
    return LayerInfo(in_shapes, x, 0, 0, 0.0)


def _unsupported(index: int, layer: Layer, in_shapes) -> LayerInfo:
    return LayerInfo(in_shapes, tuple(layer.shape), 0, 0, 0.0)


def _need_two(index: int, t: str, in_shapes) -> None:
    if len(in_shapes) < 2:
        raise ShapeError(index, f"{_article(t)} {t} layer needs at least two inputs")


def _add(index: int, layer: Layer, in_shapes) -> LayerInfo:
    _need_two(index, "add", in_shapes)
    x = in_shapes[0]
    for name, s in zip(layer.inputs[1:], in_shapes[1:]):
        if s != x:
            raise ShapeError(
                index,
                f"add inputs do not match: {fmt_shape(x)} from '{layer.inputs[0]}'"
                f" vs {fmt_shape(s)} from '{name}'",
            )
    return LayerInfo(in_shapes, x, 0, 0, float((len(in_shapes) - 1) * prod(x)))


def _broadcast(index: int, layer: Layer, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy/PyTorch broadcasting of two per-sample shapes (trailing dimensions align)."""
    n = max(len(a), len(b))
    a1, b1 = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for u, v in zip(a1, b1):
        if u != v and 1 not in (u, v):
            raise ShapeError(
                index, f"{layer.type} inputs do not broadcast: {fmt_shape(a)} vs {fmt_shape(b)}"
            )
        out.append(max(u, v))
    return tuple(out)


def _mul(index: int, layer: Layer, in_shapes) -> LayerInfo:
    """Element-wise product with broadcasting (squeeze-excitation: C x H x W times C x 1 x 1)."""
    _need_two(index, "mul", in_shapes)
    out = in_shapes[0]
    for s in in_shapes[1:]:
        out = _broadcast(index, layer, out, s)
    return LayerInfo(in_shapes, out, 0, 0, float((len(in_shapes) - 1) * prod(out)))


def _matmul(index: int, layer: Layer, in_shapes) -> LayerInfo:
    """torch.matmul of two per-sample tensors of at least 2 dimensions: (..., n, k) @
    (..., k, m), leading dimensions broadcast; 2·n·k·m FLOPs per product."""
    if len(in_shapes) != 2:
        raise ShapeError(index, f"a matmul layer takes two inputs, got {len(in_shapes)}")
    a, b = in_shapes
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        raise ShapeError(index, f"matmul inputs do not fit: {fmt_shape(a)} @ {fmt_shape(b)}")
    lead = _broadcast(index, layer, a[:-2], b[:-2]) if a[:-2] or b[:-2] else ()
    out = (*lead, a[-2], b[-1])
    return LayerInfo(in_shapes, out, 0, 0, 2.0 * prod(lead) * a[-2] * a[-1] * b[-1])


def _concat(index: int, layer: Layer, in_shapes) -> LayerInfo:
    _need_two(index, "concat", in_shapes)
    x, axis = in_shapes[0], layer.axis
    if not 0 <= axis < len(x):
        raise ShapeError(index, f"axis {axis} is outside the {len(x)} dimensions of {fmt_shape(x)}")
    rest = x[:axis] + x[axis + 1 :]
    for name, s in zip(layer.inputs[1:], in_shapes[1:]):
        if len(s) != len(x) or s[:axis] + s[axis + 1 :] != rest:
            what = "the channel dimension" if axis == 0 else f"dimension {axis}"
            raise ShapeError(
                index,
                f"concat inputs must agree in all but {what}:"
                f" {fmt_shape(x)} from '{layer.inputs[0]}' vs {fmt_shape(s)} from '{name}'",
            )
    joined = sum(s[axis] for s in in_shapes)
    return LayerInfo(in_shapes, (*x[:axis], joined, *x[axis + 1 :]), 0, 0, 0.0)


# One row per layer type (STYLE §2): (index, layer, input shapes) -> LayerInfo.
SHAPE_RULES = {
    "conv": _conv,
    "convtranspose": _convtranspose,
    "fc": _fc,
    "matmul": _matmul,
    "maxpool": _pool,
    "avgpool": _pool,
    "globalavgpool": _globalavgpool,
    "adaptiveavgpool": _adaptive_pool,
    "adaptivemaxpool": _adaptive_pool,
    "upsample": _upsample,
    "batchnorm": _batchnorm,
    "groupnorm": _groupnorm,
    "layernorm": _layernorm,
    "lrn": _lrn,
    **{a: _per_element(1.0) for a in ACTIVATIONS},
    "dropout": _per_element(1.0),
    "add": _add,
    "mul": _mul,
    "concat": _concat,
    "flatten": _flatten,
    "reshape": _reshape,
    "permute": _permute,
    "channelshuffle": _channelshuffle,
    "softmax": _per_element(3.0),
    "unsupported": _unsupported,
    **TOKEN_RULES,  # attention, scale, posembedding, classtoken, slice
}
_NEEDS_SPATIAL = (
    "conv", "convtranspose", "maxpool", "avgpool", "globalavgpool", "adaptiveavgpool",
    "adaptivemaxpool", "upsample", "lrn",
)  # fmt: skip
