"""Build a ``torch.nn`` network from an oracle :class:`~oracle.model.Model`.

Every layer of the model becomes one module; :class:`OracleNet` runs them in the
model's order, feeding each the outputs of the layers its ``inputs`` name
(``'input'`` is the network's input), so residual ``add`` and ``concat`` DAGs run
as written.  The network's output is the last layer's output.

Mapping (shapes per sample, batch dimension first at run time):

=================  =====================================================================
conv               ``Conv1d/2d/3d`` by spatial rank (stride, padding, dilation, groups,
                   bias as in the file)
fc                 ``Linear``; the input is flattened first when it is not flat
maxpool, avgpool   ``MaxPool/AvgPool 1d/2d/3d`` (ceil_mode; avgpool counts padding, as
                   PyTorch's default)
globalavgpool      ``AdaptiveAvgPool 1d/2d/3d`` to size 1
batchnorm          ``BatchNorm1d`` for flat or 1-D inputs, ``BatchNorm2d``/``3d`` for 2-D/3-D
relu ... tanh      ``ReLU``, ``ReLU6``, ``LeakyReLU`` (slope 0.01), ``ELU`` (alpha 1),
                   ``GELU``, ``SiLU``, ``Sigmoid``, ``Tanh`` (never in place)
dropout            ``Dropout(0.5)``
add, concat        sum of the inputs; ``torch.cat`` on ``axis`` (0: channels)
flatten, softmax   ``Flatten``; ``Softmax`` over ``axis`` (0: the channel/feature dimension)
convtranspose      ``ConvTranspose1d/2d/3d`` (output_padding too)
adaptive pools     ``AdaptiveAvgPool``/``AdaptiveMaxPool 1d/2d/3d`` to ``size``
upsample           ``Upsample`` (nearest, or (bi/tri)linear by spatial rank)
groupnorm          ``GroupNorm(groups, C, affine)``; layernorm: ``LayerNorm`` over the last
                   ``dims`` per-sample dimensions; lrn: ``LocalResponseNorm(size)`` (alpha, beta
                   and k at PyTorch's defaults: they change no cost)
hardswish ...      ``Hardswish``, ``Hardsigmoid``; channelshuffle: ``ChannelShuffle``
mul, matmul        product of the inputs (broadcasting); ``torch.matmul``
reshape, permute   per sample (the batch dimension stays first)
unsupported        zeros of the stated shape (zero cost, no parameters)
attention ...      the transformer layers: oracle/profiling/torchnet_tokens.py
=================  =====================================================================

Model files may give a dropout ``rate`` or an activation ``slope``; the loader does not
keep them (they do not change shapes, parameters or cost), so PyTorch's defaults are used.

The parameter count of the built network equals ``model.parameters`` (batchnorm's
scale and shift are its parameters; running statistics are buffers).  Build on the
``meta`` device to check shapes and counts without allocating memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from oracle.errors import OracleError
from oracle.model import MODEL_INPUT, Layer, LayerInfo, Model
from oracle.profiling.torchnet_tokens import TOKEN_MODULES

_ACTIVATIONS = {
    "relu": nn.ReLU,
    "relu6": nn.ReLU6,
    "leakyrelu": nn.LeakyReLU,
    "elu": nn.ELU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "sigmoid": nn.Sigmoid,
    "tanh": nn.Tanh,
    "hardswish": nn.Hardswish,
    "hardsigmoid": nn.Hardsigmoid,
}


class Add(nn.Module):
    """Element-wise sum of two or more inputs (residual joins)."""

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        out = xs[0] + xs[1]
        for x in xs[2:]:
            out = out + x
        return out


class FlatLinear(nn.Module):
    """``Linear`` that flattens a non-flat input first (an oracle ``fc`` layer)."""

    def __init__(self, in_features: int, out_features: int, bias: bool) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() > 2:
            x = x.flatten(1)
        return self.linear(x)


def _dims(values: tuple[int, ...], n: int) -> tuple[int, ...]:
    return values * n if len(values) == 1 else values


def _conv(layer: Layer, info: LayerInfo, ctx) -> nn.Module:
    x = info.input_shapes[0]
    dims = len(x) - 1
    kw = dict(
        kernel_size=_dims(layer.kernel, dims),
        stride=_dims(layer.stride or (1,), dims),
        padding=_dims(layer.padding or (0,), dims),
        dilation=_dims(layer.dilation or (1,), dims),
        groups=layer.groups,
        bias=layer.bias,
    )
    if layer.type == "convtranspose":
        cls = (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)[dims - 1]
        return cls(x[0], layer.filters, output_padding=_dims(layer.output_padding or (0,), dims), **kw)
    return (nn.Conv1d, nn.Conv2d, nn.Conv3d)[dims - 1](x[0], layer.filters, **kw)


def _pool(layer: Layer, info: LayerInfo, ctx) -> nn.Module:
    index, file = ctx
    dims = len(info.input_shapes[0]) - 1
    kernel = _dims(layer.kernel, dims)
    padding = _dims(layer.padding or (0,), dims)
    for k, p in zip(kernel, padding):
        if p > k // 2:
            raise OracleError(
                f"padding {p} is more than half the kernel {k}; PyTorch's pooling"
                " layers do not allow that",
                file=file or None,
                line=layer.line,
                path=f"layers[{index}] ({layer.name})",
            )
    stride = _dims(layer.stride or layer.kernel, dims)
    if layer.type == "maxpool":
        cls = (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d)[dims - 1]
    else:
        cls = (nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)[dims - 1]
    return cls(kernel, stride=stride, padding=padding, ceil_mode=layer.ceil_mode)


def _adaptive(layer: Layer, info: LayerInfo, ctx) -> nn.Module:
    dims = len(info.input_shapes[0]) - 1
    size = (1,) * dims if layer.type == "globalavgpool" else _dims(layer.size, dims)
    if layer.type == "adaptivemaxpool":
        return (nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d, nn.AdaptiveMaxPool3d)[dims - 1](size)
    return (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d)[dims - 1](size)


def _upsample(layer: Layer, info: LayerInfo, ctx) -> nn.Module:
    dims = len(info.input_shapes[0]) - 1
    mode = "nearest" if layer.mode == "nearest" else ("linear", "bilinear", "trilinear")[dims - 1]
    if layer.size:
        return nn.Upsample(size=_dims(layer.size, dims), mode=mode)
    return nn.Upsample(scale_factor=_dims(layer.scale, dims), mode=mode)


def _batchnorm(layer: Layer, info: LayerInfo, ctx) -> nn.Module:
    # flat (C,) and 1-D (C, L) inputs: BatchNorm1d; (C, H, W): 2d; (C, D, H, W): 3d
    x = info.input_shapes[0]
    return (nn.BatchNorm1d, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)[len(x) - 1](x[0])


def _layernorm(layer: Layer, info: LayerInfo, ctx) -> nn.Module:
    shape = info.input_shapes[0][-layer.dims :]
    return nn.LayerNorm(shape, elementwise_affine=layer.affine)


class Lambda(nn.Module):
    """A parameter-free operation on the per-sample dimensions (batch first at run time)."""

    def __init__(self, kind: str, layer: Layer) -> None:
        super().__init__()
        self.kind, self.layer = kind, layer

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        layer, x = self.layer, xs[0]
        if self.kind == "mul":
            out = xs[0] * xs[1]
            for y in xs[2:]:
                out = out * y
            return out
        if self.kind == "matmul":
            return torch.matmul(xs[0], xs[1])
        if self.kind == "concat":
            return torch.cat(xs, dim=1 + layer.axis)
        if self.kind == "reshape":
            return x.reshape(x.shape[0], *layer.shape)
        if self.kind == "permute":
            return x.permute(0, *(1 + d for d in layer.perm))
        # unsupported: zero cost by definition; a zero tensor of the stated shape
        return x.new_zeros((x.shape[0], *layer.shape))


def _simple(factory):
    return lambda layer, info, ctx: factory(layer)


# One row per layer type (STYLE §2): (layer, info, (index, file)) -> module.
MODULES = {
    "conv": _conv,
    "convtranspose": _conv,
    "fc": lambda layer, info, ctx: FlatLinear(info.input_elements, layer.outputs, layer.bias),
    "matmul": _simple(lambda layer: Lambda("matmul", layer)),
    "maxpool": _pool,
    "avgpool": _pool,
    "globalavgpool": _adaptive,
    "adaptiveavgpool": _adaptive,
    "adaptivemaxpool": _adaptive,
    "upsample": _upsample,
    "batchnorm": _batchnorm,
    "groupnorm": lambda layer, info, ctx: nn.GroupNorm(layer.groups, info.input_shapes[0][0], affine=layer.affine),
    "layernorm": _layernorm,
    "lrn": _simple(lambda layer: nn.LocalResponseNorm(layer.size[0])),
    **{t: _simple(lambda layer, cls=cls: cls()) for t, cls in _ACTIVATIONS.items()},
    "dropout": _simple(lambda layer: nn.Dropout(0.5)),
    "add": _simple(lambda layer: Add()),
    "mul": _simple(lambda layer: Lambda("mul", layer)),
    "concat": _simple(lambda layer: Lambda("concat", layer)),
    "flatten": _simple(lambda layer: nn.Flatten(1)),
    "reshape": _simple(lambda layer: Lambda("reshape", layer)),
    "permute": _simple(lambda layer: Lambda("permute", layer)),
    "channelshuffle": _simple(lambda layer: nn.ChannelShuffle(layer.groups)),
    "softmax": _simple(lambda layer: nn.Softmax(dim=1 + layer.axis)),
    "unsupported": _simple(lambda layer: Lambda("unsupported", layer)),
    **TOKEN_MODULES,
}


def make_module(layer: Layer, info: LayerInfo, index: int = 0, file: str = "") -> nn.Module:
    """The ``torch.nn`` module of one layer (parameters on the current default device)."""
    return MODULES[layer.type](layer, info, (index, file))


class OracleNet(nn.Module):
    """The model's layers as modules, run in order over the model's DAG."""

    def __init__(self, model: Model) -> None:
        super().__init__()
        self.model_name = model.name
        self.input_shape = tuple(model.input_shape)
        self.names: list[str] = [layer.name for layer in model.layers]
        self.sources: list[tuple[str, ...]] = [tuple(layer.inputs) for layer in model.layers]
        # ModuleList, not ModuleDict: layer names may hold characters (".") that
        # module names may not.
        self.layers = nn.ModuleList(
            make_module(layer, info, i, model.file)
            for i, (layer, info) in enumerate(zip(model.layers, model.info))
        )
        # after its last consumer has run, an output is dropped (saves memory in forward)
        last_use: dict[str, int] = {}
        for i, srcs in enumerate(self.sources):
            for s in srcs:
                last_use[s] = i
        self._free_after: list[list[str]] = [[] for _ in self.names]
        for name, i in last_use.items():
            if name != self.names[-1]:
                self._free_after[i].append(name)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs: dict[str, torch.Tensor] = {MODEL_INPUT: x}
        out = x
        for i, (module, srcs) in enumerate(zip(self.layers, self.sources)):
            out = module(*(outputs[s] for s in srcs))
            outputs[self.names[i]] = out
            for name in self._free_after[i]:
                outputs.pop(name, None)
        return out

    def forward_all(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every layer's output (and ``'input'``), keyed by layer name."""
        outputs: dict[str, torch.Tensor] = {MODEL_INPUT: x}
        for module, name, srcs in zip(self.layers, self.names, self.sources):
            outputs[name] = module(*(outputs[s] for s in srcs))
        return outputs

    def layer_parameters(self) -> list[list[nn.Parameter]]:
        return [list(m.parameters()) for m in self.layers]


def build_network(
    model: Model, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32
) -> OracleNet:
    """The network of ``model`` on ``device`` (``'meta'`` allocates nothing)."""
    with torch.device(device):
        net = OracleNet(model)
    return net.to(dtype=dtype)


def count_parameters(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())


def check_shapes(model: Model, net: OracleNet, batch: int = 1) -> list[str]:
    """Run ``net`` on the meta device and list the layers whose output shape differs
    from oracle's shape inference (an empty list when all agree)."""
    x = torch.empty((batch, *model.input_shape), device="meta")
    with torch.no_grad():
        outs = net.forward_all(x)
    bad = []
    for layer, info in zip(model.layers, model.info):
        got = tuple(outs[layer.name].shape[1:])
        if got != tuple(info.output_shape):
            bad.append(f"{layer.name}: torch {got} vs oracle {tuple(info.output_shape)}")
    return bad


__all__: Sequence[str] = (
    "OracleNet",
    "build_network",
    "check_shapes",
    "count_parameters",
    "make_module",
)
