"""Software stacks (issue 25): loading, applying, naming, and the paradl stack = ParaDL mode."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from conftest import ROOT, run_cli

from oracle.compute.options import Options
from oracle.compute.stack import (
    compute_factor,
    per_iteration,
    stack_options,
    stack_system,
    update_factor,
)
from oracle.errors import OracleError
from oracle.load import load_model, load_stack, load_system
from oracle.load.stack import parse_stack
from oracle.load.yamlfile import load_yaml
from oracle.resources import shipped_names
from oracle.stack import Sourced

SHIPPED = ("chainermnx", "mxnet", "paddle", "paradl", "pytorch", "tensorflow")


def test_every_shipped_stack_loads_with_a_source_for_every_value():
    from oracle.render.stack import stack_values

    assert tuple(shipped_names("stacks")) == SHIPPED
    for name in SHIPPED:
        st = load_stack(name)
        assert st.name == name
        for key, v in stack_values(st):
            assert v.source.strip() and "placeholder" not in v.source, (name, key)
            if "fitted" in v.source:  # the rows it was fitted on: lines of a validation file
                path, _, lines = v.fitted_on.partition(":")
                assert path.startswith("validation/") and (ROOT / path).is_file(), (name, key, path)
                numbers = [int(x) for x in lines.split(" ")[0].split(",")]
                rows = (ROOT / path).read_text(encoding="utf-8").count("\n")
                assert numbers and all(2 <= n <= rows for n in numbers), (name, key, lines)


def _doc(name="pytorch"):
    return load_yaml(ROOT / "stacks" / f"{name}.yaml")


@pytest.mark.parametrize("bad, key", [
    (-0.5, "iteration.fixed_s.value"),
    (float("nan"), "iteration.fixed_s.value"),
    (float("inf"), "iteration.fixed_s.value"),
    (None, "iteration.fixed_s"),
])  # fmt: skip
def test_a_missing_negative_or_non_finite_value_is_one_error_naming_file_and_key(bad, key):
    doc = _doc()
    if bad is None:
        del doc["iteration"]["fixed_s"]["value"]
    else:
        doc["iteration"]["fixed_s"]["value"] = bad
    with pytest.raises(OracleError) as e:
        parse_stack(doc, "my-stack.yaml")
    text = str(e.value)
    assert "my-stack.yaml" in text and key in text


def test_a_value_without_its_source_is_refused():
    doc = _doc()
    del doc["communication"]["bucket_MB"]["source"]
    with pytest.raises(OracleError, match="communication.bucket_MB"):
        parse_stack(doc, "s.yaml")


def test_gradient_precision_is_fp32_or_model_and_fp32_doubles_an_amp_all_reduce():
    """communication.gradient_precision: another word is one error naming the key; with
    fp32 (the pytorch stack: torch.cuda.amp keeps fp32 parameters) a mixed-precision
    data-parallel all-reduce moves 4 bytes per parameter and the GPU holds them (gradients
    and DDP's bucket copy), with "model" 2 (ParaDL's δ)."""
    import oracle

    doc = _doc()
    doc["communication"]["gradient_precision"]["value"] = "fp16"
    with pytest.raises(OracleError, match="communication.gradient_precision"):
        parse_stack(doc, "s.yaml")
    totals = {}
    for word in ("fp32", "model"):
        doc = _doc()
        doc["communication"]["gradient_precision"]["value"] = word
        st = parse_stack(doc, "s.yaml")
        (pt,) = oracle.predict("resnet50", "dgx-a100-80gb", "resnet50_v100", gpus=[16], strategies="data",
                               batch_per_gpu=32, precision="fp16", mixed_precision=True, stack=st)  # fmt: skip
        totals[word] = pt.detail("communication_total_s")  # before overlap hides part of it
        params = load_model("resnet50").parameters  # gradients held as wide as they are reduced
        assert pt.detail("memory")["gradients_bytes"] == pytest.approx((4 if word == "fp32" else 2) * params)
        assert pt.detail("memory")["buffers_bytes"] == pt.detail("memory")["gradients_bytes"]  # DDP's buckets
    assert totals["fp32"] > 1.5 * totals["model"]


def test_unknown_stack_lists_the_shipped_ones_exit_2():
    r = run_cli("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--stack", "pytorchh")
    assert r.code == 2
    assert all(name in r.err for name in SHIPPED)
    assert len(r.err_lines) == 1 and "Traceback" not in r.err


def test_a_bad_stack_file_writes_nothing(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text((ROOT / "stacks" / "pytorch.yaml").read_text().replace("value: 25,", "value: -25,"))
    out = tmp_path / "out.json"
    r = run_cli("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--stack", str(bad), "-o", str(out))
    assert r.code == 2 and "bucket_MB" in r.err and not out.exists()


def test_stack_options_apply_unless_given():
    st = load_stack("pytorch")
    o = stack_options(Options(), st)
    assert (o.overlap, o.bucket_bytes, o.collective, o.memory_model) == ("buckets", 25 * 2**20, None, "framework")
    assert o.stack is st
    kept = stack_options(Options(overlap="none"), st, frozenset({"overlap"}))
    assert kept.overlap == "none"
    tf = stack_options(Options(), load_stack("tensorflow"))
    assert tf.bucket_bytes == 64 * 2**20  # Horovod's fusion buffer


def test_efficiency_applies_to_estimated_profiles_by_generation_and_precision_class():
    st = load_stack("tensorflow")  # fp32 1.1, mixed 1.05
    a100 = load_system("dgx-a100-80gb")
    o = stack_options(Options(precision="tf32"), st)
    assert compute_factor(o, a100, "estimated") == pytest.approx(1 / 1.1)
    assert compute_factor(replace(o, mixed_precision=True), a100, "estimated") == pytest.approx(1 / 1.05)
    assert compute_factor(o, a100, "measured") == 1.0  # a measured profile carries its software's speed
    assert compute_factor(Options(), a100, "estimated") == 1.0  # no stack
    gen = replace(st, efficiency=st.efficiency + (("A100", "fp32", Sourced(2.0, "test")),))
    assert compute_factor(replace(o, stack=gen), a100, "estimated") == pytest.approx(0.5)
    assert compute_factor(replace(o, stack=gen), load_system("dgx1-v100"), "estimated") == pytest.approx(1 / 1.1)


def test_per_iteration_costs_by_hand():
    st = replace(load_stack("pytorch"), fixed_s=Sourced(0.002, "t"), launch_floor_s_per_layer=Sourced(1e-4, "t"),
                 data_parallel_efficiency=(("fp32", Sourced(0.9, "t")), ("mixed", Sourced(0.8, "t"))))
    o = Options(mixed_precision=True, stack=st)  # data-parallel efficiency (mixed) 0.8
    # 1 GPU: no data-parallel loss; 100 iterations: +0.2 s update; floor 100·10·1e-4 = 0.1 s
    assert per_iteration(o, 1, 100, 10, 5.0, 1.0) == pytest.approx((5.0, 1.2))
    assert per_iteration(o, 8, 100, 10, 5.0, 1.0) == pytest.approx((5.0 / 0.8, 1.2))
    assert per_iteration(o, 1, 100, 10, 0.01, 0.0) == pytest.approx((0.1, 0.2))  # the launch floor binds
    assert per_iteration(Options(), 8, 100, 10, 5.0, 1.0) == (5.0, 1.0)
    # a GPU overhead of 5e-5 s per layer: an estimated profile's 100 x 10 layers gain 0.05 s,
    # after the data-parallel efficiency (the gaps are no kernels' work); a measured one none
    gap = Options(mixed_precision=True, stack=replace(st, gpu_overhead_s_per_layer=Sourced(5e-5, "t")))
    assert per_iteration(gap, 8, 100, 10, 5.0, 1.0, estimated=True) == pytest.approx((5.0 / 0.8 + 0.05, 1.2))
    assert per_iteration(gap, 8, 100, 10, 5.0, 1.0) == pytest.approx((5.0 / 0.8, 1.2))
    assert per_iteration(gap, 1, 100, 10, 0.08, 0.0, estimated=True) == pytest.approx((0.13, 0.2))  # over the floor 0.1
    # under the host's launch floor the gaps hide: 0.01 + 0.05 < 0.1, the floor binds
    assert per_iteration(gap, 1, 100, 10, 0.01, 0.0, estimated=True) == pytest.approx((0.1, 0.2))


def test_update_bytes_scale_an_estimated_profiles_optimizer_step():
    """The compute model's update moves 5 x 4 bytes per parameter (fp32, or fp32 master
    weights); PyTorch's foreach SGD with weight decay moves 44, and 64 under AMP."""
    st = load_stack("pytorch")
    assert update_factor(Options(stack=st), "estimated") == pytest.approx(44 / 20)
    assert update_factor(Options(stack=st, mixed_precision=True, precision="fp16"), "estimated") == pytest.approx(64 / 20)
    assert update_factor(Options(stack=st, precision="fp16"), "estimated") == pytest.approx(64 / 10)  # all 2-byte
    assert update_factor(Options(stack=st), "measured") == 1.0  # a measured update is the software's own
    assert update_factor(Options(stack=load_stack("paradl")), "estimated") == 1.0  # no value: the compute model's
    assert update_factor(Options(), "estimated") == 1.0


def test_small_batch_iteration_is_host_bound_under_eager_pytorch():
    """ResNet-50 at 16 samples per H100 (fp16, AMP): the GPU's kernels take about 3 ms, eager
    PyTorch's host needs 175 layers x 3.2e-5 s to launch them; at 256 samples the GPU binds."""
    import oracle
    from oracle.load import load_model
    from oracle.profiling.estimate import estimate

    model, system = load_model("resnet50"), load_system("dgx-h100-superpod")

    def run(batch, **stack):
        prof = estimate(model, system, compute_efficiency=None, memory_efficiency=None, batch=batch, precision="fp16")
        kw = dict(gpus=[1], strategies="data", precision="fp16", mixed_precision=True, batch_per_gpu=batch)
        return oracle.predict(model, system, prof, **kw, **stack)[0]

    st = load_stack("pytorch")
    small, bare = run(16, stack="pytorch"), run(16, stack="none")
    it = small.iterations_per_epoch
    floor = 175 * float(st.launch_floor_s_per_layer.value)
    assert bare.breakdown.forward_backward_s / it < floor  # the GPU alone would be faster
    assert small.breakdown.forward_backward_s / it == pytest.approx(floor)
    eff = float(st.efficiency_for(system.gpu_model, "mixed").value)  # divides the estimate's update too
    wu = bare.breakdown.weight_update_s * 64 / 20 / eff + it * float(st.fixed_s.value)
    assert small.breakdown.weight_update_s == pytest.approx(wu)
    large = run(256, stack="pytorch")
    assert large.breakdown.forward_backward_s / large.iterations_per_epoch > 2 * floor  # the GPU binds


def test_stack_input_rate_becomes_the_pipeline_only_where_the_system_has_none():
    st = replace(load_stack("pytorch"), input_samples_per_s_per_node=Sourced(8000.0, "t"))
    s = load_system("dgx1-v100")
    assert s.input is None
    assert stack_system(s, st).input.node_samples_per_s == 8000.0
    assert stack_system(s, load_stack("mxnet")).input is None  # mxnet's input section is empty


ARGS = ("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "1,4,64,1024", "-b", "32", "-f", "json")


def _numbers(out: str) -> list:
    return [(p["strategy"], p["gpus"], p["total_s"], p["memory_bytes"], p["breakdown"]) for p in json.loads(out)]


def test_paradl_stack_is_the_tool_and_paradl_mode_stays_the_options():
    """Issue 27: --stack paradl costs with ParaDL's own tool (tests/test_paradl_stack.py pins
    its numbers); SPEC section 4's ParaDL mode is still --compute-scaling linear --memory-model
    paradl, and the two differ where the tool differs from the SPEC (docs/cost-model.md)."""
    plain = run_cli(*ARGS, "--compute-scaling", "linear", "--memory-model", "paradl")
    stacked = run_cli(*ARGS, "--stack", "paradl")
    assert plain.code == stacked.code == 0
    spec, tool = (sorted(_numbers(run.out), key=lambda n: (n[1], n[0])) for run in (plain, stacked))
    assert [(s, g) for s, g, *_ in tool] == [(s, g) for s, g, *_ in spec]
    # the same compute on one GPU (D x per-sample time), another memory (the tool counts no
    # batch-norm or ReLU activations, tool:1366) and other communication beyond it
    assert tool[0][4]["forward_backward_s"] == spec[0][4]["forward_backward_s"]
    assert tool[0][3] < spec[0][3]
    assert any(t[4]["gradient_exchange_s"] != s[4]["gradient_exchange_s"] for t, s in zip(tool, spec))
    assert {p["stack"] for p in json.loads(stacked.out)} == {"paradl"}


def test_default_stack_is_the_systems_and_none_names_no_stack(tmp_path):
    """Without --stack: the system file's ``stack:``, else none; --stack none: no stack, the
    options as given. The shipped DGX, HGX and A3 files name pytorch; ABCI's leave it out
    (chainermnx splits as ParaDL's layer configurations say, which would move ParaDL-mode
    points) and Lassen's names none."""
    a = json.loads(run_cli(*ARGS).out)
    assert {p["stack"] for p in a} == {"none"}  # named as --stack none names it (6d)
    base = ("predict", "-m", "resnet50", "-p", "resnet50_a100_fp16_estimated", "--gpus", "8",
            "-b", "64", "--strategy", "data", "-f", "json")  # fmt: skip
    text = (ROOT / "systems" / "dgx-a100-80gb.yaml").read_text()
    bare = tmp_path / "dgx-bare.yaml"  # the same file without its stack: line
    bare.write_text("\n".join(line for line in text.splitlines() if not line.startswith("stack:")) + "\n")
    runs = {k: json.loads(run_cli(*base, "-s", s, *extra).out)[0] for k, s, extra in (
        ("shipped", "dgx-a100-80gb", ()), ("named", "dgx-a100-80gb", ("--stack", "pytorch")),
        ("bare", str(bare), ()), ("none", "dgx-a100-80gb", ("--stack", "none")))}  # fmt: skip
    assert runs["shipped"]["stack"] == "pytorch" and runs["bare"]["stack"] == "none" and runs["none"]["stack"] == "none"
    assert runs["shipped"]["total_s"] == runs["named"]["total_s"] != runs["bare"]["total_s"]
    assert runs["none"]["total_s"] == runs["bare"]["total_s"]
    (lassen,) = json.loads(run_cli("predict", "-m", "resnet50", "-s", "lassen", "-p", "resnet50_v100", "--gpus", "8",
                                   "--strategy", "data", "-f", "json").out)  # fmt: skip
    assert lassen["stack"] == "none"  # its file: stack none (no shipped stack describes LBANN)


def test_pytorch_stack_named_in_header_and_json_and_moves_multi_gpu_compute():
    base = ("predict", "-m", "resnet50", "-s", "dgx-a100-80gb", "-p", "resnet50_a100_fp16_estimated",
            "--strategy", "data", "--gpus", "8", "-b", "64")  # fmt: skip
    table = run_cli(*base, "--stack", "pytorch", "--width", "140")
    assert table.code == 0 and "stack: pytorch" in table.out
    none, st = (json.loads(run_cli(*base, "--stack", name, "-f", "json").out)[0] for name in ("none", "pytorch"))
    assert st["stack"] == "pytorch" and none["stack"] == "none"
    # fp16 profile: beyond one GPU the data-parallel efficiency (mixed, 0.85) on the same per-GPU batch
    one = json.loads(run_cli(*base[:-4], "--gpus", "1", "-b", "64", "--stack", "pytorch", "-f", "json").out)[0]
    fb8 = _eight_gpus_fb(one["breakdown"]["forward_backward_s"], one["iterations_per_epoch"])
    assert st["breakdown"]["forward_backward_s"] == pytest.approx(fb8, rel=1e-9)
    assert st["overlap_ratio"] > 0 and none["overlap_ratio"] == 0


def _eight_gpus_fb(fb1: float, iterations1: float) -> float:
    """Forward and backward per epoch on 8 GPUs at the same per-GPU batch from one GPU's under
    the pytorch stack (estimated profile, mixed): the kernels' time spread over 8 GPUs at the
    data-parallel efficiency (0.85), the GPU overhead per layer (7 us) once per iteration."""
    st = load_stack("pytorch")
    dp, overhead = st.data_parallel_efficiency_for("mixed"), iterations1 * 175 * st.gpu_overhead_s()
    assert dp < 1 and overhead > 0
    return (fb1 - overhead) / 8 / dp + overhead / 8


def test_list_and_show_stack():
    r = run_cli("list", "stacks", "--width", "120")
    assert r.code == 0 and all(name in r.out for name in SHIPPED)
    j = json.loads(run_cli("show", "stack", "pytorch", "-f", "json").out)
    assert j["values"]["communication.bucket_MB"]["value"] == 25
    assert "distributed.py" in j["values"]["communication.bucket_MB"]["source"]
    assert math.isclose(j["values"]["compute.data_parallel_efficiency.mixed"]["value"], 0.85)
    assert math.isclose(j["values"]["compute.reduction_memory_efficiency"]["value"], 0.5)
    assert math.isclose(j["values"]["compute.maxpool_memory_efficiency"]["value"], 0.22)
    avgpool = j["values"]["compute.avgpool_memory_efficiency"]
    assert math.isclose(avgpool["value"], 0.22) and "AveragePool2d.cu" in avgpool["source"]
    window = j["values"]["compute.pool_window_efficiency"]
    assert math.isclose(window["value"], 0.017) and window["fitted_on"].startswith("validation/gpu-layer-kernels.csv:")


def test_runs_file_stack_column_comes_before_the_option(tmp_path):
    import csv

    src = ROOT / "validation" / "dle-resnet50-runs.csv"
    rows = list(csv.DictReader(src.open()))
    runs = tmp_path / "runs.csv"
    with runs.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[*rows[0], "stack"])
        w.writeheader()
        w.writerows(dict(r, stack="pytorch") for r in rows)
    plain = json.loads(run_cli("compare", str(src), "--stack", "none", "-f", "json").out)["rows"]
    col = json.loads(run_cli("compare", str(runs), "-f", "json").out)["rows"]
    opt = json.loads(run_cli("compare", str(src), "--stack", "pytorch", "-f", "json").out)["rows"]
    both = json.loads(run_cli("compare", str(runs), "--stack", "tensorflow", "-f", "json").out)["rows"]
    assert [r["stack"] for r in plain] == ["none", "none"]
    assert [r["stack"] for r in col] == [r["stack"] for r in both] == ["pytorch", "pytorch"]
    assert [r["predicted_s"] for r in col] == [r["predicted_s"] for r in opt] == [r["predicted_s"] for r in both]
    assert col[0]["predicted_s"] != plain[0]["predicted_s"] and col[1]["predicted_s"] != plain[1]["predicted_s"]


def test_layer_wise_all_data_equals_data_under_a_stack():
    """The per-layer search charges the stack's per-GPU costs as the strategies do."""
    from oracle.compute.binding import bind_profile
    from oracle.compute.context import Context
    from oracle.compute.layerwise.layerwise import Dist, evaluate
    from oracle.compute.sweep import sweep
    from oracle.load import load_model, load_profile

    st = replace(load_stack("pytorch"), fixed_s=Sourced(0.003, "t"), launch_floor_s_per_layer=Sourced(2e-4, "t"))
    m, s, pr = load_model("resnet50"), load_system("abci"), load_profile("resnet50_v100")
    options = stack_options(Options(overlap="none"), st, frozenset({"overlap"}))  # the layer-wise path has no overlap
    times = bind_profile(m, pr)
    ctx = Context(m, s, times, options, pr.kind)
    for p in (1, 8, 64):
        B = 4.0 * p  # small batch: the launch floor binds
        (pt,) = sweep(m, s, times, [p], "data" if p > 1 else "serial", batch=B, options=options, profile_kind=pr.kind)
        got = evaluate(ctx, p, B, [Dist.data(p)] * ctx.G).point
        assert got.stack == pt.stack == "pytorch"
        assert got.compute_s == pytest.approx(pt.compute_s, rel=1e-12)
        assert got.total_s == pytest.approx(pt.total_s, rel=1e-12)


def test_search_names_the_stack():
    args = ("search", "-m", "resnet50", "-s", "dgx-a100-80gb", "-p", "resnet50_a100_fp16_estimated", "--gpus", "16",
            "-b", "64")  # fmt: skip
    with_, without = (run_cli(*args, "--stack", name, "-f", "json") for name in ("pytorch", "none"))
    assert json.loads(with_.out)["stack"] == "pytorch" and json.loads(without.out)["stack"] == "none"
    assert "stack: pytorch" in run_cli(*args, "--stack", "pytorch", "--width", "120").out


def test_horovod_cycle_adds_half_a_cycle_per_iteration_beyond_one_gpu():
    from oracle.compute.cost import Breakdown
    from oracle.compute.stack import with_stack_costs

    st = load_stack("tensorflow")  # cycle 5 ms (horovod/common/operations.cc)
    assert st.cycle_time_s.value == 0.005 and load_stack("pytorch").cycle_time_s.value == 0.0
    o = Options(stack=replace(st, launch_floor_s_per_layer=Sourced(0.0, "t")))
    bd = Breakdown(forward_backward_s=10.0, gradient_exchange_s=1.0)
    assert with_stack_costs(o, 8, 100, 50, bd).gradient_exchange_s == pytest.approx(1.0 + 100 * 0.0025)
    assert with_stack_costs(o, 1, 100, 50, Breakdown(forward_backward_s=10.0)).gradient_exchange_s == 0.0


def test_report_and_plot_titles_name_the_stack(tmp_path):
    pytest.importorskip("matplotlib")
    from oracle.render.plots import title

    out = tmp_path / "r.md"
    r = run_cli("report", "-m", "resnet50", "-s", "dgx-a100-80gb", "-p", "resnet50_a100_fp16_estimated", "--gpus", "8",
                "-b", "64", "--strategy", "data", "--stack", "pytorch", "-o", str(out))  # fmt: skip
    assert r.code == 0 and "Software stack: pytorch" in out.read_text()
    assert "stack pytorch" in title({"model": "m", "system": "s", "stack": "pytorch"}, "x")
    assert "stack" not in title({"model": "m", "system": "s", "stack": ""}, "x")


def test_fit_runs_compute_profile_reproduces_the_run_under_the_stack(tmp_path):
    """--calibrate compute under a stack writes a (measured) profile that, projected under
    the same stack, reproduces the run (validation/dle-resnet50-runs.csv:3, 8 GPUs AMP)."""
    out = tmp_path / "p.yaml"
    r = run_cli("fit", "runs", str(ROOT / "validation" / "dle-resnet50-runs.csv"), "-s", "dgx-a100-80gb",
                "--calibrate", "compute", "--where", "gpus=8", "-o", str(out), "--stack", "pytorch")  # fmt: skip
    assert r.code == 0, r.err
    p = run_cli("predict", "-m", "resnet50", "-s", "dgx-a100-80gb", "-p", str(out), "--strategy", "data", "--gpus", "8",
                "-B", "2048", "--precision", "fp32", "--mixed-precision", "--stack", "pytorch", "-f", "json")  # fmt: skip
    assert json.loads(p.out)[0]["iteration_s"] == pytest.approx(0.123218, rel=1e-5)


@pytest.mark.parametrize("edit, key", [
    (lambda d: d["communication"]["algorithm"].__setitem__("value", "nvlss"), "communication.algorithm.value"),
    (lambda d: d["compute"]["data_parallel_efficiency"]["mixed"].__setitem__("value", 1.5),
     "compute.data_parallel_efficiency.mixed.value"),
    (lambda d: d["compute"]["efficiency"].__setitem__("fp16", d["compute"]["efficiency"]["mixed"]), "compute.efficiency"),
    (lambda d: d["iteration"].__setitem__("fixed_s", 0.001), "iteration.fixed_s"),  # a bare number: no source
    (lambda d: d["iteration"]["update_bytes_per_parameter"]["mixed"].__setitem__("value", -4),
     "iteration.update_bytes_per_parameter.mixed.value"),
    (lambda d: d["iteration"]["update_bytes_per_parameter"].pop("fp32"), "iteration.update_bytes_per_parameter"),
    (lambda d: d["compute"]["reduction_memory_efficiency"].__setitem__("value", 1.5),
     "compute.reduction_memory_efficiency.value"),
    (lambda d: d["compute"]["avgpool_memory_efficiency"].__setitem__("value", 0), "compute.avgpool_memory_efficiency.value"),
    (lambda d: d["compute"]["pool_window_efficiency"].__setitem__("value", -0.017), "compute.pool_window_efficiency.value"),
    (lambda d: d["compute"]["pool_window_efficiency"].__setitem__("value", float("inf")),
     "compute.pool_window_efficiency.value"),
    (lambda d: d["iteration"]["gpu_overhead_s_per_layer"].__setitem__("value", -7e-6),
     "iteration.gpu_overhead_s_per_layer.value"),
    (lambda d: d["iteration"]["gpu_overhead_s_per_layer"].__setitem__("value", float("nan")),
     "iteration.gpu_overhead_s_per_layer.value"),
])  # fmt: skip
def test_bad_stack_values_name_the_key(edit, key):
    doc = _doc()
    edit(doc)
    with pytest.raises(OracleError) as e:
        parse_stack(doc, "s.yaml")
    assert key in str(e.value)


def test_a_stack_file_that_is_not_a_mapping_is_one_error(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text("- pytorch\n")
    r = run_cli("show", "stack", str(bad))
    assert r.code == 2 and len(r.err_lines) == 1 and "s.yaml" in r.err


def test_python_api_takes_a_stack():
    import oracle

    args = ("resnet50", "dgx-a100-80gb", "resnet50_a100_fp16_estimated")
    kw = dict(gpus=[8], strategies="data", batch_per_gpu=64)
    (a,), (b,) = oracle.predict(*args, stack="none", **kw), oracle.predict(*args, stack="pytorch", **kw)
    assert a.stack == "none" and b.stack == "pytorch"
    (b1,) = oracle.predict(*args, stack="pytorch", **dict(kw, gpus=[1]))
    assert b.breakdown.forward_backward_s == pytest.approx(_eight_gpus_fb(b1.breakdown.forward_backward_s, b1.iterations_per_epoch), rel=1e-9)
    (c,) = oracle.predict(*args, stack="paradl", memory_reuse=0.5, **kw)  # γ with the stack's ParaDL bound
    assert c.memory_model == "paradl"


def _nccl_algo_stack(tmp_path, algos: str):
    """The pytorch stack with NCCL_ALGO=``algos`` (communication.nccl_algorithms)."""
    f = tmp_path / "s.yaml"
    line = f'  nccl_algorithms: {{value: "{algos}", source: "NCCL_ALGO"}}\n  cycle_time_s:'
    f.write_text((ROOT / "stacks" / "pytorch.yaml").read_text().replace("  cycle_time_s:", line))
    return f


@pytest.mark.parametrize("algos, system", [("nvls,ring", "dgx-a100-80gb"), ("collnet", "hgx-h200"),
                                           ("nvls", "abci")])  # fmt: skip
def test_a_stack_algorithm_the_system_cannot_run_is_one_error_nothing_written(tmp_path, algos, system):
    """NVLS without an NVSwitch 3 offering it, CollNet without switches that reduce (SHARP):
    the reasons --collective nvls|collnet gives (model.Interconnect.cannot_run)."""
    out = tmp_path / "out.json"
    r = run_cli("predict", "-m", "resnet50", "-s", system, "-p", "resnet50_v100", "--gpus", "16",
                "--stack", str(_nccl_algo_stack(tmp_path, algos)), "-o", str(out))  # fmt: skip
    assert r.code == 2 and len(r.err_lines) == 1 and "Traceback" not in r.err
    assert "s.yaml" in r.err and "communication.nccl_algorithms" in r.err and not out.exists()


def test_nccl_algo_restricts_what_nccl_chooses(tmp_path):
    """On the SuperPOD (NVLS and CollNet offered) NCCL_ALGO=ring,tree never picks NVLS."""
    from oracle.compute.network import allreduce_algorithm, group_contiguous
    from oracle.compute.stack import nccl_algorithms
    from oracle.load.stack import load_stack as load_file

    s = load_system("dgx-h100-superpod")
    st = load_file(_nccl_algo_stack(tmp_path, "ring,tree"))
    assert st.nccl_algorithms.value == "ring,tree"
    g = group_contiguous(8, 8)
    _, free = allreduce_algorithm(s, g, 1e9, "nccl")
    _, kept = allreduce_algorithm(nccl_algorithms(s, st), g, 1e9, "nccl")
    assert free.startswith("nccl nvls") and kept.split()[1].split("/")[0] in ("ring", "tree")
    with pytest.raises(OracleError, match="communication.nccl_algorithms"):
        load_file(_nccl_algo_stack(tmp_path, "ring,bogus"))


def test_pytorch_windowed_avgpool_runs_at_its_instruction_bound():
    """stacks/pytorch.yaml compute.avgpool_memory_efficiency 0.22 and pool_window_efficiency
    0.017: Inception-v3's windowed avgpool layers (3x3, stride 1: 9 window elements and one
    input element per output) are bound by their instructions on an A100 (64 FP32 lanes per SM:
    19.5e12 thread instructions per second, GpuSpec.issue_rate), not by the bandwidth, so a
    profile's streaming fp16 time (4 bytes per output at 0.9 x 2,039 GB/s) converts to
    (10 / (0.017 x 19.5e12)) / (4 / (0.9 x 2039e9)) = 13.84x, forward and backward alike
    (both twice as much work); the global average pool (a reduction) keeps 1x."""
    from oracle.compute.conversion import prepare
    from oracle.load import load_model
    from oracle.profiling.estimate import estimate

    model, system = load_model("inception_v3"), load_system("dgx-a100-80gb")
    profile = estimate(model, system, compute_efficiency=None, memory_efficiency=None, batch=64, precision="fp16")
    on = stack_system(system, load_stack("pytorch"))
    assert on.implementation.avgpool_memory_efficiency == 0.22
    assert on.implementation.pool_window_efficiency == 0.017
    _, conversion = prepare(model, on, profile, Options(precision="fp16"))
    fw, bw, _, _ = conversion.factors(64.0)
    types = [layer.type for layer in model.layers]
    window = (10 / (0.017 * 19.5e12)) / (4 / (0.9 * 2039e9))
    assert window > 0.9 / 0.22  # the instructions bind, not the bandwidth share
    for t, want in (("avgpool", window), ("globalavgpool", 1.0)):
        i = [j for j, u in enumerate(types) if u == t]
        assert i and fw[i] == pytest.approx(want, rel=1e-9) and bw[i] == pytest.approx(want, rel=1e-9), t


def test_pytorch_batchnorm_and_maxpool_run_at_their_measured_efficiencies():
    """stacks/pytorch.yaml compute.reduction_memory_efficiency 0.5 and
    maxpool_memory_efficiency 0.22 (eager PyTorch's native kernels, measured on an H200): a
    profile's batchnorm layers (the compute model's streaming 0.9) are converted to take
    0.9/0.5 = 1.8x as long on the same GPU, precision and batch; its maxpool (3x3, stride 2,
    64 x 112 x 112 in, 64 x 56 x 56 out) takes the longer of 0.9/0.22 and its instruction
    bound (pool_window_efficiency 0.017: 9 x 200,704 + 802,816 elements per sample at 0.017 x
    19.5e12 per s against 2 x 1,003,520 fp16 bytes at 0.9 x 2,039 GB/s: 7.196x); the
    convolutions and adds 1x."""
    from oracle.compute.conversion import prepare
    from oracle.load import load_model
    from oracle.profiling.estimate import estimate

    model, system = load_model("resnet50"), load_system("dgx-a100-80gb")
    profile = estimate(model, system, compute_efficiency=None, memory_efficiency=None, batch=256, precision="fp16")
    on = stack_system(system, load_stack("pytorch"))
    assert (on.implementation.reduction_memory_efficiency, on.implementation.maxpool_memory_efficiency) == (0.5, 0.22)
    _, conversion = prepare(model, on, profile, Options(precision="fp16"))
    fw, bw, _, _ = conversion.factors(256.0)
    types = [layer.type for layer in model.layers]
    for t in ("batchnorm", "maxpool", "conv", "add"):
        i = [j for j, u in enumerate(types) if u == t]
        window = ((9 * 200_704 + 802_816) / (0.017 * 19.5e12)) / (2 * 1_003_520 / (0.9 * 2039e9))
        want = {"batchnorm": 0.9 / 0.5, "maxpool": max(0.9 / 0.22, window)}.get(t, 1.0)
        assert fw[i] == pytest.approx(want, rel=1e-9) and bw[i] == pytest.approx(want, rel=1e-9), t


def test_a_framework_without_a_shipped_stack_says_so_rather_than_suggesting_a_near_name():
    r = run_cli("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--stack", "caffe2")
    assert r.code == 2 and len(r.err_lines) == 1
    assert "no shipped stack for Caffe2" in r.err and "--stack none" in r.err
    assert "did you mean" not in r.err and all(name in r.err for name in SHIPPED)
