"""Model-parallel mechanisms and network levels fitted from runs (issue 14 item 3:
``--calibrate all`` fits split efficiency and per-operation factors, and a rack and the
spine above it apart; compute/calibration/calibrate_split.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_calibrate_all import assert_projects_as_measured

from oracle.api import Inputs
from oracle.compute.calibration.calibrate_all import (
    apply,
    calibrate_all,
    calibrated_system,
    level_betas,
    with_system,
)
from oracle.compute.calibration.calibrate_split import (
    FACTOR_FLOOR,
    MECHANISMS,
    Row,
    fit_mechanisms,
    with_mechanisms,
)
from oracle.compute.calibration.compare import config_for
from oracle.compute.strategies import REGISTRY
from oracle.records import MeasuredRun

TRUTH = {"split_serial_fraction": 0.3, "split_overhead_s": 2e-4, "layer_collectives_factor": 2.5,
         "halo_factor": 1.7, "pipeline_p2p_factor": 3.0}  # fmt: skip


def run(line, strategy, gpus, batch, p1=None, p2=None, model="vgg16", segments=None):
    return MeasuredRun(line, model, "abci", f"{model}_v100", strategy, gpus, float(batch), p1, p2, segments)


def made_by(truth_system, runs, inputs, columns=False):
    """The runs' epoch times (and with ``columns`` their compute and communication) as
    the model projects them on ``truth_system``."""
    out = []
    for r in runs:
        ctx = with_system(inputs.context(r.model, r.system, r.profile), truth_system)
        pt = REGISTRY[r.strategy].evaluate(ctx, config_for(r, ctx))
        extra = {"compute_s": pt.compute_s, "comm_s": pt.communication_s} if columns else {}
        out.append(replace(r, epoch_s=pt.total_s, **extra))
    return out


def fit(runs, inputs):
    return calibrate_all([(r, inputs.context(r.model, r.system, r.profile)) for r in runs])


MODEL_PARALLEL = [
    run(40, "filter", 2, 64), run(41, "filter", 4, 64), run(42, "channel", 8, 64),
    run(43, "spatial", 4, 64), run(44, "spatial", 16, 64), run(45, "pipeline", 4, 64, segments=4),
    run(46, "data+filter", 8, 128, p1=2, p2=4),
]  # fmt: skip


def test_recovers_every_mechanism_from_runs_made_by_the_model():
    inputs = Inputs()
    base = inputs.context("vgg16", "abci", "vgg16_v100").system
    runs = made_by(with_mechanisms(base, TRUTH), MODEL_PARALLEL, inputs)
    cal = fit(runs, inputs)
    for k, v in TRUTH.items():
        assert getattr(cal, k) == pytest.approx(v, rel=1e-6), k
    assert cal.not_identified == ()
    # the evidence names the runs each parameter depends on: no halo in a filter run
    assert set(cal.lines_for("halo_factor")) == {43, 44}
    assert set(cal.lines_for("pipeline_p2p_factor")) == {45}
    assert_projects_as_measured(apply(base, cal), runs, inputs)


def test_one_run_of_totals_identifies_one_mechanism_and_says_why_not_the_rest():
    inputs = Inputs()
    base = inputs.context("vgg16", "abci", "vgg16_v100").system
    cal = fit(made_by(with_mechanisms(base, TRUTH), [run(41, "filter", 4, 64)], inputs), inputs)
    assert cal.split_serial_fraction is not None and cal.split_overhead_s is None
    assert cal.layer_collectives_factor is None
    why = dict(cal.not_identified)
    assert "cannot be told apart from split_serial_fraction" in why["split_overhead_s"]
    assert "compute_s and comm_s" in why["layer_collectives_factor"]
    assert why["halo_factor"] == "no selected run has a halo exchange"
    assert why["pipeline_p2p_factor"] == "no selected run has pipeline sends and receives"


def test_measured_compute_and_communication_columns_separate_them():
    """The same single run with compute_s and comm_s measured: the Amdahl fraction from
    its compute, the layer-collective factor from its communication."""
    inputs = Inputs()
    base = inputs.context("vgg16", "abci", "vgg16_v100").system
    truth = with_mechanisms(base, {"split_serial_fraction": 0.4, "layer_collectives_factor": 3.0})
    cal = fit(made_by(truth, [run(41, "filter", 4, 64)], inputs, columns=True), inputs)
    assert cal.split_serial_fraction == pytest.approx(0.4, rel=1e-6)
    assert cal.layer_collectives_factor == pytest.approx(3.0, rel=1e-6)
    assert {e.parameter for e in cal.evidence} == {"split_serial_fraction", "layer_collectives_factor"}


def test_data_parallel_runs_identify_no_mechanism():
    inputs = Inputs()
    base = inputs.context("vgg16", "abci", "vgg16_v100").system
    cal = fit(made_by(base, [run(31, "data", 4, 128), run(32, "data", 8, 256)], inputs), inputs)
    assert all(getattr(cal, k) is None for k in MECHANISMS)
    assert dict(cal.not_identified)["split_serial_fraction"] == "no model-parallel run selected"


def _row(measured, constant, **coeff):
    return Row(1, "r", "iteration", measured, constant, tuple(coeff.get(k, 0.0) for k in MECHANISMS))


def test_bounded_fit_by_hand():
    # y = 1 + 2f and y = 1 + 4f + 3·factor: f = 0.25, factor = 0.5 solve both exactly
    got = fit_mechanisms([_row(1.5, 1.0, split_serial_fraction=2.0),
                          _row(3.5, 1.0, split_serial_fraction=4.0, layer_collectives_factor=3.0)])  # fmt: skip
    assert got.values == pytest.approx({"split_serial_fraction": 0.25, "layer_collectives_factor": 0.5})
    # a run slower than even f = 1 allows: f stays at its bound 1
    got = fit_mechanisms([_row(4.0, 1.0, split_serial_fraction=2.0)])
    assert got.values == {"split_serial_fraction": 1.0}
    # a run faster than f = 0 allows: f = 0; an operation factor never below the floor
    got = fit_mechanisms([_row(0.5, 1.0, split_serial_fraction=2.0)])
    assert got.values == {"split_serial_fraction": 0.0}
    got = fit_mechanisms([_row(0.5, 1.0, halo_factor=2.0)])
    assert got.values == {"halo_factor": FACTOR_FLOOR}


def test_rack_and_spine_calibrate_apart():
    """Runs on 8 GPUs span ABCI's n8 level, runs on 64 its n64 level: each level gets the
    β its runs imply; a level no run spans takes the nearest calibrated level's below."""
    inputs = Inputs()
    base = inputs.context("vgg16", "abci", "vgg16_v100").system
    names = [lv.name for lv in base.network]
    i8, i64 = names.index("n8"), names.index("n64")
    truth_levels = {"n8": 3 * base.network[i8].beta_s_per_byte, "n64": 5 * base.network[i64].beta_s_per_byte}
    truth = calibrated_system(base, levels=tuple(truth_levels.items()))
    runs = made_by(truth, [run(32, "data", 8, 256), run(35, "data", 64, 2048)], inputs)
    cal = fit(runs, inputs)
    assert dict(cal.beta_levels) == pytest.approx(truth_levels, rel=1e-6)
    betas = level_betas(base, cal.beta_intra, cal.beta_inter, cal.beta_levels)
    assert betas[names.index("n16")] == pytest.approx(truth_levels["n8"], rel=1e-6)  # nearest below
    assert betas[names.index("n4")] is None  # no run inside a node: the base's stays
    # one level only (the old behaviour): every level across nodes takes its β
    cal = fit(runs[:1], inputs)
    betas = level_betas(base, cal.beta_intra, cal.beta_inter, cal.beta_levels)
    assert all(b == pytest.approx(truth_levels["n8"]) for b, lv in zip(betas, base.network) if lv.max_gpus > 4)


def test_fit_runs_writes_the_mechanisms_into_the_system(run_cli_fixture, tmp_path):
    inputs = Inputs()
    base = inputs.context("vgg16", "abci", "vgg16_v100").system
    runs = made_by(with_mechanisms(base, TRUTH), MODEL_PARALLEL, inputs)
    csv = tmp_path / "runs.csv"
    lines = ["model,system,profile,strategy,gpus,p1,p2,segments,global_batch,epoch_s"]
    for r in runs:
        seg = "" if r.segments is None else r.segments
        p1 = "" if r.p1 is None else r.p1
        p2 = "" if r.p2 is None else r.p2
        lines.append(f"vgg16,abci,vgg16_v100,{r.strategy},{r.gpus},{p1},{p2},{seg},{r.global_batch:g},{float(r.epoch_s)!r}")
    csv.write_text("\n".join(lines) + "\n")
    out = tmp_path / "cal.yaml"
    r = run_cli_fixture("fit", "runs", csv, "-s", "abci", "--calibrate", "all", "-o", out)
    assert r.code == 0, r.err
    assert "split_serial_fraction: Amdahl fraction 0.3" in r.out and "halo_factor: halo 1.7x modelled" in r.out
    text = out.read_text()
    assert "split_serial_fraction: 0.3" in text and "halo:" in text and "fitted by `oracle fit runs" in text
    r = run_cli_fixture("compare", csv, "-s", out, "-f", "json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["summary"]["mean_accuracy"] == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize(
    "row,words",
    [
        ("vgg16,dgx-a100-40gb,vgg16_v100,data,8,256,0.5", [":2:", "column 'system'", "another machine"]),
        ("vgg16,abci,vgg16_v100,data,8,256,", [":2:", "neither epoch_s nor iteration_s"]),
        ("resnet50,abci,vgg16_v100,data,8,256,0.5", ["profile is for model 'VGG16'"]),
        # faster than its compute alone: one node's totals, so its compute (issue 26),
        # which would be faster than the GPU's peak
        ("vgg16,abci,vgg16_v100,data,4,128,0.01", [":2:", "above the GPU's peak"]),
    ],
)
def test_runs_that_cannot_calibrate_the_base_are_one_error_and_nothing_written(run_cli_fixture, tmp_path, row,
                                                                               words):  # fmt: skip
    csv = tmp_path / "runs.csv"
    csv.write_text("model,system,profile,strategy,gpus,global_batch,iteration_s\n" + row + "\n")
    out = tmp_path / "cal.yaml"
    r = run_cli_fixture("fit", "runs", csv, "-s", "abci", "--calibrate", "all", "-o", out)
    assert r.code == 2 and "Traceback" not in r.err and not out.exists()
    assert len(r.err.strip().splitlines()) == 1, r.err
    for w in words:
        assert w in r.err, (w, r.err)


def _runs_csv(tmp_path, runs):
    csv = tmp_path / "runs.csv"
    lines = ["model,system,profile,strategy,gpus,p1,p2,segments,global_batch,epoch_s"]
    for r in runs:
        cells = ["" if v is None else v for v in (r.p1, r.p2, r.segments)]
        lines.append(f"vgg16,abci,vgg16_v100,{r.strategy},{r.gpus},{cells[0]},{cells[1]},{cells[2]},"
                     f"{r.global_batch:g},{float(r.epoch_s)!r}")  # fmt: skip
    csv.write_text("\n".join(lines) + "\n")
    return csv


def test_calibrate_on_small_model_parallel_runs_projects_the_large_ones(run_cli_fixture, tmp_path):
    """compare --calibrate-on: the mechanisms fitted on the runs on at most 4 GPUs carry
    to the runs on 8-64 GPUs (made by the model with known mechanisms: exact), while the
    uncalibrated base misses them."""
    inputs = Inputs()
    base = inputs.context("vgg16", "abci", "vgg16_v100").system
    small = [run(2, "filter", 2, 64), run(3, "filter", 4, 64), run(4, "spatial", 4, 64)]
    large = [run(5, "filter", 8, 64), run(6, "filter", 16, 64), run(7, "spatial", 16, 64), run(8, "spatial", 64, 64)]
    truth = {"split_serial_fraction": 0.2, "layer_collectives_factor": 2.0, "halo_factor": 3.0}
    csv = _runs_csv(tmp_path, made_by(with_mechanisms(base, truth), small + large, inputs))
    r = run_cli_fixture("compare", csv, "-s", "abci", "--calibrate-on", "gpus<=4", "-f", "json")
    assert r.code == 0, r.err
    s = json.loads(r.out)["summary"]
    # spatial on 64 GPUs: an 8x8 split of pool5's 7x7 output is infeasible, so not scored (bug 8)
    assert (s["runs"], s["not_scored_lines"]) == (3, [8]) and s["mean_accuracy"] == pytest.approx(1.0, abs=1e-4)
    assert "split_serial_fraction" in s["calibration"][0]["calibrated"]
    r = run_cli_fixture("compare", csv, "-s", "abci", "--exclude", "gpus=2,4", "-f", "json")
    assert json.loads(r.out)["summary"]["mean_accuracy"] < 0.9


@pytest.fixture
def run_cli_fixture(run):
    return run


@settings(max_examples=20, deadline=None)
@given(f1=st.floats(0, 1), f2=st.floats(0, 1), strategy=st.sampled_from(["filter", "channel", "spatial"]),
       gpus=st.sampled_from([2, 4, 8, 16]))  # fmt: skip
def test_a_larger_amdahl_fraction_never_speeds_up(f1, f2, strategy, gpus):
    lo, hi = sorted((f1, f2))
    inputs = Inputs()
    ctx = inputs.context("vgg16", "abci", "vgg16_v100")
    r = run(1, strategy, gpus, 64)
    t = [REGISTRY[strategy].evaluate(with_system(ctx, with_mechanisms(ctx.system, {"split_serial_fraction": f})),
                                     config_for(r, ctx)).total_s for f in (lo, hi)]  # fmt: skip
    assert t[1] >= t[0] * (1 - 1e-12)



def test_a_fitted_factor_keeps_the_operations_transport_and_source():
    """abci-chainermnx routes the halo over MPI (its own α, β, source): the fitted factor
    is added to that entry, which keeps its transport and its provenance."""
    from oracle.compute.calibration.calibrate_split import into_doc
    from oracle.load.yamlfile import load_yaml
    from oracle.render.fit import plain
    from oracle.resources import resolve

    doc = plain(load_yaml(resolve("systems", "abci-chainermnx"), "system file"))
    before = dict(doc["operations"]["halo"])
    into_doc(doc, {"halo_factor": 2.0}, {"halo_factor": [7, 9]}, "runs.csv")
    after = doc["operations"]["halo"]
    assert after["factor"] == 2.0
    assert {k: v for k, v in after.items() if k not in ("factor", "source")} == \
        {k: v for k, v in before.items() if k != "source"}
    assert after["source"].startswith(before["source"]) and "lines 7, 9" in after["source"]


def test_runs_with_zero_communication_or_absurd_times_fit_without_crashing(run_cli_fixture, tmp_path):
    """A measured comm_s of 0 (errors are relative to the run's iteration, not to the
    column) and runs the mechanisms cannot explain: a fit with large residuals shown,
    each run's lines listed once in the written system."""
    csv = tmp_path / "runs.csv"
    csv.write_text(
        "model,system,profile,strategy,gpus,p1,p2,segments,global_batch,iteration_s,compute_s,comm_s\n"
        "vgg16,abci,vgg16_v100,spatial,16,,,,64,0.5,,0.0\n"
        "vgg16,abci,vgg16_v100,channel,2,,,,64,0.0001,,\n"
        "vgg16,abci,vgg16_v100,data+filter,8,2,4,,64,3.0,1.0,2.0\n"
    )
    out = tmp_path / "cal.yaml"
    r = run_cli_fixture("fit", "runs", csv, "-s", "abci", "--calibrate", "all", "-o", out, "--width", "200")
    assert r.code == 0, r.err
    assert "at the fit" in r.out
    assert "lines 2, 3, 4" in out.read_text() or "lines 2, 4" in out.read_text()
    assert "2, 2" not in out.read_text()
