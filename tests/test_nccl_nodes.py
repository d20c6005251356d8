"""A node is NCCL's wherever one is meant: an NVLink domain wider than a host (a GB200 NVL72
rack's 72 GPUs on 18 trays of 4, compute/nccl.node_gpus) is one node in ``oracle fit runs
--calibrate network``, and a job that fills its last rack only partly is said by ``oracle
predict``."""

from __future__ import annotations

import json

import yaml
from conftest import ROOT

from oracle.compute import nccl
from oracle.compute.network import group_contiguous
from oracle.load import load_system


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


def test_a_partly_filled_rack_is_two_nccl_nodes_and_predict_says_so(run):
    """108 GPUs on NVL72: 2 NCCL nodes (72 + 36), the tree's chain over the fuller rack's 72,
    the ring over all 108 (docs/cost-model.md); the point's notes and JSON say what was assumed."""
    s = load_system("gb200-nvl72")
    assert nccl.nccl_nodes(s, group_contiguous(108, s.gpus_per_node)) == (2, 72)
    assert nccl.partial_domain(s, 108) == (2, 72, 36)
    assert [nccl.partial_domain(s, p) for p in (36, 72, 144, 1440)] == [None] * 4
    assert nccl.partial_domain(load_system("dgx-h100-superpod"), 12) is None  # a domain of one host: no note
    r = run("predict", "-m", "resnet50", "-s", "gb200-nvl72", "--gpus", "72,108,144", "--strategy", "data", "-f", "json")
    assert r.code == 0, r.err
    said = {pt["gpus"]: pt["details"].get("nccl_nodes") for pt in json.loads(r.out)}
    assert said[72] is None and said[144] is None
    assert said[108].startswith("1 x 72 + 36 GPUs: 2 NCCL nodes")
    assert "as fast across the network as a full one" in said[108]
    r = run("predict", "-m", "resnet50", "-s", "gb200-nvl72", "--gpus", "108", "--strategy", "data", "--width", "250")
    assert r.code == 0 and "1 x 72 + 36 GPUs: 2 NCCL nodes" in r.out, r.out
