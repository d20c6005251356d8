"""scripts/measure_training_step.py, the script that measured validation/gpu-training-steps.csv
on a GPU: run here on the CPU (``--device cpu``), so that it still works when the next
session is lent a GPU.  Skipped without torchvision."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "measure_training_step.py"


@pytest.fixture(scope="module")
def script():
    pytest.importorskip("torchvision")
    sys.path.insert(0, str(SCRIPT.parent))
    import measure_training_step

    return measure_training_step


def test_cpu_run_writes_every_row_with_the_columns_of_the_gpu_rows(script, tmp_path):
    out = tmp_path / "steps.csv"
    args = ["mobilenet_v3_small", "--device", "cpu", "--batches", "2", "--precisions", "fp32", "amp",
            "--formats", "contiguous", "channels_last", "--iters", "1", "--warmup", "1", "-o", str(out)]  # fmt: skip
    assert script.main(args) == 0
    rows = list(csv.DictReader(out.open()))
    assert [(r["precision"], r["memory_format"]) for r in rows] == [
        ("fp32", "contiguous"), ("fp32", "channels_last"), ("amp", "contiguous"), ("amp", "channels_last")]
    for r in rows:
        assert not r["error"], r["error"]
        assert float(r["iteration_ms"]) > 0 and float(r["host_fb_ms"]) > 0 and float(r["optimizer_ms"]) > 0
        assert float(r["images_per_s"]) == pytest.approx(2 / float(r["iteration_ms"]) * 1e3, rel=1e-4)
        assert r["gpu"] == "none (CPU)" and r["host_cpu"] and r["kernels_fb"] == ""
        assert r["command"].startswith("python scripts/measure_training_step.py mobilenet_v3_small --device cpu")
    # the GPU rows' columns are the script's, and the benchmark reads them by these names
    shipped = next(csv.reader((SCRIPT.parents[1] / "validation" / "gpu-training-steps.csv").open()))
    assert shipped == script.FIELDS


def test_a_failed_row_is_data_not_a_crash(script, tmp_path):
    out = tmp_path / "steps.csv"
    args = ["no_such_model", "--device", "cpu", "--batches", "2", "--precisions", "fp32", "--iters", "1",
            "--warmup", "0", "-o", str(out)]  # fmt: skip
    assert script.main(args) == 0
    (row,) = csv.DictReader(out.open())
    assert row["error"].startswith("AttributeError") and row["iteration_ms"] == ""


def test_without_cuda_the_gpu_run_refuses(script, tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    assert script.main(["resnet18", "-o", str(tmp_path / "x.csv")]) == 2
    assert "--device cpu" in capsys.readouterr().err


def test_a_cuda_graph_row_without_a_gpu_is_a_failed_row(script, tmp_path):
    out = tmp_path / "steps.csv"
    args = ["mobilenet_v3_small", "--device", "cpu", "--execution", "cuda_graph", "--batches", "2",
            "--precisions", "amp", "--iters", "1", "--warmup", "0", "-o", str(out)]  # fmt: skip
    assert script.main(args) == 0
    (row,) = csv.DictReader(out.open())
    assert row["execution"] == "cuda_graph" and "CUDA graphs need a GPU" in row["error"] and row["iteration_ms"] == ""


def test_inception_v3_runs_as_oracle_models_it(script, tmp_path):
    """models/inception_v3.yaml is torchvision's Inception-v3 without its auxiliary head, on
    3x299x299 inputs: the script builds and feeds it so (torchvision's default, with the
    head, returns a tuple in training that the loss cannot take, and 224x224 is not its
    input)."""
    out = tmp_path / "steps.csv"
    args = ["inception_v3", "--device", "cpu", "--batches", "2", "--precisions", "fp32", "--iters", "1",
            "--warmup", "0", "-o", str(out)]  # fmt: skip
    assert script.main(args) == 0
    (row,) = csv.DictReader(out.open())
    assert not row["error"], row["error"]
    assert script.INPUT_SIDE["inception_v3"] == 299 and not script.BUILD_KWARGS["inception_v3"]["aux_logits"]


LAYERS = SCRIPT.parent / "measure_layer_kernels.py"


def test_the_layer_script_times_every_layer_on_the_cpu_with_the_columns_of_the_gpu_rows(tmp_path):
    """scripts/measure_layer_kernels.py, which timed validation/gpu-layer-kernels.csv on an
    H200: on the CPU (AMP in bfloat16) it writes one row per layer of the model file and
    precision, with times, under the columns of the shipped rows."""
    pytest.importorskip("torch")
    sys.path.insert(0, str(SCRIPT.parent))
    import measure_layer_kernels

    from oracle.load import load_model

    out = tmp_path / "layers.csv"
    args = ["resnet18", "--device", "cpu", "--batch", "2", "--precisions", "amp", "fp32", "--repeats", "1",
            "--warmup", "0", "-o", str(out)]  # fmt: skip
    assert measure_layer_kernels.main(args) == 0
    rows = list(csv.DictReader(out.open()))
    names = [layer.name for layer in load_model("resnet18").layers]
    assert [r["layer"] for r in rows] == names * 2
    assert {r["precision"] for r in rows[: len(names)]} == {"amp"} and rows[-1]["precision"] == "fp32"
    assert all(r["model"] == "resnet18" and r["batch"] == "2" and r["memory_format"] == "channels_last" for r in rows)
    convs = [r for r in rows if r["type"] == "conv"]
    assert convs and all(float(r["fw_ms"]) > 0 and float(r["bw_ms"]) > 0 for r in convs)
    assert rows[0]["command"].startswith("python scripts/measure_layer_kernels.py resnet18 --device cpu")
    shipped = next(csv.reader((SCRIPT.parents[1] / "validation" / "gpu-layer-kernels.csv").open()))
    assert shipped == measure_layer_kernels.FIELDS == list(rows[0])
