"""The rules on options a software stack sets (--bucket-layers and --delayed-update need
bucket overlap, --memory-reuse the paradl memory model) are checked on the options in
force: the stack named on the command line, else the system file's, else none.  A system
whose stack runs DDP buckets (gb200-nvl72: pytorch) takes --delayed-update without
--overlap; a stack without them (paradl, none) keeps the exit-2 error naming --overlap."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from conftest import run_cli

from oracle.compute.options import Flags
from oracle.errors import OracleError
from oracle.load import load_stack

ROOT = Path(__file__).resolve().parent.parent
GB200 = ("-m", "resnet50", "-s", "gb200-nvl72", "--gpus", "72", "--strategy", "data")
SHAPED = (("--delayed-update", "fc"), ("--bucket-layers", "4"))


def _json(*args) -> list:
    r = run_cli(*args, "-f", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


@pytest.mark.parametrize("shape", SHAPED)
def test_the_systems_stack_makes_the_overlap_options_valid(shape):
    """No --stack: gb200-nvl72's pytorch runs buckets, so the run is --stack pytorch's."""
    points = _json("predict", *GB200, *shape)
    assert points == _json("predict", *GB200, *shape, "--stack", "pytorch")
    assert points[0]["overlap_ratio"] > 0  # the buckets overlap the backward


def test_search_takes_them_under_the_systems_stack_too():
    args = ("search", "-m", "resnet50", "-s", "gb200-nvl72", "--gpus", "8", "--delayed-update", "fc")
    r = run_cli(*args)
    assert r.code == 0, r.err
    winner = [x for x in r.out.splitlines() if x.startswith(("Winner:", "stack: pytorch"))]
    assert len(winner) == 2 and winner == [x for x in run_cli(*args, "--stack", "pytorch").out.splitlines() if x in winner]


@pytest.mark.parametrize(("given", "says"), [(("--stack", "paradl"), "stack paradl has overlap none"),
                                             (("--overlap", "none"), "add --overlap buckets"),
                                             (("-s", "lassen"), "add --overlap buckets")])  # fmt: skip
@pytest.mark.parametrize("command", ["predict", "search"])
def test_a_stack_in_force_without_buckets_is_still_an_error(command, given, says):
    """paradl's overlap is none, --overlap none is given over pytorch's buckets, and
    lassen's file names stack none (the options as given, overlap none by default)."""
    args = [command, *GB200[:4], "--gpus", "8", "--delayed-update", "fc", *given]
    r = run_cli(*args)
    assert r.code == 2 and len(r.err_lines) == 1 and "Traceback" not in r.err, r.err
    assert "--overlap: --bucket-layers and --delayed-update shape the overlap" in r.err and says in r.err


def test_memory_reuse_follows_the_systems_stack(tmp_path):
    """A system file naming paradl (memory model paradl) takes --memory-reuse without
    --memory-model, as --stack paradl does; pytorch's framework model still refuses it."""
    text = (ROOT / "systems" / "gb200-nvl72.yaml").read_text()
    system = tmp_path / "paradl-system.yaml"
    system.write_text(text.replace("stack: {name: pytorch,", "stack: {name: paradl,"))
    args = ("predict", "-m", "resnet50", "--gpus", "8", "--strategy", "data", "--memory-reuse", "0.5")
    assert _json(*args, "-s", str(system)) == _json(*args, "-s", str(system), "--stack", "paradl")
    r = run_cli(*args, "-s", str(system))
    assert r.code == 0 and "memory: ParaDL bound, γ = 0.5" in r.out, r.err
    r = run_cli(*args, "-s", "gb200-nvl72")
    assert r.code == 2 and "--memory-reuse" in r.err and "--memory-model paradl" in r.err


def test_a_runs_rows_column_is_checked_under_its_stack(tmp_path):
    """A runs file's delayed_update column on a pytorch row (its stack column, or its
    system's) projects; on a paradl row it is an error naming that row."""
    runs = tmp_path / "runs.csv"
    head = "model,system,profile,strategy,gpus,global_batch,iteration_s,delayed_update,stack\n"
    row = "resnet50,dgx-a100-80gb,resnet50_v100,data,16,512,0.1,fc"
    runs.write_text(f"{head}{row},\n{row},pytorch\n")
    r = run_cli("compare", str(runs), "-f", "csv")
    assert r.code == 0, r.err
    first, second = csv.DictReader(io.StringIO(r.out))
    assert first["predicted_comm_s"] == second["predicted_comm_s"]  # the system's stack is pytorch
    runs.write_text(f"{head}{row},pytorch\n{row},paradl\n")
    r = run_cli("compare", str(runs))
    assert r.code == 2 and f"{runs}:3: " in r.err and "stack paradl has overlap none" in r.err, r.err


def test_flags_parsed_before_their_stack_are_checked_but_not_run():
    pending = Flags.parse(delayed_update="fc", stack_pending=True)
    assert pending.pending
    with pytest.raises(RuntimeError):
        pending.resolve(None)
    with pytest.raises(OracleError, match="shape the overlap"):  # no stack is to come: the rule holds
        Flags.parse(delayed_update="fc")
    with pytest.raises(OracleError, match="shape the overlap"):  # given: no stack changes it
        Flags.parse(delayed_update="fc", overlap="none", stack_pending=True)
    with pytest.raises(OracleError, match="shape the overlap"):
        Flags.parse(delayed_update="fc", stack=load_stack("paradl"), stack_pending=True)
    assert Flags.parse(delayed_update="fc", stack=load_stack("pytorch")).options.overlap == "buckets"
