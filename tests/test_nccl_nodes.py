"""A node is NCCL's wherever one is meant: an NVLink domain wider than a host (a GB200 NVL72
rack's 72 GPUs on 18 trays of 4, compute/nccl.node_gpus) is one node in ``oracle fit runs
--calibrate network``."""

from __future__ import annotations

import yaml
from conftest import ROOT


def _runs(tmp_path, gpus: int):
    """One data-parallel ResNet-50 run on ``gpus`` GB200s, its all-reduce well above the compute."""
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,profile,strategy,gpus,global_batch,iteration_s\n"
                    f"resnet50,gb200-nvl72,,data,{gpus},{32 * gpus},0.02\n")  # fmt: skip
    return runs


def _levels(path) -> dict:
    return {lv["name"]: lv for lv in yaml.safe_load(path.read_text())["network"]}


def test_a_one_rack_run_calibrates_inside_a_node(run, tmp_path):
    """72 GPUs are 18 hosts but one NVLink domain: the run measures the NVLink level (β inside a
    node); the InfiniBand level between racks, which no run crosses, is kept."""
    out = tmp_path / "cal.yaml"
    r = run("fit", "runs", _runs(tmp_path, 72), "-s", "gb200-nvl72", "--calibrate", "network", "-o", out)
    assert r.code == 0, r.err
    assert "beta_intra" in r.out and "beta_inter" not in r.out
    got, base = _levels(out), _levels(ROOT / "systems" / "gb200-nvl72.yaml")
    assert got["nvlink"]["basis"] == "calibrated" and "inside a node" in got["nvlink"]["source"]
    assert got["ib"] == base["ib"]


def test_a_two_rack_run_calibrates_across_nodes(run, tmp_path):
    r = run("fit", "runs", _runs(tmp_path, 144), "-s", "gb200-nvl72", "--calibrate", "network")
    assert r.code == 0, r.err
    assert "beta_inter" in r.out and "beta_intra" not in r.out
