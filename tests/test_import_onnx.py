"""``oracle import-model FILE.onnx`` (issue 15): an ONNX file exported from a torchvision
model imports to the same layers as the torch.fx path; dynamic shapes need --input;
unknown operators stop the import.  Skipped without onnx, torch and torchvision."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

from oracle.importer.build import import_model  # noqa: E402


def _export(module, path, shape, **kw):
    """PyTorch's TorchScript-based exporter (no onnxscript needed); PRESERVE keeps
    batch norm as its own node in evaluation mode."""
    x = torch.randn(1, *shape)
    torch.onnx.export(module.eval(), (x,), str(path), dynamo=False, input_names=["x"],
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False, **kw)  # fmt: skip
    return path


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_onnx_export_imports_to_the_same_layers_as_torch(name, tmp_path):
    shape = (3, 224, 224)
    path = _export(getattr(torchvision.models, name)(), tmp_path / f"{name}.onnx", shape)
    via_onnx = import_model(str(path), None)  # the file's static input shape
    via_torch = import_model(f"torchvision:{name}", shape)
    a, b = _structure(via_onnx.model), _structure(via_torch.model, drop=("dropout",))
    assert a == b
    # names come from module paths in both (functions at the top level aside)
    names = [layer.name for layer in via_onnx.model.layers if "." in layer.name]
    assert set(names) <= {layer.name for layer in via_torch.model.layers} and len(names) > 50
    assert via_onnx.model.parameters == via_torch.model.parameters == via_onnx.reference_parameters
    assert via_onnx.model.input_shape == shape


def _structure(model, drop=()):
    """Every layer as (type, its keys, inputs as positions, output shape), without names;
    ``drop``: types the ONNX exporter leaves out in evaluation mode (dropout)."""
    alias = {}
    rows = []
    for layer, info in zip(model.layers, model.info):
        srcs = tuple(alias.get(n, n) for n in layer.inputs)
        if layer.type in drop:
            alias[layer.name] = srcs[0]
            continue
        keys = {k: v for k, v in vars(layer).items() if k not in ("name", "inputs", "line")}
        rows.append((layer.name, layer.type, keys, srcs, info.output_shape))
    index = {row[0]: i for i, row in enumerate(rows)}
    return [(t, k, tuple(index.get(s, s) for s in srcs), shape) for _, t, k, srcs, shape in rows]


class Rolls(torch.nn.Module):
    def forward(self, x):
        return torch.roll(x, 1, dims=2) * 2.0


def test_dynamic_shapes_need_input_and_unknown_ops_stop(run, tmp_path):
    path = _export(torchvision.models.resnet18(), tmp_path / "dyn.onnx", (3, 64, 64),
                   dynamic_axes={"x": {0: "batch", 2: "height", 3: "width"}})  # fmt: skip
    out = tmp_path / "dyn.yaml"
    r = run("import-model", str(path), "-o", str(out))
    assert r.code == 2 and not out.exists()
    assert f"{path}: --input: input 'x' has dynamic shape ?x3x?x?; give --input C,H,W[,D]" in r.err
    r = run("import-model", str(path), "--input", "3,96,96", "-o", str(out))
    assert r.code == 0, r.err
    assert "input: [3, 96, 96]" in out.read_text()

    bad = _export(Rolls(), tmp_path / "roll.onnx", (3, 8, 8))
    r = run("import-model", str(bad), "-o", str(out.with_name("roll.yaml")))
    assert r.code == 2 and not out.with_name("roll.yaml").exists()
    assert r.err.strip() == (
        f"oracle: error: {bad}: operation ONNX Slice at 'slice' is not supported (oracle has no layer"
        " type for it) (--allow-unsupported imports it as a zero-cost layer, listed in the file)"
    )
