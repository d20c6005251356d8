"""Issue 26, point 3: a compute factor measured at one per-GPU batch follows the compute
model's batch curve from there, for a profile that records no batch of its own."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import run_cli

from oracle.api import Inputs
from oracle.compute.calibration.calibrate_all import (
    apply,
    calibrate_all,
    with_compute_factors,
    with_system,
)
from oracle.compute.calibration.compare import config_for
from oracle.compute.strategies import REGISTRY
from oracle.records import MeasuredRun


def one_gpu(line, batch, seconds=None):
    return MeasuredRun(line, "vgg16", "abci", "vgg16_v100", "serial", 1, float(batch), None, None,
                       iteration_s=seconds)  # fmt: skip


def per_sample(system, batch, inputs):
    r = one_gpu(9, batch)
    ctx = with_system(inputs.context(r.model, r.system, r.profile), system)
    pt = REGISTRY["serial"].evaluate(ctx, config_for(r, ctx))
    return pt.compute_s / pt.iterations_per_epoch / batch


def test_a_factor_measured_at_a_small_batch_follows_the_compute_models_curve():
    inputs = Inputs()
    base = inputs.context("vgg16", "abci", "vgg16_v100").system
    assert inputs.context("vgg16", "abci", "vgg16_v100").conversion.origin.batch is None  # total only, no batch
    assert per_sample(base, 64, inputs) == pytest.approx(per_sample(base, 4, inputs))  # flat without a batch
    # the compute model's own curve from 4 samples per GPU to 64
    at4 = with_compute_factors(base, {"VGG16": 1.0}, {"VGG16": 4.0})
    curve = per_sample(at4, 64, inputs) / per_sample(at4, 4, inputs)
    assert curve < 0.95  # a V100 is busier at 64 per GPU than at 4
    measured = 2.0 * per_sample(base, 4, inputs) * 4  # a run at 4 per GPU, 2x the profile
    run = one_gpu(2, 4, measured)
    cal = calibrate_all([(run, inputs.context(run.model, run.system, run.profile))])
    assert dict(cal.compute_batches) == {"VGG16": 4.0}
    calibrated = apply(base, cal)
    assert per_sample(calibrated, 4, inputs) * 4 == pytest.approx(measured, rel=1e-9)  # the run, reproduced
    # at 64 per GPU the compute model's curve from 4, not a flat 2x of the profile
    assert per_sample(calibrated, 64, inputs) == pytest.approx(per_sample(calibrated, 4, inputs) * curve, rel=1e-9)
    assert per_sample(calibrated, 64, inputs) < 2.0 * per_sample(base, 64, inputs)


def test_fit_runs_writes_the_batch_and_the_written_system_keeps_the_curve(tmp_path):
    (tmp_path / "runs.csv").write_text("model,system,profile,strategy,gpus,global_batch,iteration_s\n"
                                       "vgg16,abci,vgg16_v100,serial,1,4,0.2\n")  # fmt: skip
    got = run_cli("fit", "runs", "runs.csv", "-s", "abci", "--calibrate", "all", "-o", "cal.yaml", cwd=tmp_path)
    assert got.code == 0, got.err
    assert "compute model's batch curve carries the factor" in " ".join(got.out.split())
    import yaml

    doc = yaml.safe_load((tmp_path / "cal.yaml").read_text())
    assert doc["implementation"]["compute_samples_per_gpu"] == {"VGG16": 4.0}
    inputs = Inputs()
    written = inputs.context("vgg16", str(tmp_path / "cal.yaml"), "vgg16_v100").system
    assert per_sample(written, 4, inputs) * 4 == pytest.approx(0.2, rel=1e-5)
    assert per_sample(written, 64, inputs) < per_sample(written, 4, inputs)
    shown = run_cli("show", "system", "cal.yaml", cwd=tmp_path)
    assert "x (measured at 4 per GPU)" in " ".join(shown.out.split())
    pred = run_cli("predict", "-m", "vgg16", "-s", "cal.yaml", "-p", "vgg16_v100", "--gpus", "1", "--batch-per-gpu", "64",
                   "--strategy", "data", cwd=tmp_path)  # fmt: skip
    assert "measured at 4 per GPU (other batches: the compute model's curve)" in " ".join(pred.out.split())


def test_several_batches_stay_flat_and_say_so():
    inputs = Inputs()
    runs = [one_gpu(2, 4, 0.2), one_gpu(3, 32, 1.2)]
    cal = calibrate_all([(r, inputs.context(r.model, r.system, r.profile)) for r in runs])
    assert cal.compute_batches == () and any("flat in batch" in n for n in cal.notes)
    assert replace(cal, notes=()).compute_factors  # the factor itself is still found
