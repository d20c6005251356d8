"""What the transformer operations of torchvision's ViT, Swin, MaxViT, ConvNeXt and
ShuffleNetV2 become (docs/model-format.md "Transformer layers"): the attention modules,
a product or sum with a learned tensor (layer scale, position embedding), a class
token concatenated in front, indexing, and operations with several outputs (chunk,
split: one ``slice`` per part used).  Rules as in :mod:`oracle.importer.rules`."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from oracle.importer.graph import NotMapped, Op, per_dim, sample_dim, two_tensors


def _per_sample(learned: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """A learned tensor's shape broadcast against (batch, *per-sample of ``rank``)."""
    full = (1,) * (rank + 1 - len(learned)) + tuple(learned)
    if len(full) != rank + 1 or full[0] != 1:
        raise NotMapped("a learned tensor with a batch dimension")
    return full[1:]


def with_learned(kind: str) -> Callable[[Op], dict]:
    """add/mul of two data tensors, or of one and a learned tensor: a factor along one
    dimension is a ``scale`` (layer scale), a summand of the input's shape a ``posembedding``."""
    both = two_tensors(kind)

    def rule(op: Op) -> dict:
        if len(op.in_shapes) != 1 or len(op.learned) != 1:
            return both(op)
        x = op.in_shapes[0]
        shape = _per_sample(op.learned[0], len(x))
        if kind == "add":
            if shape != x:
                raise NotMapped("an add of a learned tensor that broadcasts")
            return {"type": "posembedding"}
        wide = [d for d, n in enumerate(shape) if n != 1]
        if len(wide) != 1 or shape[wide[0]] != x[wide[0]]:
            raise NotMapped("a product with a learned tensor that is not one factor per index of a dimension")
        return {"type": "scale", "axis": wide[0]}

    return rule


def classtoken(op: Op) -> dict:
    """torch.cat of learned tokens and the data (ViT's class token)."""
    if len(op.in_shapes) != 1 or len(op.learned) != 1:
        raise NotMapped("a concatenation of learned tensors with several inputs")
    x = op.in_shapes[0]
    axis = sample_dim(int(op.arg(1, "dim", 0)), len(x))
    tokens = op.out_shape[axis] - x[axis]
    return {"type": "classtoken", "tokens": tokens, "axis": axis}


def _getitem(op: Op):
    """x[:, i] (ViT's class token output), x[:, a:b]: a ``slice`` of one dimension,
    then a reshape where an integer index drops the dimension."""
    index = op.arg(1, "index")
    index = index if isinstance(index, tuple) else (index,)
    x = op.in_shapes[0]
    if not index or index[0] != slice(None) or Ellipsis in index or len(index) > len(x) + 1:
        raise NotMapped("indexing other than of whole samples")
    picked = [(d, v) for d, v in enumerate(index[1:]) if v != slice(None)]
    if len(picked) != 1:
        raise NotMapped("indexing of several dimensions")
    d, v = picked[0]
    if isinstance(v, int):
        start, stop = (v + x[d], v + x[d] + 1) if v < 0 else (v, v + 1)
    elif isinstance(v, slice) and v.step in (None, 1):
        start, stop, _ = v.indices(x[d])
    else:
        raise NotMapped("indexing with a step or a tensor")
    part = {"type": "slice", "axis": d, "start": start, "stop": stop}
    if isinstance(v, int):
        shape = list(op.out_shape)
        return [part, {"type": "flatten"} if len(shape) == 1 else {"type": "reshape", "shape": shape, "main": True}]
    return part


def split_part(op: Op, i: int):
    """Output ``i`` of chunk or split: the indices of the parts before it along the dimension."""
    x = op.in_shapes[0]
    dim = op.arg(2, "dim", 0)
    d = sample_dim(int(dim), len(x))
    start = sum(p[d] for p in op.parts[:i])
    return {"type": "slice", "axis": d, "start": start, "stop": start + op.parts[i][d]}


def _mha(op: Op) -> dict:
    """nn.MultiheadAttention(x, x, x) on batch-first (tokens, E) samples."""
    m = op.target
    if not m.batch_first or not m._qkv_same_embed_dim or len(op.in_shapes) != 1:
        raise NotMapped("attention other than batch-first self-attention")
    if any(op.kwargs.get(k) is not None for k in ("attn_mask", "key_padding_mask")) or m.bias_k is not None:
        raise NotMapped("attention with a mask or added key/value biases")
    # F.multi_head_attention_forward computes the scores by scaled_dot_product_attention
    return {"type": "attention", "heads": m.num_heads, "bias": m.in_proj_bias is not None, "fused": True}


def mha_part(op: Op, i: int):
    """MultiheadAttention returns (output, weights); need_weights=False gives None."""
    if i != 0:
        raise NotMapped("the attention weights")
    return _mha(op)


def _swin(op: Op) -> dict:
    """torchvision's ShiftedWindowAttention(V2) on (H, W, C): windows padded to whole
    ones, no shift where a window covers the padded extent (``shifted_window_attention``)."""
    m, x = op.target, op.in_shapes[0]
    if (m.qkv.bias is None) != (m.proj.bias is None):
        raise NotMapped("attention with a bias on only one projection")
    padded = [-(-e // w) * w for e, w in zip(x[:2], m.window_size)]
    shift = [0 if w >= p else s for w, p, s in zip(m.window_size, padded, m.shift_size)]
    d: dict = {"type": "attention", "heads": m.num_heads, "window": per_dim(m.window_size)}
    if any(shift):
        d["shift"] = per_dim(shift)
    if hasattr(m, "cpb_mlp"):  # V2: continuous position bias and cosine attention
        d["position_mlp"] = m.cpb_mlp[0].out_features
        d["cosine"] = True
    else:
        d["position_bias"] = m.relative_position_bias_table.shape[0]
    d["bias"] = m.qkv.bias is not None
    return d


def _maxvit(op: Op) -> dict:
    """torchvision's RelativePositionalMultiHeadAttention on (groups, tokens, features)."""
    m = op.target
    return {"type": "attention", "heads": m.n_heads, "position_bias": m.relative_position_bias_table.shape[0]}


def _patch_merging(op: Op):
    """Swin's _patch_merging_pad on (H, W, C): the 2x2 neighbours side by side in the
    features, x[0::2, 0::2], x[1::2, 0::2], x[0::2, 1::2], x[1::2, 1::2] — a reshape to
    (H/2, 2, W/2, 2, C), the two 2s swapped behind W/2 and a reshape (even extents)."""
    h, w, c = op.in_shapes[0]
    if h % 2 or w % 2:
        raise NotMapped("patch merging of an odd extent (padded)")
    return [{"type": "reshape", "shape": [h // 2, 2, w // 2, 2, c]},
            {"type": "permute", "perm": [0, 2, 3, 1, 4], "main": True},
            {"type": "reshape", "shape": [h // 2, w // 2, 4 * c]}]  # fmt: skip


def layernorm(op: Op):
    """nn.LayerNorm over the last len(normalized_shape) dimensions; a subclass with its own
    forward normalising the channels of (C, H, W) (torchvision's and timm's LayerNorm2d,
    ConvNeXt) is a LayerNorm between permutes to channels last and back, as its forward does."""
    m, x = op.target, op.in_shapes[0]
    own = type(m).forward is not nn.LayerNorm.forward
    last = tuple(x[-len(m.normalized_shape) :]) == tuple(m.normalized_shape)
    first = own and len(m.normalized_shape) == 1 and m.normalized_shape[0] == x[0] and len(x) > 1
    if first and last:
        raise NotMapped("a LayerNorm subclass whose dimension cannot be told (channels = last extent)")
    if first:
        return _layernorm2d(op)
    if not last:
        raise NotMapped("a LayerNorm subclass that normalises other dimensions than the last")
    return {"type": "layernorm", "dims": len(m.normalized_shape), "affine": m.elementwise_affine}


def _layernorm2d(op: Op) -> list[dict]:
    """A LayerNorm of the channels of (C, *spatial) between permutes (:func:`layernorm`)."""
    k = len(op.in_shapes[0]) - 1
    return [{"type": "permute", "perm": [*range(1, k + 1), 0]},
            {"type": "layernorm", "affine": op.target.elementwise_affine, "main": True},
            {"type": "permute", "perm": [k, *range(k)]}]  # fmt: skip


TOKEN_MODULE_RULES: dict[type, Callable[[Op], Any]] = {}
TOKEN_FUNCTION_RULES: dict[Any, Callable[[Op], Any]] = {operator.getitem: _getitem}
# several outputs: (op, i) -> the layer of output i
PART_RULES: dict[Any, Callable[[Op, int], Any]] = {
    nn.MultiheadAttention: mha_part,
    **{f: split_part for f in (torch.chunk, "chunk", torch.split, "split")},
}

try:  # torchvision is optional
    from torchvision.models import maxvit as _maxvit_mod
    from torchvision.models import swin_transformer as _swin_mod
except ImportError:  # pragma: no cover
    pass
else:
    TOKEN_MODULE_RULES[_swin_mod.ShiftedWindowAttention] = _swin
    TOKEN_MODULE_RULES[_maxvit_mod.RelativePositionalMultiHeadAttention] = _maxvit
    TOKEN_FUNCTION_RULES[_swin_mod._patch_merging_pad] = _patch_merging
