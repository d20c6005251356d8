"""ParaDL's own files as inputs (issue 27 point 2): ``oracle import-model FILE.net``,
``oracle import-layers FILE.lc`` and ``oracle import-system FILE.plat``.  The files are
copies of the ParaDL study's tool inputs (tests/data/paradl/README.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from oracle.importer.paradl import import_net
from oracle.load.layerwise import bind_layerwise, load_layerwise
from oracle.load.model import load_model
from oracle.load.profile import load_profile
from oracle.load.paradl import read_paradl_lc, read_paradl_net, read_paradl_plat
from oracle.load.system import load_system

DATA = ROOT / "tests" / "data" / "paradl"
NETS = ["ALEXNET_ImageNet.net", "ALEXNET_ImageNet_profall.net_sc", "COSMOFLOW.net",
        "RESNET50_ImageNet_profall.net_sc", "VGG_ImageNet_profall.net_sc"]  # fmt: skip
LCS = {  # each .lc with the model file ParaDL's scripts pass with it
    "filter_alexnet.lc": "ALEXNET_ImageNet_profall.net_sc", "spatial_alexnet.lc": "ALEXNET_ImageNet_profall.net_sc",
    "filter_vgg.lc": "VGG_ImageNet_profall.net_sc", "spatial_vgg.lc": "VGG_ImageNet_profall.net_sc",
    "filter_resnet.lc": "RESNET50_ImageNet_profall.net_sc", "spatial_resnet.lc": "RESNET50_ImageNet_profall.net_sc",
    "channel_resnet.lc": "RESNET50_ImageNet_profall.net_sc", "spatial_cosmolow.lc": "COSMOFLOW.net",
}  # fmt: skip


def _same(paradl, oracle_shape) -> bool:
    return tuple(paradl) == tuple(oracle_shape) or (
        len(oracle_shape) == 1 and paradl[0] == oracle_shape[0] and set(paradl[1:]) <= {1})


@pytest.mark.parametrize("name", NETS)
def test_every_shipped_net_imports_with_the_tools_shapes_and_weights(name, tmp_path):
    out = tmp_path / "m.yaml"
    r = run_cli("import-model", DATA / name, "-o", out)
    assert r.code == 0, r.err
    net, model = read_paradl_net(DATA / name), load_model(out)
    assert model.input_shape == net.input and model.dataset_samples == net.samples
    info = {layer.name: i for layer, i in zip(model.layers, model.info)}
    kept = [layer for layer in model.layers if layer.type != "flatten"]
    assert len(kept) == len(net.layers)
    for paradl, layer in zip(net.layers, kept):
        assert _same(paradl.y, info[layer.name].output_shape), (paradl.name, layer.name)
        extra = 2 * paradl.x[0] if paradl.kind == "BNORM" else 0  # batch norm's scale and shift
        assert info[layer.name].parameters == paradl.weights + extra, paradl.name


def test_hand_checked_parameter_counts_against_the_shipped_models():
    """ParaDL's |w| (the sum of the products of the w shapes), worked by hand from
    oracle's torchvision-derived models/."""
    res = read_paradl_net(DATA / "RESNET50_ImageNet_profall.net_sc")
    ref = load_model(ROOT / "models" / "resnet50.yaml")
    convs = sum(i.parameters for layer, i in zip(ref.layers, ref.info) if layer.type == "conv" and "branch1" not in layer.name)
    # ParaDL's ResNet-50 = torchvision's conv weights without the four projection
    # shortcuts + the fc weights without bias: 22,734,016
    assert res.weights == convs + 2048 * 1000 == 22_734_016
    vgg = read_paradl_net(DATA / "VGG_ImageNet_profall.net_sc")
    # 226x226 input: pool5 is 8x8, so fc6 has 512*8*8*4096 weights instead of 512*7*7*4096
    assert vgg.weights == 138_357_544 - 13_416 + 512 * 4096 * (64 - 49) == 169_801_408
    cosmo = read_paradl_net(DATA / "COSMOFLOW.net")
    biases = 16 + 32 + 64 + 128 + 256 + 256 + 128 + 2048 + 256 + 4
    assert cosmo.weights == load_model(ROOT / "models" / "cosmoflow.yaml").parameters - biases == 2_128_064
    assert res.time_s_per_sample == 0.003119502  # the per-sample time of profiles/resnet50_v100.yaml


def test_inferred_windows_follow_chainer_pools_and_resnet_strides():
    text = import_net(str(DATA / "VGG_ImageNet_profall.net_sc")).text
    assert "{name: MPOOL_9, type: maxpool, kernel: 2, stride: 2, padding: 0, ceil_mode: true}" in text  # 113 -> 57
    text = import_net(str(DATA / "RESNET50_ImageNet_profall.net_sc")).text
    assert "{name: CONV_1, type: conv, filters: 64, kernel: 7, stride: 2, padding: 3, bias: false}" in text
    assert "{name: ADD_12, type: add, inputs: [BNORM_11, BNORM_11]}" in text


def _fails(args, tmp_path, where: str):
    out = tmp_path / "out.yaml"
    r = run_cli(*args, "-o", out)
    assert r.code == 2 and len(r.err_lines) == 1 and where in r.err, r.err
    assert "Traceback" not in r.err and not out.exists()
    return r.err


def test_shipped_cosmoflow256_has_a_shape_that_does_not_chain(tmp_path):
    err = _fails(["import-model", DATA / "COSMOFLOW.net_256"], tmp_path, "COSMOFLOW.net_256:8:")
    assert "32x2128x128x128" in err
    fixed = tmp_path / "c.net_256"
    fixed.write_text((DATA / "COSMOFLOW.net_256").read_text().replace("32x2128x", "32x128x"))
    # its 2x2x2 convs keep 8^3 ("same" padding of an even kernel): no symmetric padding does
    assert "CONV_5" in _fails(["import-model", fixed], tmp_path, "c.net_256:16:")


def _net(tmp_path, layers: str) -> Path:
    p = tmp_path / "bad.net"
    p.write_text("Dataset|D\nInput|100x3x8x8\nModel|M\n" + layers)
    return p


@pytest.mark.parametrize("layers, line, words", [
    ("CONV1|3x8x8|3x4x3x3|4x8x8|0.1\nSOFTMAX|4x8x8|0x0|4x8x8\n", 5, "SOFTMAX"),
    ("CONV1|3x8x8|3x4x3x3|4x8x8\nRELU|4x9x9|4x4x0x0|4x9x9\n", 5, "does not chain"),
    ("CONV1|3x7x7|3x4x3x3|4x7x7\n", 4, "does not chain"),
    ("CONV1|3x8x8|3x4x3x3|5x8x8\n", 4, "F = 5"),
    ("CONV1|3x8x8|3x4x3x3|4x8\n", 4, "ranks"),
    ("CONV1|3x8x8|3x4x3x3\n", 4, "NAME|x|w|y"),
    ("CONV1|3x8x8|3x4x3x3|4xAx8\n", 4, "not a shape"),
    ("# comment|0\nCONV1|3x8x8|3x4x3x3|4x8x8|-1\n", 5, "non-negative"),
])  # fmt: skip
def test_bad_net_is_one_error_naming_file_and_line(layers, line, words, tmp_path):
    err = _fails(["import-model", _net(tmp_path, layers)], tmp_path, f"bad.net:{line}:")
    assert words in err


def test_bad_lc_is_one_error_naming_file_and_line(tmp_path):
    net = DATA / "ALEXNET_ImageNet.net"
    lines = (DATA / "filter_alexnet.lc").read_text().splitlines()
    cases = {
        "CONV2": (lines[:3] + ["CONV9|1"] + lines[4:], 4),  # a layer the model lacks
        "past its last": (lines + ["FC9|0"], 21),
        "missing": (lines[:-1], 19),
        "'[INDEX] NAME|0'": (lines[:2] + ["MPOOL|2"] + lines[3:], 3),
        "numbered 7": (["7 CONV1|1"] + lines[1:], 1),
    }
    for words, (text, line) in cases.items():
        lc = tmp_path / "bad.lc"
        lc.write_text("\n".join(text) + "\n")
        err = _fails(["import-layers", lc, "--net", net, "--strategy", "filter", "--gpus", "4"], tmp_path, f"bad.lc:{line}:")
        assert words in err, err
    err = _fails(["import-layers", DATA / "filter_alexnet.lc", "--net", net, "--strategy", "data", "--gpus", "4"],
                 tmp_path, "--strategy")  # fmt: skip
    assert "spatial, filter, channel" in err


@pytest.mark.parametrize("lc", sorted(LCS))
def test_every_shipped_lc_becomes_a_layerwise_file_oracle_loads(lc, tmp_path):
    net = DATA / LCS[lc]
    strategy = lc.split("_")[0]
    model, layers = tmp_path / "m.yaml", tmp_path / "l.yaml"
    assert run_cli("import-model", net, "-o", model).code == 0
    r = run_cli("import-layers", DATA / lc, "--net", net, "--strategy", strategy, "--gpus", "16", "--p2", "4", "-o", layers)
    assert r.code == 0, r.err
    m = load_model(model)
    dists = bind_layerwise(load_layerwise(layers), m)
    split = [e.split for e in read_paradl_lc(DATA / lc).entries]
    last = max(i for i, s in enumerate(split) if s)
    names = import_net(str(net)).names
    for i, group in enumerate(names):
        for name in group:
            d = dists[m.index[name]]
            assert (d.kind, d.p1, d.p2) == ((strategy, 4, 4) if i <= last else ("data", 4, 1)), name


def test_lc_round_trips_through_predict(tmp_path):
    net = DATA / "VGG_ImageNet_profall.net_sc"
    model, layers, system, profile = (tmp_path / n for n in ("m.yaml", "l.yaml", "s.yaml", "p.yaml"))
    assert run_cli("import-model", net, "-o", model, "--profile-output", profile).code == 0
    assert load_profile(profile).total_fw_bw_per_sample_s == 0.008245589  # the file's fifth field
    assert run_cli("import-layers", DATA / "filter_vgg.lc", "--net", net, "--strategy", "filter", "--gpus", "8",
                   "-o", layers).code == 0  # fmt: skip
    assert run_cli("import-system", DATA / "ABCI.plat", "-o", system).code == 0
    r = run_cli("predict", "-m", model, "-s", system, "-p", profile, "--gpus", "8", "--batch-per-gpu", "4",
                "--strategy", "filter", "--layers", layers, "--format", "json")  # fmt: skip
    assert r.code == 0, r.err
    points = {p["strategy"]: p for p in json.loads(r.out)}
    lw = points["layer-wise"]
    assert lw["gpus"] == 8 and lw["compute_s"] > 0 and lw["communication_s"] > 0
    # the head (fc6-fc8) runs unsplit on one GPU: more compute than filter, which splits it
    assert lw["compute_s"] > points["filter"]["compute_s"]


def test_plat_becomes_a_system_that_loads_and_predicts(tmp_path):
    out = tmp_path / "abci-paradl.yaml"
    r = run_cli("import-system", DATA / "ABCI.plat", "-o", out)
    assert r.code == 0, r.err
    s = load_system(out)
    plat = read_paradl_plat(DATA / "ABCI.plat")
    assert s.gpu_memory_bytes == plat.mem_per_node_bytes == 16e9
    assert s.gpu_peak_flops == pytest.approx(7.8e12) and s.gpus_per_node == 4 and s.nodes == 1024
    (level,) = s.network
    assert level.alpha_s == 500e-9 and math.isclose(1 / level.beta_s_per_byte, 12.5e9) and level.max_gpus == 4096
    r = run_cli("predict", "-m", "resnet50", "-s", out, "-p", "resnet50_v100", "--gpus", "8", "--batch-per-gpu", "32",
                "--strategy", "data", "--format", "json")  # fmt: skip
    assert r.code == 0, r.err


def test_bad_plat_and_output_over_an_input(tmp_path):
    plat = tmp_path / "bad.plat"
    plat.write_text((DATA / "ABCI.plat").read_text().replace("500E-9", "fast"))
    assert "LATENCY" in _fails(["import-system", plat], tmp_path, "bad.plat:4:")
    plat.write_text("MEM_PER_NODE|16e9|Bytes\n")
    assert "lacks NODE_SPEED" in _fails(["import-system", plat], tmp_path, "bad.plat")
    net = tmp_path / "a.net"
    net.write_bytes((DATA / "ALEXNET_ImageNet.net").read_bytes())
    r = run_cli("import-model", net, "-o", net)
    assert r.code == 2 and net.read_bytes() == (DATA / "ALEXNET_ImageNet.net").read_bytes()


def test_profile_output_needs_measured_times_and_writes_nothing_without(tmp_path):
    model, profile = tmp_path / "m.yaml", tmp_path / "p.yaml"
    r = run_cli("import-model", DATA / "ALEXNET_ImageNet.net", "-o", model, "--profile-output", profile)
    assert r.code == 2 and "no measured time" in r.err and not model.exists() and not profile.exists()
    r = run_cli("import-model", DATA / "ALEXNET_ImageNet.net", "-o", model, "--profile-output", model)
    assert r.code == 2 and "same file" in r.err and not model.exists()
    r = run_cli("import-model", DATA / "VGG_ImageNet_profall.net_sc", "--profile-output", "-")
    assert r.code == 2 and "give the profile a file name" in r.err and not r.out


def test_hostile_names_are_escaped_and_load_back(tmp_path):
    """Names go through oracle/textsafe.py: quoted in the YAML files, escaped in messages."""
    names = ["CONV \x1b[31m\u2028{a: b}", "RELU #x, [y]", "FC: 'z'"]
    net = _net(tmp_path, f"{names[0]}|3x8x8|3x4x3x3|4x8x8|0.5\n{names[1]}|4x8x8|4x4x0x0|4x8x8\n{names[2]}|4x8x8|4x2x8x8|2x1x1\n")
    lc = tmp_path / "h.lc"
    lc.write_text("".join(f"{i} {n}|{int(i != 1)}\n" for i, n in enumerate(names)))
    model, layers, profile = tmp_path / "m.yaml", tmp_path / "l.yaml", tmp_path / "p.yaml"
    r = run_cli("import-model", net, "-o", model, "--profile-output", profile)
    assert r.code == 0 and "\x1b" not in r.err, r.err
    r = run_cli("import-layers", lc, "--net", net, "--strategy", "filter", "--gpus", "2", "-o", layers)
    assert r.code == 0, r.err
    for f in (model, layers, profile):
        assert "\x1b" not in f.read_text() and "\u2028" not in f.read_text()
    m = load_model(model)
    assert [layer.name for layer in m.layers if layer.type != "flatten"] == names
    assert len(bind_layerwise(load_layerwise(layers), m)) == len(m.layers)
    bad = tmp_path / "bad.lc"
    bad.write_text(f"0 {names[0]}|1\n1 RELU \x1b[0m|0\n2 {names[2]}|1\n")
    err = _fails(["import-layers", bad, "--net", net, "--strategy", "filter", "--gpus", "2"], tmp_path, "bad.lc:2:")
    assert "\x1b" not in err and "\\x1b" in err


def test_window_search_is_bounded_for_huge_extents(tmp_path):
    """Stride and padding are solved for, not enumerated: a 10^7-wide layer answers."""
    p = tmp_path / "huge.net"
    p.write_text("Dataset|D\nInput|10x1x9999999\nModel|M\nCONV1|1x9999999|1x2x9999990|2x7\nCONV2|2x7|2x2x3|2x20\n")
    err = _fails(["import-model", p], tmp_path, "huge.net:5:")  # 7 -> 20 with kernel 3: at most 9
    assert "CONV2" in err


def test_paradl_files_are_capped_like_yaml_files(tmp_path):
    big = tmp_path / "big.lc"
    big.write_bytes(b"#" * (17 * 2**20))
    err = _fails(["import-layers", big, "--net", DATA / "ALEXNET_ImageNet.net", "--strategy", "filter", "--gpus", "2"],
                 tmp_path, "big.lc")  # fmt: skip
    assert "larger than 16 MiB" in err
