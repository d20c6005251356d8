"""A node is NCCL's wherever one is meant: an NVLink domain wider than a host (a GB200 NVL72
rack's 72 GPUs on 18 trays of 4, compute/nccl.node_gpus) is one node in ``oracle fit runs
--calibrate network``, in ``oracle fit network``'s checks, and a job that fills its last rack
only partly is refused by the fit and said by ``oracle predict``; the NCCL model's fit honours
--min-bytes/--max-bytes and refuses the ring model's options (docs/calibration.md); an
nccl-tests log that measures a size twice is an error naming its line."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import ROOT

from oracle.compute import nccl
from oracle.compute.calibration import nccl_fit
from oracle.compute.network import group_contiguous
from oracle.load import load_system
from oracle.load.benchlogs import load_benchlog

GB200 = ROOT / "data" / "nccl-tests" / "gb200-nvl72-coreweave"
ONE_RACK = GB200 / "all_reduce_18nodes.txt"
ABCI_ONE_NODE = ROOT / "data" / "nccl-tests" / "abci-v100" / "intra_vnode_4nodes.txt"


# seconds per iteration of a run of ResNet-50 at 32 per GPU (compute 9.45 ms) whose link is a few
# times slower than the base's (within the physical bounds, calibrate_physics.py): 9.51 ms at the
# base's NVLink on 72 GPUs, 10.63 ms at its InfiniBand on 144
SECONDS = {72: 0.0096, 76: 0.013, 144: 0.0107}


def _runs(tmp_path, gpus: int):
    """One data-parallel ResNet-50 run on ``gpus`` GB200s, slower than the projection on the base."""
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,profile,strategy,gpus,global_batch,iteration_s\n"
                    f"resnet50,gb200-nvl72,,data,{gpus},{32 * gpus},{SECONDS[gpus]}\n")  # fmt: skip
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


def test_bounding_the_network_with_no_log_across_racks_is_refused_as_on_one_host(run, tmp_path):
    """One rack crosses no NCCL node: --max-bandwidth-GB-per-s has nothing to bound, the same
    error as a one-host log on an 8-GPU system; nothing written."""
    out = tmp_path / "out.yaml"
    rack = run("fit", "network", "-s", "gb200-nvl72", "--fit-protocol", "Simple", "--max-bandwidth-GB-per-s", "100",
               ONE_RACK, "-o", out)  # fmt: skip
    host = run("fit", "network", "-s", "dgx-a100-40gb", "--max-bandwidth-GB-per-s", "100", ABCI_ONE_NODE)
    assert rack.code == host.code == 2 and "Traceback" not in rack.err
    said = "--max-bandwidth-GB-per-s: bounds the lines across nodes, and no log crosses a node"
    assert said in rack.err and said in host.err
    assert not out.exists()


def _partial_rack_log(tmp_path):
    """A copy of the one-rack log named for 27 trays: 108 GPUs, 1.5 racks."""
    path = tmp_path / "all_reduce_27nodes.txt"
    path.write_text(ONE_RACK.read_text())
    return path


def test_a_log_on_a_partly_filled_rack_is_refused(run, tmp_path):
    log = _partial_rack_log(tmp_path)
    assert load_benchlog(log, gpus_per_node=4).gpus == 108
    out = tmp_path / "out.yaml"
    r = run("fit", "network", "-s", "gb200-nvl72", "--fit-protocol", "Simple", log, "-o", out)
    assert r.code == 2 and "Traceback" not in r.err, r.err
    assert str(log) in r.err and "108 GPUs" in r.err and "NVLink domains of 72" in r.err and "72 + 36" in r.err
    assert not out.exists()
    # whole racks fit as before
    r = run("fit", "network", "-s", "gb200-nvl72", "--fit-protocol", "Simple", ONE_RACK, GB200 / "all_reduce_36nodes.txt")
    assert r.code == 0, r.err


def test_a_partly_filled_rack_is_two_nccl_nodes_and_predict_says_so(run):
    """108 GPUs on NVL72: 2 NCCL nodes (72 + 36), the tree's chain over the fuller rack's 72,
    the ring over all 108 (docs/cost-model.md); the point's notes and JSON say what was assumed."""
    s = load_system("gb200-nvl72")
    assert nccl.nccl_nodes(s, group_contiguous(108, s.gpus_per_node)) == (2, 72)
    assert nccl.partial_domain(s, group_contiguous(108, 4)) == [72, 36]
    assert [nccl.partial_domain(s, group_contiguous(p, 4)) for p in (36, 72, 144, 1440)] == [None] * 4
    h100 = load_system("dgx-h100-superpod")
    assert nccl.partial_domain(h100, group_contiguous(12, 8)) is None  # a domain of one host: no note
    r = run("predict", "-m", "resnet50", "-s", "gb200-nvl72", "--gpus", "72,108,144", "--strategy", "data", "-f", "json")
    assert r.code == 0, r.err
    said = {pt["gpus"]: pt["details"].get("nccl_nodes") for pt in json.loads(r.out)}
    assert said[72] is None and said[144] is None
    assert said[108].startswith("1 x 72 + 36 GPUs: 2 NCCL nodes")
    assert "as fast across the network as a full one" in said[108]
    r = run("predict", "-m", "resnet50", "-s", "gb200-nvl72", "--gpus", "108", "--strategy", "data", "--width", "250")
    assert r.code == 0 and "1 x 72 + 36 GPUs: 2 NCCL nodes" in r.out, r.out


def test_every_strategy_whose_collectives_span_a_partial_domain_says_so(run):
    """The note is wherever NCCL costs a collective over unequally filled NVLink domains, in
    one wording: data+filter's data group {0, 2, ..., 106} (54 x 2 on NVL72: 36 + 18 GPUs on
    the two racks), data+spatial's all-reduce over all 108 and its data group, spatial's and
    filter's groups of 108; at 144 (both racks full) a hybrid's data group whose GPUs sit
    unequally on the racks; not under the flat ring (no NCCL nodes). The JSON (rows from the arrays) and the text (points) agree; Markdown shows it."""
    from oracle.compute.network import Collective, group_strided

    s = load_system("gb200-nvl72")
    assert nccl.partial_domain(s, group_strided(54, 2, 4), 2) == [36, 18]
    assert nccl.partial_domain(s, group_strided(36, 3, 4), 3) == [24, 12]
    assert nccl.partial_domain(s, group_strided(27, 4, 4), 4) == [18, 9]
    assert nccl.partial_domain(s, group_strided(2, 54, 4), 54) is None  # one GPU on each rack
    assert nccl.partial_domain_note(s, [(group_contiguous(108, 4), 1), (group_strided(54, 2, 4), 2)]) == (
        "1 x 72 + 36 GPUs: 2 NCCL nodes and 1 x 36 + 18 GPUs: 2 NCCL nodes, the partial NVLink domains taken as"
        " fast across the network as full ones")
    assert Collective(group_contiguous(8, 4), "ring", "gradient_allreduce").stride == 1
    args = ("predict", "-m", "resnet50", "-s", "gb200-nvl72", "--gpus", "108,144", "--strategy",
            "data,data+filter,data+spatial,spatial,filter")  # fmt: skip
    r = run(*args, "-f", "json")
    assert r.code == 0, r.err
    said = {(pt["strategy"], pt["gpus"], pt["p1"]): pt["details"].get("nccl_nodes") for pt in json.loads(r.out)}
    tail = ", the partial NVLink domain taken as fast across the network as a full one"
    assert said[("data+filter", 108, 54)] == "1 x 36 + 18 GPUs: 2 NCCL nodes" + tail
    assert said[("data+filter", 108, 27)] == "1 x 18 + 9 GPUs: 2 NCCL nodes" + tail
    assert said[("data+spatial", 108, 54)].startswith("1 x 72 + 36 GPUs: 2 NCCL nodes and 1 x 36 + 18 GPUs")
    for strategy in ("data", "spatial", "filter"):
        assert said[(strategy, 108, 1 if strategy != "data" else 108)] == "1 x 72 + 36 GPUs: 2 NCCL nodes" + tail
    # 144 fills both racks: a note only where a data group's GPUs sit unequally on them, as
    # they are placed (GPU i on rack i // 72): 9 x 16 is {0, 16, ..., 128}, 5 + 4; 3 x 48 {0, 48, 96}, 2 + 1
    full = {(strategy, p1): note for (strategy, gpus, p1), note in said.items() if gpus == 144 and note}
    assert full == {(strategy, p1): f"1 x {a} + {b} GPUs: 2 NCCL nodes" + tail
                    for strategy in ("data+filter", "data+spatial") for p1, a, b in ((9, 5, 4), (3, 2, 1))}  # fmt: skip
    text = run(*args, "--width", "400")
    assert text.code == 0 and text.out.count("taken as fast across") == sum(1 for v in said.values() if v)
    md = run(*args, "-f", "markdown").out
    assert "| limits / notes |" in md and "1 x 36 + 18 GPUs: 2 NCCL nodes" in md
    ring = run(*args, "--collective", "ring", "-f", "json")
    assert not any(pt["details"].get("nccl_nodes") for pt in json.loads(ring.out))


def test_the_nccl_fit_honours_the_size_range(run, tmp_path):
    """--min-bytes/--max-bytes bound the sizes NCCL's model fits and checks; one size (8 GiB)
    is enough for it, which the ring model's range (two sizes or more) would have refused."""
    s = load_system("gb200-nvl72")
    logs = [load_benchlog(ONE_RACK, gpus_per_node=4)]
    fit = nccl_fit.fit_system(logs, s, fitted=("Simple",), sizes=(2**31, 2**32))
    assert fit.logs[0].sizes == (2.0**31, 2.0**32) and fit.sizes == (2**31, 2**32)
    r = run("fit", "network", "-s", "gb200-nvl72", "--fit-protocol", "Simple", "--min-bytes", "8GiB", ONE_RACK,
            "--width", "250")  # fmt: skip
    assert r.code == 0, r.err
    assert "sizes from 8 GiB (--min-bytes)" in r.out
    r = run("fit", "network", "-s", "gb200-nvl72", "--fit-protocol", "Simple", "--min-bytes", "32GiB", ONE_RACK)
    assert r.code == 2 and str(ONE_RACK) in r.err and "no message size" in r.err
    r = run("fit", "network", "-s", "gb200-nvl72", "--min-bytes", "4GiB", "--max-bytes", "1GiB", ONE_RACK)
    assert r.code == 2 and "larger than --max-bytes" in r.err


@pytest.mark.parametrize("option", [("--bw-fraction", "0.3"), ("--protocols", "3")])
def test_the_ring_models_options_are_refused_by_the_nccl_fit(run, option):
    r = run("fit", "network", "-s", "gb200-nvl72", *option, ONE_RACK)
    assert r.code == 2 and "Traceback" not in r.err
    assert f"{option[0]}: applies to the ring model's fit" in r.err


def test_writing_over_an_input_log_is_refused_before_the_fit(run, tmp_path):
    """Nothing is fitted, printed or warned before the refusal."""
    log = tmp_path / "all_reduce_18nodes.txt"
    log.write_text(ONE_RACK.read_text())
    r = run("fit", "network", "-s", "gb200-nvl72", log, "-o", log)
    assert r.code == 2 and "is also an input" in r.err
    assert r.out == "" and "warning" not in r.err
    assert log.read_text() == ONE_RACK.read_text()


def test_a_size_measured_twice_is_an_error_naming_its_line(run, tmp_path):
    lines = ONE_RACK.read_text().splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if ln.strip().startswith("1073741824"))
    log = tmp_path / "all_reduce_18nodes.txt"
    log.write_text("".join([*lines[: first + 2], lines[first], *lines[first + 2:]]))
    r = run("fit", "network", "-s", "gb200-nvl72", log)
    assert r.code == 2 and "Traceback" not in r.err
    assert f"{log}:{first + 3}: size 1073741824 B" in r.err and f"line {first + 1}" in r.err
