"""Every output names the stack in force (bug 6): ``none`` for no stack in every format, a
user's stack file by its path (a modified copy of a shipped file cannot pass for it), a
shipped one by its name, and ``oracle compare`` names the stack of each group of runs."""

from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import ROOT, run_cli

from oracle.load import load_stack
from oracle.stack import stack_label

PREDICT = ("predict", "-m", "resnet50", "-s", "dgx-a100-80gb", "-p", "resnet50_a100_fp16_estimated", "--gpus", "8",
           "-b", "64", "--strategy", "data")  # fmt: skip


def _named(stack: str) -> dict:
    """The stack as predict's JSON, CSV, table and Markdown name it."""
    args = (*PREDICT, "--stack", stack)
    runs = {fmt: run_cli(*args, "-f", fmt) for fmt in ("json", "csv", "table", "markdown")}
    assert all(r.code == 0 for r in runs.values()), {k: r.err for k, r in runs.items()}
    return {
        "json": {p["stack"] for p in json.loads(runs["json"].out)},
        "csv": {row["stack"] for row in csv.DictReader(io.StringIO(runs["csv"].out))},
        "table": [ln for ln in runs["table"].out.splitlines() if ln.startswith("stack: ")],
        "markdown": [ln for ln in runs["markdown"].out.splitlines() if ln.startswith("stack: ")],
    }


def test_stack_none_is_named_none_in_every_format():
    """Bug 6d: --stack none is ``none`` (the word the option takes), not "", in JSON and CSV,
    and the table's and Markdown's header say so."""
    got = _named("none")
    assert got["json"] == got["csv"] == {"none"}
    assert [ln.strip() for ln in got["table"]] == [ln.strip() for ln in got["markdown"]] == [
        "stack: none (no software stack: the options as given)"]  # fmt: skip
    assert stack_label(None) == "none"


def test_a_modified_copy_of_a_shipped_stack_is_named_by_its_path(tmp_path):
    """Bug 6e: a copy of stacks/pytorch.yaml with one value changed keeps ``name: pytorch``
    but is named by its path everywhere; the shipped file, even given by its path, is pytorch."""
    copy = tmp_path / "x" / "pytorch.yaml"
    copy.parent.mkdir()
    text = (ROOT / "stacks" / "pytorch.yaml").read_text()
    assert "bucket_MB: {value: 25," in text
    copy.write_text(text.replace("bucket_MB: {value: 25,", "bucket_MB: {value: 50,", 1))
    assert load_stack(str(copy)).name == "pytorch" and load_stack(str(copy)).label == str(copy)
    got = _named(str(copy))
    assert got["json"] == got["csv"] == {str(copy)}
    assert got["table"][0].startswith(f"stack: {copy} (PyTorch")
    assert got["markdown"][0].startswith(f"stack: {copy} (PyTorch")
    shipped = _named(str(ROOT / "stacks" / "pytorch.yaml"))
    assert shipped["json"] == shipped["csv"] == {"pytorch"} == {load_stack("pytorch").label}
    show = run_cli("show", "stack", str(copy), "--width", "200")
    assert show.code == 0 and f"stack {copy}: PyTorch" in show.out


def test_compare_names_the_stack_of_each_group(tmp_path):
    """Bug 6b: the compare table's group headings name the stack each run is projected
    under (its column, else --stack, else the system file's), Markdown has a column."""
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,strategy,gpus,global_batch,iteration_s,stack\n"
                    "resnet50,dgx-a100-80gb,data,8,512,0.2,\n"
                    "resnet50,dgx-a100-80gb,data,8,512,0.2,none\n"
                    "resnet50,dgx-a100-80gb,data,8,512,0.2,tensorflow\n")  # fmt: skip
    table = run_cli("compare", str(runs), "--width", "160")
    assert table.code == 0, table.err
    heads = [ln.strip() for ln in table.out.splitlines() if ln.startswith("ResNet-50 on")]
    system = heads[0].split(" on ", 1)[1].rsplit(" · ", 1)[0]
    assert heads == [f"ResNet-50 on {system} · stack {s}" for s in ("pytorch", "none", "tensorflow")]
    md = run_cli("compare", str(runs), "-f", "markdown").out
    assert "| line | model | system | stack |" in md and f"| {system} | none |" in md
    rows = json.loads(run_cli("compare", str(runs), "-f", "json").out)["rows"]
    assert [r["stack"] for r in rows] == ["pytorch", "none", "tensorflow"]
    given = json.loads(run_cli("compare", str(runs), "--stack", "none", "-f", "json").out)["rows"]
    assert given[0]["stack"] == "none"  # --stack for the row without a column


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_report_names_no_stack(tmp_path, fmt):
    out = tmp_path / f"r.{fmt}"
    r = run_cli("report", *PREDICT[1:], "--stack", "none", "-o", str(out))
    assert r.code == 0, r.err
    assert "stack: none (no software stack: the options as given)" in out.read_text()


def test_an_unmodified_copy_of_a_shipped_stack_is_the_shipped_stack(tmp_path):
    """A byte-identical copy under the shipped file name (a source checkout's stacks/ beside an
    installed oracle) is named as the shipped stack; under another name, or changed, by its path."""
    text = (ROOT / "stacks" / "pytorch.yaml").read_bytes()
    same = tmp_path / "pytorch.yaml"
    same.write_bytes(text)
    other = tmp_path / "mine.yaml"
    other.write_bytes(text)
    assert load_stack(str(same)).label == "pytorch"
    assert load_stack(str(other)).label == str(other)
    same.write_bytes(text + b"\n# a comment\n")
    assert load_stack(str(same)).label == str(same)
