"""A stack's ``paths:`` (issue 27 point 3): what ChainerMN(X)'s communication and input code
did travels with the chainermnx stack, so ABCI's hardware file plus that stack reproduces
the ParaDL study's runs; the values fitted on runs were fitted on the rows abci-2020 used,
and the accuracy claimed is on the others."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import ROOT, run_cli
from test_calibration import TRAINING_LINES  # the rows scripts/calibrate_abci2020.sh fits on

from oracle.compute.stack import stack_system
from oracle.errors import OracleError
from oracle.load import load_stack, load_system
from oracle.load.stack import parse_stack
from oracle.load.yamlfile import load_yaml
from oracle.model import OperationOverride

RUNS = ROOT / "validation" / "abci-paradl.csv"


def _held_out(system: str, stack: str) -> dict:
    r = run_cli("compare", RUNS, "-s", system, "--stack", stack, "--exclude", f"line={TRAINING_LINES}", "-f", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)["summary"]


def test_chainermnx_on_abci_beats_the_paradl_tool_on_held_out_rows():
    ours, tool = _held_out("abci", "chainermnx"), _held_out("abci", "paradl")
    # the tool finds the six AlexNet data+spatial runs at 512 per replica out of memory: not scored
    assert ours["runs"] == 32 and (tool["runs"], tool["not_scored"]) == (26, 6)
    assert ours["mean_accuracy"] > 0.74  # 75.7% at this commit; abci-2020 + chainermnx: the same
    assert ours["mean_accuracy"] > tool["mean_accuracy"] + 0.3  # the tool: 44.3% on its 26 scored
    assert ours["ranking_agreement"] == 1.0


def test_fitted_rows_are_the_calibration_rows_not_the_scored_ones():
    st = load_stack("chainermnx")
    notes = [v.fitted_on for v in (st.input_samples_per_s_per_gpu, st.input_samples_per_s_per_node)]
    notes += list(st.paths.fitted_on())
    assert len(notes) == 5
    lines = set()
    for note in notes:
        file, rows = note.split(":")
        assert file == "validation/abci-paradl.csv"
        lines |= {int(x) for x in rows.split(",")}
    assert lines <= {int(x) for x in TRAINING_LINES.split(",")}
    assert _held_out("abci", "chainermnx")["runs"] == 37 - len(TRAINING_LINES.split(","))


def test_abci_hardware_plus_the_stack_is_abci_2020_where_it_counts():
    plain, cal = load_system("abci"), load_system("abci-2020")
    s = stack_system(plain, load_stack("chainermnx"))
    for mine, theirs in zip(s.network, cal.network):
        assert mine.beta_s_per_byte == pytest.approx(theirs.beta_s_per_byte, rel=1e-3), mine.name
        for p, q in zip(mine.protocols, theirs.protocols):
            assert p.beta_s_per_byte == pytest.approx(q.beta_s_per_byte, rel=1e-3), (mine.name, p.name)
    assert s.input.leader_samples_per_s == cal.input.leader_samples_per_s
    assert s.implementation.data_spatial_allreduce == "leader"
    halo = s.operation("halo")
    assert halo.alpha_s == 0.003 and halo.beta_s_per_byte == pytest.approx(1 / 16e9)


def test_ceiling_keeps_slower_hardware_and_scales_protocols_by_hand():
    st = load_stack("chainermnx")
    slow = load_system("abci")
    level = slow.network[0]  # inside a node
    slow = replace(slow, network=(replace(level, beta_s_per_byte=1 / 8e9),) + slow.network[1:])
    assert stack_system(slow, st).network[0].beta_s_per_byte == 1 / 8e9  # 8 GB/s < 16.1: kept
    fast = stack_system(load_system("abci"), st).network[0]
    ratio = (1 / 16.1e9) / level.beta_s_per_byte
    assert fast.protocols[0].beta_s_per_byte == pytest.approx(level.protocols[0].beta_s_per_byte * ratio)
    assert fast.alpha_s == level.alpha_s  # latency untouched


def test_a_system_files_own_halo_and_input_win():
    st = load_stack("chainermnx")
    own = OperationOverride(alpha_s=1e-5, beta_s_per_byte=1 / 75e9, source="NVLink2 to the host")
    base = load_system("abci")
    s = stack_system(replace(base, operations=(("halo", own),)), st)
    assert s.operation("halo") is own
    cal = load_system("abci-2020")  # has its own input: section
    assert stack_system(replace(cal, input=replace(cal.input, leader_samples_per_s=None)), st).input.leader_samples_per_s is None


@pytest.mark.parametrize("key, value, expected", [
    ("halo_GB_per_s", -1, "paths.halo_GB_per_s"),
    ("data_spatial_allreduce", "ring", "paths.data_spatial_allreduce"),
    ("leader_samples_per_s", float("nan"), "paths.leader_samples_per_s"),
    ("halo_speed", 3, "halo_speed"),
])  # fmt: skip
def test_a_bad_paths_value_is_one_error_naming_file_and_key(key, value, expected):
    doc = load_yaml(ROOT / "stacks" / "chainermnx.yaml")
    doc["paths"][key] = {"value": value, "source": "s"}
    with pytest.raises(OracleError) as e:
        parse_stack(doc, "my-stack.yaml")
    assert "my-stack.yaml" in str(e.value) and expected in str(e.value)


def test_show_stack_lists_the_paths_with_their_rows():
    r = run_cli("show", "stack", "chainermnx", "-f", "json")
    assert r.code == 0, r.err
    values = json.loads(r.out)["values"]
    assert values["paths.allreduce_GB_per_s_across_nodes"]["fitted_on"] == "validation/abci-paradl.csv:32"
    assert values["paths.data_spatial_allreduce"]["value"] == "leader"
