"""Issue 26: where one shared fit leaves a model's calibration runs more than 5% off,
`fit runs --calibrate all` writes that model's own calibration into the system
(`models:`), so `predict` on the written system projects as `compare --calibrate-on`."""

from __future__ import annotations

import pytest
from conftest import run_cli
from test_stored_anchors import ABCI, ROOT, projected

from oracle import api
from oracle.compute.calibration.compare import accuracy
from oracle.load import load_system


def test_predict_on_the_written_system_equals_compare_calibrate_on(tmp_path):
    out = tmp_path / "cal.yaml"
    r = run_cli("fit", "runs", ABCI, "-s", "abci-chainermnx", "--calibrate", "all", "--where", "gpus=1,2,4,8",
                "-o", out)  # fmt: skip
    assert r.code == 0, r.err
    assert [name for name, _ in load_system(out).models] == ["AlexNet"]
    rows, _ = api.compare(str(ABCI), calibrate_on="gpus<=8", system="abci-chainermnx")
    assert rows
    for row in rows:
        pt = projected(row.run, str(out))
        got = pt.total_s if row.run.basis == "epoch" else pt.iteration_s
        assert accuracy(got, row.measured_s) == pytest.approx(row.accuracy, abs=1e-3), row.run.line
    header = run_cli("predict", "-m", "alexnet", "-s", out, "-p", "alexnet_v100", "--gpus", "16")
    assert header.code == 0 and "AlexNet's own calibration" in header.out
    other = run_cli("predict", "-m", "vgg16", "-s", out, "-p", "vgg16_v100", "--gpus", "16")
    assert other.code == 0 and "own calibration" not in other.out


def _with_models(tmp_path, models: str):
    path = tmp_path / "s.yaml"
    path.write_text((ROOT / "systems" / "abci.yaml").read_text() + f"\nmodels:\n{models}\n")
    return path


def test_a_model_section_applies_to_that_model_only(tmp_path):
    path = _with_models(tmp_path, "  VGG16:\n    implementation: {compute_factors: {VGG16: 2.0}}")
    args = dict(gpus=[1], strategies="data", batch_per_gpu=32)
    plain = api.predict("vgg16", "abci", "vgg16_v100", **args)[0]
    own = api.predict("vgg16", str(path), "vgg16_v100", **args)[0]
    assert own.compute_s == pytest.approx(2.0 * plain.compute_s, rel=1e-6)
    other = api.predict("alexnet", str(path), "alexnet_v100", **args)[0]
    assert other.total_s == api.predict("alexnet", "abci", "alexnet_v100", **args)[0].total_s


@pytest.mark.parametrize("entry, expected", [
    ("  AlexNet:\n    input: {loader_samples_per_s: -1}", "models.AlexNet.input.loader_samples_per_s"),
    ("  AlexNet:\n    gpu: {model: x}", "models.AlexNet"),
    ("  AlexNet:\n    source: nothing", "changes nothing"),
])  # fmt: skip
def test_a_bad_model_section_is_one_error_line(tmp_path, entry, expected):
    path = _with_models(tmp_path, entry)
    r = run_cli("predict", "-m", "alexnet", "-s", path, "-p", "alexnet_v100", "--gpus", "8")
    assert r.code == 2
    assert expected in r.err and "Traceback" not in r.err


def test_a_later_calibration_step_keeps_the_anchors_but_not_the_models(tmp_path):
    first, second = tmp_path / "all.yaml", tmp_path / "net.yaml"
    r = run_cli("fit", "runs", ABCI, "-s", "abci-chainermnx", "--calibrate", "all", "--where", "gpus=1,2,4,8",
                "-o", first)  # fmt: skip
    assert r.code == 0, r.err
    r = run_cli("fit", "runs", ABCI, "-s", first, "--calibrate", "network", "--where", "model=vgg16",
                "--where", "strategy=data", "--where", "gpus=4,8", "-o", second)  # fmt: skip
    assert r.code == 0, r.err
    before, after = load_system(first), load_system(second)
    assert before.models and not after.models
    assert after.anchors == before.anchors
