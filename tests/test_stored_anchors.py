"""Issue 26: a system written by `fit runs --calibrate all` stores its calibration runs as
anchors (`anchors:`), and `predict` on it reproduces each of them within the tolerance,
naming the run that anchors each point and how far it extrapolates."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from test_anchor import two_models

from oracle import api
from oracle.compute.calibration.anchor import TOLERANCE
from oracle.load import load_system
from oracle.load.runs import load_runs

ROOT = Path(__file__).resolve().parent.parent
ABCI = ROOT / "validation" / "abci-paradl.csv"
COLUMNS = ("model", "system", "profile", "strategy", "gpus", "global_batch", "p1", "p2", "epoch_s", "compute_s",
           "comm_s", "collective")  # fmt: skip


def write_runs(path: Path, runs, extra: dict | None = None) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in runs:
            cells = {c: getattr(r, c, None) for c in COLUMNS} | (extra or {}).get(r.line, {})
            w.writerow(["" if cells.get(c) is None else cells[c] for c in COLUMNS])
    return path


def calibrate(runs: Path, out: Path, *args) -> None:
    r = run_cli("fit", "runs", runs, "-s", "abci", "--calibrate", "all", "-o", out, *args)
    assert r.code == 0, r.err


def projected(run, system, **flags):
    """The point predict gives at ``run``'s configuration on ``system``."""
    points = api.predict(run.model, system, run.profile, gpus=[run.gpus], strategies=run.strategy,
                         batch=run.global_batch, p2=run.p2, **flags)  # fmt: skip
    return next(p for p in points if run.p1 is None or p.p1 == run.p1)


def reproduces(runs, system: str, name: str, **flags) -> None:
    for run in runs:
        pt = projected(run, system, **flags)
        assert pt.total_s == pytest.approx(run.epoch_s, rel=TOLERANCE), run.line
        assert pt.detail("anchor").startswith(f"anchor: {name}:{run.line} "), pt.detail("anchor")


def test_a_calibrated_abci_system_reproduces_each_calibration_run(tmp_path):
    out = tmp_path / "cal.yaml"
    r = run_cli("fit", "runs", ABCI, "-s", "abci-chainermnx", "--calibrate", "all", "--where", "gpus=1,2,4,8",
                "-o", out)  # fmt: skip
    assert r.code == 0, r.err
    chosen = [x for x in load_runs(ABCI) if x.gpus <= 8]
    assert len(load_system(out).anchors) == len(chosen)
    firsts = {}
    for x in chosen:  # repeated measurements of one configuration: the first anchors it
        firsts.setdefault((x.model, x.strategy, x.gpus, x.global_batch, x.p1, x.p2), x)
    reproduces(firsts.values(), str(out), str(ABCI))


def test_two_models_model_parallel_with_measured_phases(tmp_path):
    """Runs the model made itself, several models and strategies in one file, with their
    compute and communication measured: each anchor reproduced, phase by phase."""
    from test_calibrate_split import made_by

    from oracle.api import Inputs

    truth = load_system(str(ROOT / "systems" / "abci.yaml"))
    runs = made_by(truth, [r for r in two_models() if r.gpus <= 8], Inputs(), columns=True)
    path = write_runs(tmp_path / "runs.csv", runs)
    calibrate(path, tmp_path / "cal.yaml")
    written = load_runs(path)
    reproduces(written, str(tmp_path / "cal.yaml"), str(path))
    for run in written:
        pt = projected(run, str(tmp_path / "cal.yaml"))
        assert pt.compute_s == pytest.approx(run.compute_s, rel=1e-4)
        assert pt.communication_s == pytest.approx(run.comm_s, rel=1e-4)


def test_an_anchor_keeps_the_options_it_ran_with(tmp_path):
    from test_calibrate_split import made_by, run

    from oracle.api import Inputs

    truth = load_system(str(ROOT / "systems" / "abci.yaml"))
    runs = made_by(truth, [run(2, "data", 16, 512), run(3, "data", 8, 256)], Inputs())
    path = write_runs(tmp_path / "runs.csv", runs, {2: {"collective": "tree"}})
    calibrate(path, tmp_path / "cal.yaml")
    anchors = load_system(tmp_path / "cal.yaml").anchors
    assert dict(anchors[0].options) == {"collective": "tree"} and anchors[1].options == ()
    written = load_runs(path)
    same = projected(written[0], str(tmp_path / "cal.yaml"), collective="tree")
    assert same.total_s == pytest.approx(written[0].epoch_s, rel=1e-5)
    other = projected(written[0], str(tmp_path / "cal.yaml"))  # ring: the model's ratio ring / tree
    assert other.total_s != pytest.approx(written[0].epoch_s, rel=1e-3)


def test_predict_names_the_anchor_and_its_reach(tmp_path):
    out = tmp_path / "cal.yaml"
    calibrate(ABCI, out, "--where", "model=vgg16", "--where", "gpus=4,8")
    args = ("predict", "-m", "vgg16", "-s", out, "-p", "vgg16_v100", "--gpus", "64", "--strategy", "data", "-b", "32")
    r = run_cli(*args, "-f", "json")
    assert r.code == 0, r.err
    note = json.loads(r.out)[0]["details"]["anchor"]
    assert note == f"anchor: {ABCI}:32 (total): 8→64 GPUs, 32 per replica, 2→16 nodes"
    assert "anchored on the system's 2 measured runs" in run_cli(*args).out


def test_a_system_without_anchors_projects_as_before():
    plain = api.predict("vgg16", "abci", "vgg16_v100", gpus=[64], strategies="data", batch_per_gpu=32)
    assert all(p.detail("anchor") is None for p in plain)


@pytest.mark.parametrize("entry, key", [
    ("{model: VGG16, strategy: dta, gpus: 8, global_batch: 256, iteration_s: 0.4}", "strategy"),
    ("{model: VGG16, strategy: data, gpus: 8, global_batch: 256, iteration_s: -1}", "iteration_s"),
    ("{model: VGG16, strategy: data, gpus: 8, global_batch: 256, iteration_s: 0.4, options: {collective: x}}",
     "collective"),
    ("{model: VGG16, strategy: data, gpus: 8, global_batch: 256, iteration_s: 0.4, option: {}}", "option"),
])  # fmt: skip
def test_a_bad_anchor_is_one_error_line(tmp_path, entry, key):
    text = (ROOT / "systems" / "abci.yaml").read_text() + f"\nanchors:\n  - {entry}\n"
    (tmp_path / "s.yaml").write_text(text)
    r = run_cli("predict", "-m", "vgg16", "-s", tmp_path / "s.yaml", "-p", "vgg16_v100", "--gpus", "8")
    assert r.code == 2 and r.exception is None, r.err
    assert len(r.err.strip().splitlines()) == 1 and "s.yaml" in r.err and key in r.err and "anchors[0]" in r.err


def test_contradicting_anchors_are_refused_and_nothing_written(tmp_path):
    from test_calibrate_split import run

    runs = [run(2, "data", 8, 256), run(3, "data", 8, 256), run(4, "data", 16, 512)]
    times = {2: 100.0, 3: 250.0, 4: 60.0}
    path = write_runs(tmp_path / "runs.csv", runs, {n: {"epoch_s": t} for n, t in times.items()})
    out = tmp_path / "cal.yaml"
    r = run_cli("fit", "runs", path, "-s", "abci", "--calibrate", "all", "-o", out)
    assert r.code == 2 and not out.exists()
    assert "lines 2 and 3" in r.err and len(r.err.strip().splitlines()) == 1
    c = run_cli("compare", path, "--calibrate-on", "gpus<=8")
    assert "warning" in c.err and "lines 2 and 3" in c.err


@settings(max_examples=6, deadline=None)
@given(slow=st.lists(st.floats(0.6, 1.6), min_size=6, max_size=6))
def test_any_measured_times_are_reproduced_by_the_written_system(tmp_path_factory, slow):
    """Property: whatever the shared mechanisms cannot explain (each run slower or faster
    than the model by its own factor), the written system projects each calibration run
    within the tolerance."""
    from dataclasses import replace

    from hypothesis import assume
    from test_calibrate_split import made_by, run

    from oracle.api import Inputs
    from oracle.services.fit_runs import RunsRequest, fit_runs

    truth = load_system(str(ROOT / "systems" / "abci.yaml"))
    base = [run(2, "data", 4, 128), run(3, "data", 8, 256), run(4, "spatial", 4, 64), run(5, "filter", 8, 64),
            run(6, "data+spatial", 8, 128, p1=2, p2=4), run(7, "data", 8, 256, model="alexnet")]  # fmt: skip
    runs = [replace(r, epoch_s=r.epoch_s * k) for r, k in zip(made_by(truth, base, Inputs()), slow)]
    tmp = tmp_path_factory.mktemp("prop")
    path = write_runs(tmp / "runs.csv", runs)
    result = fit_runs(RunsRequest(str(path), "abci", "all", {}, output=str(tmp / "cal.yaml")), lambda _: None)
    assume(result.system_text is not None)  # an unphysical fit is refused (tests/test_calibrate_physics.py)
    (tmp / "cal.yaml").write_text(result.system_text)
    reproduces(load_runs(path), str(tmp / "cal.yaml"), str(path))
