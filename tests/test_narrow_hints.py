"""What a narrow table tells the user to do holds for the command showing it: `fit runs`
has no --format, so its table points at --width only; `show KIND` without a name (the
shipped list, whose caption points at --format json) honours --format json and -o."""

from __future__ import annotations

import json

RUNS = "model,system,strategy,gpus,global_batch,iteration_s\nvgg16,abci,data,8,256,0.5\nvgg16,abci,data,16,512,0.6\n"


def test_fit_runs_narrow_table_points_at_width_only(run, tmp_path):
    csv = tmp_path / "runs.csv"
    csv.write_text(RUNS)
    r = run("fit", "runs", csv, "-s", "abci", "--calibrate", "network", "--width", "80")
    assert r.code == 0, r.err
    narrow = [ln for ln in r.out.splitlines() if ln.startswith("(too narrow for:")]
    assert narrow and all(ln.endswith("; --width shows them)") for ln in narrow)
    assert "--format" not in r.out
    assert "--format" not in run("fit", "runs", "--help").out  # the reason: it has none


def test_show_without_a_name_honours_format_json_and_output(run, tmp_path):
    r = run("show", "model", "--width", "200")
    assert r.code == 0 and "--format json gives them whole" in r.out
    shown = run("show", "model", "-f", "json")
    assert shown.code == 0, shown.err
    assert json.loads(shown.out) == json.loads(run("list", "models", "-f", "json").out)
    out = tmp_path / "stacks.json"
    assert run("show", "stack", "-f", "json", "-o", out).code == 0
    assert json.loads(out.read_text()) == json.loads(run("list", "stacks", "-f", "json").out)
    assert run("show", "system", "-o", tmp_path / "systems.txt").out == ""
    assert (tmp_path / "systems.txt").read_text().startswith("systems: -s NAME")
