"""One configuration, one number (issue 23, point 5).

``oracle predict``, ``report`` and ``plot`` project through services.project (the sweep);
``oracle search`` compares its per-layer assignment with the uniform strategies it costs
itself.  Both must give every configuration exactly the same record: compute,
communication, memory, total and everything else a point carries.  Compared here over
every strategy (pipeline at every segment count search tries too), several models,
systems (one with a calibrated compute factor, one with an input pipeline), profiles
(total-only, per-layer measured, estimated bf16), precisions, weak and strong scaling,
and GPU counts whose p1 x p2 splits include non-powers of two.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from oracle.cli.search_plan import run_search_command
from oracle.services.project import project

ROOT = Path(__file__).resolve().parent.parent
FACTOR = 1.3  # the calibrated system's compute factor on ResNet-50

# model, system, profile, precision, scaling, (--gpus, --max-gpus): search tries lo, hi and
# the powers of two between
CASES = [
    ("resnet152", "gcp-a3mega-h100", "<estimated bf16>", "bf16", {"batch_per_gpu": 64}, (1, 1024)),  # issue 23's case
    ("resnet50", "abci", "resnet50_v100", "fp32", {"batch_per_gpu": 32}, (3, 96)),  # 96 = 2^5·3: 10 grids
    ("vgg16", "dgx-a100-80gb", "vgg16_v100", "fp16", {"batch": 1536}, (2, 48)),  # strong scaling, V100 -> A100
    ("cosmoflow256", "abci-2020", "cosmoflow256_v100", "fp32", {"batch_per_gpu": 2}, (4, 64)),  # 3-D halos,
    # the leader all-reduce of data+spatial, an input pipeline
    ("alexnet", "dgx-h100-superpod", "alexnet_v100", "bf16", {"batch_per_gpu": 128}, (1, 512)),
    ("resnet50", "<calibrated abci>", "resnet50_cpu", "fp32", {"batch_per_gpu": 16}, (6, 24)),  # compute
    # factor; a measured per-layer profile on another device
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    """The two inputs made for these tests: issue 23's estimated bf16 ResNet-152 profile,
    and ABCI with a calibrated compute factor for ResNet-50 (as oracle fit runs writes)."""
    from conftest import run_cli

    tmp = tmp_path_factory.mktemp("one_path")
    prof = tmp / "r152.yaml"
    r = run_cli("profile", "resnet152", "--estimate", "--system", "gcp-a3mega-h100", "--precision", "bf16", "--batch", "64",
                "-o", str(prof))  # fmt: skip
    assert r.code == 0, r.err
    doc = yaml.safe_load((ROOT / "systems" / "abci.yaml").read_text())
    doc.setdefault("implementation", {})["compute_factors"] = {"ResNet-50": FACTOR}
    system = tmp / "abci-calibrated.yaml"
    system.write_text(yaml.safe_dump(doc))
    return {"<estimated bf16>": str(prof), "<calibrated abci>": str(system)}


def record(pt) -> str:
    """Everything a point says but its rank (search ranks more pipeline points), exactly:
    JSON of the dataclass with floats as repr (NaN included)."""
    return json.dumps(asdict(pt.with_rank(None)), sort_keys=True, default=repr)


def search_points(model, system, profile, precision, scaling, lo, hi):
    results, _, _, _ = run_search_command(
        model, system, profile, gpus=lo, max_gpus=hi, batch_per_gpu=scaling.get("batch_per_gpu"),
        batch=scaling.get("batch"), kinds="data", strategies="all", precision=precision, memory_model="framework",
        samples=None, evaluate_file=None,
    )  # fmt: skip
    return {r.gpus: r.uniform for r in results}


def predict_points(model, system, profile, precision, scaling, gpus, **more) -> dict:
    points, _, _ = project(model, system, profile, gpus=",".join(map(str, gpus)), precision=precision, **scaling,
                           **more)  # fmt: skip
    return {(pt.gpus, pt.strategy, pt.p1, pt.p2, pt.segments): pt for pt in points}


@pytest.mark.parametrize("model,system,profile,precision,scaling,gpus", CASES)
def test_search_costs_every_uniform_configuration_as_predict_does(inputs, model, system, profile, precision,
                                                                   scaling, gpus):  # fmt: skip
    system, profile = inputs.get(system, system), inputs.get(profile, profile)
    found = search_points(model, system, profile, precision, scaling, *gpus)
    predicted = predict_points(model, system, profile, precision, scaling, sorted(found))
    # pipeline at the segment counts search adds: predict --segments S
    extra = {pt.segments for pts in found.values() for pt in pts if pt.strategy == "pipeline"}
    for S in sorted(extra):
        predicted.update(predict_points(model, system, profile, precision, scaling, sorted(found),
                                        strategies="pipeline", segments=S))  # fmt: skip
    compared, strategies, grids = 0, set(), set()
    for p, pts in found.items():
        keys = {(pt.gpus, pt.strategy, pt.p1, pt.p2, pt.segments) for pt in pts}
        assert {k for k in predicted if k[0] == p and k[1] != "pipeline"} <= keys, p  # search lists them all
        for pt in pts:
            want = predicted[(pt.gpus, pt.strategy, pt.p1, pt.p2, pt.segments)]
            what = (p, pt.strategy, pt.p1, pt.p2, pt.segments)
            for value in ("compute_s", "communication_s", "memory_bytes", "total_s"):
                a, b = getattr(pt, value), getattr(want, value)
                assert a == b or (math.isnan(a) and math.isnan(b)), (what, value, a, b)
            assert record(pt) == record(want), what
            compared += 1
            strategies.add(pt.strategy)
            grids.add((pt.p1, pt.p2))
    assert strategies >= {"data", "spatial", "filter", "channel", "pipeline", "data+filter", "data+spatial"}
    assert compared > 40 and len(grids) > 10


def test_issue_23_configuration_on_the_command_line(inputs, run):
    """The configuration of the issue: data+spatial 64x16 on 1,024 GPUs, ResNet-152 on
    gcp-a3mega-h100 in bf16 at 64 per GPU: search's JSON and predict's JSON agree exactly."""
    args = ["-m", "resnet152", "-s", "gcp-a3mega-h100", "-p", inputs["<estimated bf16>"], "--gpus", "1024",
            "--precision", "bf16", "--batch-per-gpu", "64", "-f", "json"]  # fmt: skip
    s = run("search", *args, "--top", "100", "--distributions", "data")
    p = run("predict", *args, "--strategy", "data+spatial", "--p2", "16")
    assert s.code == 0 and p.code == 0, (s.err, p.err)
    (want,) = json.loads(p.out)
    (got,) = [u for u in json.loads(s.out)["searches"][0]["uniform"] if u["strategy"] == "data+spatial" and u["p2"] == 16]
    for key in ("compute_s", "communication_s", "memory_bytes", "total_s", "iteration_s"):
        assert got[key] == want[key], key


# -- a uniform layer-wise assignment is the uniform strategy ---------------------------------

LAYERWISE = {"data": "data", "spatial": "spatial", "filter": "filter", "channel": "channel",
             "data+filter": "filter", "data+spatial": "spatial"}  # fmt: skip
PHASES = ("forward_backward_s", "weight_update_s", "gradient_exchange_s", "layer_collectives_s", "halo_s", "input_s")


@pytest.mark.parametrize("model,system,profile,precision,scaling,gpus", CASES)
def test_uniform_layerwise_assignment_is_the_uniform_strategy(inputs, model, system, profile, precision, scaling,
                                                              gpus):  # fmt: skip
    """What search and predict --layers cost for one distribution on every layer equals
    the strategy, phase by phase and in memory, with the compute model and the framework
    memory model (tests/test_layerwise.py: ParaDL's linear mode).  Equal to rounding, not
    bitwise: the layer-wise sums per-layer columns, the strategies their cached sums
    (docs/search.md).  One documented difference: spatial 1 x p runs the head replicated
    on every GPU, whose gradients nothing all-reduces; the strategy still counts DDP's
    bucket copy of them (a DDP-wrapped model), the layer-wise does not.  Both without a
    stack (--stack none): the layer-wise context here is built from the bare options
    (under a stack: tests/test_predict_layers.py)."""
    from oracle.compute.context import Options
    from oracle.compute.conversion import build_context
    from oracle.compute.layerwise.layerwise import Dist, evaluate
    from oracle.load import load_model, load_profile, load_system

    system, profile = inputs.get(system, system), inputs.get(profile, profile)
    m, s, pr = load_model(model), load_system(system), load_profile(profile)
    ctx = build_context(m, s, pr, Options(precision=precision))
    predicted = predict_points(model, system, profile, precision, scaling, gpus, stack="none")
    checked = set()
    for (p, *_), pt in predicted.items():
        kind = LAYERWISE.get(pt.strategy)
        if kind is None:
            continue
        d = Dist.data(p) if kind == "data" else Dist(kind, pt.p1, pt.p2)
        got = evaluate(ctx, p, pt.global_batch, [d] * ctx.G).point
        what = (p, pt.strategy, pt.p1, pt.p2)
        for phase in PHASES:
            assert getattr(got.breakdown, phase) == pytest.approx(getattr(pt.breakdown, phase), rel=1e-12,
                                                              abs=1e-300), (what, phase)  # fmt: skip
        memory = pt.memory_bytes
        if pt.strategy == "spatial":  # the head's gradients: not all-reduced, no bucket (docstring)
            memory -= ctx.delta * ctx.split("spatial").w_r * (1 + s.framework.allocator_overhead)
        assert got.memory_bytes == pytest.approx(memory, rel=1e-12), what
        assert got.feasible == pt.feasible, (what, got.limits, pt.limits)
        checked.add(pt.strategy)
    assert set(LAYERWISE) <= checked


@pytest.mark.parametrize("mixed", [False, True])
def test_uniform_layerwise_memory_with_optimizer_state(mixed):
    """--optimizer adam (and --mixed-precision's fp32 master weights): a uniform layer-wise
    assignment holds the optimizer state of the weights it keeps, as the strategy does
    (filter splits them p2 ways, data keeps them all)."""
    from oracle.compute.context import Options
    from oracle.compute.conversion import build_context
    from oracle.compute.layerwise.layerwise import Dist, evaluate
    from oracle.load import load_model, load_profile, load_system

    more = dict(optimizer="adam", mixed_precision=mixed, memory_model="framework")
    ctx = build_context(load_model("vgg16"), load_system("abci"), load_profile("vgg16_v100"),
                        Options(precision="fp32", **more))  # fmt: skip
    predicted = predict_points("vgg16", "abci", "vgg16_v100", "fp32", {"batch_per_gpu": 16}, [16], stack="none", **more)
    checked = set()
    for (p, *_), pt in predicted.items():
        kind = {"data": "data", "filter": "filter", "data+filter": "filter", "channel": "channel"}.get(pt.strategy)
        if kind is not None:
            d = Dist.data(p) if kind == "data" else Dist(kind, pt.p1, pt.p2)
            got = evaluate(ctx, p, pt.global_batch, [d] * ctx.G).point
            assert got.memory_bytes == pytest.approx(pt.memory_bytes, rel=1e-12), (pt.strategy, pt.p1)
            checked.add(pt.strategy)
    assert checked == {"data", "filter", "data+filter", "channel"}


COMMON = ("-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "8", "-b", "16", "--precision", "fp32")


@pytest.mark.parametrize("command", ["predict", "search", "report", "plot"])
def test_every_command_costs_configurations_through_one_function(run, monkeypatch, tmp_path, command):
    """predict, search, report and plot reach the strategies only through
    compute.sweep.evaluate_all (so the exact equality above holds for all four)."""
    import oracle.compute.sweep as sweep_module

    if command == "plot":
        pytest.importorskip("matplotlib")
    seen: list[str] = []
    real = sweep_module.evaluate_all

    def spy(ctx, configs):
        configs = list(configs)
        seen.extend(cfg.strategy for cfg in configs)
        return real(ctx, configs)

    monkeypatch.setattr(sweep_module, "evaluate_all", spy)
    args = {
        "predict": ["predict", *COMMON],
        "search": ["search", *COMMON],
        "report": ["report", *COMMON, "-o", tmp_path / "report.md"],
        "plot": ["plot", "breakdown", *COMMON, "-o", tmp_path / "breakdown.png"],
    }[command]
    r = run(*args)
    assert r.code == 0, r.err
    assert {"data", "spatial", "filter", "channel", "pipeline", "data+filter", "data+spatial"} <= set(seen)
