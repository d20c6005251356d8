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


@pytest.mark.parametrize(("spelled", "key"), [("FP-16", "fp16"), ("tf_32", "tf32"), ("Amp-BF16", "amp-bf16")])
def test_the_canonical_names_by_their_letters_too(spelled, key):
    assert precision_key(spelled) == key


def test_a_plain_precision_leaves_mixed_precision_to_the_rows_column(tmp_path):
    """'bf16' says no more than bf16: the row's mixed_precision column decides (as
    --precision bf16 --mixed-precision on the command line); 'bf16-amp' is mixed itself."""
    runs = tmp_path / "runs.csv"
    head = "model,system,profile,strategy,gpus,global_batch,iteration_s,stack,precision,mixed_precision\n"
    runs.write_text(head + f"{ROW}bf16,yes\n{ROW}bf16-amp,\n{ROW}bf16,\n")
    r = run_cli("compare", str(runs), "-f", "csv")
    assert r.code == 0, r.err
    mixed_column, amp, plain = (float(row["predicted_s"]) for row in csv.DictReader(io.StringIO(r.out)))
    assert mixed_column == amp != plain


def test_one_precision_spelled_twice_is_no_clash_and_one_configuration(tmp_path):
    runs = tmp_path / "runs.csv"
    head = "model,system,profile,strategy,gpus,global_batch,iteration_s,stack,precision\n"
    runs.write_text(head + "".join(f"{ROW.replace(',0.1,', f',{t},')}{p}\n" for t, p in ((0.1, "bfloat16"), (0.3, "BF16"))))
    r = run_cli("compare", str(runs), "--precision", "bf16")
    assert r.code == 0, r.err
    assert "column 'precision'" not in r.err  # bfloat16 is bf16: no clash with --precision bf16
    from oracle.compute.calibration.anchor import contradictions
    from oracle.load.runs import load_runs

    assert len(contradictions(load_runs(str(runs), ["data"]))) == 1  # 3x apart, one configuration
