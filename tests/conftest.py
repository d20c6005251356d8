"""Shared fixtures: run the CLI in-process, and a tiny model/system/profile on disk.

``run(*args)`` invokes ``oracle`` through click's CliRunner and returns a
:class:`CliResult` with the exit code, stdout and stderr kept apart.  The terminal
width is made independent of the environment (``COLUMNS`` removed), colour is off.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent

# Environment for CLI runs: no terminal width, no forced colour (None removes a variable).
CLEAN_ENV = {
    "COLUMNS": None,
    "LINES": None,
    "FORCE_COLOR": None,
    "CLICOLOR_FORCE": None,
    "TTY_COMPATIBLE": None,
    "TTY_INTERACTIVE": None,
    "NO_COLOR": "1",
    "ORACLE_DEBUG": None,
}


def _note_skip(nodeid: str) -> None:
    """.ci/run's first pass (the README's command, without the optional extras) lists the
    tests it skipped in $ORACLE_SKIPPED_FILE; its extras pass runs just those."""
    path = os.environ.get("ORACLE_SKIPPED_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(nodeid + "\n")


def pytest_collectreport(report) -> None:  # a module skipped as a whole (importorskip at its top)
    if report.skipped:
        _note_skip(report.nodeid)


def pytest_runtest_logreport(report) -> None:
    if report.skipped and report.when in ("setup", "call"):
        _note_skip(report.nodeid)


@dataclass
class CliResult:
    code: int
    out: str
    err: str
    exception: BaseException | None

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


def benchmark(name: str):
    """The module benchmarks/NAME.py (the benchmarks import each other by plain name)."""
    import importlib
    import sys

    bench_dir = str(Path(__file__).resolve().parents[1] / "benchmarks")
    if bench_dir not in sys.path:
        sys.path.insert(0, bench_dir)
    return importlib.import_module(name)


def cli_runner() -> CliRunner:
    """A CliRunner that keeps stderr apart from stdout with every click the project allows."""
    try:  # click < 8.2 mixes stderr into stdout unless told otherwise
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:  # click >= 8.2: stderr is always separate
        return CliRunner()


def run_cli(*args: str, env: dict | None = None, cwd: str | Path | None = None) -> CliResult:
    """Run ``oracle ARGS...`` in-process; never raises for a failing command."""
    from oracle.cli.main import cli

    full_env = dict(CLEAN_ENV)
    if env:
        full_env.update(env)
    runner = cli_runner()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = runner.invoke(cli, [str(a) for a in args], env=full_env, catch_exceptions=True)
    finally:
        if cwd is not None:
            os.chdir(old)
    exc = result.exception
    if isinstance(exc, SystemExit):
        exc = None
    return CliResult(result.exit_code, result.stdout, result.stderr, exc)


@pytest.fixture
def run():
    """``run("predict", "-m", ...)`` -> CliResult(code, out, err, exception)."""
    return run_cli


def _predict_every_strategy(model: Path, gpus: str) -> list[dict]:
    """``oracle profile --estimate`` then ``oracle predict`` of ``model`` on ABCI: every
    strategy must have a finite positive time or a stated limit; returns the points."""
    import json
    import math

    prof = model.with_name(model.stem + "_profile.yaml")
    r = run_cli("profile", str(model), "--estimate", "-s", "abci", "-o", str(prof))
    assert r.code == 0, r.err
    r = run_cli("predict", "-m", str(model), "-s", "abci", "-p", str(prof), "--gpus", gpus, "-b", "32", "-f", "json")
    assert r.code == 0, r.err
    points = json.loads(r.out)
    assert {p["strategy"] for p in points} >= {"data", "filter", "channel", "spatial", "pipeline"}
    for p in points:
        assert (math.isfinite(p["total_s"]) and p["total_s"] > 0) or p["limits"], p
    return points


@pytest.fixture
def predict_every_strategy():
    """``predict_every_strategy(model_path, "4,16")``: see :func:`_predict_every_strategy`."""
    return _predict_every_strategy


# --------------------------------------------------------------------------------------
# A tiny 2-D model with its system and profile, written into tmp_path
# --------------------------------------------------------------------------------------

TINY_MODEL = """\
name: Tiny
input: [3, 8, 8]
dataset: {name: toy, samples: 1000}
layers:
  - {name: conv1, type: conv, filters: 4, kernel: 3, padding: 1}
  - {name: relu1, type: relu}
  - {name: conv2, type: conv, filters: 8, kernel: 3, padding: 1}
  - {name: pool1, type: maxpool, kernel: 2}
  - {name: flat, type: flatten}
  - {name: fc, type: fc, outputs: 10}
"""

TINY_SYSTEM = """\
name: TinyCluster
gpu: {model: V100, memory_GB: 16, peak_TFLOPS: 15.7}
gpus_per_node: 4
nodes: 4
network:
  - {name: nvlink, max_gpus: 4, alpha_s: 1.0e-6, beta_s_per_byte: 5.0e-11}
  - {name: ib, max_gpus: 16, alpha_s: 2.0e-6, bandwidth_GB_per_s: 12.5}
"""

TINY_PROFILE = """\
model: Tiny
device: V100
measured_samples_per_gpu: 16
layers:
  conv1: {fw_s: 1.0e-5, bw_s: 2.0e-5, wu_s: 1.0e-6}
  relu1: {fw_s: 1.0e-6, bw_s: 1.0e-6}
  conv2: {fw_s: 2.0e-5, bw_s: 4.0e-5, wu_s: 1.0e-6}
  pool1: {fw_s: 1.0e-6, bw_s: 2.0e-6}
  flat: {fw_s: 0, bw_s: 0}
  fc: {fw_s: 2.0e-6, bw_s: 4.0e-6, wu_s: 1.0e-6}
"""


@pytest.fixture
def tiny(tmp_path: Path) -> SimpleNamespace:
    """Paths of a tiny 2-D model, a 16-GPU system and a per-layer profile."""
    model = tmp_path / "tiny.yaml"
    system = tmp_path / "tinycluster.yaml"
    profile = tmp_path / "tiny_profile.yaml"
    model.write_text(TINY_MODEL, encoding="utf-8")
    system.write_text(TINY_SYSTEM, encoding="utf-8")
    profile.write_text(TINY_PROFILE, encoding="utf-8")
    return SimpleNamespace(dir=tmp_path, model=model, system=system, profile=profile)
