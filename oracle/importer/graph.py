"""The oracle layers an importer collects while walking a graph (torch.fx or ONNX):
unique names, ``inputs`` written only where a layer does not read the previous one,
operations without a layer type, and the branches the output needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oracle.errors import OracleError
from oracle.model import MODEL_INPUT, MULTI_INPUT_TYPES

ALIAS = "alias"  # a rule's answer for an operation that neither costs nor changes a shape


class NotMapped(Exception):
    """This call of a known operation has no oracle equivalent (the reason)."""


def per_dim(values) -> int | list[int]:
    """A per-dimension tuple as the model format writes it: one number when all agree."""
    vals = [int(v) for v in (values if isinstance(values, (tuple, list)) else (values,))]
    return vals[0] if len(set(vals)) == 1 else vals


def sample_dim(dim: int, rank: int) -> int:
    """A PyTorch dimension (batch first, may be negative) as a per-sample dimension."""
    d = dim + rank + 1 if dim < 0 else dim
    if d == 0:
        raise NotMapped("an operation along the batch dimension")
    return d - 1


def two_tensors(kind: str):
    """The rule of add, mul and matmul: two data inputs (a constant operand, as a bias
    or a scale, has no layer type); add without broadcasting."""

    def rule(op) -> dict:
        if len(op.in_shapes) != 2:
            raise NotMapped(f"{kind} with a constant operand")
        if kind == "add" and op.in_shapes[0] != op.in_shapes[1]:
            raise NotMapped("add with broadcasting")
        return {"type": kind}

    return rule


@dataclass
class Op:
    target: Any  # the module (call_module) or the function / method name
    args: tuple
    kwargs: dict
    in_shapes: list[tuple[int, ...]]  # per-sample shapes of the data inputs, in order
    out_shape: tuple[int, ...]  # per-sample output shape (several outputs: the first's)
    learned: list[tuple[int, ...]] = field(default_factory=list)  # shapes of parameters it reads
    parts: list[tuple[int, ...]] = field(default_factory=list)  # several outputs: each one's shape

    def arg(self, index: int, name: str, default=None):
        if len(self.args) > index:
            return self.args[index]
        return self.kwargs.get(name, default)


UNSUPPORTED_HINT = "--allow-unsupported imports it as a zero-cost layer, listed in the file"


@dataclass
class Layers:
    """The oracle layers of a graph, in order, the operations imported as zero-cost
    ``unsupported`` layers (name, operation) and each layer's shape in the source."""

    layers: list[dict] = field(default_factory=list)
    unsupported: list[tuple[str, str]] = field(default_factory=list)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    used: set[str] = field(default_factory=lambda: {MODEL_INPUT})
    reference: int = 0  # the source's own parameter count, where the walk computes it

    def unique(self, base: str) -> str:
        base = base or "layer"
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        return name

    def add(self, base: str, spec: dict, srcs: list[str], shape: tuple[int, ...] | None) -> str:
        """Append one layer named after ``base``; returns its name."""
        name = self.unique(base)
        layer = {"name": name, **spec}
        previous = self.layers[-1]["name"] if self.layers else MODEL_INPUT
        if srcs != [previous] or spec["type"] in MULTI_INPUT_TYPES:
            layer["inputs"] = list(srcs)
        self.layers.append(layer)
        if shape is not None:
            self.shapes[name] = tuple(shape)
        return name

    def add_parts(self, base: str, parts: list[dict], srcs: list[str], shape: tuple[int, ...]) -> str:
        """One operation written as several layers in a chain (a rule returned a list):
        the part marked ``main`` takes the operation's name, the others that name plus
        their type; the source's shape is the last part's.  Returns the last name."""
        main = next((i for i, p in enumerate(parts) if p.get("main")), 0)
        name = srcs[0] if srcs else MODEL_INPUT
        for i, part in enumerate(parts):
            spec = {k: v for k, v in part.items() if k != "main"}
            label = base if i == main else f"{base}.{spec['type']}"
            name = self.add(label, spec, srcs, shape if i == len(parts) - 1 else None)
            srcs = [name]
        return name

    def add_unsupported(self, base: str, op: str, srcs: list[str], shape: tuple[int, ...]) -> str:
        name = self.add(base, {"type": "unsupported", "op": op, "shape": list(shape)}, srcs[:1] or [MODEL_INPUT], shape)
        self.unsupported.append((name, op))
        return name

    def keep_live(self, output: str) -> None:
        """Keep the layers the output depends on (dead branches, as an unused auxiliary
        head, dropped), in order; the output's layer is then last."""
        previous = [MODEL_INPUT] + [layer["name"] for layer in self.layers[:-1]]
        need = {output}
        for layer, prev in zip(reversed(self.layers), reversed(previous)):
            if layer["name"] in need:
                need.update(layer.get("inputs", [prev]))
        out, last = [], MODEL_INPUT
        for layer, prev in zip(self.layers, previous):
            if layer["name"] in need:
                if "inputs" not in layer and prev != last:  # its implicit input was dropped
                    layer = {**layer, "inputs": [prev]}
                out.append(layer)
                last = layer["name"]
        self.layers = out


def unsupported(source: str, op: str, path: str, reason: str) -> OracleError:
    return OracleError(f"operation {op} at '{path}' is not supported ({reason})", file=source, hint=UNSUPPORTED_HINT)
