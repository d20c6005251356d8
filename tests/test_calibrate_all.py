"""Calibrate on a few small runs, project the large ones (issue 14, items 3 and 5):
`oracle fit runs --calibrate all` and `oracle compare --calibrate-on EXPR` with the naive
projection beside it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from oracle.api import Inputs
from oracle.compute.calibration.calibrate_all import (
    apply,
    beyond_calibration,
    calibrate_all,
    calibrated_system,
    naive_projection,
    run_filter,
    samples_per_replica,
    with_compute_factors,
    with_system,
)
from oracle.compute.calibration.compare import config_for
from oracle.compute.strategies import REGISTRY
from oracle.records import MeasuredRun

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "validation" / "abci-paradl.csv"


def run(line, model, strategy, gpus, batch, p1=None, p2=None, io="no", epoch_s=None, **extra):
    profile = {"vgg16": "vgg16_v100", "alexnet": "alexnet_v100"}[model]
    cols = (("includes_io", io), *((k, str(v)) for k, v in extra.items()))
    return MeasuredRun(line, model, "abci", profile, strategy, gpus, float(batch), p1, p2, epoch_s=epoch_s, extra=cols)


def synthetic(runs, truth):
    """The runs' epoch times as the model projects them on the system ``truth``."""
    inputs = Inputs()
    out = []
    for r in runs:
        ctx = with_system(inputs.context(r.model, r.system, r.profile), truth)
        pt = REGISTRY[r.strategy].evaluate(ctx, config_for(r, ctx))
        out.append(replace(r, epoch_s=pt.total_s))
    return out, inputs


def test_recovers_known_parameters_from_runs_made_by_the_model():
    inputs = Inputs()
    base = inputs.context("vgg16", "abci", "vgg16_v100").system
    beta_in, beta_out = 3 * base.network[0].beta_s_per_byte, 4 * base.network[1].beta_s_per_byte
    truth = calibrated_system(base, beta_in, beta_out, loader=900.0, node=2500.0, leader=240.0)
    runs = [
        run(2, "alexnet", "data", 1, 512, io="yes"),  # loader rate
        run(4, "alexnet", "data", 4, 2048, io="yes"),  # 4 loaders on a node: node rate
        run(31, "vgg16", "data", 4, 128),  # network inside a node
        run(32, "vgg16", "data", 8, 256),  # across nodes
        run(14, "alexnet", "data+spatial", 8, 1024, p1=2, p2=4, io="yes"),  # group leaders
    ]
    runs, inputs = synthetic(runs, truth)
    cal = calibrate_all([(r, inputs.context(r.model, r.system, r.profile)) for r in runs])
    assert cal.loader_rate == pytest.approx(900.0, rel=1e-6)
    assert cal.node_rate == pytest.approx(2500.0, rel=1e-6)
    assert cal.beta_intra == pytest.approx(beta_in, rel=1e-6)
    assert cal.beta_inter == pytest.approx(beta_out, rel=1e-6)
    assert cal.leader_rate == pytest.approx(240.0, rel=1e-6)
    assert {e.line: e.parameter for e in cal.evidence} == {
        2: "loader_rate", 4: "node_rate", 31: "beta_intra", 32: "beta_inter", 14: "leader_rate"
    }
    assert_projects_as_measured(apply(base, cal), runs, inputs)


def assert_projects_as_measured(system, runs, inputs) -> None:
    """Every run's epoch time is what ``system`` projects for it."""
    for r in runs:
        ctx = with_system(inputs.context(r.model, r.system, r.profile), system)
        assert REGISTRY[r.strategy].evaluate(ctx, config_for(r, ctx)).total_s == pytest.approx(r.epoch_s, rel=1e-6)


def test_input_rates_only_from_runs_marked_as_including_io():
    inputs = Inputs()
    base = inputs.context("alexnet", "abci", "alexnet_v100").system
    truth = calibrated_system(base, loader=900.0)
    runs, inputs = synthetic([run(2, "alexnet", "data", 1, 512, io="no")], truth)
    cal = calibrate_all([(r, inputs.context(r.model, r.system, r.profile)) for r in runs])
    assert cal.loader_rate is None and cal.node_rate is None
    # its times exclude I/O, so on one GPU they are compute (step 0): a factor, no rate
    assert [e.parameter for e in cal.evidence] == ["compute_factor"]
    assert "no I/O" in cal.evidence[0].note


def test_protocol_lines_scale_with_the_calibrated_beta():
    base = Inputs().context("vgg16", "abci", "vgg16_v100").system
    cal = calibrated_system(base, beta_intra=2 * base.network[0].beta_s_per_byte)
    for old, new in zip(base.network[0].protocols, cal.network[0].protocols):
        assert new.beta_s_per_byte == pytest.approx(2 * old.beta_s_per_byte)
    assert cal.network[1] == base.network[1]


@pytest.mark.parametrize(
    "expr,gpus,model,keep",
    [("gpus<=8", 8, "vgg16", True), ("gpus<=8", 16, "vgg16", False), ("gpus<8", 8, "vgg16", False),
     ("model=vgg16 and gpus>=16", 16, "vgg16", True), ("model=vgg16; gpus>=16", 16, "alexnet", False),
     ("model!=vgg16", 1, "alexnet", True), ("includes_io=no", 1, "alexnet", True)],
)  # fmt: skip
def test_run_filter(expr, gpus, model, keep):
    assert run_filter(expr)(run(1, model, "data", gpus, 32)) is keep


@pytest.mark.parametrize("expr", ["gpus", "<= 8", "gpus =< 8", ""])
def test_run_filter_rejects_bad_syntax(expr):
    with pytest.raises(ValueError):
        run_filter(expr)


def test_naive_projection_by_hand():
    small = replace(run(1, "vgg16", "data", 8, 256), epoch_s=None, iteration_s=0.5)
    bigger = replace(run(2, "vgg16", "data", 16, 512), epoch_s=None, iteration_s=0.4)
    target = replace(run(3, "vgg16", "data", 32, 1024), epoch_s=100.0)
    seconds, ref = naive_projection(target, [small, bigger], iterations=1250.0)
    assert ref is bigger and seconds == pytest.approx(0.4 * 1250)
    assert naive_projection(replace(target, gpus=4), [small, bigger], 1250.0) is None


def test_samples_per_replica_by_hand():
    assert samples_per_replica(run(1, "vgg16", "data", 8, 256)) == 32  # 256 / 8 replicas
    assert samples_per_replica(run(1, "alexnet", "data+spatial", 32, 16384, p1=8, p2=4)) == 2048
    assert samples_per_replica(run(1, "alexnet", "data+spatial", 32, 16384, p2=4)) == 2048  # p1 = 32 / 4
    assert samples_per_replica(run(1, "vgg16", "filter", 8, 64)) == 64  # one replica
    assert samples_per_replica(run(1, "vgg16", "serial", 1, 32)) == 32


def test_beyond_calibration_by_hand():
    cal = [run(1, "alexnet", "data+spatial", 8, 1024, p1=2, p2=4), run(2, "alexnet", "data+spatial", 8, 4096, p1=2, p2=4)]
    inside = run(3, "alexnet", "data+spatial", 64, 16384, p1=16, p2=4)  # 1024 per replica: within 512-2048
    assert beyond_calibration(inside, cal) is None
    outside = run(4, "alexnet", "data+spatial", 64, 65536, p1=16, p2=4)
    assert beyond_calibration(outside, cal) == "4096 samples per replica; calibrated at 512-2048"
    assert beyond_calibration(outside, cal[:1]) == "4096 samples per replica; calibrated at 512"
    other = run(5, "alexnet", "data", 64, 32768)  # the same model, another strategy
    assert beyond_calibration(other, cal) == "no calibration run of alexnet data"
    serial = [run(6, "alexnet", "serial", 1, 512)]  # a data-parallel replica is a serial run
    assert beyond_calibration(other, serial) is None
    assert beyond_calibration(replace(other, global_batch=65536.0), serial) == (
        "1024 samples per replica; calibrated at 512")


def test_abci_runs_beyond_the_calibrated_batch_are_summarised_apart(run):
    """The four AlexNet data+spatial runs at 2,048 samples per node: no calibration run
    has that batch (the calibration runs have 512); the other 12 are scored apart, and
    there the model still beats the naive projection."""
    r = run("compare", RUNS, "--system", "abci-chainermnx", "--calibrate-on", "gpus<=8", "--where", "quality=A",
            "-f", "json")  # fmt: skip
    out = json.loads(r.out)
    s = out["summary"]
    assert s["beyond_calibration_lines"] == [19, 21, 25, 27]
    assert [x["line"] for x in out["rows"] if x["beyond_calibration"]] == [19, 21, 25, 27]
    assert s["beyond_calibration"]["n"] == 4 and s["beyond_calibration"]["mean_accuracy"] == pytest.approx(0.760, abs=0.001)
    within, naive = s["within_calibration"], s["naive_within_calibration"]
    assert within["n"] == naive["n"] == 12
    assert within["mean_accuracy"] == pytest.approx(0.925, abs=0.001)
    assert naive["mean_accuracy"] == pytest.approx(0.907, abs=0.001)
    assert within["mean_accuracy"] > naive["mean_accuracy"]


def test_abci_held_back_accuracy_beats_the_naive_projection(run):
    """README table: calibrated on every run on at most 8 GPUs, scored on the clean runs
    above 8 GPUs."""
    r = run("compare", RUNS, "--system", "abci-chainermnx", "--calibrate-on", "gpus<=8", "--where", "quality=A",
            "-f", "json")  # fmt: skip
    assert r.code == 0, r.err
    s = json.loads(r.out)["summary"]
    assert s["runs"] == 16
    assert s["mean_accuracy"] == pytest.approx(0.884, abs=0.001)
    assert s["naive"]["mean_accuracy"] == pytest.approx(0.728, abs=0.001)
    assert s["mean_accuracy"] > s["naive"]["mean_accuracy"] + 0.1
    assert "loader_rate, beta_intra, beta_inter, node_rate, leader_rate" in s["calibration"][0]["calibrated"]
    rows = json.loads(r.out)["rows"]
    assert all(int(x["gpus"]) > 8 for x in rows)


@pytest.mark.parametrize(
    "args,words",
    [
        (("--calibrate-on", "gpus<=0"), ["selects no run"]),
        (("--calibrate-on", "gpus>=1"), ["selects every run"]),
        (("--calibrate-on", "gpus"), ["--calibrate-on", "COL OP VALUE"]),
    ],
)
def test_bad_calibrate_on(run, args, words):
    r = run("compare", RUNS, *args)
    assert r.code == 2 and "Traceback" not in r.err
    for w in words:
        assert w in r.err, (w, r.err)


def test_fit_runs_calibrate_all_writes_a_system(run, tmp_path):
    out = tmp_path / "cal.yaml"
    r = run("fit", "runs", RUNS, "-s", "abci-chainermnx", "--calibrate", "all", "--where", "gpus=1,2,4,8", "-o", out)
    assert r.code == 0, r.err
    text = out.read_text()
    assert "leader_samples_per_s" in text and "--calibrate all" in text
    # its network was calibrated through the ring: the file says so (tests/test_stack_collectives.py)
    assert "collectives:\n  algorithm: ring\n" in text
    r = run("compare", RUNS, "-s", out, "--where", "quality=A", "--exclude", "gpus=1,2,4,8", "-f", "json")
    assert json.loads(r.out)["summary"]["mean_accuracy"] == pytest.approx(0.884, abs=0.001)


def test_fit_runs_warns_about_runs_of_another_system(run):
    r = run("fit", "runs", RUNS, "-s", "abci-chainermnx", "--calibrate", "network", "--where", "model=vgg16",
            "--where", "gpus=4,8")  # fmt: skip
    assert r.code == 0, r.err
    assert "warning" in r.err and "were measured on 'abci'" in r.err and "31-32" in r.err
    r = run("fit", "runs", RUNS, "-s", "abci", "--calibrate", "network", "--where", "model=vgg16", "--where", "gpus=4,8")
    assert "warning" not in r.err


# -- step 0: compute (issue 14, item 3: "fits ... compute efficiency") --------------------


def test_a_compute_factor_scales_the_models_compute_by_hand():
    ctx = Inputs().context("vgg16", "abci", "vgg16_v100")
    slow = with_system(ctx, with_compute_factors(ctx.system, {"VGG16": 1.25, "AlexNet": 3.0}))
    assert slow.sum_fb == pytest.approx(1.25 * ctx.sum_fb, rel=1e-12)  # AlexNet's factor is not VGG16's
    assert slow.sum_wu == pytest.approx(1.25 * ctx.sum_wu, rel=1e-12)
    cfg = config_for(run(1, "vgg16", "serial", 1, 32), ctx)
    base_pt, slow_pt = (REGISTRY["serial"].evaluate(c, cfg) for c in (ctx, slow))
    assert slow_pt.compute_s == pytest.approx(1.25 * base_pt.compute_s, rel=1e-12)
    back = with_system(slow, ctx.system)  # the factor undone: the profile's own times again
    assert back.sum_fb == ctx.sum_fb and REGISTRY["serial"].evaluate(back, cfg).compute_s == base_pt.compute_s


def test_recovers_a_compute_factor_and_the_network_behind_it():
    """Runs made by the model with VGG16's compute 1.3x its profile and a slower network:
    the one-GPU run without I/O gives the factor (step 0), and the 4- and 8-GPU runs, read
    with it, give β exactly (read with the profile's compute, β would absorb the rest)."""
    inputs = Inputs()
    base = inputs.context("vgg16", "abci", "vgg16_v100").system
    beta_in, beta_out = 2 * base.network[0].beta_s_per_byte, 3 * base.network[1].beta_s_per_byte
    truth = with_compute_factors(calibrated_system(base, beta_in, beta_out), {"VGG16": 1.3})
    runs, inputs = synthetic([run(30, "vgg16", "data", 1, 32), run(31, "vgg16", "data", 4, 128),
                              run(32, "vgg16", "data", 8, 256)], truth)  # fmt: skip
    cal = calibrate_all([(r, inputs.context(r.model, r.system, r.profile)) for r in runs])
    assert cal.compute_factors == (("VGG16", pytest.approx(1.3, rel=1e-9)),)
    assert cal.beta_intra == pytest.approx(beta_in, rel=1e-6)
    assert cal.beta_inter == pytest.approx(beta_out, rel=1e-6)
    assert {e.line: e.parameter for e in cal.evidence} == {30: "compute_factor", 31: "beta_intra", 32: "beta_inter"}
    assert_projects_as_measured(apply(base, cal), runs, inputs)


def test_a_measured_compute_column_gives_the_factor_on_any_gpu_count():
    inputs = Inputs()
    truth = with_compute_factors(inputs.context("vgg16", "abci", "vgg16_v100").system, {"VGG16": 0.8})
    runs, inputs = synthetic([run(33, "vgg16", "data", 16, 512, io="yes")], truth)
    ctx = with_system(inputs.context("vgg16", "abci", "vgg16_v100"), truth)
    pt = REGISTRY["data"].evaluate(ctx, config_for(runs[0], ctx))
    measured = replace(runs[0], compute_s=pt.compute_s)  # per epoch, as the run's epoch_s
    cal = calibrate_all([(measured, inputs.context("vgg16", "abci", "vgg16_v100"))])
    assert dict(cal.compute_factors)["VGG16"] == pytest.approx(0.8, rel=1e-9)
    assert cal.evidence[0].note.startswith("measured compute")


def test_an_input_bound_one_gpu_run_gives_a_loader_rate_not_a_compute_factor():
    """Slower than its profile and marked includes_io: the excess is loading (step 1);
    only a run faster than its profile, or without I/O, measures compute."""
    inputs = Inputs()
    base = inputs.context("alexnet", "abci", "alexnet_v100").system
    runs, inputs = synthetic([run(2, "alexnet", "data", 1, 512, io="yes")], calibrated_system(base, loader=900.0))
    cal = calibrate_all([(r, inputs.context(r.model, r.system, r.profile)) for r in runs])
    assert cal.compute_factors == () and cal.loader_rate == pytest.approx(900.0, rel=1e-6)


def test_fit_runs_all_writes_the_compute_factor_into_the_system(run, tmp_path):
    out = tmp_path / "cal.yaml"
    r = run("fit", "runs", RUNS, "-s", "abci-chainermnx", "--calibrate", "all", "--where", "gpus=1,2,4,8", "-o", out)
    assert r.code == 0, r.err
    assert "VGG16: compute 0.9933x the profile" in r.out
    text = out.read_text()
    assert "compute_factors:\n    VGG16: 0.993291" in text and "lines 30" in text
    shown = run("show", "system", out)
    assert "compute against the profile: VGG16 0.9933x" in shown.out


@pytest.mark.parametrize("value,words", [("0", "> 0"), ("fast", "expected a time factor"), ("[1, 2]", "got a list")])
def test_a_bad_compute_factor_is_one_clear_error(run, tmp_path, value, words):
    base = (ROOT / "systems" / "abci.yaml").read_text()
    path = tmp_path / "bad.yaml"
    path.write_text(base + f"implementation:\n  compute_factors:\n    VGG16: {value}\n")
    r = run("show", "system", path)
    assert r.code == 2 and "Traceback" not in r.err
    assert "implementation.compute_factors.VGG16" in r.err and words in r.err, r.err


def test_an_absurd_compute_column_is_set_aside_and_said(run, tmp_path):
    """compute_s a million times the profile (hours for seconds, say): the runs still
    give β, the factor is not written, and the output says why."""
    lines = RUNS.read_text().splitlines()
    runs = tmp_path / "runs.csv"
    runs.write_text("\n".join([lines[0] + ",compute_s", *(x + ",1e9" for x in lines[30:32])]) + "\n")
    out = tmp_path / "cal.yaml"
    r = run("fit", "runs", runs, "-s", "abci-chainermnx", "--calibrate", "all", "-o", out, "--width", "200")
    assert r.code == 0, r.err
    assert "line 2: measured compute" in r.out and "set aside as not this model's compute" in r.out
    assert "beta_inter" in r.out and "compute_factors" not in out.read_text()


def test_dle_held_out_eight_gpus_with_the_compute_of_one(run):
    """validation/dle-resnet50-runs.csv (NVIDIA's published PyTorch ResNet-50 AMP on a DGX
    A100 80GB): calibrated on the one-GPU run, whose compute step 0 turns into a factor on
    the (estimated) profile, the 8-GPU run is projected at 98.7% against 94.2% out of the
    box (92.3% before max pooling's instruction bound; 98.9% and 91.3% before the stack's GPU overhead per layer, which the data-parallel
    efficiency does not slow; 95.6% and 91.1% with the stack's mixed efficiencies at the old grid's end, 1.3
    and 0.88; 95.1% and 89.0% before batch norm and max pooling ran at PyTorch's measured speed;
    86.0% before the stack's refit on V100 rows under the depthwise compute model),
    under the file's pytorch stack (these are PyTorch runs; without a stack 84.4% and
    66.3%); the naive projection (the one-GPU iteration) gives 84.1%."""
    csv = ROOT / "validation" / "dle-resnet50-runs.csv"
    plain = json.loads(run("compare", csv, "-f", "json").out)
    r = run("compare", csv, "--calibrate-on", "gpus<=1", "-f", "json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert [x["line"] for x in plain["rows"]][1] == out["rows"][0]["line"] == 3
    assert plain["rows"][1]["accuracy"] == pytest.approx(0.942, abs=0.001)
    assert out["rows"][0]["accuracy"] == pytest.approx(0.987, abs=0.001)
    assert out["summary"]["naive"]["mean_accuracy"] == pytest.approx(0.841, abs=0.001)
    assert out["rows"][0]["beyond_calibration"] is None  # 256 per replica, as the one-GPU run
    assert "compute_factor (ResNet-50)" in out["summary"]["calibration"][0]["calibrated"]


@settings(max_examples=25, deadline=None)
@given(k=st.floats(0.05, 20), strategy=st.sampled_from(["serial", "data", "filter", "channel", "spatial",
                                                         "pipeline", "data+filter", "data+spatial"]),
       gpus=st.sampled_from([1, 2, 4, 8, 16]))  # fmt: skip
def test_a_compute_factor_scales_compute_only(k, strategy, gpus):
    """Property: a model's compute factor k multiplies every strategy's compute by k
    (the profile's times, before everything else) and leaves communication alone."""
    assume((strategy == "serial") == (gpus == 1) and not (REGISTRY[strategy].hybrid and gpus < 8))
    ctx = Inputs().context("vgg16", "abci", "vgg16_v100")
    scaled = with_system(ctx, with_compute_factors(ctx.system, {"VGG16": k}))
    r = run(1, "vgg16", strategy, gpus, 8 * gpus, p2=4 if REGISTRY[strategy].hybrid else None)
    a, b = (REGISTRY[strategy].evaluate(c, config_for(r, c)) for c in (ctx, scaled))
    assert b.compute_s == pytest.approx(k * a.compute_s, rel=1e-9)
    assert b.communication_s == pytest.approx(a.communication_s, rel=1e-9)


def test_calibrate_input_takes_no_rate_from_runs_whose_times_exclude_loading(run, tmp_path):
    """Issue 14: --calibrate input turned any excess time into a loading rate, also for
    runs whose times exclude I/O; an includes_io column that says no now sets them aside
    (without the column, --calibrate input takes the runs as including loading)."""
    lines = RUNS.read_text().splitlines()
    no_io = tmp_path / "no-io.csv"
    no_io.write_text("\n".join([lines[0], *(x.replace(",yes,", ",no,", 1) for x in lines[1:5])]) + "\n")
    r = run("fit", "runs", no_io, "-s", "abci", "--calibrate", "input", "--width", "200")
    assert r.code == 2 and "none of the 4 selected runs calibrates the input" in r.err
    assert r.out.count("its times exclude data loading (includes_io = no)") == 4
    r = run("fit", "runs", RUNS, "-s", "abci", "--calibrate", "input", "--where", "gpus=1", "--where", "model=alexnet")
    assert r.code == 0 and "loader rate: 1111 samples/s" in r.out
