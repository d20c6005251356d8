"""Robustness, round two (issue 16), output side: -o targets (devices, FIFOs, symlinks,
folders, inputs of the command), reports written all or nothing, closed/full/broken
standard output, Markdown and CSV escaping, compare at scale and the smaller findings.
The input side is in test_robustness_input.py."""

from __future__ import annotations

import errno
import io
import os
import stat
import subprocess
import sys

import pytest
from conftest import ROOT, TINY_MODEL, TINY_PROFILE, TINY_SYSTEM, run_cli
from test_robustness import files, one_error, predict, sub

# ======================================================================================
# 4. -o: regular files only, never an input of the same command; 8. all or nothing
# ======================================================================================


@pytest.mark.parametrize("target,frag", [
    ("/dev/null", "is a system path"),
    ("/dev/stdout", "is a system path"),
])  # fmt: skip
def test_output_onto_system_paths_is_refused(tmp_path, target, frag):
    m, s, p = files(tmp_path)
    before = os.lstat(target)
    one_error(predict(m, s, p, "-o", target), f"{target}: -o: {frag}", "'-o -'")
    after = os.lstat(target)
    assert (before.st_mode, before.st_ino) == (after.st_mode, after.st_ino)


def test_output_through_a_symlink_to_a_device_is_refused(tmp_path):
    m, s, p = files(tmp_path)
    link = tmp_path / "out.json"
    link.symlink_to("/dev/null")
    one_error(predict(m, s, p, "-o", link), "leads to /dev/null")
    assert link.is_symlink()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_output_onto_a_fifo_is_refused(tmp_path):
    m, s, p = files(tmp_path)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    one_error(predict(m, s, p, "-o", fifo), "is not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_output_through_a_symlink_to_a_file_keeps_the_link(tmp_path):
    m, s, p = files(tmp_path)
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    r = predict(m, s, p, "-o", link)
    assert r.code == 0, r.err
    assert link.is_symlink() and real.read_text().startswith("[")


@pytest.mark.parametrize("which", ["model", "system", "profile"])
def test_output_equal_to_an_input_is_refused(tmp_path, which):
    m, s, p = files(tmp_path)
    target = {"model": m, "system": s, "profile": p}[which]
    before = target.read_text()
    one_error(predict(m, s, p, "-o", target), f"{target}: -o: is also an input of this command")
    assert target.read_text() == before


def test_output_equal_to_an_input_by_another_name_is_refused(tmp_path):
    m, s, p = files(tmp_path)
    (tmp_path / "sub").mkdir()
    one_error(predict(m, s, p, "-o", tmp_path / "sub" / ".." / m.name), "is also an input")
    hard = tmp_path / "hard.yaml"
    os.link(m, hard)
    one_error(predict(m, s, p, "-o", hard), "is also an input")


def test_output_equal_to_the_runs_csv_of_compare_is_refused(tmp_path):
    m, s, p = files(tmp_path)
    runs = tmp_path / "runs.csv"
    text = f"model,system,profile,strategy,gpus,global_batch,epoch_s\n{m},{s},{p},data,4,64,10\n"
    runs.write_text(text)
    one_error(run_cli("compare", runs, "-f", "csv", "-o", runs), "is also an input")
    assert runs.read_text() == text


def test_import_append_may_rewrite_its_own_csv(tmp_path):
    log = tmp_path / "8gpus-32pergpu.log"
    log.write_text("0.5\n0.5\n0.5\n")
    out = tmp_path / "runs.csv"
    args = ("import", log, "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--strategy", "data", "-o", out)
    assert run_cli(*args).code == 0
    r = run_cli(*args, "--append")
    assert r.code == 0, r.err
    assert len(out.read_text().splitlines()) == 3


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_import_append_onto_a_fifo_is_refused_without_blocking(tmp_path):
    log = tmp_path / "8gpus-32pergpu.log"
    log.write_text("0.5\n0.5\n0.5\n")
    fifo = tmp_path / "runs.csv"
    os.mkfifo(fifo)
    r = run_cli("import", log, "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--strategy", "data",
                "-o", fifo, "--append")  # fmt: skip
    one_error(r, str(fifo), "is a FIFO")


@pytest.mark.parametrize("exists", [False, True])
def test_output_with_a_trailing_slash_names_a_folder(tmp_path, exists):
    m, s, p = files(tmp_path)
    folder = tmp_path / "newdir"
    if exists:
        folder.mkdir()
    one_error(predict(m, s, p, "-o", f"{folder}/"), "ends in '/', so it names a folder")
    assert folder.is_dir() == exists
    assert not (folder.exists() and any(folder.iterdir()))


def _report_args(m, s, p, out):
    return ("report", "-m", m, "-s", s, "-p", p, "--gpus", "1,4", "-o", out)


def test_report_into_a_folder_named_like_a_file_writes_nothing(tmp_path):
    pytest.importorskip("matplotlib")
    m, s, p = files(tmp_path)
    (tmp_path / "q.md").mkdir()
    before = sorted(x.name for x in tmp_path.iterdir())
    one_error(run_cli(*_report_args(m, s, p, tmp_path / "q.md")), "is a directory")
    assert sorted(x.name for x in tmp_path.iterdir()) == before


def test_report_images_and_markdown_are_all_or_nothing(tmp_path, monkeypatch):
    """A failure while renaming leaves no temporary file; the old report stays whole."""
    pytest.importorskip("matplotlib")
    import oracle.render.output as output

    m, s, p = files(tmp_path)
    out = tmp_path / "r.md"
    out.write_text("old report")
    real_write = output._write_temp
    calls = []

    def failing(target, data):
        calls.append(target.name)
        if target.name == "r.md":
            raise OSError(28, "No space left on device")
        return real_write(target, data)

    monkeypatch.setattr(output, "_write_temp", failing)
    r = run_cli(*_report_args(m, s, p, out))
    assert r.code == 2 and "No space left on device" in r.err, r.err
    assert calls[-1] == "r.md" and len(calls) > 1  # the images were prepared first
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted(["r.md", m.name, s.name, p.name])
    assert out.read_text() == "old report"


# ======================================================================================
# 6. standard output closed, full or a broken pipe: one line, exit 2, never 3
# ======================================================================================


ORACLE = [sys.executable, "-c", "from oracle.cli.main import main; main()"]


class _FailingStdout(io.TextIOBase):
    def __init__(self, exc):
        self.exc = exc

    def isatty(self):
        return False

    def write(self, text):
        raise self.exc


@pytest.mark.parametrize("exc,reason", [
    (BrokenPipeError(errno.EPIPE, "Broken pipe"), "Broken pipe"),
    (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
    (ValueError("I/O operation on closed file."), "it is closed"),
])  # fmt: skip
@pytest.mark.parametrize("command", ["show", "check"])
def test_stdout_failures_are_one_line(tmp_path, monkeypatch, capsys, exc, reason, command):
    from oracle.cli.main import main

    m, s, p = files(tmp_path)
    args = ["show", "model", str(m)] if command == "show" else ["check", str(ROOT / "baselines" / "shipped.json")]
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "stdout", _FailingStdout(exc))
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err == f"oracle: error: cannot write to standard output: {reason}\n"


def test_stdout_missing_at_start(tmp_path, monkeypatch, capsys):
    from oracle.cli.main import main

    m, s, p = files(tmp_path)
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(SystemExit) as info:
        main(["show", "model", str(m)])
    assert info.value.code == 2
    assert capsys.readouterr().err == "oracle: error: cannot write to standard output: it is closed\n"
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(SystemExit) as info:
        main(["show", "model", str(m), "-o", str(tmp_path / "out.txt")])
    assert info.value.code == 0 and (tmp_path / "out.txt").exists()


@pytest.mark.parametrize("exc", [ValueError("bad value"), OSError(errno.ENOSPC, "No space", "some.file"),
                                 OSError(errno.EACCES, "Permission denied")])  # fmt: skip
def test_other_os_and_value_errors_stay_internal_errors(tmp_path, monkeypatch, exc):
    """Only standard output's own failures are exit 2; a bug raising ValueError or an
    OSError about a file is still an internal error (exit 3), not a traceback."""
    import oracle.services.project as common

    def boom(*a, **k):
        raise exc

    m, s, p = files(tmp_path)
    monkeypatch.setattr(common, "project", boom)
    r = predict(m, s, p)
    assert r.code == 3 and r.exception is None, (r.code, r.err)
    assert r.err_lines[0].startswith("oracle: internal error: ") and "Traceback" not in r.err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_dev_full_as_stdout_in_a_real_process(tmp_path):
    m, s, p = files(tmp_path)
    with open("/dev/full", "w") as full:
        r = subprocess.run([*ORACLE, "show", "model", str(m)], stdout=full,
                           stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert r.returncode == 2
    assert r.stderr == "oracle: error: cannot write to standard output: No space left on device\n"


def test_closed_stdout_in_a_real_process(tmp_path):
    m, s, p = files(tmp_path)
    r = subprocess.run([*ORACLE, "show", "model", str(m)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=120,
                       preexec_fn=lambda: os.close(1))  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert r.stderr == "oracle: error: cannot write to standard output: it is closed\n"


# ======================================================================================
# 9. injection: Markdown escapes HTML, CSV neutralizes formulas
# ======================================================================================

EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def _evil_files(tmp_path):
    model = sub(TINY_MODEL, "name: Tiny", f"name: '{EVIL}'").replace("conv2", "c2<b>|x")
    profile = sub(TINY_PROFILE, "model: Tiny", f"model: '{EVIL}'").replace("conv2", "c2<b>|x")
    system = TINY_SYSTEM.replace("name: TinyCluster", "name: '=HYPERLINK(\"http://x\")'")
    return files(tmp_path, model=model, profile=profile, system=system)


def _no_raw_html(text: str) -> None:
    for bad in ("<script", "<img", "<b>", "</script"):
        assert bad not in text, bad


def test_markdown_predict_escapes_names(tmp_path):
    m, s, p = _evil_files(tmp_path)
    r = run_cli("predict", "-m", m, "-s", s, "-p", p, "--gpus", "1,64", "-f", "markdown")
    assert r.code == 0, r.err
    _no_raw_html(r.out)
    assert "&lt;script>" in r.out


def test_markdown_report_escapes_names(tmp_path):
    m, s, p = _evil_files(tmp_path)
    out = tmp_path / "r.md"
    r = run_cli("report", "-m", m, "-s", s, "-p", p, "--gpus", "1,64", "-o", out)
    assert r.code == 0, r.err
    text = out.read_text()
    _no_raw_html(text)
    assert "&lt;script>alert(1)&lt;/script>" in text


def test_markdown_compare_escapes_names_and_source(tmp_path):
    m, s, p = _evil_files(tmp_path)
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,profile,strategy,gpus,global_batch,epoch_s,source\n"
                    f"{m},{s},{p},data,4,64,10,\"{EVIL}\"\n")  # fmt: skip
    r = run_cli("compare", runs, "-f", "markdown")
    assert r.code == 0, r.err
    _no_raw_html(r.out)


def test_escape_helpers():
    from oracle.textsafe import csv_cell, csv_unescape, md

    assert md("a<b>&c|d`e[f](g)\nh") == "a&lt;b>&amp;c\\|d\\`e\\[f\\](g) h"
    assert md("A100 -> H100") == "A100 -> H100"
    assert md("res4a_branch2b") == "res4a_branch2b"
    for cell in ("=1+1", "+cmd", "-cmd|x", "@SUM(A1)", "\tx", "\rx"):
        assert csv_cell(cell) == "'" + cell
        assert csv_unescape(csv_cell(cell)) == cell
    for number in ("-1.5", "+3", "-1e-06", 2.5, -3, None):
        assert csv_cell(number) == number
    assert csv_unescape("'quoted") == "'quoted"


def test_csv_outputs_neutralize_formulas(tmp_path):
    import csv
    import io

    m, s, p = _evil_files(tmp_path)
    r = run_cli("predict", "-m", m, "-s", s, "-p", p, "--gpus", "1,4", "-f", "csv")
    assert r.code == 0, r.err
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert {row["system"] for row in rows} == {"'=HYPERLINK(\"http://x\")"}
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,profile,strategy,gpus,global_batch,epoch_s,source,=cmd\n"
                    f"{m},{s},{p},data,4,64,10,@SUM(1),-x\n")  # fmt: skip
    r = run_cli("compare", runs, "-f", "csv")
    assert r.code == 0, r.err
    table = list(csv.reader(io.StringIO(r.out)))
    flat = [c for row in table for c in row]
    assert "'=cmd" in table[0] and "'@SUM(1)" in flat and "'-x" in flat
    assert not any(c.startswith(("=", "+", "@")) for c in flat)
    negative = [c for c in flat if c.startswith("-")]
    assert all(float(c) < 0 for c in negative)  # numbers stay numbers


def test_import_escapes_source_cells_and_compare_reads_them_back(tmp_path):
    from oracle.compute.strategies import names
    from oracle.load.runs import load_runs

    (tmp_path / "=x 8gpus-32pergpu.log").write_text("0.5\n0.5\n0.5\n")
    out = tmp_path / "runs.csv"
    r = run_cli("import", "=x 8gpus-32pergpu.log", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100",
                "--strategy", "data", "-o", out, cwd=tmp_path)  # fmt: skip
    assert r.code == 0, r.err
    assert ",'=x 8gpus-32pergpu.log (per-iteration time log)\n" in out.read_text()
    assert load_runs(out, names())[0].source == "=x 8gpus-32pergpu.log (per-iteration time log)"


# ======================================================================================
# 7. compare stays near-linear: ranking agreement by merge counting
# ======================================================================================


def _pairwise_reference(rows):
    """The old O(n^2) definition, kept as the reference."""
    import math
    from itertools import combinations

    from oracle.compute.calibration.compare import _epoch

    groups: dict = {}
    for r in rows:
        groups.setdefault((r.point.model, r.point.system, r.run.gpus), []).append(r)
    agree = total = 0
    for members in groups.values():
        for a, b in combinations(members, 2):
            if a.run.strategy == b.run.strategy:
                continue
            ma, mb = _epoch(a, a.measured_s), _epoch(b, b.measured_s)
            pa, pb = a.point.total_s, b.point.total_s
            if ma == mb or not (math.isfinite(pa) and math.isfinite(pb)):
                continue
            total += 1
            agree += (ma < mb) == (pa < pb)
    return (agree / total if total else None), total


def _fake_row(model, gpus, strategy, measured, projected, basis="epoch", ipe=1.0):
    import math
    from types import SimpleNamespace as NS

    # scored as a feasible run is (compare.CompareRow.scored): where its projection is finite
    return NS(point=NS(model=model, system="s", total_s=projected, iterations_per_epoch=ipe),
              run=NS(gpus=gpus, strategy=strategy, basis=basis), measured_s=measured,
              scored=math.isfinite(projected))  # fmt: skip


def test_ranking_agreement_matches_the_pairwise_definition():
    """Random small groups with many ties (measured, projected), infinities and NaN."""
    import random

    from oracle.compute.calibration.compare import ranking_agreement

    rnd = random.Random(16)
    for _ in range(1500):
        rows = [
            _fake_row(rnd.choice("ab"), rnd.choice([1, 2]), rnd.choice(["data", "spatial", "filter"]),
                      rnd.choice([1.0, 2.0, 3.0, rnd.random()]),
                      rnd.choice([1.0, 2.0, float("inf"), float("nan"), rnd.random()]),
                      rnd.choice(["epoch", "iteration"]), rnd.choice([1.0, 2.0]))
            for _ in range(rnd.randint(0, 24))
        ]  # fmt: skip
        assert ranking_agreement(rows) == _pairwise_reference(rows)


def test_increasing_pairs_counts_strictly_increasing_pairs():
    import random

    from oracle.compute.calibration.compare import _increasing_pairs

    rnd = random.Random(7)
    for n in (0, 1, 2, 3, 5, 8, 17, 64, 100):
        keys = [rnd.randint(0, 5) for _ in range(n)]
        expected = sum(1 for i in range(n) for j in range(i + 1, n) if keys[i] < keys[j])
        assert _increasing_pairs(keys) == expected


def test_compare_table_lists_at_most_1000_runs(tmp_path):
    from oracle.render.compare import TABLE_MAX_RUNS

    m, s, p = files(tmp_path)
    runs = tmp_path / "runs.csv"
    body = "".join(f"{m},{s},{p},{('data', 'spatial')[i % 2]},4,64,{10 + i % 7}\n" for i in range(TABLE_MAX_RUNS + 5))
    runs.write_text("model,system,profile,strategy,gpus,global_batch,epoch_s\n" + body)
    r = run_cli("compare", runs, "--width", "200")
    assert r.code == 0, r.err
    assert "... and 5 more runs" in r.out and "-f csv or -f json lists every run" in r.out
    assert f" {TABLE_MAX_RUNS + 1} " in r.out and f" {TABLE_MAX_RUNS + 2} " not in r.out  # CSV lines 2..1001
    r = run_cli("compare", runs, "-f", "csv")
    assert len(r.out.splitlines()) == TABLE_MAX_RUNS + 6


@pytest.mark.parametrize("bucket_mb", ["1000", "0", "25"])
def test_overlap_ratio_in_range_and_exposed_within_total(bucket_mb):
    r = run_cli("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "4-64",
                "--overlap", "buckets", "--bucket-MB", bucket_mb, "-f", "json", cwd=ROOT)  # fmt: skip
    assert r.code == 0, r.err
    import json

    points = [d for d in json.loads(r.out) if d.get("overlap_ratio") is not None]
    assert points
    for d in points:
        assert 0.0 <= d["overlap_ratio"] <= 1.0, d
        assert d["communication_s"] <= d["communication_total_s"], d


def test_gradient_timeline_exposed_never_exceeds_total():
    import numpy as np

    from oracle.compute.overlap import gradient_timeline

    backward = np.array([0.1, 0.2, 0.3000000000000001])
    grads = np.array([1.0, 2.0, 3.0])
    tl = gradient_timeline(backward, grads, [lambda size: 0.7 + 1e-16], bucket_bytes=1e12)
    assert tl.buckets == 1 and tl.exposed_s <= tl.total_s and 0.0 <= tl.overlap_ratio <= 1.0


def test_huge_plot_is_an_error_and_large_plot_prints_no_pil_warning(tmp_path):
    pytest.importorskip("matplotlib")
    import warnings

    counts = ",".join(str(i) for i in range(1, 200))
    r = run_cli("plot", "breakdown", "-m", "alexnet", "-s", "abci", "-p", "alexnet_v100", "--gpus", counts,
                "--dpi", "600", "-o", tmp_path / "b.png", cwd=ROOT)  # fmt: skip
    one_error(r, "--dpi: the image would be", "at most 200 million")
    assert not (tmp_path / "b.png").exists()
    from oracle.render import plots

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PIL's DecompressionBombWarning would raise here
        big = plots.new_figure(80, 40)  # 48,000 x 24,000 px at 600 dpi: over the palette limit
        big.add_subplot().plot([1, 2], [1, 2])
        data = plots.to_bytes(big, "png", dpi=150)  # 12,000 x 6,000: kept as matplotlib wrote it
    assert data[:8] == b"\x89PNG\r\n\x1a\n"


def test_profile_estimate_batch_out_of_range_blames_the_option():
    one_error(run_cli("profile", "alexnet", "--estimate", "-s", "abci", "--batch", "999999999999999999", cwd=ROOT),
              "--batch", "not plausible")  # fmt: skip


def test_fit_runs_overlay_that_breaks_the_system_names_the_overlay(tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("gpus_per_node: many\n")
    out = tmp_path / "fitted.yaml"
    r = run_cli("fit", "runs", "validation/abci-paradl.csv", "-s", "abci", "--calibrate", "network",
                "--where", "model=vgg16", "--overlay", overlay, "-o", out, cwd=ROOT)  # fmt: skip
    line = one_error_line(r)
    assert line == f"oracle: error: {overlay}: gpus_per_node: merged into the system, got 'many';" \
        " expected a count >= 1 and <= 10,000,000", line
    assert not out.exists()


def one_error_line(r) -> str:
    """Exit 2 with one error line (stdout may hold the calibration table)."""
    assert r.code == 2 and r.exception is None, (r.code, r.err)
    assert len(r.err_lines) == 1 and "Traceback" not in r.err, r.err
    return r.err_lines[0]


def test_output_name_with_a_nul_byte_is_one_error(tmp_path):
    m, s, p = files(tmp_path)
    one_error(predict(m, s, p, "-o", str(tmp_path / "a\x00b")), "-o: is not a usable file name")


def test_a_warning_keeps_a_users_control_characters_on_its_line(run, tmp_path):
    """Fuzzing found it: a runs file's system name with a record separator (\\x1e, a
    line break to Python) printed raw in fit runs' warning, which then took two lines."""
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,profile,strategy,gpus,global_batch,iteration_s,includes_io\n"
                    "alexnet,0\x1e0,alexnet_v100,data,1,512,0.4608,yes\n", encoding="utf-8")  # fmt: skip
    r = run("fit", "runs", runs, "-s", "abci", "--calibrate", "network")
    assert r.code == 2 and "Traceback" not in r.err
    lines = r.err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("oracle: warning: ") and "0\\x1e0" in lines[0], r.err
    assert lines[1].startswith("oracle: error: ")
