"""The recipes of docs/development.md "How to add a layer type / a system / a stack",
followed by a test that adds a toy one each (the strategy's is tests/toy_strategy.py with
tests/test_strategy_registry.py):

- a layer type is a row in each table the recipe lists (oracle/model.py's LAYER_TYPES,
  compute/layers/shapes.py's SHAPE_RULES, compute/memory.py's SAVE_RULES, profiling/estimate.py's
  ROOFLINE_KIND); with them a model using it loads, and its times and FLOPs count;
- a system is one file in systems/: by its name it is listed and projects as its path does;
- a stack is one file in stacks/: by its name it is listed, shown and applied."""

from __future__ import annotations

import json
import math
import shutil

import pytest
from conftest import TINY_MODEL, TINY_PROFILE, TINY_SYSTEM, run_cli

import oracle.load.model as load_model
import oracle.model as model_types
from oracle import resources
from oracle.compute.layers.shapes import SHAPE_RULES
from oracle.compute.memory import SAVE_RULES, SaveRule
from oracle.load.system import load_system
from oracle.model import LayerInfo
from oracle.profiling.estimate import ROOFLINE_KIND

# -- a layer type ----------------------------------------------------------------------

TOY_TYPE = "toydouble"  # y = 2x, element-wise: one multiply per element, no weights


def _toy_shape(index, layer, in_shapes) -> LayerInfo:
    """The shape rule (SHAPE_RULES' signature): output as input, one FLOP per element."""
    x = in_shapes[0]
    return LayerInfo(in_shapes, x, 0, 0, float(math.prod(x)))


@pytest.fixture
def toy_type(monkeypatch):
    """The rows the recipe adds, added for the test (monkeypatch takes them out again)."""
    types = (*model_types.LAYER_TYPES, TOY_TYPE)
    monkeypatch.setattr(model_types, "LAYER_TYPES", types)
    monkeypatch.setattr(load_model, "LAYER_TYPES", types)  # the loader's copy of the name
    monkeypatch.setitem(SHAPE_RULES, TOY_TYPE, _toy_shape)
    monkeypatch.setitem(SAVE_RULES, TOY_TYPE, SaveRule(inputs=True))  # the backward reads x
    monkeypatch.setitem(ROOFLINE_KIND, TOY_TYPE, "stream")
    return TOY_TYPE


def _with_toy(text: str, line: str, after: str) -> str:
    """The tiny model or profile with the toy line inserted after the line naming ``after``."""
    lines = text.splitlines()
    at = next(i for i, s in enumerate(lines) if after in s) + 1
    return "\n".join([*lines[:at], line, *lines[at:]]) + "\n"


@pytest.fixture
def toy_model(tmp_path):
    m, p, s = tmp_path / "m.yaml", tmp_path / "p.yaml", tmp_path / "s.yaml"
    m.write_text(_with_toy(TINY_MODEL, f"  - {{name: twice, type: {TOY_TYPE}}}", "relu1"), encoding="utf-8")
    p.write_text(_with_toy(TINY_PROFILE, "  twice: {fw_s: 1.0e-5, bw_s: 3.0e-5}", "relu1:"), encoding="utf-8")
    s.write_text(TINY_SYSTEM, encoding="utf-8")
    return m, p, s


def test_every_table_of_the_recipe_has_the_toy_row(toy_type):
    """What tests/test_layer_types.py checks of every type holds with the toy's rows."""
    for table in (SHAPE_RULES, SAVE_RULES, ROOFLINE_KIND):
        assert set(table) == set(model_types.LAYER_TYPES)


def test_a_model_with_the_toy_layer_loads_with_its_shape_and_flops(toy_type, toy_model):
    m = load_model.load_model(toy_model[0])
    i = m.index["twice"]
    assert m.layers[i].type == TOY_TYPE
    assert m.info[i].output_shape == (4, 8, 8)  # relu1's output, unchanged
    assert m.info[i].flops == 4 * 8 * 8 and m.info[i].parameters == 0


def test_the_toy_layers_times_count_in_the_projection(toy_type, toy_model, tiny):
    """Serial, one epoch of D = 1000 samples: its fw + bw per sample, 4e-5 s, adds D · 4e-5.
    At the profile's own batch (16): on the tiny system's V100 the compute model would
    convert the profile to another batch (the launch-bound toy layer's time per sample
    halves at 32)."""

    def fb(model, profile, system):
        r = run_cli("predict", "-m", str(model), "-s", str(system), "-p", str(profile), "--gpus", "1",
                    "--strategy", "serial", "-b", "16", "-f", "json")  # fmt: skip
        assert r.code == 0, r.err
        return json.loads(r.out)[0]["breakdown"]["forward_backward_s"]

    assert fb(*toy_model) - fb(tiny.model, tiny.profile, tiny.system) == pytest.approx(1000 * 4e-5)


def test_without_its_rows_the_type_is_one_error(toy_model):
    r = run_cli("show", "model", str(toy_model[0]))
    assert r.code == 2 and TOY_TYPE in r.err and "Traceback" not in r.err


# -- a system and a stack: one file each in the shipped folder --------------------------


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A copy of the shipped folders that the test may add to (as a checkout's systems/
    and stacks/ are), looked up by name as the real ones are."""
    root = tmp_path / "shipped"
    for kind in ("systems", "stacks"):
        shutil.copytree(resources.shipped_dir(kind), root / kind)
    real = resources.shipped_dir
    monkeypatch.setattr(resources, "shipped_dir", lambda kind: root / kind if (root / kind).is_dir() else real(kind))
    return root


TOY_SYSTEM = TINY_SYSTEM.replace(
    "name: TinyCluster", "name: ToyCluster\nuse_for: a toy cluster for the recipe test of docs/development.md only"
)


def test_a_system_file_in_systems_is_listed_and_used_by_name(shipped, tiny):
    (shipped / "systems" / "toy-cluster.yaml").write_text(TOY_SYSTEM, encoding="utf-8")
    listed = run_cli("list", "systems", "--width", "200")
    assert listed.code == 0 and "toy-cluster" in listed.out
    args = ("-m", str(tiny.model), "-p", str(tiny.profile), "--gpus", "2", "--strategy", "data", "-b", "32", "-f", "json")
    point = json.loads(run_cli("predict", "-s", "toy-cluster", *args).out)[0]
    # ring all-reduce of the 1,698 fp32 parameters (6,792 bytes) over 2 GPUs of the first
    # level (alpha 1e-6 s, beta 5e-11 s/B): 2(p-1)(alpha + m beta / p) per iteration, 15.625 iterations
    per_iteration = 2 * (1e-6 + 6792 * 5e-11 / 2)
    assert point["breakdown"]["gradient_exchange_s"] == pytest.approx(15.625 * per_iteration)
    assert point["system"] == "ToyCluster"
    assert len(load_system(resources.resolve("systems", "toy-cluster")).use_for.split()) >= 8  # as tests/test_system_names.py asks


def test_a_stack_file_in_stacks_is_listed_shown_and_applied(shipped, tiny):
    text = (shipped / "stacks" / "paradl.yaml").read_text(encoding="utf-8")
    toy = text.replace("name: paradl", "name: toy").replace("fixed_s: {value: 0.0,", "fixed_s: {value: 0.01,")
    assert toy.count("0.01,") == 1  # the one value the toy changes
    (shipped / "stacks" / "toy.yaml").write_text(toy, encoding="utf-8")
    assert "toy" in run_cli("list", "stacks", "--width", "200").out
    shown = json.loads(run_cli("show", "stack", "toy", "-f", "json").out)
    assert shown["values"]["iteration.fixed_s"]["value"] == 0.01

    def update_s(stack):
        r = run_cli("predict", "-m", str(tiny.model), "-s", str(tiny.system), "-p", str(tiny.profile),
                    "--gpus", "1", "--strategy", "serial", "-b", "32", "-f", "json", "--stack", stack)  # fmt: skip
        assert r.code == 0, r.err
        return json.loads(r.out)[0]["breakdown"]["weight_update_s"]

    # 1000 samples / 32 = 31.25 iterations, each 0.01 s more than under paradl
    assert update_s("toy") - update_s("paradl") == pytest.approx(31.25 * 0.01)
