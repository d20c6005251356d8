"""Local response normalisation (``lrn``) and convolutions of few, wide groups: what the
BVLC AlexNet and CaffeNet of the pre-Volta benchmarks are made of."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from oracle.compute import kernels as K
from oracle.compute.kernels_array import ModelArrays, per_sample_array
from oracle.compute.memory import saved_activations
from oracle.errors import OracleError
from oracle.gpus import lookup
from oracle.load.model import parse_model

GTX1080 = lookup("GTX-1080")
DATASET = {"name": "d", "samples": 1000}


def _model(layers, shape=(8, 10, 10)):
    return parse_model({"name": "L", "input": list(shape), "dataset": DATASET, "layers": layers}, "l.yaml")


def test_lrn_shape_flops_and_parameters_by_hand():
    m = _model([{"name": "n", "type": "lrn", "size": 5, "alpha": 1e-4, "beta": 0.75, "k": 1}])
    info = m.info[0]
    assert info.output_shape == (8, 10, 10) and info.parameters == 0
    assert info.flops == (5 + 5) * 800  # size + 5 per element


def test_lrn_saves_its_input_and_three_more_inputs_worth():
    # PyTorch's local_response_norm (saved_tensors_hooks, 2.14): the input, the padded squares
    # (C + size - 1 = 12 channels of 8 -> 1.5 inputs), the power's base and its result
    m = _model([{"name": "c", "type": "conv", "filters": 8, "kernel": 1}, {"name": "n", "type": "lrn", "size": 5}])
    s = saved_activations(m)
    assert s.elements[1] == pytest.approx(800 * (1.5 + 2))  # inside the layer
    assert s.elements[0] == pytest.approx(800 + 800)  # the conv's input, and its output lrn keeps


def test_lrn_is_a_memory_bound_kernel():
    m = _model([{"name": "n", "type": "lrn", "size": 5}])
    k = K.KernelConstants(memory_efficiency=0.8, launch_s=1e-9)
    fw, bw = K.layer_time(m.layers[0], m.info[0], GTX1080, "fp32", 64, k)
    nbytes = 4 * 64 * (800 + 800)  # read x, write y
    assert fw == pytest.approx(nbytes / (0.8 * GTX1080.memory_bandwidth_Bps))
    assert bw == pytest.approx(2 * fw)


@pytest.mark.parametrize("entry, key", [
    ({"name": "n", "type": "lrn"}, "size"),
    ({"name": "n", "type": "lrn", "size": 0}, "size"),
    ({"name": "n", "type": "lrn", "size": 5, "alpha": -1}, "alpha"),
    ({"name": "n", "type": "lrn", "size": 5, "beta": float("nan")}, "beta"),
    ({"name": "n", "type": "lrn", "size": 5, "window": 3}, "window"),
])  # fmt: skip
def test_bad_lrn_entries_name_the_key(entry, key):
    with pytest.raises(OracleError, match=key):
        _model([entry])


def test_lrn_needs_spatial_dimensions():
    with pytest.raises(OracleError, match="spatial"):
        _model([{"name": "f", "type": "flatten"}, {"name": "n", "type": "lrn", "size": 5}])


def _grouped(filters, groups, channels):
    conv = {"name": "c", "type": "conv", "filters": filters, "kernel": 3, "padding": 1, "groups": groups}
    return _model([conv], (channels, 13, 13))


def test_wide_groups_run_as_dense_convolutions():
    """Two groups of 192 filters (BVLC AlexNet's conv4): the dense rate on half the work each."""
    wide = _grouped(384, 2, 384)
    assert not K.grouped_gemm(wide.layers[0])
    fw = K.layer_time(wide.layers[0], wide.info[0], GTX1080, "fp32", 128)[0]
    unpenalised = K.layer_time(wide.layers[0], wide.info[0], GTX1080, "fp32", 128,
                               K.KernelConstants(grouped_efficiency=1.0))[0]  # fmt: skip
    assert fw == unpenalised


def test_narrow_groups_keep_the_grouped_efficiency():
    """ResNeXt-101 32x4d's widest groups (32 filters each) stay below a GEMM tile."""
    narrow = _grouped(1024, 32, 1024)
    assert K.grouped_gemm(narrow.layers[0])
    fw = K.layer_time(narrow.layers[0], narrow.info[0], GTX1080, "fp32", 128)[0]
    dense_rate = K.layer_time(narrow.layers[0], narrow.info[0], GTX1080, "fp32", 128,
                              K.KernelConstants(grouped_efficiency=1.0))[0]  # fmt: skip
    assert fw > 2 * dense_rate


@pytest.mark.parametrize("name", ["bvlc_alexnet", "caffenet"])
def test_vectorised_path_equals_the_scalar_one(name):
    from oracle.load.model import load_model

    m = load_model(Path(__file__).resolve().parents[1] / "models" / f"{name}.yaml")
    k = K.DEFAULT_CONSTANTS
    fw, bw = per_sample_array(ModelArrays.of(m, k), GTX1080, "fp32", 16.0, k)
    scalar = K.per_sample_times(m, GTX1080, "fp32", 16.0, k)
    assert list(fw) == pytest.approx([f for f, _ in scalar], rel=1e-12)
    assert list(bw) == pytest.approx([b for _, b in scalar], rel=1e-12)


def test_show_model_lists_the_lrn_layers():
    r = run_cli("show", "model", "bvlc_alexnet")
    assert r.code == 0, r.err
    assert r.out.count(" lrn ") == 2 and "60,965,224" in r.out


def test_torch_builds_and_imports_local_response_norm():
    torch = pytest.importorskip("torch")
    from oracle.importer.rules import MODULE_RULES
    from oracle.profiling.torchnet import make_module

    m = _model([{"name": "n", "type": "lrn", "size": 5}])
    module = make_module(m.layers[0], m.info[0])
    assert isinstance(module, torch.nn.LocalResponseNorm) and module.size == 5
    assert torch.nn.LocalResponseNorm in MODULE_RULES


def test_saved_elements_equal_what_autograd_saves():
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 96, 27, 27, requires_grad=True)
    h = x * 1.0
    storages = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        torch.nn.LocalResponseNorm(5)(h)
    m = _model([{"name": "c", "type": "conv", "filters": 96, "kernel": 1}, {"name": "n", "type": "lrn", "size": 5}],
               (96, 27, 27))  # fmt: skip
    saved = saved_activations(m).elements.sum() - 96 * 27 * 27  # less the conv's own input
    assert 2 * 4 * saved == pytest.approx(sum(storages.values()), rel=1e-9)


CAFFE_STYLE = """
from torch import nn


def net():
    return nn.Sequential(nn.Conv2d(3, 16, 5, padding=2, groups=1), nn.ReLU(), nn.LocalResponseNorm(5, 1e-4, 0.75, 1.0),
                         nn.MaxPool2d(3, 2), nn.Conv2d(16, 32, 3, padding=1, groups=2), nn.ReLU(),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
"""


def test_import_model_maps_local_response_norm_to_lrn(tmp_path):
    pytest.importorskip("torch")
    from oracle.importer.build import import_model

    src = tmp_path / "caffe_style.py"
    src.write_text(CAFFE_STYLE)
    got = import_model(f"{src}:net", (3, 16, 16))
    (lrn,) = [layer for layer in got.model.layers if layer.type == "lrn"]
    assert lrn.size == (5,)
    assert "type: lrn, size: 5" in got.text
    assert got.model.parameters == 16 * 3 * 25 + 16 + 32 * 8 * 9 + 32 + 32 * 49 * 10 + 10
