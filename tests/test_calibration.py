"""Issue 5 mechanisms: input pipeline, leader all-reduce, calibration from runs, and the
held-out accuracy of the calibrated ABCI system."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import cli_runner

from oracle import api
from oracle.cli.main import cli
from oracle.compute.io import exposed, input_time, loaders
from oracle.load import load_system
from oracle.model import InputPipeline

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "validation" / "abci-paradl.csv"
TRAINING_LINES = "2,4,14,31,32"  # the runs scripts/calibrate_abci2020.sh uses


def invoke(*args):
    return cli_runner().invoke(cli, [str(a) for a in args])


# -- input pipeline (compute/io.py) ---------------------------------------------------


def test_loader_topology():
    assert loaders("every_gpu", 8, 8, 1, 4) == (8, 4)
    assert loaders("every_gpu", 2, 2, 1, 4) == (2, 2)
    assert loaders("leader", 16, 1, 16, 4) == (1, 1)
    assert loaders("per_group", 32, 8, 4, 4) == (8, 1)  # one leader per node
    assert loaders("per_group", 16, 8, 2, 4) == (8, 2)  # leaders on GPUs 0, 2 of each node


def test_input_time_by_hand():
    pipe = InputPipeline(loader_samples_per_s=1000, node_samples_per_s=2500, storage_Bps=1e9, node_storage_Bps=4e8)
    # data on 8 GPUs, 4 per node, B = 256: 32 samples per loader, node rate / 4 = 625 < 1000
    assert input_time(pipe, "every_gpu", 256, 8, 8, 1, 4, None) == pytest.approx(32 / 625)
    # with 1 MB samples: aggregate 256 MB / 1 GB/s = 0.256 s; node 4 x 32 MB / 0.4 GB/s = 0.32 s
    assert input_time(pipe, "every_gpu", 256, 8, 8, 1, 4, 1e6) == pytest.approx(0.32)
    # a leader loads all 256 at 1000/s
    assert input_time(pipe, "leader", 256, 8, 1, 8, 4, None) == pytest.approx(0.256)
    lead = InputPipeline(loader_samples_per_s=1000, leader_samples_per_s=250)
    assert input_time(lead, "per_group", 1024, 8, 2, 4, 4, None) == pytest.approx(512 / 250)
    assert input_time(InputPipeline(), "every_gpu", 256, 8, 8, 1, 4, 1e6) == 0.0


def test_exposed_stall_with_and_without_overlap():
    assert exposed(InputPipeline(overlap=True), 0.5, 0.3) == pytest.approx(0.2)
    assert exposed(InputPipeline(overlap=True), 0.2, 0.3) == 0.0
    assert exposed(InputPipeline(overlap=False), 0.2, 0.3) == pytest.approx(0.2)


def _system(tmp_path, extra: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(textwrap.dedent("""
        name: S
        gpu: {model: x, memory_GB: 1000}
        gpus_per_node: 4
        nodes: 8
        network:
          - {name: a, max_gpus: 4, alpha_s: 1.0e-5, beta_s_per_byte: 1.0e-10}
          - {name: b, max_gpus: 32, alpha_s: 1.0e-4, beta_s_per_byte: 1.0e-9}
    """) + textwrap.dedent(extra))
    return p


def test_input_stall_enters_breakdown_and_total(tmp_path):
    plain = _system(tmp_path, "")
    (pt0,) = api.predict("alexnet", plain, "alexnet_v100", gpus=[1], strategies="serial", batch=512)
    slow = tmp_path / "slow.yaml"
    slow.write_text(plain.read_text() + "input: {loader_samples_per_s: 1000}\n")
    (pt,) = api.predict("alexnet", slow, "alexnet_v100", gpus=[1], strategies="serial", batch=512)
    I = 1_281_167 / 512
    busy = pt0.total_s / I  # 512 x 0.000610938 s
    assert pt.breakdown.input_s == pytest.approx(I * (512 / 1000 - busy))
    assert pt.total_s == pytest.approx(pt.compute_s + pt.communication_s + pt.breakdown.input_s)
    assert pt.compute_s == pytest.approx(pt0.compute_s)
    serial_load = tmp_path / "serial.yaml"
    serial_load.write_text(plain.read_text() + "input: {loader_samples_per_s: 1000, overlap: false}\n")
    (pt2,) = api.predict("alexnet", serial_load, "alexnet_v100", gpus=[1], strategies="serial", batch=512)
    assert pt2.breakdown.input_s == pytest.approx(I * 512 / 1000)


def test_input_section_validation(tmp_path):
    bad = _system(tmp_path, "input: {loader_samples_per_s: -1}\n")
    res = invoke("show", "system", bad)
    assert res.exit_code == 2 and "input.loader_samples_per_s" in res.stderr
    res = invoke("show", "system", _system(tmp_path, "implementation: {data_spatial_allreduce: tree}\n"))
    assert res.exit_code == 2 and "implementation.data_spatial_allreduce" in res.stderr


# -- leader all-reduce (ParaDL §4.5.1) ------------------------------------------------


def test_leader_allreduce_by_hand(tmp_path):
    flat = _system(tmp_path, "")
    lead = tmp_path / "lead.yaml"
    lead.write_text(flat.read_text() + "implementation: {data_spatial_allreduce: leader}\n")
    kw = dict(gpus=[16], strategies="data+spatial", batch=64, p2=4)
    (f,) = api.predict("resnet50", flat, "resnet50_v100", **kw)
    (l,) = api.predict("resnet50", lead, "resnet50_v100", **kw)
    from oracle.load import load_model

    m = load_model("resnet50")
    # every ResNet-50 layer up to the last 7x7 output is split; the rest is fc1000 + pool
    ws = sum(i.parameters for layer, i in zip(m.layers, m.info) if layer.name not in ("fc1000",))
    mb = 4 * ws
    I = 1_281_167 / 64
    # flat: AR(16, m) over 4 nodes (level b, φ = 1)
    ar_flat = 2 * 15 * (1e-4 + mb / 16 * 1e-9)
    # leader: reduce + broadcast inside the node, 2 x 2(4-1)(α + m/4 β) on level a,
    # then AR(4, m) among the 4 leaders (level b)
    ar_lead = 4 * 3 * (1e-5 + mb / 4 * 1e-10) + 2 * 3 * (1e-4 + mb / 4 * 1e-9)
    diff = (l.breakdown.gradient_exchange_s - f.breakdown.gradient_exchange_s) / I
    assert diff == pytest.approx(ar_lead - ar_flat, rel=1e-6)


# -- calibration from runs ------------------------------------------------------------


def test_network_calibration_inverts_the_model(tmp_path):
    """A run made from a known β gives that β back (half the base level's bandwidth: within
    the physical bounds, compute/calibration/calibrate_physics.py)."""
    from oracle.load import load_model, load_profile

    beta = 2.0e-9
    base = _system(tmp_path, "")
    s = load_system(base)
    m = load_model("vgg16")
    per_sample = load_profile("vgg16_v100").total_fw_bw_per_sample_s
    B, p = 256, 8
    mbytes = 4 * m.parameters
    t = B / p * per_sample + 2 * (p - 1) * (s.network[1].alpha_s + mbytes / p * beta)
    runs = tmp_path / "runs.csv"
    runs.write_text(f"model,system,profile,strategy,gpus,global_batch,iteration_s\nvgg16,abci,vgg16_v100,data,8,{B},{t}\n")
    out = tmp_path / "cal.yaml"
    res = invoke("fit", "runs", runs, "-s", base, "--calibrate", "network", "-o", out)
    assert res.exit_code == 0, res.stderr
    cal = load_system(out)
    assert cal.network[1].beta_s_per_byte == pytest.approx(beta, rel=1e-5)
    assert cal.network[0].beta_s_per_byte == s.network[0].beta_s_per_byte  # no intra-node run
    assert "lines 2" in cal.network[1].source


def test_runs_the_model_finds_infeasible_are_left_out_of_the_fit(tmp_path):
    """A run the model says cannot run (here 100,000 samples per GPU: out of memory) is not
    inverted: β comes from the feasible run alone (made from a known β, as above), the
    output and the written file name the run left out and its limit; with no feasible run
    left there is nothing to fit (exit 2, nothing written)."""
    from oracle.load import load_model, load_profile

    beta = 2.0e-9  # half the base's bandwidth across nodes: physical for --calibrate all
    base = _system(tmp_path, "")
    s = load_system(base)
    per_sample = load_profile("vgg16_v100").total_fw_bw_per_sample_s
    B, p = 256, 8
    t = B / p * per_sample + 2 * (p - 1) * (s.network[1].alpha_s + 4 * load_model("vgg16").parameters / p * beta)
    head = "model,system,profile,strategy,gpus,global_batch,iteration_s\n"
    oom = "vgg16,abci,vgg16_v100,data,8,800000,3000\n"  # 1e5 samples per GPU: TBs of a 1000 GB GPU
    runs = tmp_path / "runs.csv"
    runs.write_text(head + f"vgg16,abci,vgg16_v100,data,8,{B},{t}\n" + oom)
    out = tmp_path / "cal.yaml"
    res = invoke("fit", "runs", runs, "-s", base, "--calibrate", "network", "-o", out, "--width", "250")
    assert res.exit_code == 0, res.stderr
    assert load_system(out).network[1].beta_s_per_byte == pytest.approx(beta, rel=1e-5)
    line3 = next(ln for ln in res.stdout.splitlines() if ln.split()[:1] == ["3"])
    assert "infeasible" in line3 and "GPU memory" in line3 and "left out of the fit" in line3
    text = out.read_text()
    assert "# Left out of the fit (infeasible in the model):" in text and f"{runs}:3 VGG16 data 8 GPUs" in text
    assert "lines 2 " in load_system(out).network[1].source
    # --calibrate all and compute leave it out alike
    res = invoke("fit", "runs", runs, "-s", base, "--calibrate", "all", "--width", "250")
    assert res.exit_code == 0 and "left out of the fit" in res.stdout, res.stderr
    assert "3000" not in res.stdout  # its time is nowhere in the evidence
    res = invoke("fit", "runs", runs, "-s", base, "--calibrate", "compute")
    assert res.exit_code == 0 and "median of 1," in res.stderr and ":3 VGG16" in res.stderr
    # none feasible: an error naming the run and its limit
    few = tmp_path / "few.csv"
    few.write_text(head + oom + "vgg16,abci,vgg16_v100,data,8,4,1\n")  # 4 samples on 8 GPUs
    for kind in ("network", "all", "compute"):
        res = invoke("fit", "runs", few, "-s", base, "--calibrate", kind, "-o", tmp_path / "no.yaml")
        assert res.exit_code == 2 and "none of the 2 selected runs is feasible" in res.stderr, res.output
        assert "line 2" in res.stderr and "line 3" in res.stderr and "Traceback" not in res.output
    assert not (tmp_path / "no.yaml").exists()


def test_fit_runs_errors(tmp_path):
    res = invoke("fit", "runs", RUNS, "-s", "abci", "--calibrate", "network", "--where", "model=resnet")
    assert res.exit_code == 2 and "no run matches" in res.stderr
    res = invoke("fit", "runs", RUNS, "-s", "abci", "--calibrate", "network", "--where", "strategy=data+spatial")
    assert res.exit_code == 2 and "calibrates the network" in res.stderr


def test_shipped_calibration_regenerates(tmp_path):
    """scripts/calibrate_abci2020.sh reproduces systems/abci-2020.yaml's numbers."""
    import shutil

    shipped = load_system(REPO / "systems" / "abci-2020.yaml")
    copy = tmp_path / "repo"
    for part in ("validation", "systems", "scripts"):
        shutil.copytree(REPO / part, copy / part)
    (copy / "systems" / "abci-2020.yaml").unlink()
    bin_dir = Path(sys.executable).parent
    res = subprocess.run(
        ["sh", str(copy / "scripts" / "calibrate_abci2020.sh")],
        capture_output=True,
        text=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "ORACLE": str(bin_dir / "oracle")},
    )
    assert res.returncode == 0, res.stderr
    new = load_system(copy / "systems" / "abci-2020.yaml")
    assert [lv.beta_s_per_byte for lv in new.network] == [lv.beta_s_per_byte for lv in shipped.network]
    for key in ("loader_samples_per_s", "node_samples_per_s", "leader_samples_per_s", "overlap"):
        assert getattr(new.input, key) == getattr(shipped.input, key)
    assert new.implementation.data_spatial_allreduce == "leader"
    assert new.operation("halo").alpha_s == 3e-3


def test_calibrated_values_are_the_physics_found():
    s = load_system("abci-2020")
    intra = 1 / s.network[0].beta_s_per_byte / 1e9
    inter = 1 / s.network[1].beta_s_per_byte / 1e9
    assert intra == pytest.approx(16.1, abs=0.1)  # PCIe Gen3 x16, ParaDL §5.1: 16 GB/s
    assert inter == pytest.approx(5.05, abs=0.05)
    assert s.input.loader_samples_per_s == pytest.approx(1111, abs=1)
    assert s.input.leader_samples_per_s == pytest.approx(251, abs=1)


# -- accuracy on held-out runs (README "Accuracy") ------------------------------------


def _summary(*args):
    res = invoke("compare", RUNS, "-f", "json", *args)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)["summary"]


def test_held_out_accuracy_of_the_calibrated_system():
    held_out = ("-s", "abci-2020", "--exclude", f"line={TRAINING_LINES}")
    clean = _summary(*held_out, "--where", "quality=A")
    assert clean["runs"] == 18
    assert clean["mean_accuracy"] > 0.867  # ParaDL's reported average (HPDC 2021 §5.2)
    assert clean["min_accuracy"] > 0.70
    everything = _summary(*held_out)
    assert everything["runs"] == 32
    assert everything["by_model"]["VGG16"]["mean_accuracy"] > 0.93
    assert everything["mean_accuracy"] > 0.72
    assert everything["ranking_agreement"] == 1.0


def test_calibration_beats_the_benchmark_network_on_held_out_runs():
    held_out = ("--exclude", f"line={TRAINING_LINES}")
    bench = _summary(*held_out, "-s", "abci")
    cal = _summary(*held_out, "-s", "abci-2020")
    assert cal["mean_accuracy"] > bench["mean_accuracy"] + 0.3
    assert abs(cal["bias"]) < abs(bench["bias"])


def test_readme_accuracy_table_is_current():
    """Every cell of the README's accuracy table is what `oracle compare` computes now."""
    readme = (REPO / "docs" / "accuracy.md").read_text()
    table = readme[readme.index("| runs (held out) |"):]
    table = table[: table.index("\n\n")]
    rows = {line.split("|")[1].strip(): [c.strip().strip("*") for c in line.split("|")[2:-1]] for line in table.splitlines()[2:]}
    filters = {
        "VGG16, data": (("model", "vgg16"),),
        "AlexNet, data, clean (quality A)": (("model", "alexnet"), ("strategy", "data"), ("quality", "A")),
        "AlexNet, data+spatial, clean (A)": (("model", "alexnet"), ("strategy", "data+spatial"), ("quality", "A")),
        "all clean runs (A)": (("quality", "A"),),
        "AlexNet, data, shared-FS contention (B)": (("model", "alexnet"), ("strategy", "data"), ("quality", "B")),
        "AlexNet, data+spatial (B)": (("model", "alexnet"), ("strategy", "data+spatial"), ("quality", "B")),
        "all 32 held-out runs": (),
    }
    assert set(filters) == set(rows)
    for label, conds in filters.items():
        where = [a for col, val in conds for a in ("--where", f"{col}={val}")]
        cells = rows[label]
        for system, cell in zip(("abci-nominal", "abci", "abci-2020"), cells[1:]):
            s = _summary("-s", system, "--exclude", f"line={TRAINING_LINES}", *where)
            assert int(cells[0]) == s["runs"], label
            assert cell == f"{100 * s['mean_accuracy']:.1f}%", (label, system)
