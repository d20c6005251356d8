"""A profile's GPU is the system's GPU when the names agree (oracle.gpus.same_gpu), and then
the system file's figures describe it, whether oracle's GPU library (oracle/gpus.py) names
it or not: the compute model converts the profile (to the run's batch and precision, to the
stack's kernels) from those figures.  Before 2026-11-26 a profile on a GPU the library
lacks was never converted (a stack's separate activations and slower batch norm and pooling
silently did not apply, while its efficiency did; a total was spread by FLOPs), and one on a
library GPU was converted from the library's figures even when the system file, which an
estimate on it used, gave others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _renamed(tmp_path, name: str) -> str:
    text = (REPO / "systems" / "dgx-a100-80gb.yaml").read_text(encoding="utf-8")
    assert "  model: A100-SXM4-80GB\n" in text
    path = tmp_path / f"{name}.yaml"
    path.write_text(text.replace("  model: A100-SXM4-80GB\n", f"  model: {name}\n"), encoding="utf-8")
    return str(path)


def _iteration_s(run, tmp_path, system: str, stack: str) -> float:
    prof = str(tmp_path / f"{Path(system).stem}_{stack}.yaml")
    r = run("profile", "resnet50", "--estimate", "--system", system, "--batch", "64", "--precision", "fp16", "-o", prof)
    assert r.code == 0, r.err
    r = run("predict", "-m", "resnet50", "-s", system, "-p", prof, "--strategy", "data", "--gpus", "8", "-b", "256",
            "--precision", "fp16", "--mixed-precision", "--stack", stack, "-f", "json")  # fmt: skip
    assert r.code == 0, r.err
    (pt,) = json.loads(r.out)
    return pt["iteration_s"]


@pytest.mark.parametrize("stack", ["pytorch", "none"])
def test_a_renamed_gpu_projects_as_the_catalogued_one(run, tmp_path, stack):
    catalogued = _iteration_s(run, tmp_path, "dgx-a100-80gb", stack)
    renamed = _iteration_s(run, tmp_path, _renamed(tmp_path, "LAB-A100-X"), stack)
    assert renamed == pytest.approx(catalogued, rel=1e-9)


def test_the_stack_kernels_apply_on_an_uncatalogued_gpu(run, tmp_path):
    """The conversion to pytorch's kernels runs on the renamed GPU and says so (before, it
    said the profile was used as measured); the numbers are the test above's."""
    system = _renamed(tmp_path, "LAB-A100-Y")
    prof = str(tmp_path / "p.yaml")
    assert run("profile", "resnet50", "--estimate", "--system", system, "--batch", "256", "--precision", "fp16",
               "-o", prof).code == 0  # fmt: skip
    r = run("predict", "-m", "resnet50", "-s", system, "-p", prof, "--strategy", "data", "--gpus", "1", "-b", "256",
            "--precision", "fp16", "--mixed-precision", "--stack", "pytorch")  # fmt: skip
    assert r.code == 0, r.err
    assert "activations not fused" in r.out and "used as measured" not in r.out


def _total_profile(tmp_path, device: str) -> str:
    path = tmp_path / f"total_{device}.yaml"
    path.write_text(f"model: ResNet-50\ndevice: {device}\nframework: test\nsource: a measured total\n"
                    "total:\n  fw_bw_per_sample_s: 0.002\n  wu_per_iteration_s: 0.001\n", encoding="utf-8")  # fmt: skip
    return str(path)


def test_a_total_on_an_uncatalogued_gpu_is_spread_by_the_compute_model(run, tmp_path):
    """A total-only profile is spread over the layers by the compute model's layer times
    on its GPU, by training FLOPs only when no figures for it exist: on a renamed GPU, as
    on the catalogued one."""
    system = _renamed(tmp_path, "LAB-A100-Z")
    out = {}
    for sys_, device in (("dgx-a100-80gb", "A100-SXM4-80GB"), (system, "LAB-A100-Z")):
        r = run("predict", "-m", "resnet50", "-s", sys_, "-p", _total_profile(tmp_path, device), "--strategy",
                "data", "--gpus", "8", "-b", "64", "-f", "json")  # fmt: skip
        assert r.code == 0, r.err
        (out[device],) = json.loads(r.out)
    assert out["LAB-A100-Z"]["iteration_s"] == pytest.approx(out["A100-SXM4-80GB"]["iteration_s"], rel=1e-9)
    r = run("predict", "-m", "resnet50", "-s", system, "-p", _total_profile(tmp_path, "LAB-A100-Z"), "--strategy",
            "data", "--gpus", "8", "-b", "64")  # fmt: skip
    assert "spread over layers by the compute model's layer times" in r.out


def test_a_profile_names_the_gpu_as_cuda_does(run, tmp_path):
    """`oracle profile --device cuda` records the name CUDA reports ("NVIDIA GeForce ...");
    the system file may write the model without the vendor's prefixes: one GPU."""
    from oracle.gpus import same_gpu

    assert same_gpu("NVIDIA GeForce RTX 3090", "RTX-3090") and same_gpu("Tesla K80", "k80")
    assert not same_gpu("RTX-3090", "RTX-3080")
    system = _renamed(tmp_path, "LAB-9000")
    out = {}
    for device in ("LAB-9000", "NVIDIA GeForce LAB 9000"):
        r = run("predict", "-m", "resnet50", "-s", system, "-p", _total_profile(tmp_path, device), "--strategy",
                "data", "--gpus", "8", "-b", "64", "-f", "json")  # fmt: skip
        assert r.code == 0, r.err
        (out[device],) = json.loads(r.out)
    assert out["NVIDIA GeForce LAB 9000"]["iteration_s"] == pytest.approx(out["LAB-9000"]["iteration_s"], rel=1e-9)


def test_a_system_that_restates_a_catalogued_gpu_is_not_converted_twice(run, tmp_path):
    """A system file whose GPU the library names but whose figures differ (a V100 at 14
    TFLOPS fp32, its PCIe clocks, under the SXM2 name): an estimate on that system already
    runs at the file's figures, so it is not converted again from the library's 15.7; the
    projection is the one under a name the library lacks."""
    text = (REPO / "systems" / "dgx1-v100.yaml").read_text(encoding="utf-8")
    assert "    fp32: 15.7" in text and "  model: V100-SXM2-16GB\n" in text
    slow = text.replace("    fp32: 15.7", "    fp32: 14.0", 1)
    out = []
    for name in ("V100-SXM2-16GB", "LAB-V100-14"):
        path = tmp_path / f"{name}.yaml"
        path.write_text(slow.replace("  model: V100-SXM2-16GB\n", f"  model: {name}\n"), encoding="utf-8")
        prof = str(tmp_path / f"{name}_p.yaml")
        assert run("profile", "resnet50", "--estimate", "--system", str(path), "--batch", "64", "--precision", "fp32",
                   "-o", prof).code == 0  # fmt: skip
        r = run("predict", "-m", "resnet50", "-s", str(path), "-p", prof, "--strategy", "data", "--gpus", "8", "-b",
                "128", "--precision", "fp32", "--stack", "pytorch", "-f", "json")  # fmt: skip
        assert r.code == 0, r.err
        out.append(json.loads(r.out)[0]["iteration_s"])
    assert out[0] == pytest.approx(out[1], rel=1e-9)
