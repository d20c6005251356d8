"""GPUs before tensor cores (Kepler, Maxwell, Pascal): the architecture a GPU's name or a
system file states, and the conv/fc efficiency the compute model gives it
(KernelConstants.architecture_efficiency; docs/cost-model.md "Before tensor cores")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from oracle.compute import kernels as K
from oracle.compute import kernels_array as KA
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
# conv 256 -> 256 channels, 14x14, at b = 64: y = 256·196 = 50,176, tiles n = 64·50176/16384 = 196 (no split-K),
# w = 196/56 = 3.5 -> waves factor 4/3.5; FLOPs per sample 2·k²·256·50176 (k² = 9 or 1)
CONV = {"name": "C", "input": [256, 14, 14], "dataset": {"name": "d", "samples": 10},
        "layers": [{"name": "c3", "type": "conv", "filters": 256, "kernel": 3, "padding": 1, "bias": False},
                   {"name": "c3s2", "type": "conv", "filters": 256, "kernel": 3, "stride": 2, "padding": 1, "bias": False},
                   {"name": "c1", "type": "conv", "filters": 256, "kernel": 1, "bias": False}]}  # fmt: skip


def _gpu(arch: str) -> GpuSpec:
    return GpuSpec("G", (("fp32", 10.6e12), ("fp16", 21.2e12)), 732e9, 56, architecture=arch)


@pytest.mark.parametrize(("arch", "prec", "eff", "peak"), [
    ("pascal", "fp32", 0.56, 10.6e12), ("pascal", "fp16", 0.56, 21.2e12),  # half2 on the CUDA cores
    ("kepler", "fp32", 0.35, 10.6e12), ("maxwell", "fp32", 0.46, 10.6e12),
    ("volta", "fp32", 0.95, 10.6e12), ("", "fp32", 0.95, 10.6e12), ("volta", "fp16", 0.60, 21.2e12),
])  # fmt: skip
def test_conv_efficiency_by_architecture_by_hand(arch, prec, eff, peak):
    """A 1x1 conv runs at the architecture's efficiency; a 3x3 stride-1 one on Maxwell and
    Pascal as Winograd's F(2x2, 3x3) (2.25x the rate; not on Kepler), a 3x3 stride-2 one not."""
    model = parse_model(CONV, "c.yaml")
    runs_winograd = arch in ("maxwell", "pascal")
    # (k², output elements, waves factor, Winograd gain); c3s2 and c1 see 7x7: 49 tiles, c3s2
    # split-K to 56 blocks (K = 2304: w = 1, waves 1.5), c1 not (K = 256: w = 0.875)
    cases = ((9, 50176, 4 / 3.5, 2.25 if runs_winograd else 1.0), (9, 12544, 1.5, 1.0), (1, 12544, 1.375 / 0.875, 1.0))
    for i, (k2, y, waves, gain) in enumerate(cases):
        layer, info = model.layers[i], model.info[i]
        fw, bw = K.layer_time(layer, info, _gpu(arch), prec, 64)
        expected = 2 * k2 * 256 * y * 64 * waves / (gain * eff * peak)
        assert fw == pytest.approx(expected, rel=1e-12), layer.name
        assert bw == pytest.approx(2 * fw, rel=1e-12)
        fw_a, bw_a = KA.per_sample_array(KA.ModelArrays.of(model), _gpu(arch), prec, 64)
        assert (fw_a[i] * 64, bw_a[i] * 64) == pytest.approx((fw, bw), rel=1e-12)


@pytest.mark.parametrize("arch", ["pascal", "kepler", "volta", ""])
def test_fc_runs_at_the_gemm_efficiency_on_every_architecture(arch):
    """cuBLAS GEMMs reach the same share of the CUDA cores' peak before Volta as on it."""
    model = parse_model(FC, "f.yaml")
    fw, bw = K.layer_time(model.layers[1], model.info[1], _gpu(arch), "fp32", 256)
    assert fw == pytest.approx(1_073_741_824 * 1.5 / (0.95 * 10.6e12), rel=1e-12)
    fw_a, _ = KA.per_sample_array(KA.ModelArrays.of(model), _gpu(arch), "fp32", 256)
    assert fw_a[1] * 256 == pytest.approx(fw, rel=1e-12)


def test_without_the_architecture_table_pascal_runs_at_voltas_efficiency():
    model = parse_model(CONV, "c.yaml")
    k = replace(K.DEFAULT_CONSTANTS, architecture_efficiency=())
    slow = K.layer_time(model.layers[2], model.info[2], _gpu("pascal"), "fp32", 64)[0]
    fast = K.layer_time(model.layers[2], model.info[2], _gpu("pascal"), "fp32", 64, k)[0]
    assert slow / fast == pytest.approx(0.95 / 0.56, rel=1e-12)


@pytest.mark.parametrize(("gpu", "says"), [
    ("Tesla P100-SXM2-16GB", "conv 0.56 of peak (pascal: no tensor cores; 3x3 stride-1 as Winograd, 2.25x fewer"
     " multiplies, stride-1 5x5+ as FFT where faster), fc 0.95, memory 0.9 of bandwidth, batchnorm 0.5, maxpool"
     " 0.22, avgpool 0.22"),
    ("Tesla K80", "conv 0.35 of peak (kepler: no tensor cores; no Winograd, stride-1 5x5+ as FFT where faster), fc 0.95"),
])  # fmt: skip
def test_estimate_on_a_pre_volta_system_says_which_efficiency(run, tmp_path, gpu, says):
    f = tmp_path / "s.yaml"
    f.write_text(SYSTEM.format(model=gpu, extra=""))
    out = tmp_path / "p.yaml"
    r = run("profile", "resnet50", "--estimate", "--system", f, "--batch", "32", "-o", out)
    assert r.code == 0, r.err
    assert says in " ".join(out.read_text().split())


@pytest.mark.parametrize(("model", "extra", "impl", "fused"), [
    ("Tesla P100-SXM2-16GB", "", "", False), ("K80", "", "", False),  # the software of their time
    ("Our accelerator", ", architecture: maxwell", "", False),
    ("Tesla P100-SXM2-16GB", "", "implementation: {fused_activations: true}\n", True),  # the file wins
    ("V100-SXM2-16GB", "", "", True), ("Our accelerator", "", "", True),
    ("V100-SXM2-16GB", "", "implementation: {fused_activations: false}\n", False),
])  # fmt: skip
def test_activations_apart_by_default_before_tensor_cores(tmp_path, model, extra, impl, fused):
    f = tmp_path / "s.yaml"
    f.write_text(SYSTEM.format(model=model, extra=extra) + impl)
    assert load_system(f).implementation.fused_activations is fused


# batchnorm over 64 channels of 56x56 at b = 32, then a 3x3 stride-2 max pooling to 28x28 (fp32):
# batchnorm reads its input twice and writes it, 4·(32·(2+1)·200,704 + 128 parameters) = 77,070,848 B forward;
# the pooling reads 200,704 and writes 50,176 elements, 4·32·250,880 = 32,112,640 B
NORM_POOL = {"name": "N", "input": [64, 56, 56], "dataset": {"name": "d", "samples": 10},
             "layers": [{"name": "bn", "type": "batchnorm"},
                        {"name": "mp", "type": "maxpool", "kernel": 3, "stride": 2, "padding": 1}]}  # fmt: skip


@pytest.mark.parametrize(("arch", "bn_share", "pool_share"), [
    ("kepler", 0.5, 0.22), ("maxwell", 0.5, 0.22), ("pascal", 0.5, 0.22), ("volta", 0.9, 0.9), ("", 0.9, 0.9),
])  # fmt: skip
def test_batchnorm_and_pooling_before_volta_run_at_their_measured_shares(arch, bn_share, pool_share):
    """Before tensor cores batch norm and windowed pooling run at the shares measured for
    unfused kernels (KernelConstants.architecture_memory_efficiency); from Volta on at the
    streaming share, unless a stack sets one."""
    model = parse_model(NORM_POOL, "n.yaml")
    bw_Bps = 732e9
    for i, (nbytes, share) in enumerate(((77_070_848, bn_share), (32_112_640, pool_share))):
        fw, bw = K.layer_time(model.layers[i], model.info[i], _gpu(arch), "fp32", 32)
        assert fw == pytest.approx(nbytes / (share * bw_Bps), rel=1e-12), model.layers[i].name
        assert bw == pytest.approx(2 * fw, rel=1e-12)
        fw_a, bw_a = KA.per_sample_array(KA.ModelArrays.of(model), _gpu(arch), "fp32", 32)
        assert (fw_a[i] * 32, bw_a[i] * 32) == pytest.approx((fw, bw), rel=1e-12)


def test_a_stacks_share_wins_before_volta_too():
    model = parse_model(NORM_POOL, "n.yaml")
    k = replace(K.DEFAULT_CONSTANTS, reduction_memory_efficiency=0.8)
    fw = K.layer_time(model.layers[0], model.info[0], _gpu("pascal"), "fp32", 32, k)[0]
    assert fw == pytest.approx(77_070_848 / (0.8 * 732e9), rel=1e-12)
    fw_a, _ = KA.per_sample_array(KA.ModelArrays.of(model), _gpu("pascal"), "fp32", 32, k)
    assert fw_a[0] * 32 == pytest.approx(fw, rel=1e-12)

