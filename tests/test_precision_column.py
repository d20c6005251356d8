"""A runs file's ``precision`` column in the spellings benchmark tables use: any case,
``mixed``/``FP16-AMP`` for AMP, ``bf16-amp`` for bfloat16 mixed precision, ``float16``..."""

from __future__ import annotations

import csv
import io

import pytest
from conftest import run_cli

from oracle.compute.calibration.compare import PRECISION_COLUMN, precision_key

ROW = "resnet50,dgx-a100-80gb,resnet50_v100,data,8,2048,0.1,pytorch,"


def _projected(tmp_path, *precisions: str) -> list[float]:
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,profile,strategy,gpus,global_batch,iteration_s,stack,precision\n"
                    + "".join(f"{ROW}{p}\n" for p in precisions))  # fmt: skip
    r = run_cli("compare", str(runs), "-f", "csv")
    assert r.code == 0, r.err
    return [float(row["predicted_s"]) for row in csv.DictReader(io.StringIO(r.out))]


@pytest.mark.parametrize(("spelled", "key"), [("AMP", "amp"), ("mixed", "amp"), ("FP16-AMP", "amp"),
                                              ("amp_fp16", "amp"), ("bf16-amp", "amp-bf16"), ("BFloat16", "bf16"),
                                              ("float16", "fp16"), ("TF32", "tf32"), ("fp8", None)])  # fmt: skip
def test_spellings(spelled, key):
    assert precision_key(spelled) == key
    assert key is None or key in PRECISION_COLUMN


def test_spellings_project_as_their_precision(tmp_path):
    amp, mixed, fp16_amp, bf16_amp, bf16 = _projected(tmp_path, "AMP", "mixed", "FP16-AMP", "bf16-amp", "bf16")
    assert amp == mixed == fp16_amp
    assert bf16_amp != bf16  # mixed precision keeps fp32 master weights and their update


def test_an_unknown_precision_is_one_error(tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text(f"model,system,profile,strategy,gpus,global_batch,iteration_s,stack,precision\n{ROW}fp8\n")
    r = run_cli("compare", str(runs))
    assert r.code == 2 and len(r.err_lines) == 1 and "fp8" in r.err and "amp" in r.err
