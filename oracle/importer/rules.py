"""What each PyTorch module or function becomes in an oracle model (one table each).

A rule takes the operation (:class:`Op`) and returns the layer's type and keys (a dict),
:data:`ALIAS` for operations that neither cost nor change a shape (``Identity``,
``contiguous``; an alias forwards its input's name), or raises :class:`NotMapped` when
this particular call has no oracle equivalent (an ``add`` of a scalar, a ``Linear`` on a
non-flat input).  An operation with no row at all is not supported either: the
importer stops with its name and module path, or with ``--allow-unsupported`` imports it
as a zero-cost ``unsupported`` layer (fvcore's three answers: handled, costs nothing,
not supported; STYLE §2)."""

from __future__ import annotations

import operator
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from oracle.importer.graph import ALIAS, NotMapped, Op, per_dim, sample_dim, two_tensors
from oracle.importer.rules_tokens import (
    PART_RULES,
    TOKEN_FUNCTION_RULES,
    TOKEN_MODULE_RULES,
    classtoken,
    layernorm,
    with_learned,
)

def _conv(op: Op) -> dict:
    m = op.target
    d: dict = {"type": "convtranspose" if isinstance(m, nn.modules.conv._ConvTransposeNd) else "conv"}
    d["filters"] = m.out_channels
    d["kernel"] = per_dim(m.kernel_size)
    d["stride"] = per_dim(m.stride)
    padding = m.padding
    if isinstance(padding, str):  # 'valid' or 'same' (stride 1): PyTorch pads d(k-1)/2
        padding = [0 if padding == "valid" else dl * (k - 1) // 2 for k, dl in zip(m.kernel_size, m.dilation)]
    d["padding"] = per_dim(padding)
    if any(x != 1 for x in m.dilation):
        d["dilation"] = per_dim(m.dilation)
    if d["type"] == "convtranspose" and any(m.output_padding):
        d["output_padding"] = per_dim(m.output_padding)
    if m.groups != 1:
        d["groups"] = m.groups
    d["bias"] = m.bias is not None
    return d


def _linear(op: Op):
    """``Linear`` on a flat input is an ``fc``.  On (..., C) per sample (channels last:
    ViT tokens, ConvNeXt/Swin blocks) it is a 1x1 convolution over the other dimensions:
    permute the features first, convolve, permute back (same parameters and FLOPs;
    the permutes are views)."""
    x, m = op.in_shapes[0], op.target
    if len(x) == 1:
        return {"type": "fc", "outputs": m.out_features, "bias": m.bias is not None}
    if len(x) > 4:
        raise NotMapped(f"a Linear on a {len(x)}-D input per sample")
    k = len(x) - 1
    return [
        {"type": "permute", "perm": [k, *range(k)]},
        {"type": "conv", "filters": m.out_features, "kernel": 1, "bias": m.bias is not None, "main": True},
        {"type": "permute", "perm": [*range(1, k + 1), 0]},
    ]


def _batchnorm(op: Op) -> dict:
    if not op.target.affine:
        raise NotMapped("a batch norm without affine parameters")
    return {"type": "batchnorm"}


def _pool(kind: str, kernel, stride, padding, dilation, ceil_mode) -> dict:
    if dilation not in (None, 1) and per_dim(dilation) != 1:
        raise NotMapped("a dilated pooling window")
    d = {"type": kind, "kernel": per_dim(kernel), "stride": per_dim(stride if stride else kernel)}
    if per_dim(padding) != 0:
        d["padding"] = per_dim(padding)
    if ceil_mode:
        d["ceil_mode"] = True
    return d


def _pool_module(op: Op) -> dict:
    m = op.target
    kind = "maxpool" if isinstance(m, nn.modules.pooling._MaxPoolNd) else "avgpool"
    return _pool(kind, m.kernel_size, m.stride, m.padding, getattr(m, "dilation", 1), m.ceil_mode)


def _adaptive(op: Op) -> dict:
    size = list(op.out_shape[1:])
    is_max = isinstance(op.target, nn.modules.pooling._AdaptiveMaxPoolNd) or op.target in (
        F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d)  # fmt: skip
    if is_max:
        return {"type": "adaptivemaxpool", "size": per_dim(size)}
    if all(s == 1 for s in size):
        return {"type": "globalavgpool"}
    return {"type": "adaptiveavgpool", "size": per_dim(size)}


def _upsample(mode: str) -> dict:
    if mode not in ("nearest", "linear", "bilinear", "trilinear"):
        raise NotMapped(f"interpolation mode '{mode}'")
    return {"type": "upsample", "mode": "nearest" if mode == "nearest" else "linear"}


def _with_size(d: dict, op: Op) -> dict:
    return {**d, "size": per_dim(op.out_shape[1:])}


def _reshape(op: Op) -> dict:
    if len(op.out_shape) == 1:
        return {"type": "flatten"}
    return {"type": "reshape", "shape": list(op.out_shape)}


def _permute(op: Op) -> dict:
    rank = len(op.in_shapes[0])
    if op.target in ("transpose", torch.transpose, "swapaxes", torch.swapaxes):
        a, b = (sample_dim(int(op.arg(i, n)), rank) for i, n in ((1, "dim0"), (2, "dim1")))
        perm = list(range(rank))
        perm[a], perm[b] = perm[b], perm[a]
        return {"type": "permute", "perm": perm}
    dims = op.args[1:] if len(op.args) > 2 or not isinstance(op.arg(1, "dims"), (tuple, list)) else op.arg(1, "dims")
    dims = [int(d) + rank + 1 if int(d) < 0 else int(d) for d in dims]
    if dims[0] != 0:
        raise NotMapped("a permutation that moves the batch dimension")
    return {"type": "permute", "perm": [d - 1 for d in dims[1:]]}


def _cat(op: Op):
    if op.learned:  # ViT's class token
        return classtoken(op)
    if len(op.in_shapes) == 1:  # DenseNet's first layer concatenates a list of one
        return ALIAS
    dim = int(op.arg(1, "dim", 0))
    return {"type": "concat", "axis": sample_dim(dim, len(op.out_shape))}


def _softmax(op: Op) -> dict:
    dim = op.target.dim if isinstance(op.target, nn.Module) else op.arg(1, "dim")
    return {"type": "softmax", "axis": sample_dim(int(dim), len(op.out_shape))}


def _mean(op: Op):
    x, dims = op.in_shapes[0], op.arg(1, "dim")
    dims = [dims] if isinstance(dims, int) else list(dims or [])
    spatial = {sample_dim(int(d), len(x)) for d in dims}
    if spatial != set(range(1, len(x))):
        raise NotMapped("a mean other than over all spatial dimensions")
    if op.arg(2, "keepdim", False):
        return {"type": "globalavgpool"}
    return [{"type": "globalavgpool"}, {"type": "flatten"}]  # MnasNet: x.mean([2, 3])


def _max_pool(op: Op) -> dict:
    """F.max_pool1d/2d/3d(input, kernel_size, stride=None, padding=0, dilation=1,
    ceil_mode=False, return_indices=False) (torch/nn/functional.py)."""
    kernel = op.arg(1, "kernel_size")
    return _pool("maxpool", kernel, op.arg(2, "stride") or kernel, op.arg(3, "padding", 0),
                 op.arg(4, "dilation", 1), op.arg(5, "ceil_mode", False))  # fmt: skip


def _avg_pool(op: Op) -> dict:
    """F.avg_pool1d/2d/3d are builtins (no signature): input, kernel_size, stride=None,
    padding=0, ceil_mode=False, count_include_pad=True (aten's avg_pool2d)."""
    kernel = op.arg(1, "kernel_size")
    stride = op.arg(2, "stride") or kernel
    return _pool("avgpool", kernel, stride, op.arg(3, "padding", 0), 1, op.arg(4, "ceil_mode", False))


def _interpolate(op: Op) -> dict:
    return _with_size(_upsample(op.arg(3, "mode", "nearest")), op)


def _dropout(op: Op) -> dict:
    return {"type": "dropout"}


def _dropout_or_identity(op: Op):
    """Dropout with p = 0 (ViT's, Swin's) returns its input unchanged and saves no mask
    (aten/src/ATen/native/Dropout.cpp: ``if (p == 0 || !train ...) return input``)."""
    p = op.target.p if isinstance(op.target, nn.Module) else op.arg(1, "p", 0.5)
    return ALIAS if p == 0 else _dropout(op)


def _simple(kind: str) -> Callable[[Op], dict]:
    return lambda op: {"type": kind}


try:
    from torchvision.ops import stochastic_depth as _stochastic_depth
except ImportError:  # torchvision is optional
    _stochastic_depth = "stochastic_depth"

_ACTIVATION_MODULES = {
    nn.ReLU: "relu", nn.ReLU6: "relu6", nn.LeakyReLU: "leakyrelu", nn.ELU: "elu",
    nn.GELU: "gelu", nn.SiLU: "silu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh",
    nn.Hardswish: "hardswish", nn.Hardsigmoid: "hardsigmoid",
}  # fmt: skip

# call_module: the first class in the module's MRO with a row
MODULE_RULES: dict[type, Callable[[Op], Any]] = {
    nn.modules.conv._ConvNd: _conv,
    nn.Linear: _linear,
    nn.modules.batchnorm._BatchNorm: _batchnorm,
    # instance norm = group norm with one group per channel (Wu & He 2018, Fig. 2)
    nn.modules.instancenorm._InstanceNorm: lambda op: {"type": "groupnorm", "groups": op.in_shapes[0][0],
                                                       "affine": op.target.affine},  # fmt: skip
    nn.GroupNorm: lambda op: {"type": "groupnorm", "groups": op.target.num_groups, "affine": op.target.affine},
    nn.LayerNorm: layernorm,
    nn.LocalResponseNorm: lambda op: {"type": "lrn", "size": op.target.size, "alpha": op.target.alpha,
                                      "beta": op.target.beta, "k": op.target.k},  # fmt: skip
    nn.modules.pooling._MaxPoolNd: _pool_module,
    nn.modules.pooling._AvgPoolNd: _pool_module,
    nn.modules.pooling._AdaptiveAvgPoolNd: _adaptive,
    nn.modules.pooling._AdaptiveMaxPoolNd: _adaptive,
    nn.Upsample: lambda op: _with_size(_upsample(op.target.mode), op),
    **{cls: _simple(kind) for cls, kind in _ACTIVATION_MODULES.items()},
    nn.modules.dropout._DropoutNd: _dropout_or_identity,
    nn.Flatten: _reshape,
    nn.Unflatten: _reshape,
    nn.Identity: lambda op: ALIAS,
    nn.Softmax: _softmax,
    nn.ChannelShuffle: lambda op: {"type": "channelshuffle", "groups": op.target.groups},
    **TOKEN_MODULE_RULES,
}

# call_function (callables) and call_method (Tensor method names)
FUNCTION_RULES: dict[Any, Callable[[Op], Any]] = {
    **{f: with_learned("add") for f in (operator.add, operator.iadd, torch.add, "add", "add_")},
    **{f: with_learned("mul") for f in (operator.mul, operator.imul, torch.mul, "mul", "mul_")},
    **{f: two_tensors("matmul") for f in (operator.matmul, torch.matmul, torch.bmm, "matmul", "bmm")},
    torch.cat: _cat,
    torch.concat: _cat,
    **{f: _reshape for f in (torch.flatten, "flatten", "view", "reshape", torch.reshape)},
    **{f: _permute for f in (torch.permute, "permute", torch.transpose, "transpose", torch.swapaxes, "swapaxes")},
    **{f: (lambda op: ALIAS) for f in ("contiguous", "clone", "float")},
    **{f: _simple("relu") for f in (F.relu, torch.relu, "relu", "relu_")},
    F.relu6: _simple("relu6"),
    **{f: _simple("sigmoid") for f in (torch.sigmoid, "sigmoid", F.sigmoid)},
    **{f: _simple("tanh") for f in (torch.tanh, "tanh", F.tanh)},
    F.silu: _simple("silu"),
    F.gelu: _simple("gelu"),
    F.hardswish: _simple("hardswish"),
    F.hardsigmoid: _simple("hardsigmoid"),
    F.leaky_relu: _simple("leakyrelu"),
    F.elu: _simple("elu"),
    **{f: _dropout_or_identity for f in (F.dropout, F.dropout2d, F.dropout3d)},
    # stochastic depth (Huang et al. 2016) drops whole samples of a residual branch in
    # training: an element-wise mask like dropout's (its mask is per sample, so the
    # dropout row's 1 byte per element overstates what it saves)
    _stochastic_depth: _dropout,
    **{f: _adaptive for f in (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d,
                              F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d)},  # fmt: skip
    **{f: _max_pool for f in (F.max_pool1d, F.max_pool2d, F.max_pool3d)},
    F.interpolate: _interpolate,
    **{f: _avg_pool for f in (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)},
    **{f: _mean for f in (torch.mean, "mean")},
    **{f: _softmax for f in (F.softmax, torch.softmax, "softmax")},
    **{f: (lambda op: {"type": "channelshuffle", "groups": int(op.arg(1, "groups"))})
       for f in (torch.channel_shuffle, F.channel_shuffle)},  # fmt: skip
    **TOKEN_FUNCTION_RULES,
}


def module_rule(module: nn.Module) -> Callable[[Op], Any] | None:
    for cls in type(module).__mro__:
        if cls in MODULE_RULES:
            return MODULE_RULES[cls]
    return None


def function_rule(target) -> Callable[[Op], Any] | None:
    try:
        return FUNCTION_RULES.get(target)
    except TypeError:  # unhashable target
        return None


def part_rule(target) -> Callable[[Op, int], Any] | None:
    """The rule of an operation with several outputs (module classes by MRO)."""
    if isinstance(target, nn.Module):
        return next((PART_RULES[c] for c in type(target).__mro__ if c in PART_RULES), None)
    try:
        return PART_RULES.get(target)
    except TypeError:  # unhashable target
        return None


def op_name(kind: str, target) -> str:
    """How the error and the file name an operation: torch.nn.X, torch.roll, Tensor.roll."""
    if kind == "call_module":
        cls = type(target)
        return f"{cls.__module__}.{cls.__qualname__}"
    if kind == "call_method":
        return f"Tensor.{target}"
    module = getattr(target, "__module__", None) or "torch"
    return f"{module}.{getattr(target, '__name__', str(target))}"
