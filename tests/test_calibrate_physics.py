"""Issue 26, point 2: say what the runs cannot separate, and stay physical.

The case of the issue: a 1-node (68 ms) and a 2-node (72 ms) ResNet-152 bf16
data-parallel run on an H100 system, totals only.  Before, `fit runs --calibrate all`
wrote NVSwitch at 4.86 GB/s (datasheet 450) and the inter-node level at 4.78 GB/s
without a word.  The cases are worked out without a stack: every fit and predict here
passes --stack none (the system file names pytorch)."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import run_cli

SYSTEM = "gcp-a3mega-h100"
HEAD = "model,system,profile,strategy,gpus,global_batch,iteration_s,precision"
ONE_NODE = f"resnet152,{SYSTEM},P.yaml,data,8,512,0.068,bf16"
TWO_NODES = f"resnet152,{SYSTEM},P.yaml,data,16,1024,0.072,bf16"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("h100")
    got = run_cli("profile", "resnet152", "--estimate", "--system", SYSTEM, "--precision", "bf16", "--batch", "64",
                  "-o", d / "P.yaml")  # fmt: skip
    assert got.code == 0, got.err
    return d


def fit(work, name, *rows, extra=()):
    (work / name).write_text("\n".join((HEAD, *rows)) + "\n")
    out = work / (name + ".yaml")
    got = run_cli("fit", "runs", name, "--system", SYSTEM, "--calibrate", "all", "--stack", "none", "-o", out.name, *extra, cwd=work)
    return got, out


def levels(path):
    doc = yaml.safe_load(path.read_text())
    return {lv["name"]: lv.get("bandwidth_GB_per_s") or 1 / lv["beta_s_per_byte"] / 1e9 for lv in doc["network"]}, doc


def _inter_node():
    """The base system's inter-node level: its name and datasheet/fitted bandwidth in GB/s."""
    from oracle.load import load_system

    lv = load_system(SYSTEM).network[-1]
    return lv.name, 1 / lv.beta_s_per_byte / 1e9


def test_one_and_two_nodes_give_a_plausible_system_and_say_compute_was_preferred(work):
    got, out = fit(work, "both.csv", ONE_NODE, TWO_NODES)
    assert got.code == 0, got.err
    bw, doc = levels(out)
    assert bw["nvswitch"] == pytest.approx(450)  # the datasheet stays: the node's slowness is compute
    name, base = _inter_node()
    assert base / 10 <= bw[name] <= base * 1.05  # within the physical bounds of the base's level
    factor = doc["implementation"]["compute_factors"]["ResNet-152"]
    assert factor > 2  # the estimated profile is 2.7x too fast for a 68 ms iteration
    text = " ".join(got.out.split())
    assert "cannot tell ResNet-152's compute from its link" in text
    # the symptom: 512 GPUs were projected faster (67.9 ms) than the 2-node run measured
    pred = run_cli("predict", "-m", "resnet152", "-s", out.name, "-p", "P.yaml", "--gpus", "8,16,512",
                   "--batch-per-gpu", "64", "--strategy", "data", "--precision", "bf16", "-f", "json", cwd=work)  # fmt: skip
    assert pred.code == 0, pred.err
    # the written system keeps the stack its runs were fitted under (none), not the base's pytorch
    assert doc["stack"]["name"] == "none" and {p["stack"] for p in json.loads(pred.out)} == {"none"}
    it = {p["gpus"]: p["iteration_s"] for p in json.loads(pred.out)}
    assert it[8] == pytest.approx(0.068, rel=1e-3) and it[16] == pytest.approx(0.072, rel=1e-3)
    assert it[512] >= it[16]
    assert "compute_s column" in text and "1-GPU run" in text and "nccl-tests" in text


def test_the_two_node_run_alone_is_refused_naming_the_level_the_run_and_what_to_measure(work):
    got, out = fit(work, "two.csv", TWO_NODES)
    assert got.code == 2
    assert not out.exists()
    err = " ".join(got.err.split())
    assert f"{_inter_node()[0]} at " in err and "from line 2" in err and "below a tenth" in err
    assert "compute_s column" in err and "nccl-tests" in err


def test_a_link_faster_than_its_datasheet_is_refused(work):
    # compute measured at 24.7 ms on one node, 16 GPUs in 25.5 ms: the 120 MB all-reduce
    # across nodes in 0.8 ms, about half what the base's inter-node level allows (1.55 ms
    # with the system's own algorithm, NCCL's choice): a link twice its base's bandwidth
    head = HEAD + ",compute_s"
    fast = f"{head}\n{ONE_NODE.replace('0.068', '0.0250')},0.0247\n{TWO_NODES.replace('0.072', '0.0255')},\n"
    (work / "fast.csv").write_text(fast)
    got = run_cli("fit", "runs", "fast.csv", "--system", SYSTEM, "--calibrate", "all", "--stack", "none", "-o", "fast.yaml", cwd=work)
    assert got.code == 2, got.out
    assert "faster than the base's" in got.err and not (work / "fast.yaml").exists()


def test_compute_faster_than_the_gpu_peak_is_refused(work):
    # a 1-GPU run of 64 samples in 1 ms: 3 x 11.6 GFLOP x 64 / 1 ms = 2,200 TFLOP/s > 989
    (work / "peak.csv").write_text(f"{HEAD}\nresnet152,{SYSTEM},P.yaml,data,1,64,0.001,bf16\n")
    got = run_cli("fit", "runs", "peak.csv", "--system", SYSTEM, "--calibrate", "all", "--stack", "none", "-o", "peak.yaml", cwd=work)
    assert got.code == 2, got.out
    assert "above the GPU's peak" in got.err and not (work / "peak.yaml").exists()


def test_a_measured_compute_leaves_the_rest_of_each_run_to_its_links(work):
    # with a compute_s column compute is measured, not inferred, and the time beyond it
    # is the all-reduce: the 2-node run's 4.5 ms calibrate the inter-node level
    head = HEAD + ",compute_s"
    (work / "cs.csv").write_text(f"{head}\n{ONE_NODE},0.0675\n{TWO_NODES},0.0675\n")
    got = run_cli("fit", "runs", "cs.csv", "--system", SYSTEM, "--calibrate", "all", "--stack", "none", "-o", "cs.yaml", cwd=work)
    assert got.code == 0, got.err
    assert "cannot tell" not in got.out
    bw, _ = levels(work / "cs.yaml")
    name, base = _inter_node()
    assert 45 <= bw["nvswitch"] <= 450 and base / 10 <= bw[name] <= base * 1.05
