"""Shape, parameter and FLOP rules of the transformer layer types (docs/model-format.md
"Transformer layers"): attention, scale, posembedding, classtoken and slice.

Shapes are per sample as in :mod:`oracle.compute.layers.shapes`; transformer blocks run on
channels-last tensors, ``(tokens, features)`` (ViT), ``(groups, tokens, features)``
(MaxViT) or ``(H, W, features)`` (Swin), so ``features`` is the last dimension here.

FLOP convention (forward, per sample; 2 per multiply-add as in shapes.py):

- attention over N tokens (after padding to whole windows) in groups of P tokens, E
  features, h heads: the q/k/v and output projections 2·N·E·3E + 2·N·E·E, the scores
  Q·Kᵀ and the weighted sum A·V 2·N·P·E each (torch/utils/flop_counter.py's ``bmm_flop``
  and ``sdpa_flop_count``: 2·b·h·s_q·s_k·d per product); element-wise, as shapes.py counts
  them: 4E·N bias adds, N·E for scaling q, 3 per score (softmax) over h·N·P scores, one
  more per score for a relative position bias, a shift mask or Swin V2's logit scale,
  and 3 per element of q and k for V2's normalisation (square, sum, divide).
  Swin V2's position-bias MLP runs once per batch, not per sample: its FLOPs are left out.
- scale, posembedding: 1 per element (a multiply, an add); classtoken, slice: 0 (a copy, a view).
"""

from __future__ import annotations

from oracle.compute.layers.shape_base import ShapeError, fmt_shape, per_dim, prod
from oracle.model import Layer, LayerInfo


def attention_groups(layer: Layer, x: tuple[int, ...], index: int = 0) -> tuple[int, int]:
    """(N, P): tokens after padding to whole windows, and tokens attending to each other.
    Without ``window``: the tokens are dimension -2 and the dimensions before it are
    independent groups (MaxViT's windows).  With ``window``: non-overlapping windows over
    all dimensions but the last, each extent padded up to a whole number of windows
    (torchvision's ``shifted_window_attention`` pads with F.pad)."""
    if not layer.window:
        return prod(x[:-1]), x[-2]
    window = per_dim(layer.window, len(x) - 1, "window", index)
    padded = [-(-e // w) * w for e, w in zip(x[:-1], window)]
    return prod(padded), prod(window)


def attention_flops(layer: Layer, x: tuple[int, ...]) -> tuple[float, float]:
    """(products, element-wise) forward FLOPs per sample (module docstring)."""
    n, p = attention_groups(layer, x)
    e, h = x[-1], layer.heads
    products = 2.0 * n * e * 3 * e + 2.0 * n * e * e + 2 * (2.0 * n * p * e)
    scores = float(h * n * p)
    elementwise = n * e + 3 * scores + (4.0 * n * e if layer.bias else 0.0)
    biased = layer.position_bias or layer.position_mlp
    elementwise += scores * (bool(biased) + bool(any(layer.shift)) + layer.cosine)
    if layer.cosine:
        elementwise += 3.0 * 2 * n * e
    return products, elementwise


def internal_traffic(layer: Layer, info: LayerInfo) -> float:
    """Elements per sample an attention layer writes and reads again between its own
    kernels (0 for other types): q/k/v (3·N·E) and the context (N·E) once each way, and
    unless ``fused`` the scores and the probabilities (h·N·P each) once each way, as the
    math path of aten/src/ATen/native/transformers/attention.cpp
    (``_scaled_dot_product_attention_math``) materialises them; fused kernels (flash
    attention, Dao et al. 2022) keep the scores on chip."""
    if layer.type != "attention":
        return 0.0
    x = info.input_shapes[0]
    n, p = attention_groups(layer, x)
    scores = 0.0 if layer.fused else 4.0 * layer.heads * n * p
    return 2.0 * (4 * n * x[-1]) + scores


def attention_saved(layer: Layer, info: LayerInfo) -> float:
    """Elements per sample an attention layer saves for the backward besides its input
    (tools/autograd/derivatives.yaml): q, k, v and the context (4·N·E: the score and
    weighted-sum products take both operands, the output projection its input); the
    softmax output h·N·P (math path) or the h·N log-sum-exp (``fused``:
    ``_scaled_dot_product_flash_attention``/``_efficient_attention`` save query, key,
    value, output and logsumexp); with ``window`` also the windowed copy of the input the
    q/k/v projection reads (N·E); with ``cosine`` the normalised q and k (2·N·E), their
    norms (2·h·N) and the scores before the logit scale (h·N·P)."""
    x = info.input_shapes[0]
    n, p = attention_groups(layer, x)
    e, h = x[-1], layer.heads
    out = 4.0 * n * e + (h * n if layer.fused else h * n * p)
    if layer.window:
        out += n * e
    if layer.cosine:
        out += 2.0 * n * e + 2.0 * h * n + h * n * p
    return out


def saves_input(layer: Layer) -> bool:
    """Windowed attention pads, shifts and partitions a copy first: its q/k/v projection
    saves that copy (:func:`attention_saved`), not the layer's input."""
    return not layer.window


def attention_parameters(layer: Layer, e: int) -> tuple[int, int]:
    """(weights, biases): q/k/v and output projections (PyTorch's MultiheadAttention:
    in_proj_weight 3E x E, out_proj E x E, biases 3E + E), the relative position table
    (``position_bias`` x heads, Swin/MaxViT's relative_position_bias_table), Swin V2's
    cpb_mlp (Linear(2, M) with bias, ReLU, Linear(M, heads) without) and logit_scale."""
    h, m = layer.heads, layer.position_mlp
    weights = 4 * e * e + layer.position_bias * h + (2 * m + m * h if m else 0) + (h if layer.cosine else 0)
    biases = (4 * e if layer.bias else 0) + m
    return weights, biases


def _attention(index: int, layer: Layer, in_shapes) -> LayerInfo:
    x = in_shapes[0]
    if len(x) < 2:
        raise ShapeError(index, f"attention needs (tokens, features) per sample, got {fmt_shape(x)}")
    if x[-1] % layer.heads:
        raise ShapeError(index, f"heads {layer.heads} does not divide the {x[-1]} features")
    attention_groups(layer, x, index)  # checks the window's length
    if layer.shift:
        per_dim(layer.shift, len(x) - 1, "shift", index)
    products, elementwise = attention_flops(layer, x)
    weights, biases = attention_parameters(layer, x[-1])
    return LayerInfo(in_shapes, x, weights, biases, products + elementwise)


def split_widths(layers, infos) -> tuple[list[int], list[int]]:
    """What filter and channel parallelism split per layer (C_l, F_l): input channels and
    filters, an attention layer's heads (Megatron-LM's tensor parallelism, Shoeybi et al.
    2019 §3: the heads are divided among the GPUs)."""
    heads = [layer.heads if layer.type == "attention" else 0 for layer in layers]
    return ([h or i.input_shapes[0][0] for h, i in zip(heads, infos)],
            [h or i.output_shape[0] for h, i in zip(heads, infos)])  # fmt: skip


def _axis(index: int, layer: Layer, x: tuple[int, ...]) -> int:
    if not 0 <= layer.axis < len(x):
        raise ShapeError(index, f"axis {layer.axis} is outside the {len(x)} dimensions of {fmt_shape(x)}")
    return layer.axis


def _scale(index: int, layer: Layer, in_shapes) -> LayerInfo:
    """x times a learned factor per index of ``axis`` (CaiT/ConvNeXt layer scale,
    Touvron et al. 2021: diag(λ) per channel)."""
    x = in_shapes[0]
    return LayerInfo(in_shapes, x, x[_axis(index, layer, x)], 0, float(prod(x)))


def _posembedding(index: int, layer: Layer, in_shapes) -> LayerInfo:
    """x plus a learned tensor of x's shape (ViT's position embedding, Dosovitskiy et al. 2021 eq. 1)."""
    x = in_shapes[0]
    return LayerInfo(in_shapes, x, 0, prod(x), float(prod(x)))


def _classtoken(index: int, layer: Layer, in_shapes) -> LayerInfo:
    """``tokens`` learned tokens put in front along ``axis`` (ViT's x_class, eq. 1)."""
    x = in_shapes[0]
    a = _axis(index, layer, x)
    rest = prod(x[:a] + x[a + 1 :])
    return LayerInfo(in_shapes, (*x[:a], x[a] + layer.tokens, *x[a + 1 :]), layer.tokens * rest, 0, 0.0)


def _slice(index: int, layer: Layer, in_shapes) -> LayerInfo:
    """Indices start..stop-1 of ``axis`` (torch.narrow; chunk and split are several)."""
    x = in_shapes[0]
    a = _axis(index, layer, x)
    if not 0 <= layer.start < layer.stop <= x[a]:
        raise ShapeError(index, f"slice {layer.start}:{layer.stop} is not inside the {x[a]} indices of axis {a}")
    return LayerInfo(in_shapes, (*x[:a], layer.stop - layer.start, *x[a + 1 :]), 0, 0, 0.0)


TOKEN_RULES = {
    "attention": _attention,
    "scale": _scale,
    "posembedding": _posembedding,
    "classtoken": _classtoken,
    "slice": _slice,
}
