"""``torch.nn`` modules of the transformer layer types (oracle/compute/layers/shapes_tokens.py)
for :mod:`oracle.profiling.torchnet`; the batch dimension is first at run time.

=================  =====================================================================
attention          q/k/v ``Linear(E, 3E)``, ``softmax(q·kᵀ/√d + bias)·v`` per head, output
                   ``Linear(E, E)``, as torchvision's Swin and MaxViT blocks compute it
                   (the math path); ``fused``: ``F.scaled_dot_product_attention``, as
                   ``MultiheadAttention`` does.  ``window``: padded, rolled by
                   ``shift`` and cut into windows like torchvision's
                   ``shifted_window_attention`` (the shift's mask is left out).  The
                   relative position bias gathers one table entry per head and score by
                   an index of the same size as the real one (``arange % entries``): the
                   same parameters and work, not the same positions
scale              a learned factor per index of ``axis``
posembedding       plus a learned tensor of the input's shape
classtoken         learned tokens concatenated in front along ``axis``
slice              ``narrow`` along ``axis``
=================  =====================================================================
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from oracle.model import Layer, LayerInfo


def _dims(values: tuple[int, ...], n: int) -> tuple[int, ...]:
    return values * n if len(values) == 1 else values


class Attention(nn.Module):
    """Multi-head self-attention over the last two per-sample dimensions (or windows)."""

    def __init__(self, layer: Layer, shape: tuple[int, ...]) -> None:
        super().__init__()
        e, h, dims = shape[-1], layer.heads, len(shape) - 1
        self.heads, self.cosine, self.fused = h, layer.cosine, layer.fused
        self.window = _dims(layer.window, dims) if layer.window else ()
        self.shift = _dims(layer.shift, dims) if layer.shift else ()
        self.qkv = nn.Linear(e, 3 * e, bias=layer.bias)
        self.proj = nn.Linear(e, e, bias=layer.bias)
        p = math.prod(self.window) if self.window else shape[-2]
        entries = layer.position_bias or (math.prod(2 * w - 1 for w in self.window) if self.window else p)
        self.table = nn.Parameter(torch.zeros(layer.position_bias, h)) if layer.position_bias else None
        self.mlp = None
        if layer.position_mlp:
            m = layer.position_mlp
            self.mlp = nn.Sequential(nn.Linear(2, m), nn.ReLU(), nn.Linear(m, h, bias=False))
            self.register_buffer("coords", torch.zeros(entries, 2), persistent=False)
        self.logit_scale = nn.Parameter(torch.zeros(h, 1, 1)) if layer.cosine else None
        biased = layer.position_bias or layer.position_mlp
        self.register_buffer("index", torch.arange(p * p) % entries if biased else None, persistent=False)

    def _bias(self, p: int) -> torch.Tensor | None:
        table = self.mlp(self.coords) if self.mlp is not None else self.table
        if table is None:
            return None
        return table[self.index].view(p, p, -1).permute(2, 0, 1)

    def _attend(self, x: torch.Tensor) -> torch.Tensor:
        b, p, e = x.shape
        qkv = self.qkv(x).reshape(b, p, 3, self.heads, e // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if self.fused:  # PyTorch picks a fused kernel (flash, memory-efficient) where it can
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=self._bias(p))
            return self.proj(out.transpose(1, 2).reshape(b, p, e))
        if self.logit_scale is not None:
            scores = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
            scores = scores * torch.clamp(self.logit_scale, max=math.log(100.0)).exp()
        else:
            scores = (q * (e // self.heads) ** -0.5) @ k.transpose(-2, -1)
        bias = self._bias(p)
        if bias is not None:
            scores = scores + bias
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, p, e))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.window:
            lead = x.shape[:-2]
            return self._attend(x.reshape(-1, *x.shape[-2:])).reshape(*lead, *x.shape[-2:])
        return self._windows(x)

    def _windows(self, x: torch.Tensor) -> torch.Tensor:
        extents, w, d = x.shape[1:-1], self.window, len(self.window)
        pads = [-(-n // k) * k - n for n, k in zip(extents, w)]
        x = F.pad(x, [0, 0] + [v for pad in reversed(pads) for v in (0, pad)])
        dims = tuple(range(1, d + 1))
        if self.shift and any(self.shift):
            x = torch.roll(x, shifts=tuple(-s for s in self.shift), dims=dims)
        padded = x.shape[1:-1]
        split = [v for n, k in zip(padded, w) for v in (n // k, k)]
        y = x.reshape(x.shape[0], *split, x.shape[-1])
        order = [0, *range(1, 2 * d, 2), *range(2, 2 * d + 1, 2), 2 * d + 1]
        y = y.permute(order).reshape(-1, math.prod(w), x.shape[-1])
        y = self._attend(y).reshape(x.shape[0], *(n // k for n, k in zip(padded, w)), *w, x.shape[-1])
        back = [0] + [v for i in range(d) for v in (1 + i, 1 + d + i)] + [2 * d + 1]
        y = y.permute(back).reshape(x.shape)
        if self.shift and any(self.shift):
            y = torch.roll(y, shifts=tuple(self.shift), dims=dims)
        return y[(slice(None), *(slice(0, n) for n in extents))]


class Learned(nn.Module):
    """scale, posembedding, classtoken: the input with a learned tensor."""

    def __init__(self, layer: Layer, shape: tuple[int, ...]) -> None:
        super().__init__()
        self.kind, self.axis = layer.type, layer.axis
        if layer.type == "scale":  # (C, 1, ..., 1) broadcasts over the dimensions after axis
            size = (shape[layer.axis],) + (1,) * (len(shape) - layer.axis - 1)
        elif layer.type == "posembedding":
            size = shape
        else:
            size = (*shape[: layer.axis], layer.tokens, *shape[layer.axis + 1 :])
        self.param = nn.Parameter(torch.zeros(size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "scale":
            return x * self.param
        if self.kind == "posembedding":
            return x + self.param
        return torch.cat([self.param.expand(x.shape[0], *self.param.shape), x], dim=1 + self.axis)


class Slice(nn.Module):
    def __init__(self, layer: Layer) -> None:
        super().__init__()
        self.axis, self.start, self.length = layer.axis, layer.start, layer.stop - layer.start

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.narrow(1 + self.axis, self.start, self.length)


def _learned(layer: Layer, info: LayerInfo, ctx) -> nn.Module:
    return Learned(layer, info.input_shapes[0])


TOKEN_MODULES = {
    "attention": lambda layer, info, ctx: Attention(layer, info.input_shapes[0]),
    "scale": _learned,
    "posembedding": _learned,
    "classtoken": _learned,
    "slice": lambda layer, info, ctx: Slice(layer),
}
