"""``oracle show model|system|profile``: tables, JSON, and errors (exit 2, one line)."""

from __future__ import annotations

import json
import math

import pytest


def ok(result):
    assert result.code == 0, (
        f"exit {result.code}\nstderr: {result.err}\nexception: {result.exception!r}"
    )
    assert result.exception is None
    return result


def show_json(run, *args):
    return json.loads(ok(run("show", *args, "--format", "json")).out)


# --------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------


def test_show_model_resnet50_json(run):
    d = show_json(run, "model", "resnet50")
    assert d["name"] == "ResNet-50"
    assert d["parameters"] == 25_557_032
    assert abs(d["flops"] - 8.18e9) / 8.18e9 < 0.015
    assert d["input_shape"] == [3, 224, 224]
    assert d["dataset"]["samples"] == 1_281_167
    layers = d["layers"]
    assert layers
    for layer in layers:
        assert {"name", "type", "input_shape", "output_shape", "parameters", "flops"} <= set(layer)
        assert isinstance(layer["name"], str) and isinstance(layer["type"], str)
        assert isinstance(layer["parameters"], int) and layer["parameters"] >= 0
        assert isinstance(layer["flops"], (int, float)) and layer["flops"] >= 0
        assert isinstance(layer["output_shape"], list)
        assert all(isinstance(v, int) for v in layer["output_shape"])
    assert sum(layer["parameters"] for layer in layers) == d["parameters"]
    assert math.isclose(sum(layer["flops"] for layer in layers), d["flops"], rel_tol=1e-9)
    first = layers[0]
    assert first["name"] == "conv1" and first["type"] == "conv"
    assert first["input_shape"] == [3, 224, 224] and first["output_shape"] == [64, 112, 112]
    assert first["parameters"] == 64 * 3 * 7 * 7
    assert layers[-1]["output_shape"] == [1000]
    adds = [layer for layer in layers if layer["type"] == "add"]
    assert len(adds) == 16
    assert all(isinstance(a["input_shape"][0], list) for a in adds)  # several inputs


def test_show_model_table(run):
    r = ok(run("show", "model", "resnet50", "--width", "140"))
    assert r.err == ""
    assert "ResNet-50" in r.out
    assert "25,557,032" in r.out
    for col in ("layer", "type", "input", "output", "parameters", "FLOPs"):
        assert col in r.out
    assert "fc1000" in r.out


def test_show_model_file(run, tiny):
    d = show_json(run, "model", tiny.model)
    assert d["name"] == "Tiny"
    # conv1 3->4, 3x3 with bias; conv2 4->8 3x3 with bias; fc 8*4*4 -> 10 with bias
    assert d["parameters"] == (4 * 3 * 9 + 4) + (8 * 4 * 9 + 8) + (128 * 10 + 10)
    assert [layer["output_shape"] for layer in d["layers"]] == [
        [4, 8, 8], [4, 8, 8], [8, 8, 8], [8, 4, 4], [128], [10],
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["alexnet", "vgg16", "resnet152", "cosmoflow", "meshtangling"])
def test_show_every_shipped_model(run, name):
    d = show_json(run, "model", name)
    assert d["parameters"] > 0 and d["layers"]
    ok(run("show", "model", name, "--width", "120"))


# --------------------------------------------------------------------------------------
# systems
# --------------------------------------------------------------------------------------


def test_show_system_abci(run):
    r = ok(run("show", "system", "abci-nominal", "--width", "140"))
    assert "ABCI" in r.out
    assert "4,352" in r.out  # 1088 nodes x 4 GPUs
    for level in ("nvlink", "rack", "spine"):
        assert level in r.out


def test_show_system_abci_json(run):
    d = show_json(run, "system", "abci-nominal")
    assert d["name"] == "ABCI (nominal links)"
    assert d["gpus_per_node"] == 4 and d["nodes"] == 1088 and d["total_gpus"] == 4352
    assert d["gpu"]["memory_bytes"] == 16e9
    levels = d["network"]
    assert [lv["name"] for lv in levels] == ["nvlink", "rack", "spine"]
    assert [lv["max_gpus"] for lv in levels] == sorted(lv["max_gpus"] for lv in levels)
    for lv in levels:
        assert lv["alpha_s"] > 0 and lv["beta_s_per_byte"] > 0
    assert math.isclose(levels[0]["beta_s_per_byte"], 1 / 20e9)


@pytest.mark.parametrize("name", ["abci", "abci-chainermnx", "lassen", "dgx-h100-superpod"])
def test_show_every_shipped_system(run, name):
    d = show_json(run, "system", name)
    assert d["network"] and d["gpus_per_node"] >= 1
    ok(run("show", "system", name, "--width", "120"))


# --------------------------------------------------------------------------------------
# profiles
# --------------------------------------------------------------------------------------


def test_show_profile_total_only(run):
    r = ok(run("show", "profile", "resnet50_v100", "--width", "140"))
    assert "ResNet-50" in r.out and "total only" in r.out
    d = show_json(run, "profile", "resnet50_v100")
    assert d["model"] == "ResNet-50" and d["kind"] == "total"
    assert math.isclose(d["total"]["fw_bw_per_sample_s"], 0.003119502, rel_tol=1e-9)


def test_show_profile_bound_to_model(run):
    r = ok(run("show", "profile", "resnet50_v100", "--model", "resnet50", "--width", "140"))
    assert "per layer (spread by FLOPs)" in r.out
    assert "conv1" in r.out and "fc1000" in r.out
    d = show_json(run, "profile", "resnet50_v100", "--model", "resnet50")
    model = show_json(run, "model", "resnet50")
    assert [x["name"] for x in d["layers"]] == [x["name"] for x in model["layers"]]
    assert math.isclose(d["fw_bw_per_sample_s"], 0.003119502, rel_tol=1e-9)
    for x in d["layers"]:
        assert x["fw_s"] >= 0 and x["bw_s"] >= 0 and x["wu_s"] >= 0
        assert math.isclose(x["bw_s"], 2 * x["fw_s"], rel_tol=1e-9, abs_tol=1e-300)


def test_show_profile_measured_file(run, tiny):
    d = show_json(run, "profile", tiny.profile)
    assert d["kind"] == "measured"
    assert [x["name"] for x in d["layers"]] == ["conv1", "relu1", "conv2", "pool1", "flat", "fc"]
    assert math.isclose(d["fw_bw_per_sample_s"], 1e-5 + 2e-5 + 2e-6 + 2e-5 + 4e-5 + 3e-6 + 6e-6)
    r = ok(run("show", "profile", tiny.profile, "--model", tiny.model, "--width", "100"))
    assert "conv2" in r.out


@pytest.mark.parametrize(
    "name", ["vgg16_v100", "alexnet_v100", "cosmoflow_v100", "cosmoflow256_v100"]
)
def test_show_every_shipped_profile(run, name):
    assert show_json(run, "profile", name)["model"]


def test_show_output_file(run, tmp_path):
    out = tmp_path / "abci.json"
    r = ok(run("show", "system", "abci", "--format", "json", "-o", out))
    assert r.out == ""
    stdout = ok(run("show", "system", "abci", "--format", "json")).out
    assert out.read_text(encoding="utf-8") == stdout


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------


def error(run, *args):
    r = run("show", *args)
    assert r.code == 2, (r.code, r.err)
    assert r.exception is None
    assert r.out == ""
    assert "Traceback" not in r.err
    assert len(r.err_lines) == 1, r.err
    assert r.err.startswith("oracle: error: ")
    return r.err


def test_unknown_model_name(run):
    err = error(run, "model", "resnet-49")  # (resnet-50 is resnet50 spelled otherwise: shown)
    assert "'resnet-49'" in err and "resnet50" in err


def test_unknown_system_name(run):
    err = error(run, "system", "abcii")
    assert "'abcii'" in err and "did you mean 'abci'?" in err


def test_unknown_profile_name(run):
    err = error(run, "profile", "nope_v100")
    assert "'nope_v100'" in err


def test_bad_model_file(run, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: X\ninput: [3, 8, 8]\ndataset: {samples: 10}\nlayers:\n  - {name: a, type: conv}\n"
    )
    err = error(run, "model", bad)
    assert "bad.yaml" in err and "filters" in err


def test_model_file_that_is_not_yaml_mapping(run, tmp_path):
    bad = tmp_path / "list.yaml"
    bad.write_text("- 1\n- 2\n")
    err = error(run, "model", bad)
    assert "list.yaml" in err


def test_broken_yaml(run, tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: [unclosed\n")
    err = error(run, "system", bad)
    assert "broken.yaml" in err


def test_bad_system_file(run, tmp_path):
    bad = tmp_path / "sys.yaml"
    bad.write_text(
        "name: S\ngpu: {model: g, memory_GB: 16}\ngpus_per_node: 4\nnodes: 2\n"
        "network:\n  - {name: a, max_gpus: 4, alpha_s: 1.0e-6, beta_s_per_byte: 0}\n"
    )
    err = error(run, "system", bad)
    assert "sys.yaml" in err and "beta_s_per_byte" in err


def test_profile_bound_to_wrong_model(run):
    err = error(run, "profile", "resnet50_v100", "--model", "alexnet")
    assert "ResNet-50" in err and "AlexNet" in err


def test_directory_as_system(run, tmp_path):
    err = error(run, "system", tmp_path)
    assert "directory" in err


def test_unknown_show_kind(run):
    r = run("show", "cluster", "abci")
    assert r.code == 2 and "Traceback" not in r.err


# --------------------------------------------------------------------------------------
# stacks
# --------------------------------------------------------------------------------------


def test_show_stack_none_says_what_none_means(run):
    """`--stack none` is valid everywhere but `oracle show stack none` was an error (no file
    named none): it shows what a projection runs with under no stack, the options' defaults."""
    from oracle.compute.options import Options

    d = show_json(run, "stack", "none")
    assert (d["name"], d["description"]) == ("none", "no software stack: the options as given")
    values = {k: v["value"] for k, v in d["values"].items()}
    assert values["communication.overlap"] == Options().overlap == "none"
    assert values["communication.bucket_MB"] == "25" and values["memory.model"] == Options().memory_model
    assert values["compute.efficiency"] == "1" and values["iteration.fixed_s"] == "0"
    r = ok(run("show", "stack", "none"))
    assert r.out.startswith("stack none: no software stack") and "communication.overlap" in r.out
