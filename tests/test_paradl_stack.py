"""`--stack paradl` computes what ParaDL's own tool computes (issue 27): every row the tool
printed for oracle's AlexNet, VGG16, ResNet-50 and CosmoFlow as the stack sees them
(validation/paradl-tool-oracle-models.csv, scripts/paradl_tool_oracle_reference.sh) is
oracle's `paradl` projection within 1% (compute, communication, memory per GPU); SPEC
section 4's ParaDL mode stays reachable by options."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from oracle import api
from oracle.compute.strategies.channel import Channel
from oracle.compute.strategies.data import Data
from oracle.compute.strategies.data_filter import DataFilter
from oracle.compute.strategies.data_spatial import DataSpatial
from oracle.compute.strategies.filter import Filter
from oracle.compute.strategies.serial import Serial
from oracle.compute.strategies.spatial import Spatial

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "validation" / "paradl-tool-oracle-models.csv"
PROFILES = {"alexnet": "alexnet_v100", "vgg16": "vgg16_v100", "resnet50": "resnet50_v100",
            "cosmoflow": "cosmoflow_v100"}  # fmt: skip
GPUS_PER_NODE = 4  # the tool's p2 of data+filter and data+spatial (ABCI.plat GPU_PER_NODE)


def _batch(case: str, b: float) -> tuple[str, dict, int | None]:
    """oracle's strategy, batch flags and p2 for a case of the tool (compute/paradl/paradl_tool.py)."""
    return {
        "single": (Serial.name, {"batch": b}, None),
        "data": (Data.name, {"batch_per_gpu": b}, None),  # B = b p
        "filter1": (Filter.name, {"batch_per_gpu": b}, None),
        "filter3": (Filter.name, {"batch": b}, None),
        "chan1": (Channel.name, {"batch_per_gpu": b}, None),
        "chan3": (Channel.name, {"batch": b}, None),
        "spatial": (Spatial.name, {"batch": b}, None),
        "df": (DataFilter.name, {"batch_per_gpu": b / GPUS_PER_NODE}, GPUS_PER_NODE),  # B = b p1
        "ds": (DataSpatial.name, {"batch_per_gpu": b / GPUS_PER_NODE}, GPUS_PER_NODE),
    }[case]


def _groups() -> dict[tuple[str, str, str], list[dict[str, str]]]:
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    with REFERENCE.open() as f:
        for row in csv.DictReader(f):
            groups.setdefault((row["net_file"].removesuffix(".net"), row["case"], row["cBon"]), []).append(row)
    return groups


GROUPS = _groups()


@pytest.mark.parametrize("key", sorted(GROUPS), ids="-".join)
def test_paradl_stack_is_the_tool_within_one_percent(key):
    model, case, b = key
    strategy, batch, p2 = _batch(case, float(b))
    rows = GROUPS[key]
    points = api.predict(ROOT / "models" / f"{model}.yaml", "abci-nominal", ROOT / "profiles" / f"{PROFILES[model]}.yaml",
                         [int(float(r["p"])) for r in rows], strategy, p2=p2, stack="paradl", **batch)  # fmt: skip
    by_gpus = {pt.gpus: pt for pt in points}
    for row in rows:
        pt = by_gpus[int(float(row["p"]))]
        assert pt.global_batch == pytest.approx(float(row["B"]))
        got = (pt.compute_s, pt.communication_s, pt.memory_bytes)
        want = (float(row["compute_s"]), float(row["communication_s"]), float(row["memory_bytes"]))
        assert got == pytest.approx(want, rel=0.01), (row, got)


def test_the_reference_covers_the_strategies_and_models():
    assert {k[1] for k in GROUPS} == {"single", "data", "filter1", "filter3", "chan1", "chan3", "spatial", "df", "ds"}
    assert {k[0] for k in GROUPS} == set(PROFILES)


def test_an_unknown_cost_model_is_one_error_naming_file_and_key():
    import yaml

    from oracle.errors import OracleError
    from oracle.load.stack import parse_stack

    doc = yaml.safe_load((ROOT / "stacks" / "paradl.yaml").read_text())
    assert parse_stack(doc, "p.yaml").cost_model.value == "paradl-tool"
    doc["cost_model"]["value"] = "paradl-paper"
    with pytest.raises(OracleError) as e:
        parse_stack(doc, "my-stack.yaml")
    assert "my-stack.yaml" in str(e.value) and "cost_model" in str(e.value)


def test_pipeline_which_the_tool_does_not_project_keeps_spec_formulas():
    args = (ROOT / "models" / "vgg16.yaml", "abci-nominal", ROOT / "profiles" / "vgg16_v100.yaml", [8], "pipeline")
    stacked = api.predict(*args, batch=256, stack="paradl")
    plain = api.predict(*args, batch=256, compute_scaling="linear", memory_model="paradl")
    assert [p.total_s for p in stacked] == [p.total_s for p in plain]
    assert [p.memory_bytes for p in stacked] == [p.memory_bytes for p in plain]


def test_the_tools_bounds_on_p_become_limits():
    # VGG16 at 224x224: the narrowest split layer (pool5's output) is 7 wide (tool:557)
    (pt,) = api.predict(ROOT / "models" / "vgg16.yaml", "abci-nominal", ROOT / "profiles" / "vgg16_v100.yaml",
                        [8], "spatial", batch=8, stack="paradl")  # fmt: skip
    assert [lim.code for lim in pt.limits][:1] == [Spatial.name] and "7" in pt.limits[0].reason


def test_compare_costs_a_measured_run_with_the_tool_too(tmp_path):
    import json

    from conftest import run_cli

    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,profile,strategy,gpus,p1,p2,global_batch,epoch_s\n"
                    "vgg16,abci-nominal,vgg16_v100,data+spatial,32,8,4,256,6000\n")  # fmt: skip
    out = run_cli("compare", runs, "--stack", "paradl", "-f", "json")
    assert out.code == 0, out.out
    (row,) = json.loads(out.out)["rows"]
    (pt,) = api.predict(ROOT / "models" / "vgg16.yaml", "abci-nominal", ROOT / "profiles" / "vgg16_v100.yaml",
                        [32], DataSpatial.name, p2=4, batch=256, stack="paradl")  # fmt: skip
    assert row["predicted_s"] == pytest.approx(pt.total_s, rel=1e-12)


def _ctx(model: str, profile: str, **flags):
    from oracle.compute.context import Context
    from oracle.compute.conversion import prepare

    req = api.request(ROOT / "models" / f"{model}.yaml", "abci-nominal", ROOT / "profiles" / f"{profile}.yaml",
                      batch_per_gpu=1, **flags)  # fmt: skip
    times, _ = prepare(req.model, req.system, req.profile, req.run.options)
    return Context(req.model, req.system, times, req.run.options, req.profile.kind)


def test_chainermnx_splits_the_layers_paradls_runs_split():
    """Issue 27 point 3: ParaDL's layer configurations: filter and channel split the
    convolutions only (filter_*.lc), AlexNet's spatial split ends at conv5 (spatial_alexnet.lc)."""
    plain, stacked = _ctx("alexnet", "alexnet_v100"), _ctx("alexnet", "alexnet_v100", stack="chainermnx")
    names = stacked.names
    split = [n for n, s in zip(names, stacked.split(Filter.name).mask) if s]
    assert split == ["conv1", "conv2", "conv3", "conv4", "conv5"]
    assert "fc6" in [n for n, s in zip(names, plain.split(Filter.name).mask) if s]
    assert names[stacked.spatial_last()] == "conv5" and names[plain.spatial_last()] == "pool5"
    # --spatial-split-after, given, wins over the stack
    assert names[_ctx("alexnet", "alexnet_v100", stack="chainermnx", spatial_split_after="pool2").spatial_last()] == "pool2"


@pytest.mark.parametrize(("key", "value", "words"), [
    ("split_types", "conv, dense", "layer type 'dense'"),
    ("spatial_split_after", "AlexNet conv5", "MODEL: LAYER"),
])  # fmt: skip
def test_a_bad_layer_configuration_is_one_error_naming_file_and_key(key, value, words):
    import yaml

    from oracle.errors import OracleError
    from oracle.load.stack import parse_stack

    doc = yaml.safe_load((ROOT / "stacks" / "chainermnx.yaml").read_text())
    doc["layers"][key]["value"] = value
    with pytest.raises(OracleError) as e:
        parse_stack(doc, "my-stack.yaml")
    assert "my-stack.yaml" in str(e.value) and f"layers.{key}" in str(e.value) and words in str(e.value)
