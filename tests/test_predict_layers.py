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
    r = run("predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", 8, "--layers", cfg,
            "--overlap", "buckets")  # fmt: skip
    assert r.exit_code == 2 and "--layers" in r.stderr
    # a system file's stack (dgx-a100-80gb: pytorch, DDP's bucket overlap) is named, with the way out
    r = run("predict", "-m", "alexnet", "-s", "dgx-a100-80gb", "-p", "alexnet_v100", "--gpus", 8, "--layers", cfg)
    assert r.exit_code == 2 and "stack pytorch" in r.stderr and "--stack none" in r.stderr
    r = run("predict", "-m", "alexnet", "-s", "dgx-a100-80gb", "-p", "alexnet_v100", "--gpus", 8, "--layers", cfg,
            "--stack", "none")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    r = run("predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", 8, "--layers", tmp_path / "no.yaml")
    assert r.exit_code == 2 and "does not exist" in r.stderr
