"""The framework memory model (issue 12; SPEC §4.6): what PyTorch keeps per GPU.

- saved activations per sample against PyTorch's own saved-tensor bytes of torchvision's
  models (reference figures below; re-measured when torchvision is installed) and of
  oracle's own networks, layer by layer (when torch is installed);
- hand-computed memory of a small model in every part;
- real configurations that ran are feasible; configurations 2x over a GPU are flagged;
- the largest batch that fits is the largest that fits;
- bad input is one clear error.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from oracle.compute.memory import saved_activations
from oracle.load import load_model
from oracle.load.model import parse_model

ROOT = Path(__file__).resolve().parent.parent

# Bytes per sample PyTorch saves for the backward of torchvision's models (unique
# storages, parameters and buffers excluded), measured with
#   python scripts/measure_saved_tensors.py --batch 4 resnet50 resnet152 vgg16 alexnet inception_v3
# on torch 2.14.1 / torchvision 0.29.1, CPU, fp32, 2026-11-23.
TORCHVISION_SAVED_BYTES = {
    "resnet50": 85_962_624,
    "resnet152": 177_581_952,
    "vgg16": 73_355_264,
    "alexnet": 3_741_184,
    "inception_v3": 98_215_084,
}
TOLERANCE = 0.15  # the issue's ±15%; the rules land within 2.1% (alexnet), most within 0.2%


def model_saved_bytes(name: str) -> float:
    return saved_activations(load_model(name)).bytes_per_sample(4)


@pytest.mark.parametrize("name", sorted(TORCHVISION_SAVED_BYTES))
def test_saved_bytes_match_pytorch(name):
    ref = TORCHVISION_SAVED_BYTES[name]
    got = model_saved_bytes(name)
    assert abs(got / ref - 1) <= TOLERANCE, (name, got, ref)
    assert abs(got / ref - 1) <= 0.025, "the rules were within 2.5% when written; a change moved them"


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None, reason="needs torchvision")
@pytest.mark.parametrize("name", sorted(TORCHVISION_SAVED_BYTES))
def test_reference_figures_remeasured(name):
    """Re-measure the reference figures (needs torch + torchvision)."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from measure_saved_tensors import saved_bytes_per_sample
    finally:
        sys.path.pop(0)
    measured = saved_bytes_per_sample(name, batch=4)
    assert measured == pytest.approx(TORCHVISION_SAVED_BYTES[name], rel=0.01)
    assert abs(model_saved_bytes(name) / measured - 1) <= TOLERANCE


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
@pytest.mark.parametrize("name", ["cifar_resnet20", "alexnet", "resnet50"])
def test_rules_match_oracle_networks_layer_by_layer(name):
    """oracle profile's saved-tensor measurement of oracle's own network agrees with the
    rules in total and per layer (a few kB: BatchNorm's per-channel statistics), but for
    dropout: on the CPU PyTorch does not run the fused kernel that keeps a 1-byte mask
    (what GPUs do, and what the rules count) but multiplies by a 4-byte noise tensor."""
    import torch

    from oracle.profiling.saved import saved_bytes_per_layer
    from oracle.profiling.torchnet import build_network

    m = load_model(name)
    net = build_network(m)
    net.train()
    measured = np.array(saved_bytes_per_layer(torch, net, torch.randn(2, *m.input_shape)))
    s = saved_activations(m)
    rules = 4 * s.elements + s.fixed_bytes
    assert measured.sum() == pytest.approx(rules.sum(), rel=0.02)
    not_dropout = np.array([layer.type != "dropout" for layer in m.layers])
    assert np.abs(measured - rules)[not_dropout].max() <= 0.01 * rules.max()


SMALL = """
name: Small
input: [3, 8, 8]
dataset: {name: toy, samples: 1000}
layers:
  - {name: conv1, type: conv, filters: 4, kernel: 3, padding: 1}
  - {name: bn1, type: batchnorm}
  - {name: relu1, type: relu}
  - {name: pool1, type: maxpool, kernel: 2, stride: 2}
  - {name: flat, type: flatten}
  - {name: drop, type: dropout}
  - {name: fc, type: fc, outputs: 10}
"""


def small_model():
    import yaml

    return parse_model(yaml.safe_load(SMALL), "small.yaml")


def test_saved_elements_by_hand():
    """conv1 saves the input (192, charged to its first reader); bn1 its input, conv1's
    output (256, charged to conv1, its producer); relu1 its output (256, charged to relu1 — in place it shares bn1's output storage, which nobody else
    keeps); pool1 its input (relu1's output, already saved) and int64 indices (64 x 8 B);
    flatten is a view; dropout keeps a 1-byte mask (64); fc its input, dropout's output
    (64)."""
    s = saved_activations(small_model())
    assert list(s.elements) == [192 + 256, 0, 256, 0, 0, 64, 0]
    assert list(s.fixed_bytes) == [0, 0, 0, 512, 0, 64, 0]
    assert s.bytes_per_sample(4) == 4 * (192 + 256 + 256 + 64) + 512 + 64


SMALL_SYSTEM = """
name: One
gpu: {model: G, memory_GB: 1}
gpus_per_node: 4
nodes: 4
network:
  - {name: node, max_gpus: 4, alpha_s: 1.0e-5, beta_s_per_byte: 1.0e-10}
  - {name: net, max_gpus: 16, alpha_s: 1.0e-5, beta_s_per_byte: 1.0e-9}
framework: {cuda_context_GB: 0.25, workspace_GB: 0.125, allocator_overhead: 0.5}
"""


def small_point(strategy: str, gpus: int, batch: float, **options):
    import yaml

    from oracle.compute.context import Options
    from oracle.compute.sweep import sweep
    from oracle.load.system import parse_system
    from oracle.model import LayerTimes

    m = small_model()
    s = parse_system(yaml.safe_load(SMALL_SYSTEM), "one.yaml")
    times = tuple(LayerTimes(1e-6, 2e-6, 0.0) for _ in m.layers)
    (pt,) = sweep(m, s, times, [gpus], strategy, batch=batch, options=Options(**options))
    return m, pt


def test_data_parallel_memory_by_hand():
    """data on 2 GPUs, B = 16 (8 per GPU), fp32 and momentum:
    activations 8 x (4·768 + 576); the backward's peak adds 8 x 4 x 304 elements, at relu1:
    its working set |x|+|y| = 256 + 256, less what the layers after it saved and the
    backward has freed by then (pool1's 512 B of indices, dropout's 4·64 + 64 B: 832 B =
    208 elements; bn1's working set is as large, with 464 elements freed, conv1's a
    smaller one with as many); weights, gradients and DDP's bucket copy 4 B each, the
    momentum 4 B per parameter; the allocator 50% of all those; workspace and context."""
    m, pt = small_point("data", 2, 16.0, optimizer="momentum")
    w = m.parameters
    act = 8 * (4 * 768 + 576)
    trans = 8 * 4 * (256 + 256 - (512 + 4 * 64 + 64) / 4)
    tensors = act + trans + 4 * w * 4
    parts = pt.detail("memory")
    assert parts["activations_bytes"] == act
    assert parts["transient_bytes"] == trans
    assert parts["weights_bytes"] == parts["gradients_bytes"] == parts["buffers_bytes"] == 4 * w
    assert parts["optimizer_bytes"] == 4 * w
    assert parts["allocator_bytes"] == pytest.approx(0.5 * tensors)
    assert parts["workspace_bytes"] == 0.125e9 and parts["cuda_context_bytes"] == 0.25e9
    assert pt.memory_bytes == pytest.approx(1.5 * tensors + 0.375e9)
    assert pt.memory_model == "framework"
    # the largest per-GPU batch: (1e9 - fixed) / per-sample bytes, per sample (act+trans)·1.5
    per_sample = 1.5 * (act + trans) / 8
    fixed = pt.memory_bytes - 8 * per_sample
    assert pt.detail("max_batch_per_gpu") == math.floor((1e9 - fixed) / per_sample)


def test_serial_has_no_gradient_buckets_and_mixed_precision_halves_activations():
    m, fp32 = small_point("serial", 1, 8.0)
    _, mixed = small_point("serial", 1, 8.0, mixed_precision=True)
    a, b = fp32.detail("memory"), mixed.detail("memory")
    assert a["buffers_bytes"] == 0.0
    assert b["activations_bytes"] == 8 * (2 * 768 + 576)  # 2-byte activations, masks/indices as they are
    assert b["weights_bytes"] == 2 * m.parameters and b["optimizer_bytes"] == 4 * m.parameters  # fp32 master


def test_framework_activations_never_exceed_paradls_bound():
    for name in ("resnet50", "vgg16", "inception_v3", "cosmoflow256", "meshtangling"):
        m = load_model(name)
        bound = 2 * sum(i.input_elements + i.output_elements for i in m.info)
        s = saved_activations(m)
        assert s.elements.sum() + s.fixed_bytes.sum() / 4 <= bound / 2, name


@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 512), strategy=st.sampled_from(["data", "data+spatial", "data+filter", "pipeline", "spatial"]))
def test_memory_grows_with_the_batch_and_max_batch_is_the_largest_that_fits(b, strategy):
    pts = oracle.predict("resnet50", "abci", "resnet50_v100", gpus=[8], strategies=strategy, batch_per_gpu=b)
    more = oracle.predict("resnet50", "abci", "resnet50_v100", gpus=[8], strategies=strategy, batch_per_gpu=b + 1)
    for p, q in zip(pts, more):
        assert q.memory_bytes > p.memory_bytes
        best = p.detail("max_batch_per_gpu")
        if strategy == "pipeline" or best is None or best < 1:
            continue  # the pipeline's default S = min(B, 4p) moves with B
        (at,) = [x for x in oracle.predict("resnet50", "abci", "resnet50_v100", gpus=[8], strategies=strategy,
                                           batch_per_gpu=best) if (x.p1, x.p2) == (p.p1, p.p2)]  # fmt: skip
        (over,) = [x for x in oracle.predict("resnet50", "abci", "resnet50_v100", gpus=[8], strategies=strategy,
                                             batch_per_gpu=best + 1) if (x.p1, x.p2) == (p.p1, p.p2)]  # fmt: skip
        assert at.memory_bytes <= 16e9 < over.memory_bytes


# -- real configurations -------------------------------------------------------------


def test_readme_command_ranks_every_gpu_count():
    pts = oracle.predict("resnet50", "abci", "resnet50_v100", gpus="4-1024", batch_per_gpu=32)
    assert {p.gpus for p in pts if p.rank == 1} == {4, 8, 16, 32, 64, 128, 256, 512, 1024}
    (data,) = [p for p in pts if p.gpus == 8 and p.strategy == "data"]
    # 32 samples x PyTorch's 86 MB: 2.75 GB of saved activations, within 15%
    assert data.detail("memory")["activations_bytes"] == pytest.approx(32 * TORCHVISION_SAVED_BYTES["resnet50"], rel=0.15)
    assert data.memory_bytes < 6e9


# (model, precision, per-GPU batch, GPU memory GB): training runs published by NVIDIA
# DeepLearningExamples @ 729963dd (PyTorch/TensorFlow/MXNet ConvNets READMEs and
# configs.yml; ../shared/data/public-gpu/dle_training_throughput.csv) and ParaDL's ABCI runs
RAN = [
    ("resnet50", "fp32", 112, 32), ("resnet50", "fp32", 128, 16), ("resnet50", "fp32", 96, 16),
    ("resnet50", "fp32", 128, 32), ("resnet50", "mixed", 256, 16), ("resnet50", "mixed", 192, 16),
    ("resnet50", "mixed", 256, 32), ("resnet50", "mixed", 256, 40), ("resnet50", "tf32", 256, 40),
    ("resnet50", "tf32", 256, 80), ("resnet50", "mixed", 512, 80), ("resnet50", "tf32", 512, 80),
    ("resnet50", "mixed", 208, 16),  # public fp16 runs at 208 per 16 GB V100 (issue 12)
    ("resnet50", "fp32", 64, 16),  # ParaDL's ResNet-50 runs on ABCI
    ("resnet152", "fp32", 32, 16),
]


def _system(memory_GB: float) -> str:
    return textwrap.dedent(f"""
        name: V{memory_GB}
        gpu: {{model: G{memory_GB}, memory_GB: {memory_GB}}}
        gpus_per_node: 8
        nodes: 16
        network:
          - {{name: node, max_gpus: 8, alpha_s: 1.0e-5, bandwidth_GB_per_s: 100}}
          - {{name: net, max_gpus: 128, alpha_s: 1.0e-5, bandwidth_GB_per_s: 10}}
    """)


@pytest.mark.parametrize("model,precision,b,memory_GB", RAN)
def test_configurations_that_ran_fit(tmp_path, model, precision, b, memory_GB):
    sys_file = tmp_path / "s.yaml"
    sys_file.write_text(_system(memory_GB))
    profile = tmp_path / "p.yaml"
    name = load_model(model).name
    profile.write_text(f"model: {name}\ntotal: {{fw_bw_per_sample_s: 0.003}}\n")
    kw = {"mixed_precision": True} if precision == "mixed" else {}  # tf32 keeps fp32 tensors
    pts = oracle.predict(model, str(sys_file), str(profile), gpus=[8], strategies="data", batch_per_gpu=b, **kw)
    assert all(p.feasible for p in pts), [p.limits for p in pts]
    # and twice the GPU's memory is flagged, with the reason
    (p,) = pts
    over = 2 * p.detail("max_batch_per_gpu") + 2
    (q,) = oracle.predict(model, str(sys_file), str(profile), gpus=[8], strategies="data", batch_per_gpu=over, **kw)
    assert q.memory_bytes > 2 * memory_GB * 1e9 * 0.95
    assert [lim.code for lim in q.limits] == ["memory"]
    assert f"of {memory_GB:.1f} GB GPU memory" in q.limits[0].reason


def test_paradl_runs_that_ran_fit_under_the_framework_model():
    """Every measured ParaDL run (VGG16, AlexNet; data and data+spatial up to 2048
    samples per node) fits."""
    rows = list(csv.DictReader(open(ROOT / "validation" / "abci-paradl.csv")))
    flagged = {"framework": 0}
    for r in rows:
        p2 = int(r["p2"]) if r["p2"] else None
        for mm in flagged:
            pts = oracle.predict(r["model"], r["system"], r["profile"], gpus=[int(r["gpus"])], strategies=r["strategy"],
                                 batch=float(r["global_batch"]), p2=p2, memory_model=mm)  # fmt: skip
            flagged[mm] += sum(1 for p in pts if any(lim.code == "memory" for lim in p.limits))
    assert flagged["framework"] == 0


def test_search_resnet152_finds_a_feasible_configuration():
    r = run("search", "-m", "resnet152", "-s", "abci", "-p", "resnet50_v100", "--gpus", "1024", "-b", "32")
    assert r.exit_code == 2  # the profile is ResNet-50's: a clear error, not a crash
    profile = ROOT / "tests" / "data" / "resnet152_total.yaml"
    r = run("search", "-m", "resnet152", "-s", "abci", "-p", str(profile), "--gpus", "1024", "-b", "32",
            "--format", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "No feasible configuration" not in r.output
    assert json.loads(r.out)


# -- output and errors ---------------------------------------------------------------


def run(*args):
    r = run_cli(*args)
    r.output = r.out + r.err
    r.exit_code = r.code
    return r


RESNET = ("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "8")


def test_every_json_and_csv_point_has_the_memory_model_and_breakdown():
    r = run(*RESNET, "--format", "json")
    pts = json.loads(r.output)
    assert all(p["memory_model"] == "framework" and p["memory_breakdown"]["activations_bytes"] > 0 for p in pts)
    assert all(p["max_batch_per_gpu"] is None or p["max_batch_per_gpu"] >= 0 for p in pts)
    r = run(*RESNET, "--format", "json", "--memory-model", "paradl")
    assert all(p["memory_model"] == "paradl" and "activations_bytes" in p["memory_breakdown"] for p in json.loads(r.output))
    r = run(*RESNET, "--format", "csv")
    header, first = r.output.splitlines()[:2]
    for col in ("memory_model", "max_batch_per_gpu", "activations_bytes", "cuda_context_bytes"):
        assert col in header.split(",")
    assert "framework" in first


def test_table_says_which_memory_model_and_shows_max_batch():
    r = run(*RESNET, "--max-batch", "--width", "200")
    assert r.exit_code == 0
    assert "memory: framework model" in r.output and "max b/GPU" in r.output
    assert "tensors saved for the backward (by layer type)" in " ".join(r.output.split())
    r = run(*RESNET, "--memory-model", "paradl", "--memory-reuse", "0.5", "--width", "200")
    assert "memory: ParaDL bound, γ = 0.5" in r.output


def test_show_model_reports_saved_bytes_and_largest_batch():
    r = run("show", "model", "resnet50", "-s", "abci", "--width", "160")
    assert r.exit_code == 0, r.output
    assert "saved for the backward: 85.9 MB per sample" in r.output
    # (16e9 - 0.8e9 workspace and context - 1.1 x 8 B x 25.56M weights and gradients) /
    # (1.1 x (85.9 MB saved + 0.79 MB the backward's peak adds, at res5c)) = 157
    assert "largest batch per 16 GB GPU of ABCI: fp32 157 (one GPU), 155 (data parallel)" in r.output
    d = json.loads(run("show", "model", "alexnet", "-s", "abci", "-f", "json").output)
    assert d["saved_bytes_per_sample"] == pytest.approx(model_saved_bytes("alexnet"))
    assert d["max_batch_per_gpu"]["fp32"]["one_gpu"] > 1000


def _error(r, *words):
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    for w in words:
        assert w in r.output, (w, r.output)


def test_bad_memory_input(tmp_path):
    _error(run(*RESNET, "--memory-model", "nope"), "--memory-model")
    _error(run(*RESNET, "--memory-reuse", "0.5"), "--memory-reuse", "--memory-model paradl")
    doc = (ROOT / "systems" / "abci.yaml").read_text() + "\nframework: {cuda_context_GB: -1}\n"
    (tmp_path / "s.yaml").write_text(doc)
    out = tmp_path / "out.json"
    _error(run("predict", "-m", "resnet50", "-s", str(tmp_path / "s.yaml"), "-p", "resnet50_v100", "-o", str(out)),
           "framework.cuda_context_GB", ">= 0")  # fmt: skip
    assert not out.exists()
    (tmp_path / "s2.yaml").write_text((ROOT / "systems" / "abci.yaml").read_text() + "\nframework: {allocator: 1}\n")
    _error(run("show", "system", str(tmp_path / "s2.yaml")), "framework", "allocator")


def test_profile_memory_must_cover_every_layer(tmp_path):
    m = load_model("cifar_resnet20")
    lines = [f"model: {m.name}", "layers:"]
    for i, layer in enumerate(m.layers):
        saved = ", saved_bytes: 1000" if i != 3 else ""
        lines.append(f"  {layer.name}: {{fw_s: 1.0e-6, bw_s: 2.0e-6{saved}}}")
    (tmp_path / "p.yaml").write_text("\n".join(lines) + "\n")
    _error(run("predict", "-m", "cifar_resnet20", "-s", "abci", "-p", str(tmp_path / "p.yaml")),
           f"layers.{m.layers[3].name}", "saved_bytes")  # fmt: skip


def test_measured_profile_memory_overrides_the_estimate(tmp_path):
    m = load_model("cifar_resnet20")
    lines = [f"model: {m.name}", "layers:"]
    for layer in m.layers:
        lines.append(f"  {layer.name}: {{fw_s: 1.0e-6, bw_s: 2.0e-6, saved_bytes: 1000}}")
    (tmp_path / "p.yaml").write_text("\n".join(lines) + "\n")
    (pt,) = oracle.predict("cifar_resnet20", "abci", str(tmp_path / "p.yaml"), gpus=[1], strategies="serial", batch=10)
    assert pt.detail("memory")["activations_bytes"] == pytest.approx(10 * 1000 * len(m.layers))
    (half,) = oracle.predict("cifar_resnet20", "abci", str(tmp_path / "p.yaml"), gpus=[1], strategies="serial",
                             batch=10, mixed_precision=True)  # fmt: skip
    assert half.detail("memory")["activations_bytes"] == pytest.approx(5 * 1000 * len(m.layers))
    r = run("predict", "-m", "cifar_resnet20", "-s", "abci", "-p", str(tmp_path / "p.yaml"), "--gpus", "1",
            "--width", "200")  # fmt: skip
    assert "measured by the profile" in " ".join(r.output.split())


def test_readme_memory_table_is_the_benchmarks_output():
    """The README's measured-versus-modelled tables are what benchmarks/memory_model.py
    prints, and its PyTorch figures are this test's reference figures."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import memory_model
    finally:
        sys.path.pop(0)
    assert memory_model.markdown() in (ROOT / "docs" / "memory.md").read_text()
    with open(ROOT / "validation" / "pytorch-saved-bytes.csv") as f:
        assert {r["model"]: int(r["saved_bytes_per_sample"]) for r in csv.DictReader(f)} == TORCHVISION_SAVED_BYTES


@pytest.mark.parametrize("strategy,p2", [("data", None), ("data+filter", 2), ("data+filter", 4)])
def test_layerwise_memory_equals_the_strategy(strategy, p2):
    """A uniform per-layer assignment holds what the strategy holds (framework model);
    spatial splits differ by the halo rows and the gathered head input, which the
    per-layer search does not count."""
    from oracle.compute.binding import bind_profile
    from oracle.compute.context import Context, Options
    from oracle.compute.layerwise.layerwise import Dist, evaluate
    from oracle.compute.sweep import sweep
    from oracle.load import load_profile, load_system

    m, s = load_model("resnet50"), load_system("abci")
    times = bind_profile(m, load_profile("resnet50_v100"))
    ctx = Context(m, s, times, Options(), "total")
    p, B = 16, 16 * 32.0
    dist = Dist.data(p) if p2 is None else Dist("filter", p // p2, p2)
    (pt,) = sweep(m, s, times, [p], strategy, batch=B, p2=p2)
    assert evaluate(ctx, p, B, [dist] * ctx.G).point.memory_bytes == pytest.approx(pt.memory_bytes, rel=1e-9)


def test_every_published_training_run_fits_its_gpu():
    """Every training run of validation/dle-throughput.csv (NVIDIA DeepLearningExamples:
    PyTorch, TensorFlow, MXNet, PaddlePaddle; 1-80 GPUs) of a shipped model — ResNet-50,
    ResNeXt-101 32x4d, SE-ResNeXt-101 32x4d, EfficientNet-B0 — fits the GPU of the
    shipped system of its kind under the framework model, at its per-GPU batch and
    precision (37 distinct configurations when written; SE-ResNeXt-101 at 64 in fp32 on
    a 16 GB V100 is the tightest: 66 would fit)."""
    import tempfile

    models = {"resnet50": "resnet50", "resnet50v1.5": "resnet50", "resnext101-32x4d": "resnext101_32x4d",
              "se-resnext101-32x4d": "se_resnext101_32x4d", "efficientnet-b0": "efficientnet_b0"}  # fmt: skip
    systems = {"V100 16GB": "dgx1-v100", "V100 32GB": "dgx2-v100", "A100 40GB": "dgx-a100-40gb",
               "A100 80GB": "dgx-a100-80gb"}  # fmt: skip
    with open(ROOT / "validation" / "dle-throughput.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["model"] in models and r["gpu"] in systems
                and r["per_gpu_batch"] and r["precision"] != "AMP+ASP"]  # fmt: skip
    configs = {(models[r["model"]], systems[r["gpu"]], int(r["per_gpu_batch"]), r["precision"] == "AMP") for r in rows}
    assert len(configs) >= 35
    with tempfile.TemporaryDirectory() as tmp:
        for model, sys_name, b, mixed in sorted(configs):
            profile = Path(tmp) / f"{model}.yaml"
            profile.write_text(f"model: {load_model(model).name}\ntotal: {{fw_bw_per_sample_s: 0.003}}\n")
            (p,) = oracle.predict(model, sys_name, str(profile), gpus=[8], strategies="data", batch_per_gpu=b,
                                  mixed_precision=mixed)  # fmt: skip
            assert p.feasible, (model, sys_name, b, mixed, p.limits)


@pytest.mark.parametrize("name", ["resnet50", "vgg16", "inception_v3", "alexnet", "mobilenet_v2"])
def test_the_backward_peak_adds_no_more_than_the_largest_working_set(name):
    """max_l (delta t_l n - saved after l) lies between the last layer's working set (where
    nothing after it is freed) and the largest working set (the old bound); pipeline stages
    over one range and the per-layer assignment with equal samples agree with it."""
    from oracle.compute.memory import (
        assignment_excess_bytes,
        excess_bytes,
        excess_coefficients,
        stages_excess,
        transient_elements,
    )

    m = load_model(name)
    s = saved_activations(m)
    t = transient_elements(m)
    per = 4 * s.elements + s.fixed_bytes
    every = np.ones(len(t), dtype=bool)
    got = excess_bytes(excess_coefficients(per, t, 4.0, every), 8, 0)
    assert 4 * 8 * t[-1] <= got <= 4 * 8 * t.max()
    pre = np.concatenate([[0.0], np.cumsum(per)])
    assert 4 * 8 * stages_excess(pre, t, 4.0, np.array([0]), np.array([len(t)]))[0] == pytest.approx(got)
    assert assignment_excess_bytes(per, t, 4.0, np.full(len(t), 8.0)) == pytest.approx(got)


@given(st.data())
@settings(max_examples=60, deadline=None)
def test_a_split_peak_is_the_per_layer_assignments(data):
    """With the layers of a mask holding n_in samples and the others n_out, the two-number
    form (strategies, sweeps) equals the per-layer assignment's (the layer-wise search)."""
    from oracle.compute.memory import assignment_excess_bytes, excess_bytes, excess_coefficients

    g = data.draw(st.integers(1, 12))
    per = np.array(data.draw(st.lists(st.floats(0, 1e3), min_size=g, max_size=g)))
    t = np.array(data.draw(st.lists(st.floats(0, 1e3), min_size=g, max_size=g)))
    inside = np.array(data.draw(st.lists(st.booleans(), min_size=g, max_size=g)))
    n_in, n_out = data.draw(st.floats(0, 64)), data.draw(st.floats(0, 64))
    two = excess_bytes(excess_coefficients(per, t, 2.0, inside), n_in, n_out)
    held = np.where(inside, n_in, n_out)
    assert two == pytest.approx(assignment_excess_bytes(per, t, 2.0, held), rel=1e-9, abs=1e-6)
    rows = excess_bytes(excess_coefficients(per, t, 2.0, inside), np.array([n_in, n_in]), np.array([n_out, 0.0]))
    assert rows[0] == pytest.approx(two, rel=1e-9, abs=1e-6)


def test_resnet50_peak_matches_pytorchs_measured_peak_allocated():
    """ResNet-50 at batch 256, fp32, SGD with momentum: PyTorch's peak allocated on the H200
    (validation/gpu-training-steps.csv, 22.49-22.50 GB) against oracle's tensors: the
    backward's peak adds 0.79 MB per sample at res5c, where the largest working set (conv1's
    and bn1's, 9.6 MB) made it 24.8 GB before."""
    from oracle.compute.memory import excess_bytes, excess_coefficients, transient_elements

    m = load_model("resnet50")
    s = saved_activations(m)
    act = 256 * s.bytes_per_sample(4)
    t = transient_elements(m)
    per = 4 * s.elements + s.fixed_bytes
    trans = excess_bytes(excess_coefficients(per, t, 4.0, np.ones(len(t), dtype=bool)), 256, 0)
    weights = 3 * 4 * m.parameters  # weights, gradients, momentum
    assert (act + trans + weights) / 1e9 == pytest.approx(22.50, rel=0.005)
    assert (act + 256 * 4 * t.max() + weights) / 1e9 > 24.7  # the old working set


def test_both_sides_of_the_out_of_memory_line():
    """benchmarks/memory_model.py part 3 (docs/memory.md): the fitted allocator overheads
    hold the shipped default, and the held-out rows are called as docs/memory.md says
    (at least 18 of 22 runs that trained fit, all 5 out-of-memory runs flagged)."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import memory_model as M
    finally:
        sys.path.pop(0)
    from oracle.model import FrameworkMemory

    rows = M.boundary_rows()
    lo, hi = M.fit_overhead(rows)
    assert lo <= FrameworkMemory().allocator_overhead <= hi
    held = [x for x in rows if x["role"] == "held-out"]
    ran = [x for x in held if x["outcome"] == "ran"]
    oom = [x for x in held if x["outcome"] != "ran"]
    assert sum(x["right"] for x in ran) >= 18 and len(ran) == 22
    assert all(x["right"] for x in oom) and len(oom) == 5
    assert M.boundary_markdown(rows) in (ROOT / "docs" / "memory.md").read_text()
