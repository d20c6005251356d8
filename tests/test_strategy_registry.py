"""A strategy lives in one module (issue 24): tests/toy_strategy.py, registered by the
fixture below, shows in --strategy all, the help, the CSV columns, the plots' styles and
layer-wise files without a line anywhere else; the registry refuses what --strategy could
not select or would shadow; unregistering leaves no trace."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

from oracle.compute.cost import Phase, phase_names
from oracle.compute.layerwise.layerwise_build import default_kinds, kind_names
from oracle.compute.strategies import REGISTRY, Strategy, names
from oracle.compute.strategies.base import register, unregister

SWEEP = ("-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "-b", "32")


@pytest.fixture
def toy():
    """Import tests/toy_strategy.py (its @register adds it); remove it afterwards."""
    module = importlib.import_module("toy_strategy")
    try:
        yield module
    finally:
        unregister(module.Toy.name)
        sys.modules.pop("toy_strategy", None)


def test_toy_is_in_strategy_all_with_its_phase(toy, run):
    r = run("predict", *SWEEP, "--gpus", "1-4", "-f", "json")
    assert r.code == 0, r.err
    points = json.loads(r.out)
    toys = [p for p in points if p["strategy"] == "toy"]
    assert [p["gpus"] for p in toys] == [2, 4]  # from 2 GPUs, as every strategy but serial
    for p in toys:
        bd = p["breakdown"]
        assert bd["toy_barrier_s"] == pytest.approx(p["iterations_per_epoch"] * toy.BARRIER_S)
        assert p["communication_s"] == pytest.approx(bd["toy_barrier_s"])  # a communication phase
        assert p["total_s"] == pytest.approx(sum(bd.values()))
    assert all("toy_barrier_s" in p["breakdown"] for p in points)  # every point has every phase


def test_toy_is_a_csv_column_and_in_the_help(toy, run):
    r = run("predict", *SWEEP, "--gpus", "2", "-f", "csv")
    header = r.out.splitlines()[0].split(",")
    assert header.index("toy_barrier_s") == header.index("pipeline_p2p_s") + 1  # its order: after pipeline's
    assert "data+spatial, toy) or all." in " ".join(run("predict", "--help").out.split())
    search_help = " ".join(run("search", "--help").out.split())
    assert "(data, spatial, filter, channel, toy)" in search_help  # a default per-layer kind
    assert "[default: data,spatial,filter,channel,toy]" in search_help


def test_toy_plot_styles(toy):
    from oracle.render.plots import phase_styles, strategy_style, strategy_styles

    assert list(strategy_styles())[-1] == "toy"  # in strategy order
    assert strategy_style("toy") == ("#117733", "*")
    assert phase_styles()["toy_barrier_s"] == ("comm: toy barrier", "#117733", "++")


def test_toy_in_the_breakdown_plot(toy, run, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "b.svg"
    r = run("plot", "breakdown", *SWEEP, "--gpus", "8", "--strategy", "data,toy", "-o", str(out))
    assert r.code == 0, r.err
    svg = out.read_text()
    assert "comm: toy barrier" in svg and "#117733" in svg


def test_toy_in_layerwise_files_and_search(toy, run, tmp_path):
    from oracle.load import load_model
    from oracle.load.layerwise import parse_layerwise

    layers = load_model("alexnet").layers
    doc = {"model": "AlexNet", "gpus": 8, "batch": 256,
           "layers": [{"from": layers[0].name, "to": layers[-2].name, "distribution": "toy"},
                      {"layer": layers[-1].name, "distribution": "filter", "p2": 8}]}  # fmt: skip
    config = parse_layerwise(doc, "toy.yaml")
    assert config.ranges[0].dist.kind == "toy" and (config.ranges[0].dist.p1, config.ranges[0].dist.p2) == (8, 1)
    path = tmp_path / "toy.yaml"
    path.write_text(json.dumps(doc))  # JSON is YAML
    r = run("search", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--evaluate", str(path))
    assert r.code == 0, r.err
    assert "toy" in r.out
    r = run("search", *SWEEP, "--gpus", "8", "--distributions", "toy,filter", "-f", "json")
    assert r.code == 0, r.err
    bad = run("search", *SWEEP, "--gpus", "8", "--distributions", "tyo")
    assert bad.code == 2 and "toy" in bad.err  # suggested


def test_unregistering_leaves_no_trace():
    before = (names(), phase_names(), kind_names(), default_kinds())
    module = importlib.import_module("toy_strategy")
    try:
        assert "toy" in names() and "toy_barrier_s" in phase_names() and "toy" in kind_names()
    finally:
        unregister(module.Toy.name)
        sys.modules.pop("toy_strategy", None)
    assert (names(), phase_names(), kind_names(), default_kinds()) == before


def _strategy(name, order=90, phases=()):
    return type("Made", (Strategy,), {"name": name, "order": order, "phases": phases})


@pytest.mark.parametrize("name", ["", "All", "all", " data2", "a,b", None])
def test_registry_refuses_names_strategy_cannot_select(name):
    with pytest.raises(ValueError, match="name"):
        register(_strategy(name))
    assert name not in REGISTRY


def test_registry_refuses_duplicates_and_no_order():
    with pytest.raises(ValueError, match="registered already"):
        register(_strategy("data"))
    with pytest.raises(ValueError, match="order"):
        register(_strategy("made", order=None))
    with pytest.raises(ValueError, match="halo_s"):
        register(_strategy("made", phases=(Phase("halo_s", "communication"),)))
    with pytest.raises(ValueError, match="part"):
        register(_strategy("made", phases=(Phase("made_s", "communication"), Phase("made2_s", "comm"))))
    assert "made_s" not in phase_names()
    assert "made" not in REGISTRY and "data" in names()


def test_the_recipe_names_what_a_strategy_declares():
    """docs/development.md "How to add a strategy" covers every declaration of a
    Strategy and points at the toy this file registers."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "development.md").read_text()
    recipe = text[text.index("### How to add a strategy"):]
    declared = [k for k, v in vars(Strategy).items() if not k.startswith("_") and not callable(v)]
    declared += ["split_layers", "evaluate", "configurations", "register"]
    assert [k for k in declared if f"`{k}" not in recipe] == []
    assert "tests/toy_strategy.py" in recipe
