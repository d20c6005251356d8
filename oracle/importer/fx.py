"""Trace a PyTorch module with torch.fx and turn its graph into oracle layers.

The module is traced symbolically (``torch.fx.Tracer``; ``torch.nn`` modules stay
leaves), then run once on a ``meta`` tensor of the input's shape (batch 1) by
``ShapeProp``, which records every node's output shape without computing anything.
Walking the graph in order, each node that takes the data (the model input or
something computed from it) becomes one layer by :mod:`oracle.importer.rules`; nodes
computing only sizes or constants are not operations on the data and are left out.
Layers are named after the module path (``layer1.0.conv1``); a function called inside
a module gets that module's path and the function's name (``layer1.0.add``)."""

from __future__ import annotations

import operator
import torch
from torch import fx
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

from oracle.errors import OracleError
from oracle.importer.graph import Layers, Op, unsupported
from oracle.importer.rules import ALIAS, NotMapped, function_rule, module_rule, op_name, part_rule

_VIEWS = ("expand", "view", "reshape", "unsqueeze", "permute", "transpose")  # a parameter read through these
from oracle.model import MODEL_INPUT


class _ScopeTracer(fx.Tracer):
    """A tracer that remembers, for every node, the path of the module it was called in."""

    def __init__(self) -> None:
        super().__init__()
        self._paths: list[str] = []

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """Modules with a rule stay whole, subclasses too (torchvision's Conv3DSimple)."""
        if module_rule(m) is not None:
            return True
        return super().is_leaf_module(m, module_qualified_name)

    def call_module(self, m, forward, args, kwargs):
        self._paths.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._paths.pop()

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["scope"] = self._paths[-1] if self._paths else ""
        return node


def trace(module: torch.nn.Module, input_shape: tuple[int, ...], source: str) -> fx.GraphModule:
    """The traced graph with every node's output shape (``node.meta['tensor_meta']``)."""
    tracer = _ScopeTracer()
    try:
        graph = tracer.trace(module)
    except Exception as exc:  # torch.fx raises TraceError, TypeError, NotImplementedError...
        raise OracleError(
            f"cannot be traced by torch.fx: {type(exc).__name__}: {_first_line(exc)}",
            file=source,
            hint="data-dependent Python control flow cannot be traced; wrap that part in a"
            " module of its own or export the model to ONNX",
        ) from None
    gm = fx.GraphModule(tracer.root, graph)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != 1:
        raise OracleError(f"takes {len(placeholders)} inputs; oracle models take one image tensor", file=source)
    x = torch.empty((1, *input_shape), device="meta")
    from oracle.importer.sources import captured

    try:
        with captured():  # ShapeProp prints the traceback of a failing node to stderr itself
            ShapeProp(gm).propagate(x)
    except Exception as exc:
        shape = "x".join(map(str, input_shape))
        raise OracleError(
            f"does not run on a {shape} input: {type(exc).__name__}: {_first_line(exc)}",
            file=source,
            hint="check --input (channels first, then 1-3 spatial extents)",
        ) from None
    return gm


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else ""


def _is_tensor(node) -> bool:
    return isinstance(node, fx.Node) and isinstance(node.meta.get("tensor_meta"), TensorMetadata)


def _holds_tensors(node: fx.Node) -> bool:
    """A tuple/list/dict output with tensors in it (not sizes or other plain values)."""
    found: list = []

    def walk(v) -> None:
        if isinstance(v, TensorMetadata):
            found.append(v)
        elif isinstance(v, (tuple, list)):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    meta = node.meta.get("tensor_meta")
    if meta is not None and not isinstance(meta, TensorMetadata):
        walk(meta)
    return bool(found)


class _Walk:
    def __init__(self, gm: fx.GraphModule, source: str, allow_unsupported: bool) -> None:
        self.gm, self.source, self.allow = gm, source, allow_unsupported
        self.modules = dict(gm.named_modules())
        self.name: dict[fx.Node, str] = {}  # data node -> the oracle tensor that holds it
        self.several: dict[fx.Node, tuple[str, str]] = {}  # unsupported multi-output ops
        self.parted: dict[fx.Node, tuple] = {}  # multi-output ops with a rule: (rule, op, inputs)
        self.out = Layers()

    def data_inputs(self, node: fx.Node) -> list[fx.Node]:
        found: list[fx.Node] = []
        fx.node.map_arg((node.args, node.kwargs), lambda n: found.append(n) if n in self.name else None)
        return found

    def base_name(self, node: fx.Node) -> str:
        if node.op == "call_module":
            return str(node.target)
        scope = node.meta.get("scope", "")
        fn = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", node.name)
        return f"{scope}.{fn.strip('_')}" if scope else node.name

    def run(self) -> Layers:
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                self.name[node] = MODEL_INPUT
            elif node.op in ("call_module", "call_function", "call_method"):
                inputs = self.data_inputs(node)
                # sizes and other plain values computed from the data are no operation
                if inputs and (_is_tensor(node) or _holds_tensors(node)):
                    self.visit(node, inputs)
            elif node.op == "output":
                self.finish(node)
        return self.out

    def learned(self, node: fx.Node) -> list[tuple[int, ...]]:
        """Shapes of the parameters an operation reads directly or through a view or
        ``expand`` (a layer scale, a position embedding, a class token)."""
        found: list[tuple[int, ...]] = []

        def parameter(n: fx.Node) -> torch.nn.Parameter | None:
            if n.op == "get_attr":
                obj = self.gm
                for part in str(n.target).split("."):
                    obj = getattr(obj, part)
                return obj if isinstance(obj, torch.nn.Parameter) else None
            if n.op == "call_method" and n.target in _VIEWS and isinstance(n.args[0], fx.Node):
                return parameter(n.args[0])
            return None

        def operand(n: fx.Node) -> None:  # the operand's own shape: after a reshape or expand
            p = None if n in self.name else parameter(n)
            if p is not None:
                meta = n.meta.get("tensor_meta")
                found.append(tuple(meta.shape) if isinstance(meta, TensorMetadata) else tuple(p.shape))

        fx.node.map_arg((node.args, node.kwargs), operand)
        return found

    def op(self, node: fx.Node, target, inputs: list[fx.Node]) -> Op:
        meta = node.meta["tensor_meta"]
        several = not isinstance(meta, TensorMetadata)
        parts = [tuple(int(d) for d in m.shape[1:]) if isinstance(m, TensorMetadata) else () for m in meta] if several else []
        out = parts[0] if several else self.shape(node)
        return Op(target, node.args, node.kwargs, [self.shape(n) for n in inputs], out, self.learned(node), parts)

    def visit(self, node: fx.Node, inputs: list[fx.Node]) -> None:
        target = self.modules[node.target] if node.op == "call_module" else node.target
        if target is operator.getitem and node.args[0] in self.parted:
            return self.visit_part(node)
        rule = module_rule(target) if node.op == "call_module" else function_rule(target)
        reason = "oracle has no layer type for it"
        if not _is_tensor(node) and part_rule(target) is not None:
            self.parted[node] = (part_rule(target), self.op(node, target, inputs), inputs)
            self.name[node] = self.name[inputs[0]]
            return
        if _is_tensor(node) and rule is not None:
            try:
                spec = rule(self.op(node, target, inputs))
            except NotMapped as exc:
                reason = str(exc)
            else:
                self.emit(node, inputs, spec)
                return
        elif not _is_tensor(node):
            reason = "it returns several tensors"
        self.unsupported(node, inputs, op_name(node.op, target), reason)

    def visit_part(self, node: fx.Node) -> None:
        """Output i of an operation with several outputs: its rule's layer for i, named
        after the operation; the operation's data inputs, each once."""
        parent = node.args[0]
        rule, op, inputs = self.parted[parent]
        inputs = list(dict.fromkeys(inputs))
        op.in_shapes = [self.shape(n) for n in inputs]
        try:
            spec = rule(op, int(node.args[1]))
        except NotMapped as exc:
            target = self.modules[parent.target] if parent.op == "call_module" else parent.target
            name, path = op_name(parent.op, target), str(parent.target) if parent.op == "call_module" else parent.name
            if not self.allow:
                raise unsupported(self.source, name, path, str(exc)) from None
            srcs = [self.name[n] for n in inputs]
            self.name[node] = self.out.add_unsupported(self.base_name(parent), name, srcs, self.shape(node))
            return
        self.emit(node, inputs, spec, base=self.base_name(parent))

    def shape(self, node: fx.Node) -> tuple[int, ...]:
        return tuple(int(d) for d in node.meta["tensor_meta"].shape[1:])

    def emit(self, node: fx.Node, inputs: list[fx.Node], spec, base: str | None = None) -> None:
        if spec == ALIAS:
            self.name[node] = self.name[inputs[0]]
            return
        base = base or self.base_name(node)
        if isinstance(spec, list):  # one operation, several oracle layers
            self.name[node] = self.out.add_parts(base, spec, [self.name[n] for n in inputs], self.shape(node))
            return
        self.name[node] = self.out.add(base, spec, [self.name[n] for n in inputs], self.shape(node))

    def unsupported(self, node: fx.Node, inputs: list[fx.Node], op: str, reason: str) -> None:
        path = str(node.target) if node.op == "call_module" else (node.meta.get("scope") or node.name)
        if not self.allow:
            raise unsupported(self.source, op, path, reason)
        srcs = [self.name[n] for n in inputs]
        if not _is_tensor(node):  # several outputs: each one taken out becomes the layer
            self.several[node] = (op, self.base_name(node))
            self.name[node] = srcs[0]
            return
        base = self.base_name(node)
        parent = node.args[0] if node.target is operator.getitem and node.args else None
        if parent in self.several:  # element i of a multi-output operation
            op, base = self.several[parent]
        self.name[node] = self.out.add_unsupported(base, op, srcs, self.shape(node))

    def finish(self, node: fx.Node) -> None:
        result = node.args[0]
        if isinstance(result, dict):  # torchvision segmentation: {"out": ..., "aux": ...}
            result = result.get("out", next(iter(result.values()), None))
        if isinstance(result, (tuple, list)):
            result = result[0] if result else None
        if result not in self.name or self.name[result] == MODEL_INPUT:
            raise OracleError("has no output computed from its input", file=self.source)
        self.out.keep_live(self.name[result])


def convert(gm: fx.GraphModule, source: str, allow_unsupported: bool = False) -> Layers:
    return _Walk(gm, source, allow_unsupported).run()
