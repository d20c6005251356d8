"""GPUs before tensor cores (Kepler, Maxwell, Pascal): the architecture a GPU's name or a
system file states, and the conv/fc efficiency the compute model gives it
(KernelConstants.architecture_efficiency; docs/cost-model.md "Before tensor cores")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from oracle.compute import kernels as K
from oracle.compute.conversion import system_spec
from oracle.gpus import GpuSpec, architecture_of, lookup
from oracle.load import load_system
from oracle.load.model import parse_model
from oracle.vocabulary import ARCHITECTURES

SYSTEM = """name: S
gpu: {{model: "{model}", memory_GB: 16, peak_TFLOPS: {{fp32: 10.6, fp16: 21.2}}, memory_bandwidth_GB_per_s: 732,
       sm_count: 56{extra}}}
gpus_per_node: 1
nodes: 1
network: [{{name: n, max_gpus: 1, alpha_s: 1.0e-6, beta_s_per_byte: 1.0e-10}}]
"""


@pytest.mark.parametrize(("name", "arch"), [
    ("Tesla K80", "kepler"), ("K40", "kepler"), ("M40", "maxwell"), ("NVIDIA GeForce GTX TITAN X", "maxwell"),
    ("Tesla P100-SXM2-16GB", "pascal"), ("P100-PCIE-16GB", "pascal"), ("P40-24GB", "pascal"), ("Tesla P4", "pascal"),
    ("GeForce GTX 1080 Ti", "pascal"), ("NVIDIA TITAN X (Pascal)", "pascal"), ("TITAN Xp", "pascal"),
    ("V100-SXM2-16GB", "volta"), ("Tesla T4", "turing"), ("A100-SXM4-80GB", "ampere"), ("NVIDIA A10", "ampere"),
    ("NVIDIA GeForce RTX 3090", "ampere"), ("NVIDIA RTX A6000", "ampere"), ("NVIDIA L4", "ada"),
    ("RTX 6000 Ada", "ada"), ("NVIDIA H100 80GB HBM3", "hopper"), ("NVIDIA H200", "hopper"), ("B200", "blackwell"),
])  # fmt: skip
def test_architecture_from_the_names_gpus_go_by(name, arch):
    assert architecture_of(name) == arch


@pytest.mark.parametrize("name", ["G", "A2000", "P1000x", "cpu", "", "H1000"])
def test_a_name_of_no_known_gpu_has_no_architecture(name):
    """A further digit makes another product: no A2 in "A2000", no H100 in "H1000"."""
    assert architecture_of(name) == ""


def test_every_library_gpu_has_its_architecture():
    for name, arch in (("K80", "kepler"), ("M40", "maxwell"), ("P100-SXM2-16GB", "pascal"),
                       ("V100-SXM2-16GB", "volta"), ("A100-SXM4-40GB", "ampere"), ("H200-SXM-141GB", "hopper")):  # fmt: skip
        assert lookup(name).architecture == arch
    assert {a for a, _ in K.DEFAULT_CONSTANTS.architecture_efficiency} <= set(ARCHITECTURES)


def test_system_file_architecture_wins_over_the_name(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SYSTEM.format(model="Our accelerator", extra=""))
    assert system_spec(load_system(f)).architecture == ""  # unknown name: the default constants
    f.write_text(SYSTEM.format(model="Our accelerator", extra=", architecture: pascal"))
    assert system_spec(load_system(f)).architecture == "pascal"
    f.write_text(SYSTEM.format(model="P100-SXM2-16GB", extra=""))
    assert system_spec(load_system(f)).architecture == "pascal"


def test_unknown_architecture_is_one_clear_error(run, tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SYSTEM.format(model="G", extra=", architecture: fermi"))
    out = tmp_path / "p.yaml"
    r = run("profile", "resnet50", "--estimate", "--system", f, "--batch", "32", "-o", out)
    assert r.code == 2 and r.exception is None and not out.exists()
    assert "gpu.architecture" in r.err and "pascal" in r.err and "s.yaml" in r.err


# fc of 2048 -> 1024 at b = 256: FLOPs 2·2048·1024·256 = 1,073,741,824; tiles n = 256·1024/16384 = 16,
# K = 2048 -> split-K min(56/16, 2048/256) = 3.5: blocks 56, w = 1 -> waves factor 1.5
FC = {"name": "F", "input": [2048, 1, 1], "dataset": {"name": "d", "samples": 10},
      "layers": [{"name": "fl", "type": "flatten"}, {"name": "fc", "type": "fc", "outputs": 1024, "bias": False}]}  # fmt: skip


@pytest.mark.parametrize(("arch", "prec", "eff", "peak"), [
    ("pascal", "fp32", 0.57, 10.6e12), ("pascal", "fp16", 0.57, 21.2e12),  # half2 on the CUDA cores
    ("kepler", "fp32", 0.30, 10.6e12), ("volta", "fp32", 0.95, 10.6e12), ("", "fp32", 0.95, 10.6e12),
    ("volta", "fp16", 0.60, 21.2e12),  # tensor cores: the V100-fitted efficiency
])  # fmt: skip
def test_conv_fc_efficiency_by_architecture_by_hand(arch, prec, eff, peak):
    gpu = GpuSpec("G", (("fp32", 10.6e12), ("fp16", 21.2e12)), 732e9, 56, architecture=arch)
    model = parse_model(FC, "f.yaml")
    fw, bw = K.layer_time(model.layers[1], model.info[1], gpu, prec, 256)
    assert fw == pytest.approx(1_073_741_824 * 1.5 / (eff * peak), rel=1e-12)
    assert bw == pytest.approx(2 * fw, rel=1e-12)
    fw_a, bw_a = K.per_sample_array(K.ModelArrays.of(model), gpu, prec, 256)
    assert (fw_a[1] * 256, bw_a[1] * 256) == pytest.approx((fw, bw), rel=1e-12)


def test_without_the_architecture_table_pascal_runs_at_voltas_efficiency():
    gpu = GpuSpec("G", (("fp32", 10.6e12),), 732e9, 56, architecture="pascal")
    model = parse_model(FC, "f.yaml")
    k = replace(K.DEFAULT_CONSTANTS, architecture_efficiency=())
    slow = K.layer_time(model.layers[1], model.info[1], gpu, "fp32", 256)[0]
    fast = K.layer_time(model.layers[1], model.info[1], gpu, "fp32", 256, k)[0]
    assert slow / fast == pytest.approx(0.95 / 0.57, rel=1e-12)


def test_estimate_on_a_pascal_system_says_which_efficiency(run, tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SYSTEM.format(model="Tesla P100-SXM2-16GB", extra=""))
    out = tmp_path / "p.yaml"
    r = run("profile", "resnet50", "--estimate", "--system", f, "--batch", "32", "-o", out)
    assert r.code == 0, r.err
    assert "conv/fc 0.57 of peak (pascal: no tensor cores)" in out.read_text().replace("\n  ", " ")
