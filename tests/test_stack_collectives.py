"""Which all-reduce a projection runs when the system file states none (issue 25): the ring
under no stack and under the stacks that say ring (ParaDL's model); NCCL's own choice
(compute/nccl.py) under a stack whose NCCL chooses (pytorch, tensorflow, mxnet), since
NCCL never runs one flat ring over every GPU; a file that states an algorithm keeps it,
and the files `oracle fit network` / `oracle fit runs` write state the formula they were
fitted through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import run_cli

# a user's own H100 cluster, as short as a file can be: no collectives section
H100_FILE = """name: my H100 cluster
gpu: {model: H100, memory_GB: 80}
gpus_per_node: 8
nodes: 448
network:
  - {name: nvlink, max_gpus: 8, alpha_s: 3.0e-6, bandwidth_GB_per_s: 450}
  - {name: ib, max_gpus: 3584, alpha_s: 5.0e-6, bandwidth_GB_per_s: 50}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    d = tmp_path_factory.mktemp("h100")
    system, profile = d / "h.yaml", d / "p.yaml"
    system.write_text(H100_FILE, encoding="utf-8")
    r = run_cli("profile", "resnet50", "--estimate", "-s", str(system), "-b", "16", "--precision", "fp16",
                "-o", str(profile))  # fmt: skip
    assert r.code == 0, r.err
    return d, system, profile


def _iteration(system, profile, *extra, gpus=3584):
    r = run_cli("predict", "-m", "resnet50", "-s", str(system), "-p", str(profile), "--strategy", "data",
                "--gpus", str(gpus), "-b", "16", "--precision", "fp16", "--mixed-precision", *extra, "-f", "json")  # fmt: skip
    assert r.code == 0, r.err
    (pt,) = json.loads(r.out)
    return pt


@pytest.mark.parametrize("stack", ["pytorch", "tensorflow", "mxnet"])
def test_a_stack_whose_nccl_chooses_runs_nccls_choice_where_the_file_states_none(cluster, stack):
    _, system, profile = cluster
    default = _iteration(system, profile, "--stack", stack)
    pinned = _iteration(system, profile, "--stack", stack, "--collective", "nccl")
    ring = _iteration(system, profile, "--stack", stack, "--collective", "ring")
    assert default["iteration_s"] == pytest.approx(pinned["iteration_s"], rel=1e-12)
    # the flat ring charges 2(p-1) latencies over all 3,584 GPUs per bucket: far slower
    assert ring["iteration_s"] > 3 * default["iteration_s"]


@pytest.mark.parametrize("stack", [None, "paradl", "chainermnx"])
def test_no_stack_and_the_ring_stacks_keep_the_ring(cluster, stack):
    _, system, profile = cluster
    extra = ("--stack", stack) if stack else ()
    default = _iteration(system, profile, *extra)
    ring = _iteration(system, profile, *extra, "--collective", "ring")
    assert default["iteration_s"] == pytest.approx(ring["iteration_s"], rel=1e-12)


def test_a_file_that_states_an_algorithm_keeps_it_under_any_stack(cluster):
    d, _, profile = cluster
    stated = d / "ring.yaml"
    stated.write_text(H100_FILE + "collectives: {algorithm: ring}\n", encoding="utf-8")
    under_stack = _iteration(stated, profile, "--stack", "pytorch")
    ring = _iteration(stated, profile, "--stack", "pytorch", "--collective", "ring")
    assert under_stack["iteration_s"] == pytest.approx(ring["iteration_s"], rel=1e-12)


def test_the_fitted_abci_files_state_the_ring_they_were_fitted_through():
    from oracle.load import load_system

    for name in ("abci", "abci-2020"):
        s = load_system(name)
        assert s.collective_algorithm == "ring" and s.collective_algorithm_stated
    nominal = load_system("abci-nominal")  # ParaDL's constants: nothing fitted, nothing stated
    assert nominal.collective_algorithm == "ring" and not nominal.collective_algorithm_stated


def test_fit_network_writes_the_ring_it_fitted(tmp_path):
    root = Path(__file__).resolve().parent.parent / "data" / "nccl-tests" / "abci-v100"
    logs = [str(root / "inter_vnode_2nodes.txt"), str(root / "inter_vnode_4nodes.txt")]
    out = tmp_path / "fitted.yaml"
    r = run_cli("fit", "network", "--system", "abci-nominal", "-o", str(out), *logs)
    assert r.code == 0, r.err
    doc = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert doc["collectives"]["algorithm"] == "ring"
    # with measured tables too: one collectives section holding both
    r = run_cli("fit", "network", "--system", "abci-nominal", "--collectives", "table", "-o", str(out), *logs)
    assert r.code == 0, r.err
    doc = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert doc["collectives"]["algorithm"] == "ring" and doc["collectives"]["mode"] == "table"


def test_fit_runs_writes_the_algorithm_it_inverted_through(tmp_path):
    """abci-chainermnx states no algorithm; its network calibrated on the VGG16 runs
    through the ring says so in the written file."""
    runs = Path(__file__).resolve().parent.parent / "validation" / "abci-paradl.csv"
    out = tmp_path / "calibrated.yaml"
    r = run_cli("fit", "runs", str(runs), "-s", "abci-chainermnx", "--calibrate", "network", "--where", "model=vgg16",
                "--where", "gpus=4,8", "-o", str(out))  # fmt: skip
    assert r.code == 0, r.err
    assert yaml.safe_load(out.read_text(encoding="utf-8"))["collectives"]["algorithm"] == "ring"
