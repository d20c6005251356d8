"""A system file that names a GPU oracle's library knows (oracle/gpus.py) gets the figures it
omits from the library: the SPEC's own example (§3.2: `gpu: {model: V100-SXM2-16GB,
memory_GB: 16, peak_TFLOPS: 15.7}`, one fp32 peak, no bandwidth) can be estimated on and
projected in mixed precision.  The file's own figures win; the source says what was filled."""

from __future__ import annotations

import pytest

from oracle.errors import OracleError
from oracle.load import load_system

SPEC_EXAMPLE = """name: ABCI
gpu: {{model: {model}, memory_GB: 16, peak_TFLOPS: 15.7}}
gpus_per_node: 4
nodes: 1088
network:
  - {{name: nvlink, max_gpus: 4,    alpha_s: 9.0e-6,  beta_s_per_byte: 2.0e-11}}
  - {{name: leaf,   max_gpus: 68,   alpha_s: 4.03e-5, beta_s_per_byte: 8.0e-11}}
  - {{name: spine,  max_gpus: 4352, alpha_s: 4.1e-5,  beta_s_per_byte: 8.0e-11}}
contention_factor: 2
"""


def _write(tmp_path, model: str, text: str = SPEC_EXAMPLE) -> str:
    path = tmp_path / f"{model}.yaml"
    path.write_text(text.format(model=model), encoding="utf-8")
    return str(path)


def test_the_spec_example_gets_the_library_figures(tmp_path):
    s = load_system(_write(tmp_path, "V100-SXM2-16GB"))
    assert s.gpu_peak("fp32") == 15.7e12  # the file's
    assert s.gpu_peak("fp16") == 125e12 and s.gpu_memory_bandwidth_Bps == 900e9 and s.gpu_sm_count == 80
    assert "fp16 peak, memory bandwidth, SM count of the V100-SXM2-16GB from oracle's GPU library" in s.source


def test_the_files_figures_win(tmp_path):
    own = "peak_TFLOPS: {{fp32: 14, fp16: 112}}, memory_bandwidth_GB_per_s: 800, sm_count: 79}"
    s = load_system(_write(tmp_path, "V100-SXM2-16GB", SPEC_EXAMPLE.replace("peak_TFLOPS: 15.7}", own)))
    got = (s.gpu_peak("fp32"), s.gpu_peak("fp16"), s.gpu_memory_bandwidth_Bps, s.gpu_sm_count)
    assert got == (14e12, 112e12, 800e9, 79)
    assert "library" not in s.source


def test_an_unknown_gpu_keeps_only_its_figures(tmp_path):
    s = load_system(_write(tmp_path, "LAB-GPU-9"))
    assert s.gpu_peak("fp16") is None and s.gpu_memory_bandwidth_Bps is None and "library" not in s.source


def test_estimate_and_mixed_precision_on_the_spec_example(run, tmp_path):
    system = _write(tmp_path, "V100-SXM2-16GB")
    prof = str(tmp_path / "p.yaml")
    r = run("profile", "resnet50", "--estimate", "--system", system, "--batch", "64", "--precision", "fp16", "-o", prof)
    assert r.code == 0, r.err
    r = run("predict", "-m", "resnet50", "-s", system, "-p", prof, "--strategy", "data", "--gpus", "1,4,64", "-b", "64",
            "--precision", "fp16", "--mixed-precision")  # fmt: skip
    assert r.code == 0, r.err
    # a GPU the library lacks, with no bandwidth: one clear error, as before
    unknown = _write(tmp_path, "LAB-GPU-9")
    r = run("profile", "resnet50", "--estimate", "--system", unknown, "--batch", "64", "-o", str(tmp_path / "q.yaml"))
    assert r.code == 2 and "memory_bandwidth_GB_per_s" in r.err and "oracle list gpus" in r.err
    with pytest.raises(OracleError):
        from oracle.load import load_model
        from oracle.profiling.estimate import estimate

        estimate(load_model("resnet50"), load_system(unknown), compute_efficiency=None, memory_efficiency=None,
                 batch=64, precision="fp32")  # fmt: skip


@pytest.mark.parametrize(("model", "memory", "part"), [
    ("V100", 16, "V100-SXM2-16GB"), ("V100", 32, "V100-SXM2-32GB"), ("Tesla V100", 32, "V100-SXM2-32GB"),
    ("A100", 40, "A100-SXM4-40GB"), ("A100", 80, "A100-SXM4-80GB"), ("A100 80GB", 40, "A100-SXM4-80GB"),
    ("H100", 80, "H100-SXM5-80GB"), ("P100", 16, "P100-SXM2-16GB"),
])  # fmt: skip
def test_a_family_name_takes_the_sxm_part_of_its_memory(tmp_path, model, memory, part):
    from oracle.gpus import lookup

    text = SPEC_EXAMPLE.replace("memory_GB: 16, peak_TFLOPS: 15.7", f"memory_GB: {memory}")
    s = load_system(_write(tmp_path, model.replace(" ", "_"), text.replace("{model}", f'"{model}"')))
    want = lookup(part)
    assert s.gpu_peak("fp32") == want.peak("fp32") and s.gpu_memory_bandwidth_Bps == want.memory_bandwidth_Bps
    assert f"of the {part} (the SXM part of that memory" in s.source


@pytest.mark.parametrize(("name", "entry", "architecture"), [
    ("Tesla P40", "P40-24GB", "pascal"), ("NVIDIA TITAN V", "TITAN-V", "volta"),
    ("Quadro RTX 8000", "QUADRO-RTX-8000", "turing"), ("NVIDIA RTX A6000", "RTX-A6000", "ampere"),
    ("NVIDIA GeForce RTX 3080", "RTX-3080", "ampere"), ("NVIDIA RTX 6000 Ada Generation", "RTX-6000-ADA", "ada"),
    ("NVIDIA A30", "A30", "ampere"), ("NVIDIA L40", "L40", "ada"),
    ("NVIDIA GeForce RTX 2080", "RTX-2080", "turing"), ("NVIDIA GeForce RTX 2080 SUPER", "RTX-2080-SUPER", "turing"),
    ("NVIDIA TITAN Xp", "TITAN-XP", "pascal"), ("GeForce GTX 980 Ti", "GTX-980-TI", "maxwell"),
    ("Tesla P4", "P4", "pascal"), ("NVIDIA RTX A4000", "RTX-A4000", "ampere"),
    ("NVIDIA GeForce RTX 4070 Ti", "RTX-4070-TI", "ada"), ("NVIDIA GeForce RTX 3070", "RTX-3070", "ampere"),
])  # fmt: skip
def test_names_as_cuda_reports_them(name, entry, architecture):
    """A name as CUDA (nvidia-smi, torch.cuda.get_device_name) reports it finds its entry,
    and the entry's generation follows from its name."""
    from oracle.gpus import lookup

    spec = lookup(name)
    assert spec is not None and spec.name == entry and spec.architecture == architecture


def test_other_names_are_no_family():
    from oracle.gpus import lookup_family

    assert lookup_family("A10", 24) is None and lookup_family("A1000", 8) is None and lookup_family("K80", 12) is None


# (CUDA cores, rated boost clock in GHz, SMs, dense fp16 tensor FLOPs per SM and clock with
# fp32 accumulate or None) of the cards whose figures oracle/gpus.py derives from them
DERIVED = {
    "GTX-980-TI": (2816, 1.075, 22, None), "GTX-1070": (1920, 1.683, 15, None), "TITAN-XP": (3840, 1.582, 30, None),
    "RTX-2060": (1920, 1.680, 30, 512), "RTX-2070": (2304, 1.620, 36, 512), "RTX-2080": (2944, 1.710, 46, 512),
    "RTX-2080-SUPER": (3072, 1.815, 48, 512), "RTX-3060": (3584, 1.777, 28, 512), "RTX-3070": (5888, 1.725, 46, 512),
    "RTX-A4000": (6144, 1.5625, 48, 1024), "RTX-A4500": (7168, 1.650, 56, 1024), "RTX-4070-TI": (7680, 2.610, 60, 512),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_derived_figures_are_their_arithmetic(name):
    """fp32 = 2 FLOPs per core and clock; SMs = cores / 128 (64 on Turing); the tensor rate
    per SM and clock as the card of its generation the library takes it from."""
    from oracle.gpus import lookup

    cores, ghz, sms, per_sm = DERIVED[name]
    spec = lookup(name)
    assert spec.peak("fp32") == pytest.approx(2 * cores * ghz * 1e9, rel=0.006)
    assert spec.sm_count == sms == cores // (64 if spec.architecture == "turing" else 128)
    if per_sm is None:
        assert spec.peak("fp16") is None
    else:
        assert spec.peak("fp16") == pytest.approx(per_sm * sms * ghz * 1e9, rel=0.006)
