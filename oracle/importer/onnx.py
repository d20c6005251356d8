"""Import an ONNX graph (the onnx package): one oracle layer per node that costs or
changes a shape, as the torch.fx path does.

Shapes come from ``onnx.shape_inference`` after the input is fixed at batch 1 (from the
file when its shape is static, else from ``--input``).  Nodes that compute only on
constants (shape arithmetic, Constant) are not operations on the data; ``Identity`` and
single-input ``Concat`` are aliases.  Layer names come from the node names PyTorch's
exporter writes (``/layer1/layer1.0/conv1/Conv`` -> ``layer1.0.conv1``)."""

from __future__ import annotations

from typing import Any, Callable

from oracle.errors import OracleError
from oracle.importer.graph import ALIAS, Layers, NotMapped, per_dim, two_tensors, unsupported
from oracle.importer.sources import need
from oracle.model import MODEL_INPUT

def _pads(pads, n: int):
    if not pads:
        return 0
    begin, end = list(pads[:n]), list(pads[n:])
    if begin != end:
        raise NotMapped(f"asymmetric padding {list(pads)}")
    return per_dim(begin)


class Node:
    """One ONNX node with what the rules need: attributes, shapes, constant inputs."""

    def __init__(self, node, attrs: dict, in_shapes: list, out_shape: tuple, consts: dict) -> None:
        self.node, self.attrs, self.in_shapes, self.out_shape, self.consts = node, attrs, in_shapes, out_shape, consts

    def const(self, index: int):
        if index < len(self.node.input):
            return self.consts.get(self.node.input[index])
        return None


def _conv(n: Node) -> dict:
    w = n.const(1)
    if w is None:
        raise NotMapped("a convolution whose weights are not constants")
    k = list(w.shape[2:])
    groups = int(n.attrs.get("group", 1))
    transposed = n.node.op_type == "ConvTranspose"
    d: dict = {"type": "convtranspose" if transposed else "conv"}
    d["filters"] = int(w.shape[1]) * groups if transposed else int(w.shape[0])
    d["kernel"] = per_dim(n.attrs.get("kernel_shape", k))
    d["stride"] = per_dim(n.attrs.get("strides", [1] * len(k)))
    d["padding"] = _pads(n.attrs.get("pads"), len(k))
    dil = n.attrs.get("dilations", [1] * len(k))
    if any(x != 1 for x in dil):
        d["dilation"] = per_dim(dil)
    if transposed and any(n.attrs.get("output_padding", [])):
        d["output_padding"] = per_dim(n.attrs["output_padding"])
    if groups != 1:
        d["groups"] = groups
    d["bias"] = len(n.node.input) > 2 and bool(n.node.input[2])
    return d


def _gemm(n: Node) -> dict:
    w = n.const(1)
    if w is None or len(n.in_shapes[0]) != 1:
        raise NotMapped("a matrix product of a non-flat input or without constant weights")
    trans = int(n.attrs.get("transB", 0))
    outputs = int(w.shape[0] if trans else w.shape[1])
    return {"type": "fc", "outputs": outputs, "bias": len(n.node.input) > 2 and bool(n.node.input[2])}


def _matmul(n: Node) -> dict:
    if n.const(1) is not None:
        return {**_gemm(n), "bias": False}
    return {"type": "matmul"}


def _pool(kind: str) -> Callable[[Node], dict]:
    def rule(n: Node) -> dict:
        k = n.attrs["kernel_shape"]
        if any(x != 1 for x in n.attrs.get("dilations", [])):
            raise NotMapped("a dilated pooling window")
        d = {"type": kind, "kernel": per_dim(k), "stride": per_dim(n.attrs.get("strides", k))}
        pad = _pads(n.attrs.get("pads"), len(k))
        if pad != 0:
            d["padding"] = pad
        if n.attrs.get("ceil_mode"):
            d["ceil_mode"] = True
        return d

    return rule


def _reshape(n: Node) -> dict:
    return {"type": "flatten"} if len(n.out_shape) == 1 else {"type": "reshape", "shape": list(n.out_shape)}


def _axis(n: Node, default: int) -> int:
    axis = int(n.attrs.get("axis", default))
    rank = len(n.out_shape) + 1
    axis = axis + rank if axis < 0 else axis
    if axis == 0:
        raise NotMapped("an operation along the batch dimension")
    return axis - 1


def _clip(n: Node) -> dict:
    lo, hi = n.const(1), n.const(2)
    lo = float(lo) if lo is not None else n.attrs.get("min")
    hi = float(hi) if hi is not None else n.attrs.get("max")
    if (lo, hi) == (0.0, 6.0):
        return {"type": "relu6"}
    if lo == 0.0 and hi is None:
        return {"type": "relu"}
    raise NotMapped(f"Clip to [{lo}, {hi}]")


def _mean(n: Node) -> Any:
    axes = n.attrs.get("axes")
    if axes is None and n.const(1) is not None:
        axes = [int(a) for a in n.const(1)]
    rank = len(n.in_shapes[0]) + 1
    if sorted(a + rank if a < 0 else a for a in axes or []) != list(range(2, rank)):
        raise NotMapped("a mean other than over all spatial dimensions")
    if n.attrs.get("keepdims", 1):
        return {"type": "globalavgpool"}
    return [{"type": "globalavgpool"}, {"type": "flatten"}]


def _resize(n: Node) -> dict:
    mode = n.attrs.get("mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("nearest", "linear"):
        raise NotMapped(f"resize mode {mode}")
    return {"type": "upsample", "mode": mode, "size": per_dim(n.out_shape[1:])}


def _simple(kind: str) -> Callable[[Node], dict]:
    return lambda n: {"type": kind}


# One row per ONNX operator (https://onnx.ai/onnx/operators/)
OP_RULES: dict[str, Callable[[Node], Any]] = {
    "Conv": _conv,
    "ConvTranspose": _conv,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "MaxPool": _pool("maxpool"),
    "AveragePool": _pool("avgpool"),
    "GlobalAveragePool": _simple("globalavgpool"),
    "GlobalMaxPool": lambda n: {"type": "adaptivemaxpool", "size": 1},
    "BatchNormalization": _simple("batchnorm"),
    "InstanceNormalization": lambda n: {"type": "groupnorm", "groups": n.in_shapes[0][0]},
    "GroupNormalization": lambda n: {"type": "groupnorm", "groups": int(n.attrs["num_groups"])},
    "LRN": lambda n: {"type": "lrn", "size": int(n.attrs["size"])},
    "LayerNormalization": lambda n: {"type": "layernorm", "dims": len(n.in_shapes[0]) - _axis(n, -1)},
    "Relu": _simple("relu"),
    "LeakyRelu": _simple("leakyrelu"),
    "Elu": _simple("elu"),
    "Gelu": _simple("gelu"),
    "Sigmoid": _simple("sigmoid"),
    "Tanh": _simple("tanh"),
    "HardSwish": _simple("hardswish"),
    "HardSigmoid": _simple("hardsigmoid"),
    "Clip": _clip,
    "Dropout": _simple("dropout"),
    "Softmax": lambda n: {"type": "softmax", "axis": _axis(n, -1)},
    "Add": two_tensors("add"),
    "Mul": two_tensors("mul"),
    "Concat": lambda n: ALIAS if len(n.in_shapes) == 1 else {"type": "concat", "axis": _axis(n, 1)},
    "Flatten": _reshape,
    "Reshape": _reshape,
    "Transpose": lambda n: {"type": "permute", "perm": [int(p) - 1 for p in n.attrs["perm"][1:]]},
    "ReduceMean": _mean,
    "Resize": _resize,
    "Upsample": _resize,
    "Identity": lambda n: ALIAS,
}


def module_path(node_name: str, op_type: str) -> str:
    """'/layer1/layer1.0/conv1/Conv' -> 'layer1.0.conv1'; '/layer1/layer1.0/Add' ->
    'layer1.0.add' (PyTorch's exporter names nodes by module scope)."""
    parts = [p for p in node_name.split("/") if p]
    if len(parts) <= 1:  # top level: '/Flatten' -> 'flatten', as torch.fx names it
        return op_type.lower() if not parts or parts[0].split("_")[0] == op_type else parts[0]
    comps: list[str] = []
    for part in parts[:-1]:
        if comps and part.startswith(comps[-1] + "."):  # 'downsample' then 'downsample.0'
            comps[-1] = part
        else:
            comps.append(part)
    path = ".".join(comps)
    if op_type in _FUNCTIONS:  # a function called in the module's forward
        return f"{path}.{op_type.lower()}"
    return path


_FUNCTIONS = ("Add", "Mul", "Concat", "Flatten", "Reshape", "Transpose", "MatMul", "ReduceMean")


def load(source: str, input_shape: tuple[int, ...] | None, allow_unsupported: bool):
    """The layers of the ONNX file ``source`` (see oracle.importer.build)."""
    onnx = need("onnx", "onnx", source)
    from onnx import numpy_helper, shape_inference

    model = _read(onnx, source)
    graph = model.graph
    try:
        consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    except Exception as exc:  # no data, data of the wrong size
        raise OracleError(f"has an initializer oracle cannot read: {type(exc).__name__}: {exc}", file=source) from None
    inputs = [i for i in graph.input if i.name not in consts]
    if len(inputs) != 1:
        raise OracleError(f"has {len(inputs)} inputs; oracle models take one image tensor", file=source)
    dims = inputs[0].type.tensor_type.shape.dim
    static = [d.dim_value if d.HasField("dim_value") else 0 for d in dims]
    if input_shape is None:
        if len(static) < 3 or min(static[1:]) < 1:
            shape = ["?" if not v else str(v) for v in static]
            raise OracleError(f"input '{inputs[0].name}' has dynamic shape {'x'.join(shape)}; give --input C,H,W[,D]",
                              file=source, path="--input")  # fmt: skip
        input_shape = tuple(static[1:])
    for d, v in zip(dims, (1, *input_shape)):
        d.ClearField("dim_param")
        d.dim_value = v
    try:
        model = shape_inference.infer_shapes(model, strict_mode=True)
    except Exception as exc:
        raise OracleError(f"shape inference failed at input {input_shape}: {exc}", file=source) from None
    out = _walk(model.graph, inputs[0].name, consts, source, allow_unsupported, numpy_helper)
    reference = out.reference
    described = f"ONNX graph {source} (opset {model.opset_import[0].version}, producer {model.producer_name or '?'})"
    return out.layers, out.shapes, out.unsupported, tuple(input_shape), described, reference


MAX_ONNX_BYTES = 2**31  # protobuf's own limit; larger models keep their weights as external data


def _read(onnx, source: str):
    """The ONNX model in ``source``, read as every input is (load.source.read_bytes: a
    regular file, capped, remembered so that -o cannot replace it), with its external
    data, each file of which must be a regular file too."""
    import os
    import stat

    from oracle.load.source import check_readable, read_bytes

    data = read_bytes(source, "model in ONNX format", limit=MAX_ONNX_BYTES)
    try:
        model = onnx.load_model_from_string(data)
    except Exception as exc:
        raise OracleError(f"is not an ONNX model: {type(exc).__name__}: {exc}", file=source) from None
    from onnx.external_data_helper import ExternalDataInfo, _get_all_tensors, uses_external_data

    base = os.path.dirname(os.path.abspath(source))
    try:
        external = [t for t in _get_all_tensors(model) if uses_external_data(t)]
        for t in external:
            location = os.path.join(base, ExternalDataInfo(t).location)
            if not stat.S_ISREG(check_readable(location, "ONNX external data file", remember=True).st_mode):
                raise OracleError("is not a regular file; expected ONNX external data", file=location)
        if external:
            onnx.load_external_data_for_model(model, base)
    except OracleError:
        raise
    except Exception as exc:
        raise OracleError(f"cannot load its external data: {type(exc).__name__}: {exc}", file=source) from None
    return model


def _walk(graph, input_name: str, consts: dict, source: str, allow: bool, numpy_helper) -> Layers:
    import onnx

    shapes = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        shapes[vi.name] = tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
    name = {input_name: MODEL_INPUT}  # data tensor -> oracle layer
    out = Layers()
    for node in graph.node:
        if node.op_type == "Constant":
            consts[node.output[0]] = _constant(node, numpy_helper, source)
            continue
        data = [i for i in node.input if i in name]
        if not data:  # computes on constants only (shape arithmetic, shared initializers)
            if node.op_type == "Identity" and node.input[0] in consts:
                consts[node.output[0]] = consts[node.input[0]]
            continue
        out.reference += _parameters(node, consts)
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        in_shapes = [tuple(shapes.get(i, ())[1:]) for i in data]
        n = Node(node, attrs, in_shapes, tuple(shapes.get(node.output[0], ())[1:]), consts)
        _one(n, data, name, out, source, allow)
    if not graph.output:
        raise OracleError("has no graph output; expected one computed from its input", file=source)
    result = graph.output[0].name
    if result not in name or name[result] == MODEL_INPUT:
        raise OracleError("has no output computed from its input", file=source)
    out.keep_live(name[result])
    return out


def _constant(node, numpy_helper, source: str):
    """The value of a ``Constant`` node, whichever attribute holds it (value, value_float,
    value_ints, ...)."""
    import numpy as np
    import onnx

    try:
        value = onnx.helper.get_attribute_value(node.attribute[0])
        return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else np.asarray(value)
    except Exception as exc:  # no attribute, a tensor without data or of no type
        raise OracleError(f"Constant '{node.name or node.output[0]}' holds no value oracle can read:"
                          f" {type(exc).__name__}: {exc}", file=source) from None  # fmt: skip


# the inputs of an operator that are trainable parameters (ONNX operator specs)
_PARAMETER_INPUTS = {
    "Conv": (1, 2), "ConvTranspose": (1, 2), "Gemm": (1, 2), "MatMul": (1,),
    "BatchNormalization": (1, 2), "InstanceNormalization": (1, 2),
    "GroupNormalization": (1, 2), "LayerNormalization": (1, 2),
}  # fmt: skip


def _parameters(node, consts: dict) -> int:
    """Elements of the node's constant weight inputs: the file's own parameter count,
    to compare with oracle's."""
    idx = _PARAMETER_INPUTS.get(node.op_type, ())
    return int(sum(consts[node.input[i]].size for i in idx if i < len(node.input) and node.input[i] in consts))


def _one(n: Node, data: list[str], name: dict, out: Layers, source: str, allow: bool) -> None:
    node = n.node
    path = module_path(node.name, node.op_type)
    rule = OP_RULES.get(node.op_type)
    reason = "oracle has no layer type for it"
    srcs = [name[i] for i in data]
    if rule is not None:
        try:
            spec = rule(n)
        except NotMapped as exc:
            reason = str(exc)
        else:
            if spec == ALIAS:
                name[node.output[0]] = srcs[0]
                return
            parts = spec if isinstance(spec, list) else [spec]
            layer = out.add_parts(path, parts, srcs, n.out_shape)
            name[node.output[0]] = layer
            return
    if not allow:
        raise unsupported(source, f"ONNX {node.op_type}", path, reason)
    name[node.output[0]] = out.add_unsupported(path, f"ONNX {node.op_type}", srcs, n.out_shape)
