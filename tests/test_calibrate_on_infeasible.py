"""`oracle compare --calibrate-on EXPR` and the runs the model finds infeasible: they are
not scored (docs/accuracy.md), so they are not calibrated on either (as `oracle fit runs`
leaves them out of the fit); the summary counts scored and not-scored runs apart."""

from __future__ import annotations

import json

import pytest

HEAD = "model,system,strategy,gpus,global_batch,iteration_s\n"
ROWS = {  # line -> row; the model's verdict on ABCI (V100 16 GB, 4352 GPUs) in the comment
    2: "vgg16,abci,data,8,256,0.5",  # feasible, 32 samples per GPU
    3: "vgg16,abci,data,8,8192,0.5",  # 1024 samples per GPU: out of GPU memory
    4: "vgg16,abci,filter,4096,64,0.5",  # p above conv1_1's 64 filters
    5: "vgg16,abci,data,100000,100000,0.5",  # more GPUs than ABCI has
    6: "vgg16,abci,data,16,8,0.5",  # fewer samples than GPUs
    7: "vgg16,abci,data,16,512,0.6",  # feasible, 32 samples per GPU
}
INFEASIBLE = (3, 4, 5, 6)


def _csv(tmp_path, lines=tuple(ROWS), name="runs.csv"):
    """The runs file of the ROWS ``lines``, in order (a subset has its own line numbers)."""
    path = tmp_path / name
    path.write_text(HEAD + "".join(ROWS[n] + "\n" for n in lines))
    return path


def _json(run, csv, expr):
    r = run("compare", csv, "-s", "abci", "--calibrate-on", expr, "-f", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_calibrates_only_on_the_feasible_runs_it_selects(run, tmp_path):
    """gpus>=16 selects lines 4-7; only line 7 is feasible: the calibration is the one made
    on line 7 alone (the same projections as a file without lines 4-6), and says which were
    left out and why, in text and JSON."""
    full = _json(run, _csv(tmp_path), "gpus>=16")
    alone = _json(run, _csv(tmp_path, (2, 3, 7), "feasible.csv"), "gpus>=16")
    assert [r["line"] for r in full["rows"]] == [2, 3]  # the selected runs are not scored, feasible or not
    assert [r["predicted_s"] for r in full["rows"]] == [r["predicted_s"] for r in alone["rows"]]
    (cal,) = full["summary"]["calibration"]
    assert [a["line"] for a in cal["left_out"]] == [4, 5, 6]
    assert "filters of conv1_1" in cal["left_out"][0]["reason"] and "4352" in cal["left_out"][1]["reason"]
    assert cal["calibrated"].startswith("calibrated beta_inter on line 7;")
    # the calibrated batch is the feasible runs' 32 samples per replica, not line 6's 0.5
    assert full["rows"][1]["beyond_calibration"].endswith("calibrated at 32")

    r = run("compare", _csv(tmp_path), "-s", "abci", "--calibrate-on", "gpus>=16", "--width", "400")
    assert r.code == 0, r.err
    note = next(ln for ln in r.out.splitlines() if ln.startswith("abci: calibrated"))
    assert "on line 7; left out, infeasible in the model: line 4 (" in note
    assert "line 5 (needs 100000 GPUs" in note and "line 6 (fewer than one sample" in note
    assert "4, 5, 6, 7" not in r.out


def test_beyond_the_calibrated_batch_counts_scored_and_not_scored_apart(run, tmp_path):
    """gpus<=8 calibrates on line 2 (line 3 is infeasible, left out); of the runs scored
    against it lines 4-6 extrapolate in batch but are infeasible: 0 scored, 3 not scored."""
    csv = _csv(tmp_path)
    s = _json(run, csv, "gpus<=8")["summary"]
    assert s["beyond_calibration"]["n"] == 0 and s["beyond_calibration"]["not_scored"] == 3
    assert s["beyond_calibration_lines"] == [4, 5, 6]
    assert [a["line"] for a in s["calibration"][0]["left_out"]] == [3]

    r = run("compare", csv, "-s", "abci", "--calibrate-on", "gpus<=8", "--width", "400")
    assert r.code == 0, r.err
    beyond = next(ln for ln in r.out.splitlines() if ln.startswith("beyond it"))
    assert beyond.endswith(": 0 runs, mean accuracy –; 3 not scored (infeasible in the model: lines 4, 5, 6)")
    assert "calibrated beta_inter on line 2; left out, infeasible in the model: line 3 (" in r.out


def test_beyond_lists_the_scored_runs_and_the_others_apart(run, tmp_path):
    """A scored run beyond the calibrated batch is named with its count, the infeasible
    ones after: gpus<=8 on lines 2, 6 and a feasible 16-GPU run of 64 samples per GPU."""
    path = tmp_path / "runs.csv"
    path.write_text(HEAD + ROWS[2] + "\n" + ROWS[6] + "\nvgg16,abci,data,16,1024,0.9\n")
    r = run("compare", path, "-s", "abci", "--calibrate-on", "gpus<=8", "--width", "400")
    assert r.code == 0, r.err
    beyond = next(ln for ln in r.out.splitlines() if ln.startswith("beyond it"))
    assert beyond.startswith("beyond it (extrapolated in batch, see notes): 1 run (line 4), mean accuracy ")
    assert beyond.endswith("; 1 not scored (infeasible in the model: line 3)")


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_no_feasible_run_to_calibrate_on_is_one_error(run, tmp_path, fmt):
    """gpus>=4096 selects lines 4 and 5, both infeasible: nothing to calibrate on, one error
    naming both and their limits, exit 2, nothing on stdout."""
    r = run("compare", _csv(tmp_path), "-s", "abci", "--calibrate-on", "gpus>=4096", "-f", fmt)
    assert r.code == 2 and r.exception is None
    assert r.out == ""
    (err,) = r.err_lines
    assert "--calibrate-on" in err and "nothing to calibrate on" in err
    assert "line 4 VGG16 filter 4096 GPUs" in err and "line 5 VGG16 data 100000 GPUs" in err
