"""``oracle import-model`` (issue 15): torchvision models round-trip with exact parameter
counts and FLOPs near torch.utils.flop_counter's; bad sources fail with one clear error
and write nothing.  Skipped without torch and torchvision (CI's core pass)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from oracle.compute.layers.shapes_tokens import attention_flops  # noqa: E402
from oracle.importer.build import import_model  # noqa: E402
from oracle.load.model import load_model  # noqa: E402
from oracle.profiling.torchnet import build_network, check_shapes, count_parameters  # noqa: E402

# (source name, input, oracle layers) -- resnext101_32x4d is not a torchvision builder;
# its 32x8d sibling is, and the 32x4d is checked in tests/test_shipped_imports.py
ZOO = [
    ("resnet50", (3, 224, 224)),
    ("vgg16", (3, 224, 224)),
    ("alexnet", (3, 224, 224)),
    ("mobilenet_v2", (3, 224, 224)),
    ("efficientnet_b0", (3, 224, 224)),
    ("resnext50_32x4d", (3, 224, 224)),
    ("densenet121", (3, 224, 224)),
    ("inception_v3", (3, 299, 299)),
    ("video.r3d_18", (3, 16, 112, 112)),
    ("segmentation.fcn_resnet50", (3, 224, 224)),
    # the transformer layers (layer scale, attention, chunk, class token, position embedding,
    # relative position bias tables, patch merging)
    ("convnext_tiny", (3, 224, 224)),
    ("maxvit_t", (3, 224, 224)),
    ("shufflenet_v2_x1_0", (3, 224, 224)),
    ("swin_t", (3, 224, 224)),
    ("swin_v2_t", (3, 224, 224)),
    ("vit_b_16", (3, 224, 224)),
]
PRODUCT_TYPES = ("conv", "convtranspose", "fc", "matmul")


def _reference(name: str):
    sub, _, fn = name.rpartition(".")
    mod = getattr(torchvision.models, sub) if sub else torchvision.models
    import inspect

    builder = getattr(mod, fn)
    kw = {k: None for k in ("weights", "weights_backbone") if k in inspect.signature(builder).parameters}
    with torch.device("meta"):
        return builder(**kw).eval()


def _counted_flops(module, shape) -> int:
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = module(torch.empty(1, *shape, device="meta"))
    if isinstance(out, dict):
        out = out["out"]
    return counter.get_total_flops(), tuple(out.shape[1:])


@pytest.mark.parametrize("name, shape", ZOO, ids=[z[0] for z in ZOO])
def test_torchvision_round_trip(name, shape):
    got = import_model(f"torchvision:{name}", shape)
    ref = _reference(name)
    model = got.model
    # parameters: exactly PyTorch's, but for the auxiliary classifier that only training
    # mode runs (Inception v3's AuxLogits; not part of the evaluation-mode trace)
    used = sum(p.numel() for n, p in ref.named_parameters() if not n.startswith("AuxLogits."))
    assert model.parameters == used == got.reference_parameters
    # FLOPs: torch.utils.flop_counter counts 2 per multiply-add of convolutions and
    # matrix products only (attention's included); oracle's products (with bias adds; Swin V2's
    # per-batch position MLP left out) within 1%, and all of
    # oracle's FLOPs (norms, activations, pools too) within 5% as the issue asks
    counted, out_shape = _counted_flops(ref, shape)
    products = sum(i.flops for layer, i in zip(model.layers, model.info) if layer.type in PRODUCT_TYPES)
    products += sum(attention_flops(layer, i.input_shapes[0])[0]
                    for layer, i in zip(model.layers, model.info) if layer.type == "attention")  # fmt: skip
    assert products == pytest.approx(counted, rel=0.01)
    assert model.flops == pytest.approx(counted, rel=0.05)
    # oracle's PyTorch build of the file: same parameters, shapes and output
    net = build_network(model, device="meta")
    assert count_parameters(net) == model.parameters
    assert check_shapes(model, net) == []
    assert tuple(model.info[-1].output_shape) == out_shape


def test_file_round_trips_through_the_cli_and_predict(run, tmp_path, predict_every_strategy):
    out = tmp_path / "mnv2.yaml"
    r = run("import-model", "torchvision:mobilenet_v2", "--input", "3,224,224", "-o", str(out))
    assert r.code == 0, r.err
    assert "wrote" in r.err and "3,504,872 parameters" in r.err
    text = out.read_text()
    assert text.startswith("# Imported by `oracle import-model torchvision:mobilenet_v2 --input 3,224,224`")
    assert "torchvision.models.mobilenet_v2(weights=None)" in text
    model = load_model(out)
    assert model.parameters == 3_504_872
    depthwise = [layer for layer in model.layers if layer.type == "conv" and layer.groups > 1]
    assert len(depthwise) == 17 and all(layer.groups == layer.filters for layer in depthwise)
    predict_every_strategy(out, "4,16")


def test_names_follow_module_paths_and_inputs_only_where_needed():
    got = import_model("torchvision:resnet50", (3, 224, 224))
    names = [layer.name for layer in got.model.layers]
    assert names[:5] == ["conv1", "bn1", "relu", "maxpool", "layer1.0.conv1"]
    text = got.text
    assert "{name: layer1.0.add, type: add, inputs: [layer1.0.bn3, layer1.0.downsample.1]}" in text
    assert "{name: layer1.0.downsample.0, type: conv, filters: 256, kernel: 1, stride: 1, padding: 0," \
           " bias: false, inputs: [maxpool]}" in text  # fmt: skip


def test_unknown_torchvision_model(run, tmp_path):
    out = tmp_path / "m.yaml"
    r = run("import-model", "torchvision:resnet5", "--input", "3,8,8", "-o", str(out))
    assert r.code == 2 and not out.exists()
    assert "torchvision:resnet5: torchvision.models has no model 'resnet5'" in r.err


def test_package_module_callable_and_name(tmp_path):
    got = import_model("torchvision.models:resnet18", (3, 64, 64), name="R18")
    assert got.model.name == "R18"
    assert got.model.parameters == 11_689_512  # torchvision's docs
    assert "From: torchvision.models.resnet18()." in got.text


@pytest.mark.parametrize("name, params", [("resnet50", 25_557_032), ("efficientnet_b0", 5_288_548),
                                          ("seresnext50_32x4d", 27_559_896),
                                          ("convnext_atto", 3_695_520)])  # timm's LayerNorm2d, layer scale; fmt: skip
def test_timm_models(name, params):
    pytest.importorskip("timm")
    got = import_model(f"timm:{name}", (3, 224, 224))
    assert got.model.parameters == params == got.reference_parameters
    assert f"timm.create_model('{name}', pretrained=False)" in got.text
    assert got.model.info[-1].output_shape == (1000,)


def test_every_torchvision_classification_model_imports():
    """All of torchvision's classification builders (about 80), the transformers too,
    without --allow-unsupported and with PyTorch's exact parameter count (FLOPs of one
    model per family: test_torchvision_round_trip)."""
    names = torchvision.models.list_models(module=torchvision.models)
    assert len(names) > 70 and {"vit_h_14", "swin_v2_b", "maxvit_t", "convnext_large"} <= set(names)
    for name in names:
        shape = (3, 299, 299) if name.startswith("inception") else (3, 224, 224)
        got = import_model(f"torchvision:{name}", shape)
        assert got.model.info[-1].output_shape == (1000,), name
        assert got.unsupported == () and "unsupported" not in {layer.type for layer in got.model.layers}
        assert got.model.parameters == got.reference_parameters, name
