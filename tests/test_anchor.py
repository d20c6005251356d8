"""Issue 26, point 1: every projection of `compare --calibrate-on` anchored on its
nearest measurement (compute/calibration/anchor.py)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from test_calibrate_split import made_by, run

from oracle.api import Inputs, compare
from oracle.compute.calibration.anchor import anchored, family
from oracle.compute.calibration.calibrate_all import samples_per_replica
from oracle.compute.calibration.calibrate_split import with_mechanisms
from oracle.compute.calibration.compare import accuracy, compare_run

RUNS = Path(__file__).resolve().parent.parent / "validation" / "abci-paradl.csv"


def by_family(rows):
    """(model, strategy family) -> (the anchored model's mean accuracy, the naive one's)."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r.run.model, family(r.run.strategy))].append(r)
    out = {}
    for key, rs in groups.items():
        naive = [accuracy(r.naive_s, r.measured_s) for r in rs if r.naive_s is not None]
        out[key] = (sum(r.accuracy for r in rs) / len(rs), sum(naive) / len(naive) if naive else None)
    return out


@pytest.mark.parametrize("where", [{"quality": {"A"}}, None])
def test_abci_beats_the_naive_projection_on_every_model_and_strategy_family(where):
    rows, summary = compare(str(RUNS), system="abci-chainermnx", calibrate_on="gpus<=8", where=where)
    scored = by_family(rows)
    assert len(scored) == (2 if where else 3)
    for key, (model, naive) in scored.items():
        assert naive is not None and model > naive, key
    assert all(r.anchor and r.anchor.startswith("anchor: line ") for r in rows)


def base_system():
    return Inputs().context("vgg16", "abci", "vgg16_v100").system


def calibration_and_held_back(model, start):
    return [run(start, "spatial", 4, 64, model=model), run(start + 1, "spatial", 16, 64, model=model),
            run(start + 2, "data+spatial", 8, 128, p1=2, p2=4, model=model),
            run(start + 3, "data+spatial", 32, 512, p1=8, p2=4, model=model),
            run(start + 4, "filter", 4, 64, model=model), run(start + 5, "filter", 16, 64, model=model),
            run(start + 6, "channel", 8, 64, model=model), run(start + 7, "channel", 32, 64, model=model)]  # fmt: skip


def two_models():
    """Model-parallel runs of VGG16 and AlexNet in one list, each made by the model on its
    own mechanisms: no shared value explains both (the issue's 123.7x halo factor)."""
    inputs = Inputs()
    base = base_system()
    vgg = with_mechanisms(base, {"split_serial_fraction": 0.3, "halo_factor": 3.0, "layer_collectives_factor": 2.0})
    alex = with_mechanisms(base, {"split_serial_fraction": 0.05, "halo_factor": 0.5, "layer_collectives_factor": 0.7})
    return made_by(vgg, calibration_and_held_back("vgg16", 2), inputs) + made_by(
        alex, calibration_and_held_back("alexnet", 20), inputs
    )


def test_recovers_the_held_back_runs_of_two_models_with_their_own_mechanisms():
    rows, summary = compare(two_models(), calibrate_on="gpus<=8")
    assert len(rows) == 8
    for r in rows:
        assert r.accuracy == pytest.approx(1.0, abs=1e-6), (r.run.line, r.anchor)
    assert summary.naive.mean_accuracy < 0.8  # the naive projection is far off
    note = summary.calibration[0][1]
    assert "vgg16: shared fit leaves its calibration runs" in note and "its own mechanisms 0.0%" in note


def test_a_residual_no_mechanism_explains_is_taken_by_the_anchor():
    # AlexNet's filter runs 1.3x slower than any mechanism makes them (a framework's
    # overhead of that strategy): the anchor carries it to the larger filter run
    runs = [replace(r, epoch_s=r.epoch_s * 1.3) if r.model == "alexnet" and r.strategy == "filter" else r
            for r in two_models()]  # fmt: skip
    rows, summary = compare(runs, calibrate_on="gpus<=8")
    assert summary.overall.mean_accuracy > summary.unanchored.mean_accuracy
    assert summary.overall.mean_accuracy > 0.98 and min(r.accuracy for r in rows) > 0.9


@settings(max_examples=25, deadline=None)
@given(
    case=st.sampled_from([("data", 8, None), ("filter", 4, None), ("spatial", 16, None), ("data+spatial", 8, 2),
                          ("channel", 8, None), ("data+filter", 16, 4)]),  # fmt: skip
    measured=st.floats(0.05, 50.0),
    split=st.one_of(st.none(), st.floats(0.05, 0.95)),
)
def test_an_anchored_projection_equals_the_measurement_at_its_anchor(case, measured, split):
    strategy, gpus, p1 = case
    inputs = Inputs()
    r = run(2, strategy, gpus, 32 * gpus, p1=p1, model="vgg16")
    extra = {} if split is None else {"compute_s": measured * split, "comm_s": measured * (1 - split)}
    r = replace(r, iteration_s=measured, **extra)
    row = compare_run(r, inputs.context(r.model, r.system, r.profile))
    got = anchored(row, row, samples_per_replica, 4)
    assert got.total_s == pytest.approx(measured, rel=1e-9)
    if split is not None and row.predicted_comm_s > 0:
        assert got.compute_s == pytest.approx(measured * split, rel=1e-9)
        assert got.comm_s == pytest.approx(measured * (1 - split), rel=1e-9)


def test_compare_says_which_run_anchors_each_projection_and_nothing_changes_without_calibration():
    got = run_cli("compare", RUNS, "--system", "abci-chainermnx", "--calibrate-on", "gpus<=8", "--where", "quality=A",
                  "-f", "json")  # fmt: skip
    assert got.code == 0, got.err
    doc = json.loads(got.out)
    row = next(r for r in doc["rows"] if r["line"] == 38)
    assert row["anchor"] == "anchor: line 32 (total): 8→512 GPUs, 32 per replica, 2→128 nodes"
    assert math.isfinite(row["unanchored_s"]) and doc["summary"]["unanchored"]["n"] == 16
    plain = json.loads(run_cli("compare", RUNS, "--where", "quality=A", "-f", "json").out)
    assert all(r["anchor"] is None and r["unanchored_s"] is None for r in plain["rows"])
    assert plain["summary"]["unanchored"] is None


def test_calibration_runs_that_contradict_each_other_are_named():
    runs = two_models()
    twice = replace(runs[0], line=40, epoch_s=runs[0].epoch_s * 2.5)  # line 2's configuration, 2.5x slower
    _, summary = compare([*runs, twice], calibrate_on="gpus<=8")
    assert "lines 2 and 40 measure one configuration 2.5x apart" in summary.calibration[0][1]
