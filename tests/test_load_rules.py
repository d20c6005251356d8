"""One test per validation rule of the input loaders (SPEC §3, §7).

Each bad-input test writes a small YAML file into ``tmp_path`` and checks that the loader
raises :class:`oracle.errors.OracleError` whose message names the file, the key path (or
layer) and the problem.  A few positive tests check that valid inputs load.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from oracle.compute.binding import bind_profile
from oracle.errors import OracleError
from oracle.load.model import load_model
from oracle.load.profile import load_profile
from oracle.load.system import load_system

# --------------------------------------------------------------------------------------
# helpers and valid templates
# --------------------------------------------------------------------------------------

MODEL_2D = """\
name: Tiny
input: [3, 8, 8]
dataset: {name: toy, samples: 100}
layers:
  - {name: conv1, type: conv, filters: 4, kernel: 3, padding: 1}
  - {name: relu1, type: relu}
  - {name: flat, type: flatten}
  - {name: fc, type: fc, outputs: 10}
"""

SYSTEM = """\
name: TinyCluster
gpu: {model: V100, memory_GB: 16, peak_TFLOPS: 15.7}
gpus_per_node: 4
nodes: 2
network:
  - {name: nvlink, max_gpus: 4, alpha_s: 1.0e-6, beta_s_per_byte: 5.0e-11}
  - {name: ib, max_gpus: 8, alpha_s: 2.0e-6, bandwidth_GB_per_s: 12.5}
"""

PROFILE = """\
model: Tiny
device: V100
layers:
  conv1: {fw_s: 1.0e-4, bw_s: 2.0e-4, wu_s: 1.0e-6}
  relu1: {fw_s: 1.0e-5, bw_s: 1.0e-5}
  flat: {fw_s: 0, bw_s: 0}
  fc: {fw_s: 2.0e-5, bw_s: 4.0e-5, wu_s: 1.0e-6}
"""


def write(tmp_path: Path, text: str | bytes, name: str = "x.yaml") -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def fails(loader, path: Path, *fragments: str) -> str:
    """Call ``loader(path)``; it must raise OracleError naming the file and every fragment."""
    with pytest.raises(OracleError) as info:
        loader(path)
    msg = str(info.value)
    assert str(path) in msg, msg
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in {msg!r}"
    return msg


def model_with_layers(layers: str, input_shape: str = "[3, 8, 8]") -> str:
    return (
        f"name: Tiny\ninput: {input_shape}\ndataset: {{samples: 100}}\nlayers:\n"
        + textwrap.indent(textwrap.dedent(layers), "  ")
    )


def sys_sub(old: str, new: str) -> str:
    assert old in SYSTEM, old
    return SYSTEM.replace(old, new)


def prof_sub(old: str, new: str) -> str:
    assert old in PROFILE, old
    return PROFILE.replace(old, new)


# --------------------------------------------------------------------------------------
# the file itself
# --------------------------------------------------------------------------------------


def test_yaml_syntax_error_names_the_line(tmp_path):
    p = write(tmp_path, "name: Tiny\ninput: [3, 8, 8\ndataset: {samples: 100}\n")
    msg = fails(load_model, p, "YAML syntax error")
    assert f"{p}:" in msg and any(f"{p}:{n}" in msg for n in (2, 3, 4)), msg


def test_empty_file(tmp_path):
    p = write(tmp_path, "")
    fails(load_system, p, "empty")


def test_whitespace_only_file(tmp_path):
    p = write(tmp_path, "  \n\t\n   \n")
    fails(load_profile, p, "empty")


def test_comments_only_file_is_empty(tmp_path):
    p = write(tmp_path, "# just a comment\n")
    fails(load_model, p, "empty")


def test_binary_file(tmp_path):
    p = write(tmp_path, b"name: x\x00\x01\x02\n")
    fails(load_model, p, "binary")


def test_non_utf8_bytes(tmp_path):
    p = write(tmp_path, b"name: ok\nsource: caf\xe9\n")
    fails(load_system, p, "UTF-8", f"{p}:2")


def test_missing_file(tmp_path):
    fails(load_model, tmp_path / "nope.yaml", "does not exist")


@pytest.mark.parametrize(
    "text, kind",
    [("- a\n- b\n", "list"), ("just text\n", "string"), ("42\n", "number")],
)
def test_top_level_not_a_mapping(tmp_path, text, kind):
    p = write(tmp_path, text)
    fails(load_model, p, f"top level is a {kind}", "mapping")


def test_duplicate_key(tmp_path):
    p = write(tmp_path, SYSTEM + "nodes: 3\n")
    fails(load_system, p, "duplicate key 'nodes'", f"{p}:8", "first given on line 4")


def test_huge_integer_is_an_error_not_a_crash(tmp_path):
    p = write(tmp_path, sys_sub("memory_GB: 16", "memory_GB: 1" + "0" * 400))
    fails(load_system, p, "gpu.memory_GB", "too large")
    p = write(tmp_path, sys_sub("nodes: 2", "nodes: " + "9" * 5000), "huge.yaml")
    fails(load_system, p, "cannot be read")


# --------------------------------------------------------------------------------------
# model files
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "drop, key",
    [
        ("name: Tiny\n", "name"),
        ("input: [3, 8, 8]\n", "input"),
        ("dataset: {name: toy, samples: 100}\n", "dataset"),
    ],
)
def test_model_missing_top_level_key(tmp_path, drop, key):
    p = write(tmp_path, MODEL_2D.replace(drop, ""))
    fails(load_model, p, f"missing required key '{key}'")


def test_model_missing_dataset_samples(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("{name: toy, samples: 100}", "{name: toy}"))
    fails(load_model, p, "dataset", "missing required key 'samples'")


def test_model_missing_layers(tmp_path):
    text = MODEL_2D.split("layers:")[0]
    p = write(tmp_path, text)
    fails(load_model, p, "missing required key 'layers'")


def test_model_empty_layers(tmp_path):
    p = write(tmp_path, MODEL_2D.split("layers:")[0] + "layers: []\n")
    fails(load_model, p, "layers", "no layers")


def test_model_unknown_top_level_key(tmp_path):
    p = write(tmp_path, MODEL_2D + "nmae: x\n")
    fails(load_model, p, "unknown key 'nmae'", "did you mean 'name'")


def test_conv_unknown_key_hint(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("filters: 4", "filtres: 4"))
    # 'filters' is then also missing; the missing key is reported first
    msg = fails(load_model, p, "layers[0] (conv1)")
    assert "filters" in msg
    p = write(tmp_path, MODEL_2D.replace("filters: 4", "filters: 4, filtres: 4"), "y.yaml")
    fails(load_model, p, "layers[0] (conv1)", "unknown key 'filtres'", "did you mean 'filters'")


def test_conv_synonym_hint(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("kernel: 3", "kernel: 3, kernel_size: 3"))
    fails(load_model, p, "layers[0] (conv1)", "unknown key 'kernel_size'", "did you mean 'kernel'")


def test_layer_string_for_number(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("filters: 4", "filters: four"))
    fails(load_model, p, "layers[0] (conv1).filters", "'four'", "whole number")


def test_layer_bool_for_number(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("outputs: 10", "outputs: true"))
    fails(load_model, p, "layers[3] (fc).outputs", "got true")


def test_layer_fractional_integer(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("filters: 4", "filters: 4.5"))
    fails(load_model, p, "layers[0] (conv1).filters", "4.5")


def test_layer_not_a_mapping(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("  - {name: relu1, type: relu}\n", "  - relu1\n"))
    fails(load_model, p, "layers[1]", "expected a mapping")


def test_layers_not_a_list(tmp_path):
    p = write(tmp_path, MODEL_2D.split("layers:")[0] + "layers: {conv1: {type: conv}}\n")
    fails(load_model, p, "layers", "expected a list")


def test_input_5d(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("[3, 8, 8]", "[3, 8, 8, 8, 8]"))
    fails(load_model, p, "input", "1, 2 or 3 spatial extents")


def test_input_zero_extent(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("[3, 8, 8]", "[3, 0, 8]"))
    fails(load_model, p, "input", "item 1")


def test_dataset_samples_zero(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("samples: 100", "samples: 0"))
    fails(load_model, p, "dataset.samples", ">= 1")


def test_duplicate_layer_names(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("name: relu1", "name: conv1"))
    fails(load_model, p, "layers[1] (conv1)", "duplicate layer name 'conv1'", "layers[0]")


def test_unknown_layer_type_hint(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("type: relu", "type: rellu"))
    fails(
        load_model,
        p,
        "layers[1] (relu1).type",
        "unknown layer type 'rellu'",
        "did you mean 'relu'",
    )


def test_inputs_names_unknown_layer(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("type: relu}", "type: relu, inputs: [conv2]}"))
    fails(
        load_model,
        p,
        "layers[1] (relu1).inputs",
        "unknown layer 'conv2'",
        "did you mean 'conv1'",
    )


def test_inputs_names_later_layer(tmp_path):
    text = model_with_layers(
        """\
        - {name: conv1, type: conv, filters: 4, kernel: 3, padding: 1, inputs: [relu1]}
        - {name: relu1, type: relu}
        """
    )
    p = write(tmp_path, text)
    fails(load_model, p, "layers[0] (conv1).inputs", "'relu1' is defined later", "cycles")


def test_inputs_names_itself(tmp_path):
    text = model_with_layers(
        """\
        - {name: conv1, type: conv, filters: 4, kernel: 3, padding: 1}
        - {name: relu1, type: relu, inputs: [relu1]}
        """
    )
    p = write(tmp_path, text)
    fails(load_model, p, "layers[1] (relu1).inputs", "relu1")


def test_add_without_inputs(tmp_path):
    text = model_with_layers(
        """\
        - {name: conv1, type: conv, filters: 4, kernel: 3, padding: 1}
        - {name: sum, type: add}
        """
    )
    fails(load_model, write(tmp_path, text), "layers[1] (sum)", "needs 'inputs:'")


def test_add_mismatched_shapes(tmp_path):
    text = model_with_layers(
        """\
        - {name: a, type: conv, filters: 4, kernel: 3, padding: 1}
        - {name: b, type: conv, filters: 8, kernel: 3, padding: 1, inputs: [input]}
        - {name: sum, type: add, inputs: [a, b]}
        """
    )
    fails(
        load_model,
        write(tmp_path, text),
        "layers[2] (sum)",
        "add inputs do not match",
        "4x8x8",
        "8x8x8",
    )


def test_concat_mismatched_spatial(tmp_path):
    text = model_with_layers(
        """\
        - {name: a, type: conv, filters: 4, kernel: 3, padding: 1}
        - {name: b, type: conv, filters: 4, kernel: 3, stride: 2, padding: 1, inputs: [input]}
        - {name: cat, type: concat, inputs: [a, b]}
        """
    )
    fails(load_model, write(tmp_path, text), "layers[2] (cat)", "concat inputs", "4x8x8", "4x4x4")


def test_kernel_larger_than_padded_input(tmp_path):
    text = model_with_layers("- {name: big, type: conv, filters: 4, kernel: 7}\n", "[3, 5, 5]")
    p = write(tmp_path, text)
    fails(
        load_model,
        p,
        f"{p}:5",
        "layers[0] (big)",
        "kernel 7 is larger than the padded input 5x5",
    )


def test_pool_kernel_larger_than_input(tmp_path):
    text = model_with_layers("- {name: pool, type: maxpool, kernel: 4}\n", "[3, 3, 3]")
    fails(load_model, write(tmp_path, text), "layers[0] (pool)", "larger than the padded input 3x3")


def test_conv_on_flattened_input(tmp_path):
    text = model_with_layers(
        """\
        - {name: flat, type: flatten}
        - {name: conv1, type: conv, filters: 4, kernel: 1}
        """
    )
    fails(
        load_model,
        write(tmp_path, text),
        "layers[1] (conv1)",
        "needs an input with spatial dimensions",
    )


def test_groups_not_dividing_channels(tmp_path):
    text = model_with_layers("- {name: conv1, type: conv, filters: 4, kernel: 3, groups: 2}\n")
    fails(
        load_model,
        write(tmp_path, text),
        "layers[0] (conv1)",
        "groups 2 does not divide the 3 input channels",
    )


def test_groups_not_dividing_filters(tmp_path):
    text = model_with_layers(
        "- {name: conv1, type: conv, filters: 5, kernel: 3, groups: 3}\n"
    )
    fails(
        load_model,
        write(tmp_path, text),
        "layers[0] (conv1)",
        "groups 3 does not divide the 5 filters",
    )


def test_kernel_list_length_mismatch(tmp_path):
    text = model_with_layers("- {name: conv1, type: conv, filters: 4, kernel: [3, 3, 3]}\n")
    fails(
        load_model,
        write(tmp_path, text),
        "layers[0] (conv1)",
        "kernel has 3 values",
        "2 spatial dimension",
    )


def test_stride_zero(tmp_path):
    text = model_with_layers("- {name: conv1, type: conv, filters: 4, kernel: 3, stride: 0}\n")
    fails(load_model, write(tmp_path, text), "layers[0] (conv1).stride", "got 0")


def test_negative_padding_item(tmp_path):
    text = model_with_layers(
        "- {name: conv1, type: conv, filters: 4, kernel: 3, padding: [1, -1]}\n",
    )
    fails(load_model, write(tmp_path, text), "layers[0] (conv1).padding", "item 1", "got -1")


def test_dropout_rate_out_of_range(tmp_path):
    p = write(
        tmp_path,
        MODEL_2D.replace("{name: relu1, type: relu}", "{name: drop, type: dropout, rate: 1.5}"),
    )
    fails(load_model, p, "layers[1] (drop).rate", "1.5", "< 1")


def test_reserved_layer_name(tmp_path):
    p = write(tmp_path, MODEL_2D.replace("name: relu1", "name: input"))
    fails(load_model, p, "layers[1] (input).name", "reserved")


# --------------------------------------------------------------------------------------
# system files
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "old, new, missing",
    [
        ("name: TinyCluster\n", "", "name"),
        ("memory_GB: 16, ", "", "memory_GB"),
        ("gpus_per_node: 4\n", "", "gpus_per_node"),
        ("nodes: 2\n", "", "nodes"),
    ],
)
def test_system_missing_key(tmp_path, old, new, missing):
    p = write(tmp_path, sys_sub(old, new))
    fails(load_system, p, f"missing required key '{missing}'")


def test_system_missing_memory_names_gpu(tmp_path):
    p = write(tmp_path, sys_sub("memory_GB: 16, ", ""))
    fails(load_system, p, "gpu: missing required key 'memory_GB'")


def test_system_missing_network(tmp_path):
    p = write(tmp_path, SYSTEM.split("network:")[0])
    fails(load_system, p, "missing required key 'network'")


def test_system_empty_network(tmp_path):
    p = write(tmp_path, SYSTEM.split("network:")[0] + "network: []\n")
    fails(load_system, p, "network", "no levels")


def test_level_missing_alpha(tmp_path):
    p = write(tmp_path, sys_sub("alpha_s: 2.0e-6, ", ""))
    fails(load_system, p, "network[1] (ib)", "missing required key 'alpha_s'")


def test_level_missing_beta(tmp_path):
    p = write(tmp_path, sys_sub(", beta_s_per_byte: 5.0e-11", ""))
    fails(
        load_system,
        p,
        "network[0] (nvlink)",
        "missing required key 'beta_s_per_byte'",
        "bandwidth_GB_per_s",
    )


def test_level_both_beta_and_bandwidth(tmp_path):
    p = write(
        tmp_path,
        sys_sub("beta_s_per_byte: 5.0e-11", "beta_s_per_byte: 5.0e-11, bandwidth_GB_per_s: 20"),
    )
    fails(load_system, p, "network[0] (nvlink).bandwidth_GB_per_s", "not both")


def test_level_unknown_key_bandwith_hint(tmp_path):
    p = write(
        tmp_path,
        sys_sub("bandwidth_GB_per_s: 12.5", "beta_s_per_byte: 8.0e-11, bandwith: 12.5"),
    )
    fails(load_system, p, "network[1] (ib)", "unknown key 'bandwith'", "beta_s_per_byte")


def test_gpu_unknown_key_hint(tmp_path):
    p = write(tmp_path, sys_sub("peak_TFLOPS", "peak_TFLOP"))
    fails(load_system, p, "gpu", "unknown key 'peak_TFLOP'", "did you mean 'peak_TFLOPS'")


def test_system_string_for_number(tmp_path):
    p = write(tmp_path, sys_sub("memory_GB: 16", "memory_GB: sixteen"))
    fails(load_system, p, "gpu.memory_GB", "'sixteen'", "GPU memory")


def test_system_quoted_number_is_a_string(tmp_path):
    p = write(tmp_path, sys_sub("alpha_s: 1.0e-6", 'alpha_s: "1.0e-6"'))
    fails(load_system, p, "network[0] (nvlink).alpha_s", "'1.0e-6'", "expected a latency")


def test_system_bool_for_number(tmp_path):
    p = write(tmp_path, sys_sub("nodes: 2", "nodes: yes"))
    fails(load_system, p, "nodes", "got true")


def test_system_list_for_mapping(tmp_path):
    p = write(
        tmp_path,
        sys_sub("gpu: {model: V100, memory_GB: 16, peak_TFLOPS: 15.7}", "gpu: [V100, 16]"),
    )
    fails(load_system, p, "gpu", "got a list; expected a mapping")


def test_network_level_not_a_mapping(tmp_path):
    p = write(
        tmp_path,
        sys_sub("  - {name: ib, max_gpus: 8, alpha_s: 2.0e-6, bandwidth_GB_per_s: 12.5}", "  - ib"),
    )
    fails(load_system, p, "network[1]", "expected a mapping")


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", ".Inf"])
def test_system_nan_and_inf(tmp_path, value):
    p = write(tmp_path, sys_sub("beta_s_per_byte: 5.0e-11", f"beta_s_per_byte: {value}"))
    fails(load_system, p, "network[0] (nvlink).beta_s_per_byte", "finite")


@pytest.mark.parametrize("value", ["0", "-1.0e-6", "0.0"])
def test_alpha_not_positive(tmp_path, value):
    p = write(tmp_path, sys_sub("alpha_s: 1.0e-6", f"alpha_s: {value}"))
    fails(load_system, p, "network[0] (nvlink).alpha_s", "> 0")


@pytest.mark.parametrize("value", ["0", "-5.0e-11"])
def test_beta_not_positive(tmp_path, value):
    p = write(tmp_path, sys_sub("beta_s_per_byte: 5.0e-11", f"beta_s_per_byte: {value}"))
    fails(load_system, p, "network[0] (nvlink).beta_s_per_byte", "> 0")


def test_zero_bandwidth(tmp_path):
    p = write(tmp_path, sys_sub("bandwidth_GB_per_s: 12.5", "bandwidth_GB_per_s: 0"))
    fails(load_system, p, "network[1] (ib).bandwidth_GB_per_s", "> 0")


@pytest.mark.parametrize("value", ["0", "-16"])
def test_memory_not_positive(tmp_path, value):
    p = write(tmp_path, sys_sub("memory_GB: 16", f"memory_GB: {value}"))
    fails(load_system, p, "gpu.memory_GB", "> 0")


def test_memory_implausible(tmp_path):
    p = write(tmp_path, sys_sub("memory_GB: 16", "memory_GB: 1.0e9"))
    fails(load_system, p, "memory_GB", "not plausible")


def test_gpus_per_node_zero(tmp_path):
    p = write(tmp_path, sys_sub("gpus_per_node: 4", "gpus_per_node: 0"))
    fails(load_system, p, "gpus_per_node", ">= 1")


def test_contention_factor_below_one(tmp_path):
    p = write(tmp_path, SYSTEM + "contention_factor: 0.5\n")
    fails(load_system, p, "contention_factor", "0.5", ">= 1")


def test_max_gpus_not_increasing(tmp_path):
    p = write(tmp_path, sys_sub("max_gpus: 8", "max_gpus: 4"))
    fails(load_system, p, "network[1] (ib).max_gpus", "must increase", "previous level has 4")


def test_max_gpus_decreasing(tmp_path):
    p = write(tmp_path, sys_sub("max_gpus: 8", "max_gpus: 2"))
    fails(load_system, p, "network[1] (ib).max_gpus", "must increase")


def test_unknown_operation_hint(tmp_path):
    p = write(tmp_path, SYSTEM + "operations:\n  allredcue: {alpha_scale: 2}\n")
    fails(load_system, p, "operations", "unknown key 'allredcue'", "did you mean 'allreduce'")


def test_operation_bad_scale(tmp_path):
    p = write(tmp_path, SYSTEM + "operations:\n  halo: {alpha_scale: -1}\n")
    fails(load_system, p, "operations.halo.alpha_scale", "> 0")


def test_operation_unknown_key(tmp_path):
    p = write(tmp_path, SYSTEM + "operations:\n  halo: {latency: 3.0e-3}\n")
    fails(load_system, p, "operations.halo", "unknown key 'latency'", "alpha_s")


def test_system_unknown_top_level_key(tmp_path):
    p = write(tmp_path, SYSTEM + "gpus_per_nodes: 4\n")
    fails(load_system, p, "unknown key 'gpus_per_nodes'", "did you mean 'gpus_per_node'")


# --------------------------------------------------------------------------------------
# profile files
# --------------------------------------------------------------------------------------


@pytest.fixture
def tiny_model(tmp_path):
    return load_model(write(tmp_path, MODEL_2D, "tiny_model.yaml"))


def test_profile_missing_model(tmp_path):
    p = write(tmp_path, prof_sub("model: Tiny\n", ""))
    fails(load_profile, p, "missing required key 'model'")


def test_profile_missing_layers_and_total(tmp_path):
    p = write(tmp_path, "model: Tiny\ndevice: V100\n")
    fails(load_profile, p, "'layers:'", "'total:'")


def test_profile_both_layers_and_total(tmp_path):
    p = write(tmp_path, PROFILE + "total: {fw_bw_per_sample_s: 1.0e-3}\n")
    fails(load_profile, p, "total", "not both")


def test_profile_missing_layer_of_model(tmp_path, tiny_model):
    p = write(tmp_path, prof_sub("  relu1: {fw_s: 1.0e-5, bw_s: 1.0e-5}\n", ""))
    prof = load_profile(p)
    with pytest.raises(OracleError) as info:
        bind_profile(tiny_model, prof)
    msg = str(info.value)
    assert str(p) in msg and "layers" in msg and "'relu1'" in msg and "no times" in msg, msg


def test_profile_layer_the_model_lacks(tmp_path, tiny_model):
    p = write(tmp_path, PROFILE + "  conv9: {fw_s: 1.0e-5, bw_s: 1.0e-5}\n")
    prof = load_profile(p)
    with pytest.raises(OracleError) as info:
        bind_profile(tiny_model, prof)
    msg = str(info.value)
    assert str(p) in msg and "layers.conv9" in msg and "does not have" in msg, msg


def test_profile_for_another_model(tmp_path, tiny_model):
    p = write(tmp_path, prof_sub("model: Tiny", "model: ResNet-50"))
    prof = load_profile(p)
    with pytest.raises(OracleError) as info:
        bind_profile(tiny_model, prof)
    msg = str(info.value)
    assert str(p) in msg and "model" in msg and "'ResNet-50', not 'Tiny'" in msg, msg


def test_profile_negative_time(tmp_path):
    p = write(tmp_path, prof_sub("fw_s: 1.0e-4", "fw_s: -1.0e-4"))
    fails(load_profile, p, "layers.conv1.fw_s", "-0.0001", ">= 0")


def test_profile_all_zero_times(tmp_path):
    text = "model: Tiny\nlayers:\n" + "".join(
        f"  {n}: {{fw_s: 0, bw_s: 0.0}}\n" for n in ("conv1", "relu1", "flat", "fc")
    )
    fails(load_profile, write(tmp_path, text), "layers", "all forward and backward times are zero")


def test_profile_layer_missing_bw(tmp_path):
    p = write(tmp_path, prof_sub("relu1: {fw_s: 1.0e-5, bw_s: 1.0e-5}", "relu1: {fw_s: 1.0e-5}"))
    fails(load_profile, p, "layers.relu1", "missing required key 'bw_s'")


def test_profile_unknown_time_key_hint(tmp_path):
    p = write(tmp_path, prof_sub("wu_s: 1.0e-6}\n  relu1", "wu_s: 1.0e-6, fw: 1}\n  relu1"))
    fails(load_profile, p, "layers.conv1", "unknown key 'fw'", "did you mean 'fw_s'")


def test_profile_string_time(tmp_path):
    p = write(tmp_path, prof_sub("bw_s: 2.0e-4", "bw_s: fast"))
    fails(load_profile, p, "layers.conv1.bw_s", "'fast'", "time in seconds")


def test_profile_nan_time(tmp_path):
    p = write(tmp_path, prof_sub("bw_s: 2.0e-4", "bw_s: .nan"))
    fails(load_profile, p, "layers.conv1.bw_s", "finite")


def test_profile_total_zero(tmp_path):
    p = write(tmp_path, "model: Tiny\ntotal: {fw_bw_per_sample_s: 0, wu_per_iteration_s: 0}\n")
    fails(load_profile, p, "total.fw_bw_per_sample_s", "> 0")


def test_profile_total_negative_wu(tmp_path):
    p = write(
        tmp_path,
        "model: Tiny\ntotal: {fw_bw_per_sample_s: 1e-3, wu_per_iteration_s: -1e-3}\n",
    )
    fails(load_profile, p, "total.wu_per_iteration_s", ">= 0")


def test_profile_empty_layers(tmp_path):
    p = write(tmp_path, "model: Tiny\nlayers: {}\n")
    fails(load_profile, p, "layers", "empty")


def test_profile_bad_kind(tmp_path):
    p = write(tmp_path, PROFILE + "kind: mesured\n")
    fails(load_profile, p, "kind", "did you mean 'measured'")


def test_profile_duplicate_layer(tmp_path):
    p = write(tmp_path, PROFILE + "  conv1: {fw_s: 1.0e-4, bw_s: 2.0e-4}\n")
    fails(load_profile, p, "duplicate key 'conv1'")


# --------------------------------------------------------------------------------------
# numbers: 1e-6 without a dot is a number (YAML 1.1 would read a string)
# --------------------------------------------------------------------------------------


def test_exponent_floats_are_numbers(tmp_path, tiny_model):
    text = sys_sub("alpha_s: 1.0e-6", "alpha_s: 1e-6").replace("5.0e-11", "5E-11")
    s = load_system(write(tmp_path, text, "s.yaml"))
    assert s.network[0].alpha_s == pytest.approx(1e-6)
    assert s.network[0].beta_s_per_byte == pytest.approx(5e-11)
    text = prof_sub("fw_s: 1.0e-4", "fw_s: 1e-4").replace("2.0e-4", "2e+0")
    p = load_profile(write(tmp_path, text, "p.yaml"))
    times = dict(p.layers)
    assert times["conv1"].fw_s == pytest.approx(1e-4)
    assert times["conv1"].bw_s == pytest.approx(2.0)
    m = load_model(write(tmp_path, MODEL_2D.replace("samples: 100", "samples: 1e3"), "m.yaml"))
    assert m.dataset_samples == 1000


# --------------------------------------------------------------------------------------
# positive tests
# --------------------------------------------------------------------------------------


def test_valid_1d_model(tmp_path):
    text = model_with_layers(
        """\
        - {name: conv1, type: conv, filters: 8, kernel: 5, stride: 2, padding: 2, bias: false}
        - {name: bn1, type: batchnorm}
        - {name: relu1, type: relu}
        - {name: pool1, type: maxpool, kernel: 2}
        - {name: gap, type: globalavgpool}
        - {name: flat, type: flatten}
        - {name: fc, type: fc, outputs: 3}
        - {name: prob, type: softmax}
        """,
        "[2, 64]",
    )
    m = load_model(write(tmp_path, text))
    assert m.spatial_dims == 1
    assert m.info[0].output_shape == (8, 32)
    assert m.info[0].weights == 8 * 2 * 5 and m.info[0].biases == 0
    assert m.info[3].output_shape == (8, 16)
    assert m.info[-1].output_shape == (3,)


def test_valid_2d_model_with_dag(tmp_path):
    text = model_with_layers(
        """\
        - {name: conv1, type: conv, filters: 4, kernel: 3, padding: 1}
        - {name: branch, type: conv, filters: 4, kernel: [1, 1], inputs: [conv1]}
        - {name: res, type: add, inputs: [conv1, branch]}
        - {name: cat, type: concat, inputs: [res, input]}
        - {name: flat, type: flatten}
        - {name: fc, type: fc, outputs: 10}
        """
    )
    m = load_model(write(tmp_path, text))
    assert m.spatial_dims == 2
    assert m.info[2].output_shape == (4, 8, 8)
    assert m.info[3].output_shape == (7, 8, 8)
    assert m.info[5].weights == 7 * 8 * 8 * 10
    assert m.layers[1].kernel == (1, 1)


def test_valid_3d_model(tmp_path):
    text = model_with_layers(
        """\
        - {name: conv1, type: conv, filters: 16, kernel: 3, padding: 1}
        - {name: lrelu, type: leakyrelu, slope: 0.01}
        - {name: pool1, type: avgpool, kernel: 2}
        - {name: flat, type: flatten}
        - {name: fc, type: fc, outputs: 4}
        """,
        "[4, 16, 16, 16]",
    )
    m = load_model(write(tmp_path, text))
    assert m.spatial_dims == 3
    assert m.info[0].output_shape == (16, 16, 16, 16)
    assert m.info[2].output_shape == (16, 8, 8, 8)
    assert m.info[3].output_shape == (16 * 8 * 8 * 8,)


def test_valid_system_and_bandwidth_conversion(tmp_path):
    s = load_system(write(tmp_path, SYSTEM))
    assert s.name == "TinyCluster"
    assert s.gpu_memory_bytes == 16e9
    assert s.gpu_peak_flops == pytest.approx(15.7e12)
    assert s.total_gpus == 8
    ib = s.network[1]
    assert ib.beta_s_per_byte == pytest.approx(1 / 12.5e9)  # 12.5 GB/s -> 8e-11 s/B
    assert ib.beta_s_per_byte == pytest.approx(8.0e-11)
    assert s.contention_factor is None


def test_operation_bandwidth_conversion(tmp_path):
    text = SYSTEM + "operations:\n  halo: {alpha_s: 3.0e-3, bandwidth_GB_per_s: 16}\n"
    s = load_system(write(tmp_path, text))
    halo = s.operation("halo")
    assert halo is not None
    assert halo.alpha_s == pytest.approx(3e-3)
    assert halo.beta_s_per_byte == pytest.approx(6.25e-11)
    assert s.operation("allreduce") is None


def test_valid_profile_binds(tmp_path, tiny_model):
    prof = load_profile(write(tmp_path, PROFILE))
    times = bind_profile(tiny_model, prof)
    assert len(times) == len(tiny_model.layers)
    assert times[0].fw_s == pytest.approx(1e-4) and times[1].wu_s == 0.0


def test_total_profile_spreads_by_flops(tmp_path, tiny_model):
    prof = load_profile(write(tmp_path, "model: Tiny\ntotal: {fw_bw_per_sample_s: 3.0e-3}\n"))
    assert prof.kind == "total"
    times = bind_profile(tiny_model, prof)
    assert math.isclose(sum(t.fw_s + t.bw_s for t in times), 3.0e-3)
    assert times[2].fw_s == 0.0  # flatten has no FLOPs
    assert times[0].bw_s == pytest.approx(2 * times[0].fw_s)


def test_shipped_system_resolves():
    from oracle.load import load_system as load_named

    s = load_named("abci")
    assert s.name == "ABCI"
    assert s.contention_factor is None and s.links_per_node == 2
    # fitted per measured span (issue 5); the nominal file keeps ParaDL's link levels
    assert [lv.name for lv in s.network] == ["n4", "n8", "n16", "n32", "n64", "n128"]
    nominal = load_named("abci-nominal")
    assert [lv.name for lv in nominal.network] == ["nvlink", "rack", "spine"]


def test_unknown_shipped_name_hint():
    from oracle.load import load_system as load_named

    with pytest.raises(OracleError) as info:
        load_named("abcii")
    msg = str(info.value)
    assert "abcii" in msg and "no shipped system" in msg and "did you mean 'abci" in msg, msg


@pytest.mark.parametrize("name", ["abci", "abci-nominal", "abci-chainermnx", "lassen", "dgx-h100-superpod"])
def test_all_shipped_systems_load(name):
    from oracle.load import load_system as load_named

    s = load_named(name)
    assert s.network and s.gpu_memory_bytes > 0


@pytest.mark.parametrize(
    "name", ["resnet50_v100", "vgg16_v100", "alexnet_v100", "cosmoflow_v100", "cosmoflow256_v100"]
)
def test_all_shipped_profiles_load(name):
    from oracle.load import load_profile as load_named

    p = load_named(name)
    assert p.kind == "total" and p.total_fw_bw_per_sample_s > 0 and p.total_wu_per_iteration_s == 0


@pytest.mark.parametrize(
    "model, profile",
    [
        ("resnet50", "resnet50_v100"),
        ("vgg16", "vgg16_v100"),
        ("alexnet", "alexnet_v100"),
        ("cosmoflow", "cosmoflow_v100"),
        ("cosmoflow256", "cosmoflow256_v100"),
    ],
)
def test_shipped_profiles_bind_to_shipped_models(model, profile):
    from oracle.load import load_model as load_named_model
    from oracle.load import load_profile as load_named_profile
    from oracle.resources import shipped_names

    if model not in shipped_names("models"):
        pytest.skip(f"models/{model}.yaml not shipped yet")
    m = load_named_model(model)
    p = load_named_profile(profile)
    times = bind_profile(m, p)
    assert math.isclose(sum(t.fw_s + t.bw_s for t in times), p.total_fw_bw_per_sample_s)
