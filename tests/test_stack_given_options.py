"""An option given wins over a software stack's value, also when it is the option's default
(issue 25: ``--stack pytorch --overlap none`` projects no overlap); options not given take
the stack's value, else their defaults."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml
from conftest import run_cli

from oracle import api
from oracle.compute.options import Flags, given_flags
from oracle.load import load_stack

ROOT = Path(__file__).resolve().parent.parent
POINT = ("predict", "-m", "resnet50", "-s", "dgx-a100-80gb", "-p", "resnet50_v100", "--strategy", "data",
         "--gpus", "16", "-f", "json")  # fmt: skip


def _point(*extra) -> dict:
    r = run_cli(*POINT, *extra)
    assert r.code == 0, r.err
    return json.loads(r.out)[0]


def test_overlap_none_given_beats_the_stacks_buckets():
    stacked = _point("--stack", "pytorch")
    assert stacked["overlap_ratio"] > 0.5  # DDP's buckets hide most of the exchange
    given = _point("--stack", "pytorch", "--overlap", "none")
    assert given["overlap_ratio"] == 0 and given["communication_s"] == given["communication_total_s"]
    assert given["communication_s"] > 2 * stacked["communication_s"]
    # the system file's stack: (dgx-a100-80gb names pytorch) alike
    assert _point("--overlap", "none")["overlap_ratio"] == 0
    assert _point()["overlap_ratio"] == stacked["overlap_ratio"]


def test_the_python_api_takes_a_given_default_alike():
    kw = {"gpus": [16], "strategies": "data", "stack": "pytorch"}
    (buckets,) = api.predict("resnet50", "dgx-a100-80gb", "resnet50_v100", **kw)
    (none,) = api.predict("resnet50", "dgx-a100-80gb", "resnet50_v100", overlap="none", **kw)
    assert none.communication_s > 2 * buckets.communication_s  # all exposed, not hidden in buckets
    assert none.communication_s == pytest.approx(_point("--stack", "pytorch", "--overlap", "none")["communication_s"])


@pytest.mark.parametrize(
    ("stack", "given", "field", "expected", "stacks"),
    [
        ("tensorflow", {"bucket_mb": 25}, "bucket_bytes", 25 * 2**20, 64 * 2**20),  # Horovod's 64 MB fusion buffer
        ("pytorch", {"overlap": "none"}, "overlap", "none", "buckets"),
        ("paradl", {"memory_model": "framework"}, "memory_model", "framework", "paradl"),
        ("paradl", {"compute_scaling": "model"}, "compute_scaling", "model", "linear"),
        ("paradl", {"collective": "auto"}, "collective", "auto", "ring"),
    ],
)
def test_each_option_a_stack_sets_wins_when_given(stack, given, field, expected, stacks):
    st = load_stack(stack)
    assert getattr(Flags.parse(stack=st, **given).options, field) == expected
    assert getattr(Flags.parse(stack=st).options, field) == stacks
    not_given = {k: None for k in given}  # the CLI's value of an option left out
    assert getattr(Flags.parse(stack=st, **not_given).options, field) == stacks


def test_not_given_without_a_stack_is_the_options_default():
    o = Flags.parse(overlap=None, bucket_mb=None, memory_model=None, compute_scaling=None, collective=None).options
    assert (o.overlap, o.bucket_bytes, o.memory_model, o.compute_scaling, o.collective) == (
        "none", 25 * 2**20, "framework", "model", None)  # fmt: skip


def test_given_flags_counts_a_stack_option_given_at_its_default():
    assert given_flags({"overlap": "none", "bucket_mb": 25.0, "memory_model": "framework"}) == {
        "overlap": "none", "bucket_mb": 25.0, "memory_model": "framework"}  # fmt: skip
    assert given_flags({"overlap": None, "bucket_mb": None, "optimizer": "sgd", "zero": 0}) == {}


def test_a_runs_row_at_the_default_value_wins_over_its_stack(tmp_path):
    """A runs file's ``overlap`` column ``none`` on a row whose ``stack`` column is pytorch
    projects no overlap (issue 26: each row's column wins)."""
    runs = tmp_path / "runs.csv"
    row = "resnet50,dgx-a100-80gb,resnet50_v100,data,16,512,10,pytorch"
    runs.write_text("model,system,profile,strategy,gpus,global_batch,epoch_s,stack,overlap\n"
                    f"{row},\n{row},none\n")  # fmt: skip
    r = run_cli("compare", str(runs), "-f", "csv")
    assert r.code == 0, r.err
    stacked, none = csv.DictReader(io.StringIO(r.out))
    assert float(none["predicted_comm_s"]) > 2 * float(stacked["predicted_comm_s"])


def test_the_header_names_the_options_given_over_the_stack():
    args = ("predict", "-m", "resnet50", "-s", "dgx-a100-80gb", "-p", "resnet50_v100", "--strategy", "data",
            "--gpus", "16", "--width", "400")  # fmt: skip
    r = run_cli(*args, "--stack", "tensorflow", "--overlap", "none", "--bucket-MB", "25", "--collective", "ring")
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if x.startswith("stack: tensorflow"))
    assert line.endswith("; options given over it: --overlap none (the stack's: buckets), --bucket-MB 25"
                         " (the stack's: 64), --collective ring (the stack's: the system's)")  # fmt: skip
    plain = run_cli(*args, "--stack", "tensorflow", "--bucket-MB", "64")  # the stack's own value: nothing to say
    assert plain.code == 0 and "given over" not in plain.out


def test_the_reports_measured_section_takes_the_options_too(tmp_path):
    """oracle report --measured projects the runs with every option given (as compare does)."""
    runs = str(ROOT / "validation" / "abci-paradl.csv")

    def accuracy(*extra) -> str:
        out = tmp_path / "r.md"
        r = run_cli("report", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--measured", runs, *extra, "-o", str(out))
        assert r.code == 0, r.err
        return next(line for line in out.read_text().splitlines() if "mean accuracy" in line and "Against" in line)

    assert accuracy() != accuracy("--overlap", "buckets")


def test_fit_runs_warns_of_options_its_system_cannot_record(tmp_path):
    runs = str(ROOT / "validation" / "abci-paradl.csv")
    base = ("fit", "runs", runs, "-s", "abci", "--calibrate", "all", "--where", "model=vgg16")
    r = run_cli(*base, "--stack", "pytorch", "--overlap", "none", "-o", str(tmp_path / "cal.yaml"))
    assert r.code == 0, r.err
    assert "records stack pytorch, not --overlap none (given over it)" in r.err
    # (these 2020 ChainerMN runs under pytorch's DDP buckets would need NVLink below a tenth of its own)
    r = run_cli(*base, "--stack", "paradl", "-o", str(tmp_path / "cal2.yaml"))
    assert r.code == 0 and "records stack" not in r.err


def test_the_reports_measured_section_leaves_the_runs_layers_and_dataset_alone(tmp_path):
    runs = str(ROOT / "validation" / "abci-paradl.csv")
    out = tmp_path / "r.md"
    r = run_cli("report", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--spatial-split-after", "conv2",
                "--samples", "100000", "--measured", runs, "-o", str(out))  # fmt: skip
    assert r.code == 0, r.err  # conv2 is AlexNet's, not VGG-16's; the runs keep their own datasets
    plain = tmp_path / "p.md"
    assert run_cli("report", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--measured", runs, "-o", str(plain)).code == 0
    line = [x for x in out.read_text().splitlines() if "mean accuracy" in x and "Against" in x]
    assert line == [x for x in plain.read_text().splitlines() if "mean accuracy" in x and "Against" in x]


def test_fit_runs_names_the_base_systems_stack_and_records_an_alias_as_its_stack(tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,profile,strategy,gpus,global_batch,iteration_s\n"
                    "resnet50,dgx-a100-80gb,resnet50_v100,data,8,2048,0.1\nresnet50,dgx-a100-80gb,resnet50_v100,data,16,4096,0.11\n")  # fmt: skip
    r = run_cli("fit", "runs", str(runs), "-s", "dgx-a100-80gb", "--calibrate", "all", "--overlap", "none",
                "-o", str(tmp_path / "a.yaml"))  # fmt: skip
    assert r.code == 0 and "records stack pytorch, not --overlap none" in r.err  # the base file's stack
    out = tmp_path / "t.yaml"
    r = run_cli("fit", "runs", str(ROOT / "validation" / "abci-paradl.csv"), "-s", "abci", "--calibrate", "all",
                "--where", "model=vgg16", "--stack", "torch", "--overlap", "none", "-o", str(out))  # fmt: skip
    assert r.code == 0, r.err
    assert yaml.safe_load(out.read_text())["stack"]["name"] == "pytorch"


def test_the_reports_measured_warnings_are_oracles(tmp_path):
    r = run_cli("report", "-m", "resnet50", "-s", "dgx-a100-80gb", "-p", "resnet50_v100", "--measured",
                str(ROOT / "validation" / "dle-resnet50-runs.csv"), "--precision", "fp16", "-o", str(tmp_path / "r.md"))  # fmt: skip
    assert r.code == 0, r.err
    assert "column 'precision' is AMP, the command's --precision fp16" in r.err and "UserWarning" not in r.err


@pytest.mark.parametrize(("cell", "column", "says"), [("stack", "stack", "no shipped stack for NNabla"),
                                                       ("model", "model", "did you mean 'resnet50'")])  # fmt: skip
def test_a_bad_name_in_a_runs_cell_points_at_its_row(tmp_path, cell, column, says):
    runs = tmp_path / "runs.csv"
    bad = {"stack": ("resnet50", "nnabla"), "model": ("resnet500", "pytorch")}[cell]
    runs.write_text("model,system,profile,strategy,gpus,global_batch,iteration_s,stack\n"
                    "resnet50,dgx-a100-80gb,resnet50_v100,data,8,2048,0.1,pytorch\n"
                    f"{bad[0]},dgx-a100-80gb,resnet50_v100,data,8,2048,0.1,{bad[1]}\n")  # fmt: skip
    for args in (("compare", str(runs)), ("fit", "runs", str(runs), "-s", "dgx-a100-80gb", "--calibrate", "all")):
        r = run_cli(*args)
        assert r.code == 2 and len(r.err_lines) == 1, r.err
        assert f"{runs}:3: {column}: " in r.err and says in r.err
