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



# cards whose datasheets or whitepapers state every figure: (cores, boost GHz, tensor FLOPs per
# SM and clock) -> the library's (fp32, fp16 TFLOPS, SMs) for them
PUBLISHED = {
    "RTX-2080-TI": ((4352, 1.545, 512), (13.4, 53.8, 68)), "RTX-3090": ((10496, 1.695, 512), (35.6, 71, 82)),
    "RTX-A6000": ((10752, 1.800, 1024), (38.7, 154.8, 84)), "RTX-4090": ((16384, 2.520, 512), (82.6, 165.2, 128)),
    "TITAN-X-PASCAL": ((3584, 1.531, None), (10.97, None, 28)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_a_card_from_cores_and_clock_has_its_published_figures(name):
    """gpus._card, which builds the cards a spec page gives by cores and clock, reproduces the
    figures NVIDIA publishes for cards of each generation and kind."""
    from oracle.gpus import _card, lookup

    (cores, ghz, per_sm), (fp32, fp16, sms) = PUBLISHED[name]
    spec = _card(name, cores, ghz, 936, per_sm, "s")
    assert spec.sm_count == sms == lookup(name).sm_count
    assert spec.peak("fp32") == pytest.approx(fp32 * 1e12, rel=0.005)
    assert spec.peak("fp16") == (None if fp16 is None else pytest.approx(fp16 * 1e12, rel=0.005))
    if spec.architecture in ("ampere", "ada"):
        assert spec.peak("tf32") == pytest.approx(spec.peak("fp16") / 2) and spec.peak("bf16") == spec.peak("fp16")
