"""Robustness (issue 7): every bad input gets a clear answer and nothing is lost.

Organised as the issue's list.  Every case runs the CLI in-process and checks the exit
status, the one-line message (file, key path or layer, what was expected) and that no
traceback is printed.  Rules already covered elsewhere are not repeated here:
loader-level rules in test_load_rules.py, predict's option values in
test_cli_predict.py, measured-runs CSV rules in test_compare.py, training-log rules in
test_logs.py; the fuzz tests are in test_fuzz.py.

1. one error type, one line, exit 2; internal errors exit 3 and point to --debug
2. validation everywhere input enters (files through the CLI, plausibility bounds,
   CLI values, every file argument of every command: missing, directory, binary)
3. atomic output (-o) for every command that writes one
4. bugs found on the way (their regression tests)
"""

from __future__ import annotations

import errno
import json
import os
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, TINY_MODEL, TINY_PROFILE, TINY_SYSTEM, run_cli

# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def one_error(r, *fragments: str) -> str:
    """Exit 2, nothing on stdout, exactly one 'oracle: error:' line holding every fragment."""
    assert r.code == 2, (r.code, r.err, r.out[-500:])
    assert r.exception is None, repr(r.exception)
    assert "Traceback" not in r.err and "Traceback" not in r.out
    assert r.out == "", r.out[-500:]
    assert len(r.err_lines) == 1, r.err
    line = r.err_lines[0]
    assert line.startswith("oracle: error: "), line
    for frag in fragments:
        assert str(frag) in line, f"{frag!r} not in {line!r}"
    return line


def files(tmp_path: Path, model: str | bytes = TINY_MODEL, system: str | bytes = TINY_SYSTEM,
          profile: str | bytes = TINY_PROFILE) -> tuple[Path, Path, Path]:  # fmt: skip
    out = []
    for name, content in (("tiny.yaml", model), ("cluster.yaml", system), ("tiny_profile.yaml", profile)):
        p = tmp_path / name
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
        out.append(p)
    return out[0], out[1], out[2]


def predict(m, s, p, *extra):
    return run_cli("predict", "-m", m, "-s", s, "-p", p, "--gpus", "1,4", "-f", "json", *extra)


def sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# ======================================================================================
# 1. One error type for user mistakes, one line, exit 2; internal errors exit 3
# ======================================================================================


def test_issue_example_unknown_key_wording(tmp_path):
    """The issue's example, word for word, still naming file and line."""
    system = sub(TINY_SYSTEM, "alpha_s: 1.0e-6, beta_s_per_byte: 5.0e-11", "alpha_s: 1.0e-6, bandwith: 5.0e-11, beta_s_per_byte: 5.0e-11")
    m, s, p = files(tmp_path, system=system)
    line = one_error(predict(m, s, p))
    assert line.endswith(
        f"{s}:6: unknown key 'bandwith' in network[0] (nvlink); did you mean 'beta_s_per_byte'?"
    ), line


def test_unknown_top_level_key_says_top_level(tmp_path):
    m, s, p = files(tmp_path, model=TINY_MODEL + "layer: []\n")
    one_error(predict(m, s, p), f"{m}:", "unknown key 'layer' at the top level", "did you mean 'layers'?")


def test_missing_key_with_a_misspelled_list_key_hints_it(tmp_path):
    m, s, p = files(tmp_path, model=sub(TINY_MODEL, "layers:", "layerz:"))
    one_error(predict(m, s, p), f"{m}:", "missing required key 'layers'", "found 'layerz'")


@pytest.mark.parametrize("char", ["\n", "\r", "\u2028", "\x1b", "\x85"])
def test_user_text_cannot_break_the_one_line(tmp_path, char):
    """A layer type holding a line break (or an escape) is quoted escaped, on one line."""
    model = sub(TINY_MODEL, "type: relu", f'type: "re{char.encode("unicode_escape").decode()}lu"')
    m, s, p = files(tmp_path, model=model)
    line = one_error(predict(m, s, p), "layers[1] (relu1).type", "unknown layer type")
    assert char not in line


def test_check_failed_is_exit_1_one_line(tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text(
        "model,system,profile,strategy,gpus,global_batch,epoch_s\nalexnet,abci,alexnet_v100,data,4,2048,1\n",
        encoding="utf-8",
    )
    r = run_cli("compare", runs, "--min-accuracy", "0.99")
    assert r.code == 1 and r.exception is None
    assert "Traceback" not in r.err
    assert [ln for ln in r.err_lines if ln.startswith("oracle: check failed:")], r.err


def test_usage_errors_are_one_line_exit_2():
    r = run_cli("predcit", "-m", "alexnet")
    one_error(r, "No such command 'predcit'", "Did you mean 'predict'?")
    # click words these two; the promise is one line naming what is wrong and the way out
    r = run_cli("profile")
    one_error(r, "MODEL", "profile --help")
    r = run_cli("predict", "--gpus\nx")
    one_error(r, "--gpus\\nx", "predict --help")  # the newline escaped, not printed


@pytest.mark.parametrize("group", [(), ("fit",), ("show",), ("plot",)])
def test_a_group_without_its_command_shows_its_help(group):
    """`oracle fit` printed its whole help as one error line with literal \\n, exit 2; now the
    group's help as --help shows it, on standard output, exit 0 (click 8.1's behaviour, kept
    whatever click is installed)."""
    r = run_cli(*group)
    assert (r.code, r.err, r.exception) == (0, "", None)
    assert r.out == run_cli(*group, "--help").out
    first = r.out.splitlines()[0]  # "Usage: oracle fit [OPTIONS] COMMAND [ARGS]..." (the runner names it cli)
    assert first.startswith("Usage: ") and first.endswith(" ".join((*group, "[OPTIONS] COMMAND [ARGS]...")))
    assert "Commands:" in r.out and "\\n" not in r.out


# -- internal errors: exit 3, a short request for a bug report, --debug for the traceback


def _boom(*args, **kwargs):
    raise RuntimeError("kaboom\nsecond line")


# command -> (arguments, attribute whose call makes the command fail)
INTERNAL = {
    "predict": (("predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4"), "oracle.services.project.project"),
    "show": (("show", "model", "alexnet"), "oracle.load.load_model"),
    "compare": (("compare", "validation/abci-paradl.csv"), "oracle.api.compare"),
    "import": (("import", "data/chainer-logs/vgg16-data-abci", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100",
                "--strategy", "data"), "oracle.load.logs.read_log"),
    "snapshot": (("snapshot", "baselines/cases.yaml"), "oracle.services.baseline._load_cases"),
    "check": (("check", "baselines/shipped.json"), "oracle.load.yamlfile.read_text"),
    "fit network": (("fit", "network", "data/nccl-tests/abci-v100/intra_vnode_4nodes.txt"),
                    "oracle.load.benchlogs.load_benchlog"),
    "fit runs": (("fit", "runs", "validation/abci-paradl.csv", "-s", "abci", "--calibrate", "network"),
                 "oracle.load.runs.load_runs"),
    "profile": (("profile", "alexnet", "--estimate", "-s", "abci"), "oracle.profiling.estimate.estimate"),
    "plot": (("plot", "compare", "validation/abci-paradl.csv", "-o", "{tmp}/x.png"), "oracle.api.compare"),
    "report": (("report", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "-o", "{tmp}/r.html"),
               "oracle.services.project.project"),
    "search": (("search", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "8", "-o", "{tmp}/c.yaml"),
               "oracle.compute.layerwise.search.search"),
}  # fmt: skip


def _patch(monkeypatch, dotted: str, value) -> None:
    import importlib

    module, _, attr = dotted.rpartition(".")
    monkeypatch.setattr(importlib.import_module(module), attr, value)


@pytest.mark.parametrize("command", sorted(INTERNAL))
def test_internal_error_exit_3_asks_for_bug_report(monkeypatch, tmp_path, command):
    if command == "plot":
        pytest.importorskip("matplotlib")
    args, target = INTERNAL[command]
    _patch(monkeypatch, target, _boom)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    r = run_cli(*args, cwd=ROOT)
    assert r.code == 3, (r.code, r.err)
    assert r.exception is None
    assert "Traceback" not in r.err and "Traceback" not in r.out
    lines = r.err_lines
    assert len(lines) == 2, r.err  # what happened (one line), and what to do
    assert lines[0] == "oracle: internal error: RuntimeError: kaboom\\nsecond line", lines[0]
    assert "bug" in lines[1] and "--debug" in lines[1]
    assert not list(tmp_path.iterdir())  # nothing written


def test_debug_shows_the_traceback(monkeypatch):
    _patch(monkeypatch, "oracle.services.project.project", _boom)
    args = ("predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4")
    r = run_cli("--debug", *args)
    assert isinstance(r.exception, RuntimeError)  # propagates: Python prints the traceback
    r = run_cli(*args, env={"ORACLE_DEBUG": "1"})
    assert isinstance(r.exception, RuntimeError)


def test_debug_flag_traceback_in_a_real_process(tmp_path):
    """Outside the test runner too: without --debug no traceback, with it one."""
    import subprocess
    import sys

    bad = tmp_path / "sitecustomize.py"  # make the command crash inside oracle
    bad.write_text(
        "import oracle.services.project as c\n"
        "def _boom(*a, **k):\n    raise RuntimeError('kaboom')\n"
        "c.project = _boom\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("ORACLE_DEBUG", None)
    code = "from oracle.cli.main import main; main()"
    args = ["predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4"]
    plain = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    assert plain.returncode == 3, plain.stderr
    assert "Traceback" not in plain.stderr and "--debug" in plain.stderr
    debug = subprocess.run([sys.executable, "-c", code, "--debug", *args], env=env, capture_output=True, text=True)
    assert debug.returncode != 0 and "Traceback" in debug.stderr and "kaboom" in debug.stderr


def test_keyboard_interrupt_is_exit_130_without_traceback(monkeypatch):
    def interrupt(*a, **k):
        raise KeyboardInterrupt

    _patch(monkeypatch, "oracle.services.project.project", interrupt)
    r = run_cli("predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4")
    assert r.code == 130 and r.exception is None
    assert r.err_lines == ["oracle: interrupted"]


# ======================================================================================
# 2. Validation everywhere input enters
# ======================================================================================

# Input files through `oracle predict` (one case per rule of the issue).  Each case:
# (which file, old text, new text, fragments the message must hold).  "{f}" stands for
# the path of the edited file.
FILE_RULES = {
    "yaml-syntax-line": ("model", "input: [3, 8, 8]", "input: [3, 8, 8", ["{f}:", "YAML syntax error"]),
    "yaml-tab-indent": ("system", "nodes: 4", "\tnodes: 4", ["{f}:", "YAML syntax error"]),
    "yaml-empty-float-tag": ("model", "input: [3, 8, 8]", "input: !!float", ["{f}", "YAML value cannot be read"]),
    "yaml-bad-timestamp-tag": ("model", "input: [3, 8, 8]", "input: !!timestamp 2001-13-45",
                               ["{f}:2", "YAML tag '!!timestamp' is not accepted"]),
    "empty-file": ("system", None, "", ["{f}", "is empty", "system file"]),
    "comments-only": ("profile", None, "# nothing\n", ["{f}", "is empty"]),
    "non-utf8": ("profile", None, b"model: Tiny\nsource: caf\xe9\n", ["{f}:2", "not valid UTF-8"]),
    "binary": ("model", None, b"\x7fELF\x02\x01\x00\x00", ["{f}", "binary"]),
    "top-level-list": ("system", None, "- name: x\n- nodes: 4\n", ["{f}", "top level is a list", "mapping"]),
    "top-level-scalar": ("profile", None, "just text\n", ["{f}", "top level is a string"]),
    "duplicate-key": ("system", "nodes: 4\n", "nodes: 4\nnodes: 8\n", ["{f}:5", "duplicate key 'nodes'", "line 4"]),
    "unknown-key": ("model", "outputs: 10}", "outputs: 10, output: 3}", ["{f}:", "unknown key 'output' in layers[5] (fc)",
                                                                        "did you mean 'outputs'?"]),
    "missing-key": ("system", "nodes: 4\n", "", ["{f}", "missing required key 'nodes'"]),
    "missing-layer-key": ("model", "filters: 8, ", "", ["{f}:", "layers[2] (conv2)", "missing required key 'filters'"]),
    "type-string-for-number": ("model", "filters: 4", "filters: four", ["layers[0] (conv1).filters", "'four'",
                                                                        "whole number"]),
    "type-list-for-mapping": ("system", "gpu: {model: V100, memory_GB: 16, peak_TFLOPS: 15.7}", "gpu: [V100, 16]",
                              ["{f}:2", "gpu", "got a list; expected a mapping"]),
    "type-bool-for-number": ("profile", "fw_s: 2.0e-5", "fw_s: true", ["layers.conv2.fw_s", "got true",
                                                                         "time in seconds"]),
    "negative-time": ("profile", "bw_s: 4.0e-5", "bw_s: -4.0e-5", ["{f}:", "layers.conv2.bw_s", ">= 0"]),
    "zero-latency": ("system", "alpha_s: 2.0e-6", "alpha_s: 0", ["network[1] (ib).alpha_s", "> 0"]),
    "zero-bandwidth": ("system", "bandwidth_GB_per_s: 12.5", "bandwidth_GB_per_s: 0",
                       ["network[1] (ib).bandwidth_GB_per_s", "> 0"]),
    "negative-beta": ("system", "beta_s_per_byte: 5.0e-11", "beta_s_per_byte: -5.0e-11",
                      ["network[0] (nvlink).beta_s_per_byte", "> 0"]),
    "nan": ("system", "alpha_s: 1.0e-6", "alpha_s: .nan", ["network[0] (nvlink).alpha_s", "finite"]),
    "infinity": ("profile", "bw_s: 2.0e-5", "bw_s: .inf", ["layers.conv1.bw_s", "finite"]),
    "phi-below-one": ("system", "gpus_per_node: 4\n", "gpus_per_node: 4\ncontention_factor: 0.9\n",
                      ["contention_factor", "0.9", ">= 1"]),
    "max-gpus-not-increasing": ("system", "max_gpus: 16", "max_gpus: 4", ["network[1] (ib).max_gpus", "must increase"]),
    "duplicate-layer-name": ("model", "name: relu1", "name: conv1", ["{f}:", "layers[1] (conv1)",
                                                                   "duplicate layer name 'conv1'"]),
    "inputs-unknown-layer": ("model", "type: relu}", "type: relu, inputs: [conv9]}", ["layers[1] (relu1).inputs",
                                                                                    "unknown layer 'conv9'"]),
    "inputs-later-layer": ("model", "type: relu}", "type: relu, inputs: [pool1]}", ["layers[1] (relu1).inputs",
                                                                                  "defined later"]),
    "inputs-cycle": ("model", "type: relu}", "type: relu, inputs: [relu1]}", ["layers[1] (relu1).inputs", "cycle"]),
    "shape-multiplies-out-of-bounds": ("model", "filters: 4, kernel: 3, padding: 1", "filters: 4, kernel: 3, "
                                       "padding: 3037000418", ["{f}:", "layers[0] (conv1)", "output elements",
                                                               "not plausible"]),
    "shape-kernel-too-large": ("model", "filters: 8, kernel: 3", "filters: 8, kernel: 11",
                               ["{f}:", "layers[2] (conv2)", "larger"]),
    "shape-fc-before-flatten-ok-pool-too-large": ("model", "type: maxpool, kernel: 2", "type: maxpool, kernel: 9",
                                                  ["layers[3] (pool1)"]),
    "profile-misses-a-layer": ("profile", "  relu1: {fw_s: 1.0e-6, bw_s: 1.0e-6}\n", "",
                               ["{f}", "no times for layer 'relu1'", "'Tiny'"]),
    "profile-of-another-model": ("profile", "model: Tiny", "model: ResNet-50",
                                 ["{f}", "profile is for model 'ResNet-50', not 'Tiny'"]),
    "profile-extra-layer": ("profile", "  fc:", "  fc2: {fw_s: 1.0e-6, bw_s: 1.0e-6}\n  fc:",
                            ["{f}", "layer 'fc2'", "does not have"]),
    # plausibility: numbers a cost model would overflow on (issue: "insert extreme numbers")
    "implausible-latency": ("system", "alpha_s: 2.0e-6", "alpha_s: 1.0e+308", ["network[1] (ib).alpha_s",
                                                                              "not plausible"]),
    "implausible-bandwidth": ("system", "bandwidth_GB_per_s: 12.5", "bandwidth_GB_per_s: 1.0e-320",
                              ["network[1] (ib).bandwidth_GB_per_s", "not plausible"]),
    "implausible-samples": ("model", "samples: 1000", "samples: 1000000000000000000000", ["dataset.samples",
                                                                                         "not plausible"]),
    "implausible-time": ("profile", "fw_s: 1.0e-5", "fw_s: 1.0e+300", ["layers.conv1.fw_s", "not plausible"]),
    "huge-integer": ("model", "filters: 4", "filters: " + "9" * 400, ["layers[0] (conv1).filters", "400-digit"]),
    "integer-overflowing-float": ("system", "memory_GB: 16", "memory_GB: 1" + "0" * 400, ["gpu.memory_GB",
                                                                                         "too large"]),
}  # fmt: skip

ROLE_TEXT = {"model": TINY_MODEL, "system": TINY_SYSTEM, "profile": TINY_PROFILE}


@pytest.mark.parametrize("rule", sorted(FILE_RULES))
def test_file_rule_through_predict(tmp_path, rule):
    role, old, new, fragments = FILE_RULES[rule]
    content = new if old is None else sub(ROLE_TEXT[role], old, new)
    m, s, p = files(tmp_path, **{role: content})
    edited = {"model": m, "system": s, "profile": p}[role]
    one_error(predict(m, s, p), *[f.replace("{f}", str(edited)) for f in fragments])


def test_profile_spread_over_a_model_of_zero_flops_is_an_answer(tmp_path):
    """A total-only profile for a model without FLOPs: no crash either way."""
    model = "name: Flat\ninput: [3, 4, 4]\ndataset: {samples: 10}\nlayers:\n  - {name: f, type: flatten}\n"
    profile = "model: Flat\ntotal: {fw_bw_per_sample_s: 1.0e-3}\n"
    m, s, p = files(tmp_path, model=model, profile=profile)
    r = predict(m, s, p)
    assert r.code in (0, 2) and r.exception is None and "Traceback" not in r.err


# -- command-line values not covered by test_cli_predict.py --------------------------

CLI_VALUES = {
    "gpus-empty": (("--gpus", ""), ["--gpus", "empty"]),
    "gpus-empty-item": (("--gpus", "4,,8"), ["--gpus", "empty item"]),
    "gpus-range-without-power-of-two": (("--gpus", "3-3"), ["--gpus", "no power of two"]),
    "gpus-too-many": (("--gpus", "99999999"), ["--gpus", "at most 10,000,000"]),
    "gpus-negative": (("--gpus", "-4"), ["--gpus", "at least 1"]),
    "gpus-fraction": (("--gpus", "4.5"), ["--gpus", "'4.5' is not a GPU count"]),
    "strategy-empty": (("--strategy", ""), ["--strategy"]),
    "strategy-one-unknown": (("--strategy", "data,filtre"), ["--strategy", "filtre"]),
    "batch-not-a-number": (("--batch", "abc"), ["--batch", "'abc' is not a number"]),
    "batch-nan": (("--batch", "nan"), ["--batch", "not a finite number"]),
    "batch-inf": (("--batch-per-gpu", "inf"), ["--batch-per-gpu", "not a finite number"]),
    "batch-implausible": (("--batch-per-gpu", "1e308"), ["--batch-per-gpu", "not plausible"]),
    "batch-tiny": (("--batch", "1e-300"), ["--batch", "not plausible"]),
    "contention-implausible": (("--contention", "1e308"), ["--contention"]),
    "samples-zero": (("--samples", "0"), ["--samples"]),
    "samples-implausible": (("--samples", "1" + "0" * 30), ["--samples"]),
    "segments-zero": (("--segments", "0"), ["--segments"]),
    "p2-zero": (("--p2", "0"), ["--p2"]),
    "format-unknown": (("--format", "xml"), ["--format", "xml"]),
    "width-too-small": (("--width", "10"), ["--width"]),
    "output-is-a-directory": (("-o", "{tmp}"), ["{tmp}", "-o", "is a directory"]),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CLI_VALUES))
def test_cli_value_rule(tmp_path, case):
    args, fragments = CLI_VALUES[case]
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    r = run_cli("predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4", "-f", "json", *args)
    one_error(r, *[f.replace("{tmp}", str(tmp_path)) for f in fragments])


def test_runs_csv_implausible_values(tmp_path):
    runs = tmp_path / "runs.csv"
    head = "model,system,profile,strategy,gpus,global_batch,epoch_s\n"
    for row, fragments in (
        ("alexnet,abci,alexnet_v100,data,1e300,4,1", ["{f}:2", "column 'gpus'", "not plausible"]),
        ("alexnet,abci,alexnet_v100,data,4,1e300,1", ["{f}:2", "column 'global_batch'", "not plausible"]),
        ("alexnet,abci,alexnet_v100,data,4,4,1e-320", ["{f}:2", "column 'epoch_s'", "not plausible"]),
        ("x" * 5000 + ".yaml,abci,alexnet_v100,data,4,4,1", ["no such file"]),
    ):
        runs.write_text(head + row + "\n", encoding="utf-8")
        one_error(run_cli("compare", runs), *[f.replace("{f}", str(runs)) for f in fragments])


def test_benchmark_log_implausible_time(tmp_path):
    src = (ROOT / "data/osu/abci-v100/intra_vnode_4nodes.txt").read_text(encoding="utf-8")
    log = tmp_path / "intra_vnode_4nodes.txt"
    log.write_text(sub(src, "24.32", "1e-320"), encoding="utf-8")
    one_error(run_cli("fit", "network", log, "--gpus-per-node", "4"), f"{log}:", "average latency", "not plausible")


def test_unknown_log_format_through_import(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("hello world\nthis is not a log\n", encoding="utf-8")
    one_error(
        run_cli("import", log, "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--strategy", "data", "--gpus", "8",
                "--batch", "256"),
        str(log), "unknown log format", "--skip-unknown",
    )  # fmt: skip


# -- every file argument of every command: missing, a directory, a binary file --------

# (command line with {X} for the file argument, what the message must say besides the path)
FILE_ARGUMENTS = {
    "predict -m": ["predict", "-m", "{X}", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4"],
    "predict -s": ["predict", "-m", "alexnet", "-s", "{X}", "-p", "alexnet_v100", "--gpus", "4"],
    "predict -p": ["predict", "-m", "alexnet", "-s", "abci", "-p", "{X}", "--gpus", "4"],
    "show model": ["show", "model", "{X}"],
    "show system": ["show", "system", "{X}"],
    "show profile": ["show", "profile", "{X}"],
    "show profile -m": ["show", "profile", "alexnet_v100", "-m", "{X}"],
    "compare RUNS": ["compare", "{X}"],
    "compare -s": ["compare", "validation/abci-paradl.csv", "-s", "{X}"],
    "compare --log": ["compare", "--log", "{X}", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--strategy", "data",
                      "--gpus", "8", "--batch", "256"],
    "compare --log -m": ["compare", "--log", "data/chainer-logs/vgg16-data-abci/8gpus-32pergpu.json", "-m", "{X}",
                         "-s", "abci", "-p", "vgg16_v100", "--strategy", "data"],
    "import PATH": ["import", "{X}", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--strategy", "data", "--gpus",
                    "8", "--batch", "256"],
    "import --append -o": ["import", "data/chainer-logs/vgg16-data-abci", "-m", "vgg16", "-s", "abci", "-p",
                           "vgg16_v100", "--strategy", "data", "--append", "-o", "{X}"],
    "snapshot CASES": ["snapshot", "{X}"],
    "check BASELINE": ["check", "{X}"],
    "fit network LOG": ["fit", "network", "{X}"],
    "fit network --system": ["fit", "network", "--system", "{X}", "data/nccl-tests/abci-v100/intra_vnode_4nodes.txt"],
    "fit runs RUNS": ["fit", "runs", "{X}", "-s", "abci", "--calibrate", "network"],
    "fit runs -s": ["fit", "runs", "validation/abci-paradl.csv", "-s", "{X}", "--calibrate", "network"],
    "fit runs --overlay": ["fit", "runs", "validation/abci-paradl.csv", "-s", "abci", "--calibrate", "network",
                           "--where", "model=vgg16", "--where", "gpus=4,8", "--overlay", "{X}", "-o", "{tmp}/o.yaml"],
    "profile MODEL": ["profile", "{X}", "--estimate", "-s", "abci"],
    "profile -s": ["profile", "alexnet", "--estimate", "-s", "{X}"],
    "plot scaling -m": ["plot", "scaling", "-m", "{X}", "-s", "abci", "-p", "alexnet_v100", "-o", "{tmp}/x.png"],
    "plot compare RUNS": ["plot", "compare", "{X}", "-o", "{tmp}/x.png"],
    "report -p": ["report", "-m", "alexnet", "-s", "abci", "-p", "{X}", "-o", "{tmp}/r.html"],
    "report --measured": ["report", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4", "--measured",
                          "{X}", "-o", "{tmp}/r.html"],
    "search -m": ["search", "-m", "{X}", "-s", "abci", "-p", "alexnet_v100", "--gpus", "8", "-o", "{tmp}/c.yaml"],
    "search -p": ["search", "-m", "alexnet", "-s", "abci", "-p", "{X}", "--gpus", "8"],
    "search --evaluate": ["search", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "8", "--evaluate",
                          "{X}"],
}  # fmt: skip
KIND_WORDS = {"missing": ("does not exist", "no such file"), "directory": ("directory", "folder has no files"),
              "binary": ("binary",)}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(KIND_WORDS))
@pytest.mark.parametrize("argument", sorted(FILE_ARGUMENTS))
def test_every_file_argument(tmp_path, argument, kind):
    if argument.startswith("plot"):
        pytest.importorskip("matplotlib")
    work = tmp_path / "work"
    work.mkdir()
    target = {"missing": tmp_path / "nope.yaml", "directory": tmp_path / "adir", "binary": tmp_path / "bin.dat"}[kind]
    if kind == "directory":
        target.mkdir()
    elif kind == "binary":
        target.write_bytes(b"\x00\x01\x02binary\xff\xfe")
    args = [a.replace("{X}", str(target)).replace("{tmp}", str(work)) for a in FILE_ARGUMENTS[argument]]
    r = run_cli(*args, cwd=ROOT)
    if argument == "import --append -o" and kind == "missing":
        # appending to a CSV that does not exist yet creates it
        assert r.code == 0 and target.is_file(), r.err
        return
    line = one_error(r, str(target))
    assert any(w in line for w in KIND_WORDS[kind]), line
    assert list(work.iterdir()) == []  # nothing written on the way


# ======================================================================================
# 3. Output files (-o) are written atomically
# ======================================================================================

# command line writing to {out}; the renderer whose failure must not touch {out}.
WRITERS = {
    "predict": (["predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4", "-f", "json",
                 "-o", "{out}"], "oracle.render.rows_json.item_texts", "out.json"),  # in the streamed write
    "predict table": (["predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4", "-o", "{out}"],
                      "oracle.render.predict.render_text", "out.txt"),
    "show": (["show", "model", "alexnet", "-f", "json", "-o", "{out}"], "oracle.render.show.model_json", "out.json"),
    "compare": (["compare", "validation/abci-paradl.csv", "-f", "json", "-o", "{out}"], "oracle.render.compare.to_json",
                "out.json"),
    "import": (["import", "data/chainer-logs/vgg16-data-abci", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100",
                "--strategy", "data", "-o", "{out}"], "oracle.services.import_logs._csv", "runs.csv"),
    "snapshot": (["snapshot", "{cases}", "-o", "{out}"], "oracle.services.baseline._dump", "base.json"),
    "sweep": (["sweep", "{cases}", "-f", "json", "-o", "{out}"], "oracle.render.rows_json.item_texts", "out.json"),
    "fit network": (["fit", "network", "--system", "abci", "data/nccl-tests/abci-v100/intra_vnode_4nodes.txt",
                     "data/nccl-tests/abci-v100/inter_vnode_2nodes.txt", "-o", "{out}"], "oracle.render.fit.system_yaml",
                    "sys.yaml"),
    "fit runs": (["fit", "runs", "validation/abci-paradl.csv", "-s", "abci", "--calibrate", "network", "--where",
                  "model=vgg16", "--where", "gpus=4,8", "-o", "{out}"], "oracle.services.fit_network.check_loads", "sys.yaml"),
    "profile": (["profile", "alexnet", "--estimate", "-s", "abci", "-o", "{out}"],
                "oracle.render.profile_file.profile_yaml", "prof.yaml"),
    "plot": (["plot", "scaling", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4,8", "-o", "{out}"],
             "oracle.render.plots.render", "plot.png"),
    "report": (["report", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4,8", "-o", "{out}"],
               "oracle.render.report.html_report", "report.html"),
    "search": (["search", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "8", "-o", "{out}"],
               "oracle.load.layerwise.dump_layerwise", "config.yaml"),
}  # fmt: skip
OLD = "previous content\n"


def _writer_args(command: str, tmp_path: Path) -> tuple[list[str], Path]:
    args, _, name = WRITERS[command]
    out = tmp_path / name
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "cases:\n  - {model: alexnet, system: abci, profile: alexnet_v100, gpus: '4', batch_per_gpu: 32}\n",
        encoding="utf-8",
    )
    return [a.replace("{out}", str(out)).replace("{cases}", str(cases)) for a in args], out


def _only_files(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir())


def _needs(command: str) -> None:
    if command == "plot":
        pytest.importorskip("matplotlib")


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_output_written_atomically(tmp_path, command):
    """Success replaces the previous file, leaving no temporary file."""
    _needs(command)
    args, out = _writer_args(command, tmp_path)
    out.write_text(OLD, encoding="utf-8")
    r = run_cli(*args, cwd=ROOT)
    assert r.code == 0, r.err
    assert out.read_bytes() != OLD.encode()
    assert _only_files(tmp_path) == sorted({"cases.yaml", out.name})


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_error_while_rendering_keeps_previous_file(monkeypatch, tmp_path, command):
    _needs(command)
    args, out = _writer_args(command, tmp_path)
    _patch(monkeypatch, WRITERS[command][1], _boom)
    out.write_text(OLD, encoding="utf-8")
    r = run_cli(*args, cwd=ROOT)
    assert r.code == 3 and "Traceback" not in r.err, (r.code, r.err)
    assert out.read_text(encoding="utf-8") == OLD
    assert _only_files(tmp_path) == sorted({"cases.yaml", out.name})
    out.unlink()
    r = run_cli(*args, cwd=ROOT)
    assert r.code == 3
    assert _only_files(tmp_path) == ["cases.yaml"]  # no new file, no temporary file


class _Proxy:
    """The ``os`` module as seen by oracle.render.output, with ``fdopen`` replaced."""

    def __init__(self, real, fdopen):
        self._real, self.fdopen = real, fdopen

    def __getattr__(self, name):
        return getattr(self._real, name)


class _HalfWriter:
    """A file that writes half of what it is given, then raises ``exc``."""

    def __init__(self, fh, exc):
        self.fh, self.exc = fh, exc

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.fh.close()
        return False

    def write(self, data):
        self.fh.write(data[: len(data) // 2])
        self.fh.flush()
        raise self.exc

    def __getattr__(self, name):
        return getattr(self.fh, name)


def _break_writes(monkeypatch, exc) -> None:
    import oracle.render.output as output

    real = os.fdopen
    monkeypatch.setattr(output, "os", _Proxy(os, lambda *a, **k: _HalfWriter(real(*a, **k), exc)))


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_interrupt_mid_write_keeps_previous_file(monkeypatch, tmp_path, command):
    _needs(command)
    args, out = _writer_args(command, tmp_path)
    _break_writes(monkeypatch, KeyboardInterrupt())
    out.write_text(OLD, encoding="utf-8")
    r = run_cli(*args, cwd=ROOT)
    assert r.code == 130, (r.code, r.err)
    assert "Traceback" not in r.err and "oracle: interrupted" in r.err_lines
    assert out.read_text(encoding="utf-8") == OLD
    assert _only_files(tmp_path) == sorted({"cases.yaml", out.name})  # temporary file removed


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_disk_full_mid_write_is_a_clear_error(monkeypatch, tmp_path, command):
    _needs(command)
    args, out = _writer_args(command, tmp_path)
    _break_writes(monkeypatch, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    out.write_text(OLD, encoding="utf-8")
    r = run_cli(*args, cwd=ROOT)
    assert r.code == 2 and r.exception is None, (r.code, r.err)
    errors = [ln for ln in r.err_lines if ln.startswith("oracle: error:")]
    assert errors == [f"oracle: error: {out}: -o: cannot write: {os.strerror(errno.ENOSPC)}"], r.err
    assert out.read_text(encoding="utf-8") == OLD
    assert _only_files(tmp_path) == sorted({"cases.yaml", out.name})


def test_output_into_a_read_only_folder(tmp_path):
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("root may write anywhere")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        r = run_cli("show", "model", "alexnet", "-f", "json", "-o", folder / "x.json")
        one_error(r, str(folder / "x.json"), "permission denied")
    finally:
        folder.chmod(0o700)


# ======================================================================================
# 4. Found on the way
# ======================================================================================


def test_overflowing_inputs_never_give_a_feasible_infinite_point():
    """Bypassing the loader's bounds (a System built in Python with α = 1e308), the cost
    model must not report a feasible point with an infinite or NaN time."""
    import dataclasses
    import math

    from oracle import api
    from oracle.load import load_system

    s = load_system("abci")
    huge = dataclasses.replace(s, network=tuple(dataclasses.replace(lv, alpha_s=1e308) for lv in s.network))
    points = api.predict("alexnet", huge, "alexnet_v100", gpus=[1, 4, 64], batch_per_gpu=32)
    for p in points:
        if p.feasible:
            assert math.isfinite(p.total_s) and math.isfinite(p.communication_s), (p.strategy, p.gpus)


def test_compare_run_without_a_computable_projection(tmp_path):
    import math

    from oracle import api

    runs = tmp_path / "runs.csv"
    runs.write_text(
        "model,system,profile,strategy,gpus,global_batch,iteration_s,segments\n"
        "alexnet,abci,alexnet_v100,pipeline,22,256,0.9,8\n"
        "alexnet,abci,alexnet_v100,data,4,2048,0.6,\n",
        encoding="utf-8",
    )
    rows, summary = api.compare(str(runs))
    assert all("inf" not in (r.anomaly or "") for r in rows), [r.anomaly for r in rows]
    # not scored (bug 8): its limit said instead of an accuracy, the statistics over the other run
    assert not rows[0].scored and rows[0].anomaly is None and math.isnan(rows[0].accuracy)
    assert rows[0].limits_note().startswith("infeasible in the model: p=22 exceeds")
    assert math.isfinite(summary.overall.mape) and math.isfinite(summary.overall.bias)
    assert (summary.overall.n, summary.unscored_lines) == (1, (2,))


def test_compare_output_stays_valid_json_when_a_projection_is_not_computable(tmp_path):
    """The rendering side of the bug above (fixed in oracle/render/compare.py): JSON with
    null instead of NaN, and '–' instead of 'nan%' in the table."""
    runs = tmp_path / "runs.csv"
    runs.write_text(
        "model,system,profile,strategy,gpus,global_batch,iteration_s,segments\n"
        "alexnet,abci,alexnet_v100,pipeline,22,256,0.9,8\n",
        encoding="utf-8",
    )
    r = run_cli("compare", runs, "-f", "json")
    assert r.code == 0, r.err

    def reject(name):
        raise AssertionError(f"invalid JSON constant {name}")

    doc = json.loads(r.out, parse_constant=reject)
    assert doc["summary"]["mape"] is None and doc["summary"]["bias"] is None
    r = run_cli("compare", runs, "--width", "200")
    assert r.code == 0 and "nan" not in r.out.lower()
    r = run_cli("compare", runs, "-f", "markdown")
    assert r.code == 0 and "nan" not in r.out.lower()


def test_yaml_anchor_bombs_and_recursion_are_answered(tmp_path):
    """Recursive aliases and exponential alias expansion: an answer, not a hang or crash."""
    rec = tmp_path / "rec.yaml"
    rec.write_text("name: &a [*a]\n", encoding="utf-8")
    r = run_cli("show", "model", rec)
    one_error(r, str(rec))
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        bomb.append(f"{chr(97 + i)}: &{chr(97 + i)} [*{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)},"
                    f" *{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)}, *{chr(96 + i)}]")
    f = tmp_path / "bomb.yaml"
    f.write_text(textwrap.dedent("\n".join(bomb)) + "\n", encoding="utf-8")
    r = run_cli("show", "system", f)
    one_error(r, str(f))


def _odd_named_files(tmp_path: Path, name: str, layer: str, system: str) -> tuple[Path, Path, Path]:
    def q(text: str) -> str:
        return json.dumps(text)  # a YAML double-quoted scalar

    model = TINY_MODEL.replace("name: Tiny", f"name: {q(name)}").replace("name: relu1", f"name: {q(layer)}")
    profile = TINY_PROFILE.replace("model: Tiny", f"model: {q(name)}").replace("relu1:", f"{q(layer)}:")
    cluster = TINY_SYSTEM.replace("name: TinyCluster", f"name: {q(system)}").replace("name: nvlink", f"name: {q(layer)}")
    return files(tmp_path, model=model, system=cluster, profile=profile)


def test_names_are_text_not_rich_markup(tmp_path):
    """Names and sources from input files containing '[/]' used to crash every table
    (rich MarkupError, exit 3); they are shown as written."""
    m, s, p = _odd_named_files(tmp_path, "[/]", "[/bold]", "[/x] [red]")
    runs = tmp_path / "runs.csv"
    runs.write_text(f"model,system,profile,strategy,gpus,global_batch,epoch_s\n{m},{s},{p},data,4,64,1\n",
                    encoding="utf-8")  # fmt: skip
    log_dir = tmp_path / "[logs]"
    log_dir.mkdir()
    log = log_dir / "intra_vnode_4nodes.txt"
    log.write_text((ROOT / "data/osu/abci-v100/intra_vnode_4nodes.txt").read_text(encoding="utf-8"), encoding="utf-8")
    for args, shown in (
        (("predict", "-m", m, "-s", s, "-p", p, "--gpus", "4"), "[/]"),
        (("predict", "-m", m, "-s", s, "-p", p, "--gpus", "4", "--chart"), "[/]"),
        (("show", "model", m), "[/bold]"),
        (("show", "system", s), "[/bold]"),
        (("show", "profile", p, "-m", m), "[/bold]"),
        (("compare", runs), str(runs)),
        (("fit", "network", log, "--gpus-per-node", "4"), "[logs]"),
        (("search", "-m", m, "-s", s, "-p", p, "--gpus", "4"), "[/]"),
    ):
        r = run_cli(*args, "--width", "200")
        assert r.code == 0, (args, r.err)
        assert shown in r.out, (args, r.out[:2000])


def test_names_are_text_not_tex_in_plots(tmp_path):
    """'$' in a name used to make matplotlib parse TeX and fail (exit 3)."""
    pytest.importorskip("matplotlib")
    m, s, p = _odd_named_files(tmp_path, "$\\frac{x$ & <b>", "l$", "$^_$ <script>")
    runs = tmp_path / "runs.csv"
    runs.write_text(f"model,system,profile,strategy,gpus,global_batch,epoch_s\n{m},{s},{p},data,4,64,1\n",
                    encoding="utf-8")  # fmt: skip
    for kind in ("scaling", "breakdown", "memory"):
        out = tmp_path / f"{kind}.svg"
        r = run_cli("plot", kind, "-m", m, "-s", s, "-p", p, "--gpus", "4", "-o", out)
        assert r.code == 0, (kind, r.err)
        assert "$^_$" in out.read_text(encoding="utf-8")
    r = run_cli("plot", "compare", runs, "-o", tmp_path / "compare.png")
    assert r.code == 0, r.err
    html = tmp_path / "report.html"
    r = run_cli("report", "-m", m, "-s", s, "-p", p, "--gpus", "4", "--measured", runs, "-o", html)
    assert r.code == 0, r.err
    text = html.read_text(encoding="utf-8")
    assert "<script>" not in text and "&lt;script&gt;" in text


def test_search_gpu_count_is_bounded():
    """`search --gpus 100000000000` used to run (nearly) forever enumerating splits."""
    r = run_cli("search", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "100000000000")
    one_error(r, "--gpus")
    r = run_cli("search", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "8", "--contention", "1e308")
    one_error(r, "--contention")  # used to overflow (and print numpy warnings)


def test_numpy_overflow_warnings_are_not_printed_without_debug(monkeypatch):
    """A RuntimeWarning ('overflow encountered in multiply', with its source line) would
    add lines to stderr; the cost model reports non-finite results as limits instead."""
    import warnings

    import numpy as np

    import oracle.services.project as common

    real = common.project

    def noisy(*a, **k):
        np.array([1e308]) * 10.0
        return real(*a, **k)

    monkeypatch.setattr(common, "project", noisy)
    args = ("predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4", "-f", "json")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = run_cli(*args)
    assert r.code == 0 and not [w for w in seen if issubclass(w.category, RuntimeWarning)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = run_cli("--debug", *args)
    assert r.code == 0 and [w for w in seen if issubclass(w.category, RuntimeWarning)]
