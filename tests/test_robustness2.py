"""Robustness, round two (issue 16): hostile files, device paths, NaN gates, output
that lands where it should.  One section per finding of the issue, in its order; each
case runs the CLI in-process and checks exit status and the one-line message."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from conftest import TINY_MODEL, TINY_PROFILE, TINY_SYSTEM, run_cli
from test_robustness import files, one_error, predict, sub

# ======================================================================================
# 1. deep nesting: refused before the C parser / constructor can recurse
# ======================================================================================

DEEP = 30_000


@pytest.mark.parametrize("body", [
    "notes: " + "[" * DEEP + "]" * DEEP + "\n",
    "notes:\n" + "- " * DEEP + "x\n",
    "notes: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n",
], ids=["flow-lists", "block-lists", "flow-maps"])  # fmt: skip
def test_deep_nesting_is_one_error(tmp_path, body):
    m, s, p = files(tmp_path, profile=TINY_PROFILE + body)
    one_error(predict(m, s, p), f"{p}:", "nested more than 100 levels deep")


def test_nesting_at_the_limit_still_loads(tmp_path):
    from oracle.load.yamlfile import MAX_DEPTH, load_yaml

    f = tmp_path / "ok.yaml"
    # the top-level mapping is one level; MAX_DEPTH - 1 lists inside it
    f.write_text("a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n")
    assert load_yaml(f)["a"] is not None
    f.write_text("a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n")
    with pytest.raises(Exception, match="nested more than"):
        load_yaml(f)


# ======================================================================================
# 2. alias bombs: the expansion is counted on the parser's events, nothing is built
# ======================================================================================

LAUGHS = "".join(
    f"  {name}: &{name} [" + ", ".join([f"*{prev}"] * 9 if prev else ['"lol"'] * 9) + "]\n"
    for prev, name in zip([None, "a", "b", "c", "d", "e", "f", "g"], "abcdefghi")
)


def test_alias_bomb_in_profile_notes(tmp_path):
    m, s, p = files(tmp_path, profile=TINY_PROFILE + "notes:\n" + LAUGHS)
    one_error(predict(m, s, p), f"{p}:", "aliases expand to more than 100,000 values")


def test_alias_bomb_show_profile(tmp_path):
    m, s, p = files(tmp_path, profile=TINY_PROFILE + "notes:\n" + LAUGHS)
    one_error(run_cli("show", "profile", p), f"{p}:", "aliases expand")


def test_alias_bomb_overlay_names_the_overlay_and_writes_nothing(tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("notes:\n" + LAUGHS)
    out = tmp_path / "fitted.yaml"
    runs = tmp_path / "runs.csv"
    runs.write_text("model,system,profile,strategy,gpus,global_batch,epoch_s\nx,y,z,data,4,64,10\n")
    r = run_cli("fit", "runs", runs, "-s", "abci", "--calibrate", "network", "--overlay", overlay, "-o", out)
    one_error(r, f"{overlay}:", "aliases expand")
    assert not out.exists()


def test_ordinary_aliases_still_work(tmp_path):
    model = TINY_MODEL.replace("filters: 4, kernel: 3, padding: 1", "filters: 4, kernel: &k 3, padding: 1")
    model = model.replace("filters: 8, kernel: 3, padding: 1", "filters: 8, kernel: *k, padding: 1")
    m, s, p = files(tmp_path, model=model)
    assert predict(m, s, p).code == 0


# ======================================================================================
# 3. unbounded reads: devices and FIFOs refused before opening, a size cap
# ======================================================================================


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_device_as_model_is_refused(tmp_path):
    m, s, p = files(tmp_path)
    one_error(predict("/dev/zero", s, p), "/dev/zero", "is a device", "regular file")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_device_in_a_runs_csv_cell_is_refused(tmp_path):
    m, s, p = files(tmp_path)
    runs = tmp_path / "runs.csv"
    runs.write_text(f"model,system,profile,strategy,gpus,global_batch,epoch_s\n/dev/zero,{s},{p},data,4,64,10\n")
    one_error(run_cli("compare", runs), "/dev/zero", "is a device")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused_without_blocking(tmp_path):
    m, s, p = files(tmp_path)
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    one_error(predict(fifo, s, p), str(fifo), "is a FIFO", "ORACLE_READ_PIPES=1")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_read_when_allowed(tmp_path):
    m, s, p = files(tmp_path)
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "w") as fh:
            fh.write(TINY_MODEL)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    r = run_cli("predict", "-m", fifo, "-s", s, "-p", p, "--gpus", "4", "-f", "json",
                env={"ORACLE_READ_PIPES": "1"})  # fmt: skip
    t.join(5)
    assert r.code == 0, r.err


def test_file_above_the_size_cap_is_refused(tmp_path):
    m, s, p = files(tmp_path)
    with open(m, "r+b") as fh:  # sparse: costs no disk space
        fh.truncate(64 * 2**20 + 1)
    one_error(predict(m, s, p), str(m), "larger than 64 MiB")


def test_size_cap_counts_bytes_read_not_the_reported_size(tmp_path, monkeypatch):
    from oracle.load import source

    monkeypatch.setattr(source, "MAX_INPUT_BYTES", 100)
    m, s, p = files(tmp_path)
    with pytest.raises(Exception, match="larger than"):
        source.read_bytes(m, "model file")
    monkeypatch.setattr(source, "MAX_INPUT_BYTES", 10_000)
    assert source.read_bytes(m, "model file").decode() == TINY_MODEL


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root reads any folder")
def test_unreadable_folder_is_not_reported_as_missing(tmp_path):
    m, s, p = files(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "m.yaml").write_text(TINY_MODEL)
    locked.chmod(0)
    try:
        one_error(predict(locked / "m.yaml", s, p), "permission denied")
    finally:
        locked.chmod(stat.S_IRWXU)


def test_permission_error_on_stat_is_not_reported_as_missing(tmp_path, monkeypatch):
    """The same rule without needing a non-root user: os.stat raising EACCES."""
    from oracle.load import source

    m, s, p = files(tmp_path)
    real = os.stat

    def fake(path, *a, **k):
        if str(path) == str(m):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(source.os, "stat", fake)
    with pytest.raises(Exception, match="permission denied"):
        source.read_bytes(m, "model file")


def test_resources_exists_treats_permission_error_as_present(monkeypatch):
    from oracle import resources

    class Locked(type(Path())):
        def exists(self):
            raise PermissionError(13, "Permission denied")

    assert resources.exists(Locked("x/y.yaml")) is True


# ======================================================================================
# 10 (YAML part). sexagesimal numbers, !!binary, !!set
# ======================================================================================


@pytest.mark.parametrize("old,new,frag", [
    ("samples: 1000", "samples: 1:30:00", "'1:30:00' would be read as a base-60 number"),
    ("name: Tiny", "name: !!binary VGlueQ==", "YAML tag '!!binary' is not accepted"),
    ("name: Tiny", "name: !!set {Tiny}", "YAML tag '!!set' is not accepted"),
])  # fmt: skip
def test_yaml_11_surprises_are_refused(tmp_path, old, new, frag):
    m, s, p = files(tmp_path, model=sub(TINY_MODEL, old, new))
    one_error(predict(m, s, p), f"{m}:", frag)


def test_quoted_sexagesimal_is_text(tmp_path):
    m, s, p = files(tmp_path, model=sub(TINY_MODEL, "name: Tiny", 'name: "1:30"'))
    p.write_text(sub(TINY_PROFILE, "model: Tiny", 'model: "1:30"'))
    assert predict(m, s, p).code == 0
