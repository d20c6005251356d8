"""Robustness, round three (issue 28), everything but names (test_robustness_names.py):

* outputs: ``-o`` never destroys an input or a protected file and never writes into
  /dev, whatever the path; any legal file name can be written; concurrent ``oracle
  import --append`` keep every row (oracle/render/output.py: check_target, the
  temporary file, append_lock; for what import-model reads, load/source.check_readable);
* bounded work: long log lines parsed in linear time;
* every number checked where it enters (oracle/cli/types.py) and odd ONNX graphs:
  one error line, never exit 3."""

from __future__ import annotations

import csv
import math
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from test_robustness import files, one_error, predict

ORACLE = [sys.executable, "-c", "from oracle.cli.main import main; main()"]


def _tiny_onnx(path: Path) -> Path:
    onnx = pytest.importorskip("onnx")
    from test_robustness_names import tiny_onnx

    return tiny_onnx(onnx, path)


def test_import_model_onnx_never_overwrites_its_source(tmp_path):
    src = _tiny_onnx(tmp_path / "m.onnx")
    before = src.read_bytes()
    link = tmp_path / "link.onnx"
    link.symlink_to(src)
    hard = tmp_path / "hard.onnx"
    os.link(src, hard)
    for target in (src, link, hard, tmp_path / "sub" / ".." / "m.onnx"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        one_error(run_cli("import-model", src, "-o", target), "is also an input of this command")
        assert src.read_bytes() == before and link.is_symlink()


def test_import_model_python_never_overwrites_its_source(tmp_path):
    pytest.importorskip("torch")
    net = tmp_path / "net.py"
    net.write_text("import torch\n\ndef f():\n    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3))\n")
    before = net.read_text()
    one_error(run_cli("import-model", f"{net}:f", "--input", "3,8,8", "-o", net), "is also an input")
    assert net.read_text() == before


def test_import_model_registers_a_python_source_as_an_input(tmp_path):
    """Without PyTorch too: the file is checked and remembered before anything else."""
    from oracle.importer.build import _check_source_file
    from oracle.load.source import forget_inputs, is_input

    net = tmp_path / "net.py"
    net.write_text("x = 1\n")
    forget_inputs()
    _check_source_file(f"{net}:f")
    assert is_input(os.stat(net))
    forget_inputs()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("source", ["m.onnx", "net.py:f"])
def test_import_model_refuses_a_fifo_without_blocking(tmp_path, source):
    fifo = tmp_path / source.split(":")[0]
    os.mkfifo(fifo)
    r = subprocess.run([*ORACLE, "import-model", str(tmp_path / source), "--input", "3,8,8"],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2 and "FIFO" in r.stderr, r.stderr


def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))  # reading /dev/zero must not eat the machine


def test_import_model_refuses_a_link_to_a_device(tmp_path):
    link = tmp_path / "zero.onnx"
    link.symlink_to("/dev/zero")
    r = subprocess.run([*ORACLE, "import-model", str(link)], capture_output=True, text=True, timeout=60,
                       preexec_fn=_limited)  # fmt: skip
    assert r.returncode == 2 and "is a device" in r.stderr, r.stderr


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o555], ids=oct)
def test_a_write_protected_output_is_kept(tmp_path, mode):
    m, s, p = files(tmp_path)
    out = tmp_path / "out.json"
    out.write_text("keep me")
    out.chmod(mode)
    one_error(predict(m, s, p, "-o", out), "is write-protected", "chmod u+w")
    assert out.read_text() == "keep me" and stat.S_IMODE(out.stat().st_mode) == mode


def test_a_write_protected_folder_is_refused(tmp_path):
    m, s, p = files(tmp_path)
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        one_error(predict(m, s, p, "-o", folder / "out.json"), "is write-protected")
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm")
def test_output_through_a_folder_link_into_dev_is_refused(tmp_path):
    m, s, p = files(tmp_path)
    link = tmp_path / "shm"
    link.symlink_to("/dev/shm")
    name = f"oracle-test-{os.getpid()}.json"
    one_error(predict(m, s, p, "-o", link / name), "/dev/shm")
    assert not os.path.exists(f"/dev/shm/{name}")


@pytest.mark.parametrize("length", [250, 255])
def test_any_legal_file_name_can_be_written(tmp_path, length):
    m, s, p = files(tmp_path)
    out = tmp_path / ("a" * (length - 5) + ".json")
    r = predict(m, s, p, "-o", out)
    assert r.code == 0, r.err
    assert out.read_text().startswith("[")
    assert sorted(x.name for x in tmp_path.iterdir() if x.name.startswith(".")) == []  # no temporary left


def test_a_multibyte_255_byte_name_can_be_written(tmp_path):
    m, s, p = files(tmp_path)
    out = tmp_path / ("é" * 125 + ".json")  # 250 + 5 bytes
    assert len(out.name.encode()) == 255
    r = predict(m, s, p, "-o", out)
    assert r.code == 0, r.err and out.exists()


def test_concurrent_appends_keep_every_row(tmp_path):
    """The issue's case: a CSV of one run, then seven concurrent --append of one run each."""
    log = ROOT / "tests" / "data" / "logs" / "chainer-iter-trigger.json"
    runs = tmp_path / "runs.csv"
    args = ["import", str(log), "--model", "vgg16", "--system", "abci", "--profile", "vgg16_v100",
            "--strategy", "data", "--gpus", "4", "--batch-per-gpu", "32"]  # fmt: skip
    r = run_cli(*args, "-o", runs)
    assert r.code == 0, r.err
    procs = [subprocess.Popen([*ORACLE, *args, "--append", "-o", str(runs)], stderr=subprocess.PIPE, text=True)
             for _ in range(7)]  # fmt: skip
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
    with runs.open(newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 8


# ======================================================================================
# Bounded work: a long line costs linear time.  A backtracking regular expression took
# minutes on these (16 kB of digits: 40 s); the timeouts only stop a hang, they are
# hundreds of times what the linear parse needs.
# ======================================================================================


def _oracle(*args, timeout=120):
    return subprocess.run([*ORACLE, *map(str, args)], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("tail", ["x", ",x", "e"])
def test_a_log_line_of_digits_is_parsed_in_linear_time(tmp_path, tail):
    log = tmp_path / "train.log"
    log.write_text("1" * 100_000 + tail + "\n0.5\n0.6\n")
    r = _oracle("import", log, "--model", "vgg16", "--system", "abci", "--profile", "vgg16_v100",
                "--strategy", "data", "--gpus", "4", "--batch-per-gpu", "32")  # fmt: skip
    assert r.returncode == 2 and len(r.stderr) < 1000, r.stderr[:300]


def test_a_long_nccl_tests_comment_line_is_parsed_in_linear_time(tmp_path):
    log = tmp_path / "allreduce_8gpus.txt"
    log.write_text("#" + " size" * 20_000 + " x\n" + "# nThread 1 nGpus 1\n")
    r = _oracle("fit", "network", "--gpus-per-node", "4", "--gpus", "8", log)
    assert r.returncode == 2, r.stderr[:300]


# ======================================================================================
# Every number checked where it enters: no option value is an internal error (exit 3)
# ======================================================================================

HUGE = "9" * 400


def _params():
    """(command path, parameter) for every numeric option of every command."""
    import click

    from oracle.cli.main import cli

    ctx = click.Context(cli)

    def walk(cmd, path):
        if isinstance(cmd, click.Group):  # subcommands are loaded on demand
            for name in cmd.list_commands(ctx):
                yield from walk(cmd.get_command(ctx, name), (*path, name))
        else:
            for p in cmd.params:
                if isinstance(p, click.Option) and not p.is_flag and not isinstance(p.type, click.Choice):
                    yield " ".join(path), p

    return list(walk(cli, ()))


@pytest.mark.parametrize("value", [HUGE, "-" + HUGE, "1e400", "nan", "inf", "-inf", "1" + "0" * 30])
def test_every_numeric_option_refuses_implausible_values(value):
    """Each option's type converts ``value`` or refuses it with a user error: never an
    OverflowError; a count it converts stays below 10^16, a float is finite."""
    import click

    from oracle.errors import OracleError

    checked = 0
    for command, param in _params():
        if isinstance(param.type, (click.types.StringParamType, click.Path, click.File, click.types.BoolParamType)):
            continue
        checked += 1
        try:
            got = param.type.convert(value, param, None)
        except (click.BadParameter, OracleError):
            continue
        numbers = got if isinstance(got, (tuple, list)) else (got,)
        for n in numbers:
            if isinstance(n, int) and not isinstance(n, bool):
                assert abs(n) < 1e16, (command, param.name, value, got)  # a count oracle can compute with
            if isinstance(n, float):
                assert math.isfinite(n), (command, param.name, value, got)
    assert checked > 30


@pytest.mark.parametrize("args", [
    ("predict", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4", "-S", HUGE),
    ("compare", "--log", ROOT / "tests" / "data" / "logs" / "chainer-iter-trigger.json", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--strategy", "data",
     "--gpus", "1" + "0" * 21, "--batch", "64"),
    ("compare", ROOT / "validation" / "abci-paradl.csv", "--width", HUGE),
    ("fit", "network", "--gpus-per-node", HUGE, "--gpus", "8", ROOT / "data" / "nccl-tests" / "abci-v100" / "inter_vnode_2nodes.txt"),
    ("fit", "network", "--min-bytes", HUGE, ROOT / "data" / "nccl-tests" / "abci-v100" / "inter_vnode_2nodes.txt"),
    ("fit", "network", "--gpus", HUGE, ROOT / "data" / "nccl-tests" / "abci-v100" / "inter_vnode_2nodes.txt"),
    ("profile", "alexnet", "-t", HUGE),
    ("search", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", "4", "--top", HUGE),
])  # fmt: skip
def test_the_issues_huge_integers_are_one_error(args):
    r = run_cli(*args)
    assert r.code == 2 and r.exception is None, (r.code, r.err[-300:])
    assert len(r.err_lines) == 1 and HUGE not in r.err and len(r.err) < 400, r.err


@pytest.mark.parametrize("case", ["no-outputs", "initializer-without-data", "constant-value-float", "external-data-size"])
def test_odd_onnx_graphs_are_one_error(tmp_path, case):
    """The issue's ONNX graphs that were internal errors (exit 3)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    path = _tiny_onnx(tmp_path / "m.onnx")
    m = onnx.load(str(path))
    g = m.graph
    if case == "no-outputs":
        del g.output[:]
    elif case == "initializer-without-data":
        g.initializer[0].ClearField("raw_data")
    elif case == "constant-value-float":
        g.node.extend([helper.make_node("Constant", [], ["k"], value_float=2.0, name="k"),
                       helper.make_node("Mul", ["z", "k"], ["w"], name="mul")])  # fmt: skip
        g.output[0].name = "w"
    else:
        t = g.initializer[0]
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        entry = t.external_data.add()
        entry.key, entry.value = "location", "w.bin"
        (tmp_path / "w.bin").write_bytes(b"\0" * 10)
    onnx.save(m, str(path))
    r = run_cli("import-model", path, "--allow-unsupported")
    assert r.code in (0, 2) and r.exception is None and "internal error" not in r.err, r.err
    if case != "constant-value-float":
        one_error(r, str(path))


def test_import_model_input_with_a_huge_extent_is_one_error(tmp_path):
    path = _tiny_onnx(tmp_path / "m.onnx")
    one_error(run_cli("import-model", path, "--input", "3," + HUGE + ",32"), "--input", "at most 1,000,000")
