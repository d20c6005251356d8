"""--memory-format (docs/cost-model.md "Memory format"): a stack states the layout its
efficiencies hold for (compute.memory_format) and the speedup of channels-last over NCHW
measured per GPU generation (compute.channels_last_speedup); the option moves an estimated
profile's speed by that speedup where it asks for the other layout, and says what is
missing where it cannot."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import ROOT, run_cli
from test_robustness import one_error

from oracle.compute.options import Options
from oracle.compute.stack import compute_factor, layout_factor
from oracle.errors import OracleError
from oracle.load import load_stack, load_system
from oracle.load.stack import parse_stack
from oracle.load.yamlfile import load_yaml

H100 = "dgx-h100-superpod"


def _options(memory_format, stack="pytorch", mixed=True):
    st = load_stack(stack) if stack else None
    return Options(precision="fp16" if mixed else "tf32", mixed_precision=mixed, stack=st, memory_format=memory_format)


def test_the_pytorch_stack_states_its_layouts_and_the_hopper_speedups():
    st = load_stack("pytorch")
    assert (st.memory_format_for("mixed"), st.memory_format_for("fp32")) == ("channels-last", "nchw")
    assert st.channels_last_speedup_for("H100-SXM5-80GB", "mixed").value == 1.73
    assert st.channels_last_speedup_for("H200-SXM-141GB", "fp32").value == 1.43
    assert st.channels_last_speedup_for("V100-SXM2-16GB", "mixed") is None  # nothing measured before Hopper
    assert load_stack("tensorflow").memory_format_for("mixed") is None


def test_layout_factor_by_hand():
    """On an H100: AMP in NCHW takes 1.73x the stack's channels-last kernel time; TF32 in
    channels-last 1/1.43 of its NCHW time; the stack's own layout or no option, 1."""
    h100 = load_system(H100)
    assert layout_factor(_options("nchw"), h100) == pytest.approx(1.73)
    assert layout_factor(_options("channels-last"), h100) == 1.0
    assert layout_factor(_options("channels-last", mixed=False), h100) == pytest.approx(1 / 1.43)
    assert layout_factor(_options("nchw", mixed=False), h100) == 1.0
    assert layout_factor(_options(None), h100) == 1.0
    # not on the efficiency's compute factor, which also scales the optimizer step
    assert compute_factor(_options("nchw"), h100, "estimated") == compute_factor(_options(None), h100, "estimated")


@pytest.mark.parametrize(("options", "system", "words"), [
    (lambda: _options("nchw", stack=None), H100, "no stack is in force"),
    (lambda: _options("nchw", stack="tensorflow"), H100, "stack tensorflow states none"),
    (lambda: _options("nchw"), "dgx-a100-80gb", "no channels-last speedup measured on A100"),
])  # fmt: skip
def test_what_it_cannot_move_is_one_error_saying_what_to_add(options, system, words):
    with pytest.raises(OracleError) as e:
        layout_factor(options(), load_system(system))
    assert words in str(e.value) and e.value.path == "--memory-format"


def _predict(*extra, system=H100):
    r = run_cli("predict", "-m", "resnet50", "-s", system, "-p", "resnet50_a100_fp16_estimated", "--gpus", "1,8",
                "--strategy", "data", "-b", "64", "--precision", "fp16", "--mixed-precision", *extra)  # fmt: skip
    return r


def test_predict_moves_the_kernels_and_names_the_layout(tmp_path):
    """ResNet-50 AMP on H100s: in NCHW the forward and backward take longer, by less than
    1.7x (the GPU overhead per layer and the activation kernels eager PyTorch adds do not
    move), the optimizer step not at all, and the header says so; a measured profile keeps
    its own layout."""
    base, nchw = (json.loads(_predict(*x, "-f", "json").out) for x in ((), ("--memory-format", "nchw")))
    for a, b in zip(base, nchw):
        ratio = b["breakdown"]["forward_backward_s"] / a["breakdown"]["forward_backward_s"]
        assert 1.25 < ratio < 1.7, (a["gpus"], ratio)
        assert b["breakdown"]["weight_update_s"] == a["breakdown"]["weight_update_s"]
    measured = ("predict", "-m", "resnet50", "-s", H100, "-p", "resnet50_h100", "--gpus", "8", "--strategy", "data",
                "-f", "json")  # fmt: skip
    assert run_cli(*measured).out == run_cli(*measured, "--memory-format", "nchw").out
    table = run_cli(*measured[:-2], "--memory-format", "nchw", "--width", "250")
    assert "not applied: a measured profile keeps the layout it was measured in" in table.out
    table = _predict("--memory-format", "nchw", "--width", "200")
    assert table.code == 0 and "convolutions in nchw (--memory-format)" in table.out


def test_a_bad_layout_is_one_error_and_writes_nothing(tmp_path):
    out = tmp_path / "p.json"
    r = _predict("--memory-format", "nchw", "-f", "json", "-o", str(out), system="dgx-a100-80gb")
    one_error(r, "--memory-format")
    assert not out.exists()
    r = _predict("--memory-format", "nhwc")
    assert r.code == 2 and "nhwc" in r.err


def test_a_runs_file_column_sets_it_per_row(tmp_path):
    """The memory_format column of a measured-runs file (compute/options.OPTION_COLUMNS)."""
    runs = tmp_path / "runs.csv"
    header = "model,system,profile,strategy,gpus,global_batch,precision,mixed_precision,stack,iteration_s"
    row = f"resnet50,{H100},resnet50_a100_fp16_estimated,data,8,512,fp16,yes,pytorch,0.2"
    runs.write_text(f"{header},memory_format\n{row},nchw\n{row},channels-last\n")
    r = run_cli("compare", str(runs), "-f", "json")
    assert r.code == 0, r.err
    a, b = json.loads(r.out)["rows"]
    assert a["predicted_s"] > 1.2 * b["predicted_s"]


@pytest.mark.parametrize(("edit", "key"), [
    (lambda d: d["compute"]["memory_format"]["mixed"].__setitem__("value", "nhwc"), "compute.memory_format.mixed.value"),
    (lambda d: d["compute"]["memory_format"].pop("fp32"), "compute.memory_format"),
    (lambda d: d["compute"]["channels_last_speedup"]["H100"]["mixed"].__setitem__("value", -1.4),
     "compute.channels_last_speedup.H100.mixed.value"),
    (lambda d: d["compute"]["channels_last_speedup"]["H100"]["mixed"].pop("source"),
     "compute.channels_last_speedup.H100.mixed"),
])  # fmt: skip
def test_bad_layout_values_name_the_key(edit, key):
    doc = load_yaml(ROOT / "stacks" / "pytorch.yaml")
    edit(doc)
    with pytest.raises(OracleError) as e:
        parse_stack(doc, "s.yaml")
    assert key in str(e.value) and "s.yaml" in str(e.value)


def test_a_stack_without_the_keys_loads_as_before():
    doc = load_yaml(ROOT / "stacks" / "pytorch.yaml")
    del doc["compute"]["memory_format"], doc["compute"]["channels_last_speedup"]
    st = parse_stack(doc, "s.yaml")
    assert st.memory_format == () and st.channels_last_speedup == ()
    assert replace(load_stack("pytorch"), memory_format=(), channels_last_speedup=(), file="s.yaml",
                   shipped=False) == st  # fmt: skip


def test_without_the_option_the_header_names_the_layout_the_stack_runs():
    """A plain script's tensors are NCHW unless converted: the header says the stack's layout
    for the run's precision and how to ask for the other where a speedup is measured."""
    amp = _predict("--width", "250")
    assert "convolutions in channels-last, the stack's layout for mixed precision (--memory-format nchw for the other)" \
        in amp.out  # fmt: skip
    a100 = run_cli("predict", "-m", "resnet50", "-s", "dgx-a100-80gb", "-p", "resnet50_a100_fp16_estimated", "--gpus", "8",
                   "--strategy", "data", "--precision", "fp32", "--width", "250")  # fmt: skip
    assert "convolutions in nchw, the stack's layout for fp32 (the other not measured on A100-SXM4-80GB)" in a100.out
    measured = run_cli("predict", "-m", "resnet50", "-s", H100, "-p", "resnet50_h100", "--gpus", "8", "--width", "250")
    assert "the stack's layout" not in measured.out  # a measured profile has its own
