"""Robustness, round two (issue 16), input side: hostile files (deep nesting, alias
bombs, devices, FIFOs, huge files, YAML 1.1 surprises), NaN gates, malformed baselines,
numbers on the command line.  One section per finding of the issue; each case runs the
CLI in-process and checks exit status and the one-line message.  The output side
(-o targets, standard output, escaping, compare at scale) is in
test_robustness_output.py."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from conftest import ROOT, TINY_MODEL, TINY_PROFILE, run_cli
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
    """The promise: one error naming the file, exit 2, no traceback. Which check stops it
    first (oracle's MAX_DEPTH walk, or libyaml's own nesting limit since PyYAML 6.0.4,
    which reads ahead in flow context) is not: oracle's own wording is pinned below."""
    m, s, p = files(tmp_path, profile=TINY_PROFILE + body)
    one_error(predict(m, s, p), f"{p}:")


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
        fh.truncate(16 * 2**20 + 1)
    one_error(predict(m, s, p), str(m), "larger than 16 MiB", "model file of at most 16 MiB")
    runs = tmp_path / "runs.csv"
    with open(runs, "wb") as fh:
        fh.truncate(256 * 2**20 + 1)
    one_error(run_cli("compare", runs), str(runs), "larger than 256 MiB")


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


# ======================================================================================
# 5. NaN and infinities never switch a gate off
# ======================================================================================

GATES = {
    "compare --min-accuracy": ("compare", "{runs}", "--min-accuracy"),
    "compare --max-mape": ("compare", "{runs}", "--max-mape"),
    "compare --anomaly-threshold": ("compare", "{runs}", "--anomaly-threshold"),
    "fit network --max-median-error": ("fit", "network", "{log}", "--max-median-error"),
    "check --rtol": ("check", "{base}", "--rtol"),
    "predict --memory-reuse": ("predict", "-m", "{m}", "-s", "{s}", "-p", "{p}", "--memory-reuse"),
    "predict --contention": ("predict", "-m", "{m}", "-s", "{s}", "-p", "{p}", "--contention"),
    "predict --bucket-MB": ("predict", "-m", "{m}", "-s", "{s}", "-p", "{p}", "--bucket-MB"),
}


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "Infinity"])
@pytest.mark.parametrize("gate", sorted(GATES))
def test_thresholds_refuse_non_finite_values(tmp_path, gate, value):
    m, s, p = files(tmp_path)
    names = {"runs": tmp_path / "runs.csv", "log": tmp_path / "x.txt", "base": tmp_path / "b.json", "m": m, "s": s, "p": p}
    args = [a.format(**names) for a in GATES[gate]]
    r = run_cli(*args, value)
    one_error(r, f"'{value}' is not a finite number", args[-1])


def _baseline(tmp_path) -> Path:
    m, s, p = files(tmp_path)
    cases = tmp_path / "cases.yaml"
    cases.write_text(f"cases:\n  - {{model: {m.name}, system: {s.name}, profile: {p.name}, gpus: '1,4', batch_per_gpu: 8}}\n")
    base = tmp_path / "base.json"
    assert run_cli("snapshot", cases, "-o", base).code == 0
    return base


def test_check_still_passes_on_a_fresh_baseline(tmp_path):
    base = _baseline(tmp_path)
    r = run_cli("check", base)
    assert r.code == 0, r.err


# ======================================================================================
# 6. malformed baselines: clean errors, never an internal error
# ======================================================================================


def _mutations():
    def point(doc):
        return doc["cases"][0]["points"][0]

    def case(doc):
        return doc["cases"][0]["case"]

    return {
        "nan-total": (lambda d: point(d).__setitem__("total_s", "NaN!"), "NaN is not a number"),
        "infinity": (lambda d: point(d).__setitem__("compute_s", "INF!"), "Infinity is not a number"),
        "missing-strategy": (lambda d: point(d).pop("strategy"), "'strategy' is null; expected a name"),
        "points-string": (lambda d: d["cases"][0].__setitem__("points", "abc"), "cases[0].points: is a string; expected a list"),
        "unknown-point-key": (lambda d: point(d).__setitem__("totl_s", 1.0), "unknown key 'totl_s'"),
        "unknown-case-key": (lambda d: case(d).__setitem__("gpu", 4), "unknown key 'gpu'"),
        "unknown-top-key": (lambda d: d.__setitem__("extra", 1), "unknown key 'extra'"),
        "list-for-number": (lambda d: point(d).__setitem__("total_s", [1.0]), "total_s: is a list; expected a number"),
        "huge-integer": (lambda d: point(d).__setitem__("total_s", 10**400), "total_s: is not a plausible number"),
        "huge-gpus": (lambda d: point(d).__setitem__("gpus", 10**400), "gpus: is not a plausible number"),
        "string-for-number": (lambda d: point(d).__setitem__("memory_bytes", "1 GB"), "memory_bytes: is a string"),
        "case-list": (lambda d: d["cases"][0].__setitem__("case", []), "cases[0].case: is a list; expected an object"),
        "missing-points": (lambda d: d["cases"][0].pop("points"), "needs 'case' and 'points'"),
        "model-number": (lambda d: case(d).__setitem__("model", 3), "case.model: is a number; expected a name or path"),
        "breakdown-list": (lambda d: point(d).__setitem__("breakdown", [1]), "breakdown: is a list"),
        "feasible-string": (lambda d: point(d).__setitem__("feasible", "yes"), "feasible: is a string; expected true or false"),
        "limit-codes-numbers": (lambda d: point(d).__setitem__("limit_codes", [1]), "expected a list of names"),
        "cases-object": (lambda d: d.__setitem__("cases", {}), "cases: is an object; expected a list"),
        "entry-string": (lambda d: d["cases"].__setitem__(0, "x"), "cases[0]: is a string"),
        "bool-gpus": (lambda d: point(d).__setitem__("gpus", True), "gpus: is a boolean; expected an integer"),
        # found by scripts/fuzz.sh (tests/test_fuzz.py::test_fuzz_check_malformed_baselines)
        "no-batch": (lambda d: case(d).pop("batch_per_gpu"), "give exactly one of batch and batch_per_gpu"),
        "p2-zero": (lambda d: case(d).__setitem__("p2", 0), "cases[0].case.p2: got 0; expected a count >= 1"),
        "text-batch": (lambda d: case(d).__setitem__("batch_per_gpu", "x"), "cases[0].case.batch_per_gpu: is a string"),
        "number-strategy": (lambda d: case(d).__setitem__("strategy", 3), "cases[0].case.strategy: is a number"),
        "bad-precision": (lambda d: case(d).__setitem__("precision", "fp8"), "cases[0].case.precision: unknown precision"),
        "both-batches": (lambda d: case(d).__setitem__("batch", 64), "give exactly one of batch and batch_per_gpu"),
    }


MUTATIONS = _mutations()


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_malformed_baseline_is_one_error(tmp_path, name):
    import json

    base = _baseline(tmp_path)
    doc = json.loads(base.read_text())
    change, frag = MUTATIONS[name]
    change(doc)
    text = json.dumps(doc).replace('"NaN!"', "NaN").replace('"INF!"', "Infinity")
    base.write_text(text)
    one_error(run_cli("check", base), str(base), frag)


def test_deeply_nested_baseline_is_one_error(tmp_path):
    base = tmp_path / "deep.json"
    base.write_text('{"format": "oracle-baseline/1", "cases": ' + "[" * 100_000 + "]" * 100_000 + "}")
    one_error(run_cli("check", base), str(base), "nested too deeply")


# ======================================================================================
# 10. the smaller findings
# ======================================================================================


def test_import_refuses_what_compare_would_refuse(tmp_path):
    log = tmp_path / "8gpus-32pergpu.log"
    log.write_text("1e308\n1e308\n")
    out = tmp_path / "runs.csv"
    r = run_cli("import", log, "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--strategy", "data", "-o", out)
    one_error(r, str(log), "column 'iteration_s'", "not plausible", "oracle compare would refuse this row")
    assert not out.exists()


@pytest.mark.parametrize("spec", ["1_6", "\uff11\uff16", "\u0661\u0666", "4,1_6", "4-1_024", "0x10", "1e3"])
def test_gpus_plain_ascii_digits_only(tmp_path, spec):
    m, s, p = files(tmp_path)
    one_error(run_cli("predict", "-m", m, "-s", s, "-p", p, "--gpus", spec), "--gpus", "is not a GPU count")


@pytest.mark.parametrize("option", [("compare", "x.csv", "--gpus"), ("import", "x.log", "--gpus"),
                                    ("predict", "--top")])  # fmt: skip
def test_integer_options_plain_ascii_digits_only(option):
    one_error(run_cli(*option, "1_6"), "'1_6' is not a whole number")


def test_too_many_gpu_counts(tmp_path):
    from oracle.load.values import MAX_COUNTS

    m, s, p = files(tmp_path)
    spec = f"1..{MAX_COUNTS // 2 + 1},{MAX_COUNTS // 2 + 1}..{MAX_COUNTS + 1}"
    one_error(run_cli("predict", "-m", m, "-s", s, "-p", p, "--gpus", spec), "--gpus", f"at most {MAX_COUNTS:,}")


def test_cases_file_with_text_for_a_number_is_one_error(tmp_path):
    """Found by scripts/fuzz.sh on baselines; the cases file had the same hole."""
    cases = tmp_path / "cases.yaml"
    cases.write_text("cases:\n  - {model: alexnet, system: abci, profile: alexnet_v100, gpus: 8, batch_per_gpu: x}\n")
    one_error(run_cli("snapshot", cases, cwd=ROOT), f"{cases}:2: cases[0].batch_per_gpu: is a string; expected a number")
