"""A stack's ``compute.fp32_math``: what its software runs a float32 model's convolutions
and GEMMs in on GPUs with TF32 tensor cores (oracle/compute/options.stack_precision).

PyTorch (cudnn.allow_tf32), TensorFlow (TensorFloat-32 execution) and NGC MXNet (cuDNN's
default math) run them in TF32 there by default, so an fp32 run under those stacks on an
A100 or H100 projects in tf32; on a V100, without a stack, with --mixed-precision or in
ParaDL mode nothing changes.  Checked against NVIDIA's published A100 rows, whose "TF32"
is these frameworks' fp32 commands.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracle.compute.options import stack_precision
from oracle.errors import OracleError
from oracle.load import load_stack, load_system
from oracle.load.stack import parse_stack
from oracle.load.yamlfile import load_yaml
from oracle.vocabulary import BF16, FP16, FP32, TF32

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("stack", ["pytorch", "tensorflow", "mxnet"])
def test_fp32_runs_in_tf32_where_the_gpu_has_it(stack):
    st = load_stack(stack)
    for system in ("dgx-a100-80gb", "dgx-h100-superpod", "hgx-h200"):
        value, why = stack_precision(FP32, st, False, load_system(system))
        assert value == TF32 and why == f"runs in TF32 under stack {stack}"
    # no TF32 tensor cores on a V100 or a P100: fp32 stays fp32
    for system in ("dgx1-v100", "dgx1-p100", "abci"):
        assert stack_precision(FP32, st, False, load_system(system)) == (FP32, "")
    a100 = load_system("dgx-a100-80gb")
    assert stack_precision(FP32, st, True, a100) == (FP32, "")  # --mixed-precision: fp16 convolutions anyway
    for other in (FP16, BF16, TF32):
        assert stack_precision(other, st, False, a100) == (other, "")


@pytest.mark.parametrize("stack", ["paradl", "chainermnx", None])
def test_stacks_without_it_and_no_stack_keep_fp32(stack):
    st = load_stack(stack) if stack else None
    assert stack_precision(FP32, st, False, load_system("dgx-a100-80gb")) == (FP32, "")


def _doc() -> dict:
    return load_yaml(ROOT / "stacks" / "pytorch.yaml", "stack file")


@pytest.mark.parametrize("value", ["fp16", "bf16", 32, "TF-32"])
def test_a_bad_fp32_math_names_the_key(value):
    doc = _doc()
    doc["compute"]["fp32_math"]["value"] = value
    with pytest.raises(OracleError) as e:
        parse_stack(doc, "s.yaml")
    assert "compute.fp32_math.value" in str(e.value) and "s.yaml" in str(e.value)


def test_a_stack_file_may_say_fp32(tmp_path, run):
    """A user's copy with fp32_math: fp32 (NVIDIA_TF32_OVERRIDE=0, allow_tf32 False)
    projects an A100 on its CUDA cores, as --stack none does."""
    text = (ROOT / "stacks" / "pytorch.yaml").read_text().replace(
        "fp32_math: {value: tf32", "fp32_math: {value: fp32", 1
    )
    own = tmp_path / "no_tf32.yaml"
    own.write_text(text)

    def total(stack: str, precision: str = "fp32") -> float:
        r = run("predict", "-m", "resnet50", "-s", "dgx-a100-80gb", "-p", "resnet50_a100_fp16_estimated",
                    "--gpus", "1", "-b", "256", "--precision", precision, "--stack", stack, "-f", "json")  # fmt: skip
        assert r.code == 0, r.err
        return json.loads(r.out)[0]["total_s"]

    assert total(str(own)) > 1.4 * total("pytorch")  # FP32 CUDA cores against TF32 tensor cores
    assert total("pytorch") == total("pytorch", "tf32")


# NVIDIA DeepLearningExamples' ResNet-50 v1.5 on DGX A100, "TF32" (validation/dle-throughput.csv
# lines 2, 4, 110, 112, 147, 149, 151: PyTorch, TensorFlow 1 and MXNet run without AMP, i.e.
# their fp32 commands); the 1-GPU rows fitted the compute model's tf32_efficiency, the others
# (4-8 GPUs) were held out of every fit
DLE_TF32 = [  # (stack, system, GPUs, per-GPU batch, images/s)
    ("pytorch", "dgx-a100-80gb", 1, 256, 938.0),
    ("pytorch", "dgx-a100-80gb", 8, 256, 7248.0),
    ("tensorflow", "dgx-a100-40gb", 1, 256, 909.0),
    ("tensorflow", "dgx-a100-40gb", 8, 256, 7000.0),
    ("mxnet", "dgx-a100-80gb", 1, 512, 1055.78),
    ("mxnet", "dgx-a100-80gb", 4, 512, 4182.30),
    ("mxnet", "dgx-a100-80gb", 8, 512, 8247.44),
]


@pytest.mark.parametrize("stack, system, gpus, batch, measured", DLE_TF32)
def test_fp32_under_the_stack_matches_the_published_a100_rows(tmp_path, run, stack, system, gpus, batch, measured):
    """An fp32 request under the framework's stack projects these rows within 15% (as
    --precision tf32 does); taken literally (--stack none) fp32 is 1.5x or more too slow."""
    profile = tmp_path / "p.yaml"
    r = run("profile", "resnet50", "--estimate", "--system", system, "--batch", str(batch), "-o", str(profile))
    assert r.code == 0, r.err

    def images_per_s(*more: str) -> float:
        p = run("predict", "-m", "resnet50", "-s", system, "-p", str(profile), "--strategy", "data",
                    "--gpus", str(gpus), "-b", str(batch), "-f", "json", *more)  # fmt: skip
        assert p.code == 0, p.err
        return gpus * batch / json.loads(p.out)[0]["iteration_s"]

    fp32 = images_per_s("--precision", "fp32", "--stack", stack)
    assert fp32 == pytest.approx(images_per_s("--precision", "tf32", "--stack", stack), rel=1e-12)
    assert abs(fp32 - measured) / measured < 0.15
    assert images_per_s("--precision", "fp32", "--stack", "none") < measured / 1.5


def test_profile_estimate_says_how_the_stack_runs_it(tmp_path, run):
    """`oracle profile --estimate --stack` writes the compute model's fp32 times and says a
    projection converts them to tf32 on an A100; its summary's stack line is the tf32 one."""
    for system, converts in (("dgx-a100-80gb", True), ("dgx1-v100", False)):
        out = tmp_path / f"{system}.yaml"
        r = run("profile", "resnet50", "--estimate", "--system", system, "--batch", "64", "--stack", "pytorch",
                "-o", str(out))  # fmt: skip
        assert r.code == 0, r.err
        said = "It runs fp32 in tf32 on this GPU: a projection converts these times to tf32."
        assert (said in out.read_text()) == converts
        assert ("with stack pytorch" in r.err + r.out) and (("(in tf32, applied" in r.err + r.out) == converts)
