"""oracle predict --layers: a layer-wise configuration ranked with the uniform strategies."""

from __future__ import annotations

import json

import pytest
from conftest import cli_runner

from oracle.cli.main import cli


def run(*args):
    return cli_runner().invoke(cli, [str(a) for a in args])


def test_layerwise_point_is_ranked_at_its_gpu_count(tmp_path):
    cfg = tmp_path / "vgg64.yaml"
    r = run("search", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--gpus", 64, "-b", 16, "-o", cfg, "-f", "json")
    assert r.exit_code == 0, r.stderr
    searched = json.loads(r.stdout)["searches"][0]["layerwise"]["point"]
    r = run("predict", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--gpus", "32,64", "-b", 16,
            "--layers", cfg, "-f", "json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    pts = json.loads(r.stdout)
    lw = [p for p in pts if p["strategy"] == "layer-wise"]
    assert len(lw) == 1 and lw[0]["gpus"] == 64
    assert lw[0]["total_s"] == pytest.approx(searched["total_s"])
    at64 = sorted((p for p in pts if p["gpus"] == 64 and p["feasible"]), key=lambda p: p["rank"])
    assert [p["rank"] for p in at64] == list(range(1, len(at64) + 1))
    assert at64[0]["total_s"] == min(p["total_s"] for p in at64)
    assert not any(p["strategy"] == "layer-wise" for p in pts if p["gpus"] == 32)


def test_layers_with_unsupported_options_exit_2(tmp_path):
    cfg = tmp_path / "c.yaml"
    run("search", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", 8, "-b", 64, "-o", cfg)
    r = run("predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", 8, "--layers", cfg, "--zero", 1)
    assert r.exit_code == 2 and "--zero" in r.stderr and "Traceback" not in r.stderr
    r = run("predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", 8, "--layers", tmp_path / "no.yaml")
    assert r.exit_code == 2 and "does not exist" in r.stderr


RESNET = ("-m", "resnet50", "-s", "dgx-a100-80gb", "--gpus", 16, "-b", 64)  # the DGX file's stack: pytorch


@pytest.fixture(scope="module")
def estimated(tmp_path_factory):
    """ResNet-50's estimated profile on the DGX A100 (the issue's commands)."""
    prof = tmp_path_factory.mktemp("layers") / "r.yaml"
    r = run("profile", "resnet50", "--estimate", "--system", "dgx-a100-80gb", "--batch", 64, "-o", prof)
    assert r.exit_code == 0, r.stderr
    return prof


@pytest.mark.parametrize("extra", [(), ("--precision", "fp16", "--mixed-precision", "--optimizer", "adam"),
                                   ("--memory-model", "paradl", "--optimizer", "momentum")])  # fmt: skip
def test_all_data_layers_cost_the_data_strategy_under_the_default_stack(tmp_path, estimated, extra):
    """Layer-wise costing honours what the system's pytorch stack sets (DDP's bucket
    overlap, its memory model) and the memory options: one distribution on every layer
    costs what --strategy data costs, phase by phase, in memory and in what is hidden."""
    cfg = tmp_path / "all-data.yaml"
    cfg.write_text("model: ResNet-50\ngpus: 16\nbatch: 1024\nlayers:\n  - {from: conv1, to: fc1000, distribution: data}\n")
    r = run("predict", *RESNET, "-p", estimated, "--layers", cfg, "--strategy", "data", "-f", "json", *extra)
    assert r.exit_code == 0, r.stderr
    (lw,) = [p for p in json.loads(r.stdout) if p["strategy"] == "layer-wise"]
    (data,) = [p for p in json.loads(r.stdout) if p["strategy"] == "data"]
    assert lw["stack"] == data["stack"] == "pytorch" and data["overlap_ratio"] > 0
    for key in ("total_s", "memory_bytes", "communication_total_s", "overlap_ratio"):
        assert lw[key] == pytest.approx(data[key], rel=1e-9, abs=1e-12), key
    for phase, value in data["breakdown"].items():
        assert lw["breakdown"][phase] == pytest.approx(value, rel=1e-9, abs=1e-12), phase


def test_search_output_evaluates_under_the_default_stack(tmp_path, estimated):
    """The issue's commands: search -o under the DGX file's stack, then predict --layers
    with it: no refusal, and predict costs the configuration as search did."""
    cfg = tmp_path / "lay.yaml"
    r = run("search", *RESNET, "-p", estimated, "-o", cfg, "-f", "json")
    assert r.exit_code == 0, r.stderr
    searched = json.loads(r.stdout)["searches"][0]["layerwise"]["point"]
    r = run("predict", *RESNET, "-p", estimated, "--layers", cfg, "-f", "json")
    assert r.exit_code == 0, r.stderr
    (lw,) = [p for p in json.loads(r.stdout) if p["strategy"] == "layer-wise"]
    assert lw["stack"] == "pytorch" and lw["overlap_ratio"] > 0
    assert lw["total_s"] == pytest.approx(searched["total_s"], rel=1e-12)
    assert lw["memory_bytes"] == pytest.approx(searched["memory_bytes"], rel=1e-12)
