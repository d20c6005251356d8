"""``oracle predict``: exit codes, the four output formats, options, -o, and errors
(SPEC §5, §7), plus the Python API ``oracle.predict``."""

from __future__ import annotations

import csv
import io
import json
import math
import re

import pytest

RESNET = ("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100")
ISSUE_EXAMPLE = (*RESNET, "--gpus", "4-1024", "--batch-per-gpu", "32")

ALL_STRATEGIES = (
    "serial", "data", "spatial", "filter", "channel", "pipeline", "data+filter", "data+spatial",
)  # fmt: skip
PARALLEL_STRATEGIES = ALL_STRATEGIES[1:]

SPEC_KEYS = {
    "model", "system", "strategy", "gpus", "p1", "p2", "global_batch", "segments",
    "iterations_per_epoch", "compute_s", "communication_s", "total_s", "iteration_s",
    "memory_bytes", "feasible", "limits", "rank", "breakdown",
}  # fmt: skip
BREAKDOWN_KEYS = {
    "forward_backward_s", "weight_update_s", "gradient_exchange_s",
    "layer_collectives_s", "halo_s", "pipeline_p2p_s",
}  # fmt: skip
NUMBER_KEYS = (
    "iterations_per_epoch", "compute_s", "communication_s", "total_s", "iteration_s", "memory_bytes",
)  # fmt: skip


def ok(result):
    assert result.code == 0, (
        f"exit {result.code}\nstderr: {result.err}\nexception: {result.exception!r}"
    )
    assert result.exception is None
    return result


def json_points(run, *args):
    r = ok(run(*args, "--format", "json"))
    data = json.loads(r.out)
    assert isinstance(data, list)
    return data


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# --------------------------------------------------------------------------------------
# the issue's example
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def issue_json():
    from conftest import run_cli

    r = run_cli(*ISSUE_EXAMPLE, "--format", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_issue_example_table(run):
    r = ok(run(*ISSUE_EXAMPLE, "--width", "260"))
    assert r.err == ""
    text = r.out
    assert "ResNet-50" in text and "ABCI" in text
    for name in PARALLEL_STRATEGIES:
        assert f" {name} " in text or f" {name} (" in text, name
    assert "exceeds the 64" in text
    for gpus in (4, 8, 16, 32, 64, 128, 256, 512, 1024):
        assert any(line.split()[:1] == [str(gpus)] for line in text.splitlines()), gpus
    assert "Traceback" not in text


def test_issue_example_default_width_exits_zero(run):
    r = ok(run(*ISSUE_EXAMPLE))
    for name in PARALLEL_STRATEGIES:
        assert name in r.out


def test_issue_example_filter_channel_flagged_from_128(issue_json):
    seen = set()
    for pt in issue_json:
        if pt["strategy"] in ("filter", "channel"):
            flagged = any("exceeds the 64" in lim for lim in pt["limits"])
            assert flagged == (pt["gpus"] >= 128), (pt["strategy"], pt["gpus"], pt["limits"])
            if pt["gpus"] >= 128:
                assert not pt["feasible"] and pt["rank"] is None
                seen.add(pt["strategy"])
    assert seen == {"filter", "channel"}


def test_issue_example_every_strategy_at_every_count(issue_json):
    counts = sorted({pt["gpus"] for pt in issue_json})
    assert counts == [4, 8, 16, 32, 64, 128, 256, 512, 1024]
    for g in counts:
        names = {pt["strategy"] for pt in issue_json if pt["gpus"] == g}
        assert names == set(PARALLEL_STRATEGIES), (g, names)


# --------------------------------------------------------------------------------------
# JSON schema (SPEC §5)
# --------------------------------------------------------------------------------------


def check_record(pt: dict) -> None:
    assert SPEC_KEYS <= set(pt), SPEC_KEYS - set(pt)
    assert set(pt["breakdown"]) >= BREAKDOWN_KEYS
    for k in ("model", "system", "strategy"):
        assert isinstance(pt[k], str) and pt[k]
    for k in ("gpus", "p1", "p2"):
        assert is_int(pt[k]), (k, pt[k])
    assert is_number(pt["global_batch"]) and pt["global_batch"] > 0
    assert pt["segments"] is None or is_int(pt["segments"])
    assert (pt["segments"] is not None) == (pt["strategy"] == "pipeline")
    assert isinstance(pt["feasible"], bool)
    assert isinstance(pt["limits"], list) and all(isinstance(x, str) for x in pt["limits"])
    assert pt["feasible"] == (pt["limits"] == [])
    assert (pt["rank"] is None) == (not pt["feasible"])
    if pt["rank"] is not None:
        assert is_int(pt["rank"]) and pt["rank"] >= 1
    for k in NUMBER_KEYS:
        v = pt[k]
        assert v is None or is_number(v), (k, v)
        if pt["feasible"]:
            assert v is not None and math.isfinite(v) and v >= 0, (k, v)
    for k, v in pt["breakdown"].items():
        assert v is None or is_number(v), (k, v)
        if pt["feasible"]:
            assert v is not None and v >= 0
    if pt["feasible"]:
        assert math.isclose(pt["total_s"], pt["compute_s"] + pt["communication_s"], rel_tol=1e-9)
        assert math.isclose(pt["total_s"], sum(pt["breakdown"].values()), rel_tol=1e-9)
    # which part of p each strategy uses
    s = pt["strategy"]
    if s == "serial":
        assert (pt["p1"], pt["p2"]) == (1, 1)
    elif s == "data":
        assert (pt["p1"], pt["p2"]) == (pt["gpus"], 1)
    elif s in ("spatial", "filter", "channel", "pipeline"):
        assert (pt["p1"], pt["p2"]) == (1, pt["gpus"])
    elif pt["p1"] == 0:  # a hybrid with no p1·p2 at this count (the p2 asked for, or none): infeasible, says so
        assert not pt["feasible"] and pt["limit_codes"] in (["factorization"], ["no_factorization"])
    else:
        assert pt["p1"] * pt["p2"] == pt["gpus"] and pt["p1"] >= 2 and pt["p2"] >= 2


def test_json_schema_issue_example(issue_json):
    assert issue_json
    for pt in issue_json:
        check_record(pt)
        assert pt["model"] == "ResNet-50" and pt["system"] == "ABCI"
        assert pt["global_batch"] == 32 * pt["gpus"]
        assert math.isclose(pt["iterations_per_epoch"], 1281167 / pt["global_batch"], rel_tol=1e-12)


def test_json_ranks_per_gpu_count(issue_json):
    for g in {pt["gpus"] for pt in issue_json}:
        group = [pt for pt in issue_json if pt["gpus"] == g]
        ranked = sorted((pt for pt in group if pt["feasible"]), key=lambda pt: pt["rank"])
        assert [pt["rank"] for pt in ranked] == list(range(1, len(ranked) + 1))
        totals = [pt["total_s"] for pt in ranked]
        assert totals == sorted(totals)


def test_json_serial_and_one_gpu(run):
    pts = json_points(run, *RESNET, "--gpus", "1,2,4", "--batch-per-gpu", "16")
    for pt in pts:
        check_record(pt)
    at1 = [pt for pt in pts if pt["gpus"] == 1]
    assert [pt["strategy"] for pt in at1] == ["serial"]
    assert (at1[0]["p1"], at1[0]["p2"]) == (1, 1)
    assert at1[0]["communication_s"] == 0
    assert not any(pt["strategy"] == "serial" for pt in pts if pt["gpus"] > 1)


def test_json_explicit_strategies(run):
    pts = json_points(run, *RESNET, "--gpus", "2,4", "--strategy", "serial,data", "-b", "8")
    got = {(pt["strategy"], pt["gpus"]) for pt in pts}
    assert got == {("serial", 2), ("serial", 4), ("data", 2), ("data", 4)}
    for pt in pts:
        check_record(pt)


def test_json_tiny_files(run, tiny):
    args = ("predict", "-m", tiny.model, "-s", tiny.system, "-p", tiny.profile, "--gpus", "1-16")
    pts = json_points(run, *args)
    assert pts and all(pt["model"] == "Tiny" and pt["system"] == "TinyCluster" for pt in pts)
    for pt in pts:
        check_record(pt)
    # the profile's measured_samples_per_gpu (16) is the default batch per GPU
    assert all(pt["global_batch"] == 16 * pt["gpus"] for pt in pts)
    # more GPUs than the system has -> flagged
    assert all(pt["feasible"] or pt["limits"] for pt in pts)


# --------------------------------------------------------------------------------------
# CSV, Markdown, table options
# --------------------------------------------------------------------------------------


def test_csv_parses(run, issue_json):
    r = ok(run(*ISSUE_EXAMPLE, "--format", "csv"))
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert len(rows) == len(issue_json)
    header = next(csv.reader(io.StringIO(r.out)))
    for k in SPEC_KEYS - {"breakdown"} | BREAKDOWN_KEYS:
        assert k in header, k
    for row, pt in zip(rows, issue_json):
        assert row["strategy"] == pt["strategy"]
        assert int(row["gpus"]) == pt["gpus"]
        assert int(row["p1"]) == pt["p1"] and int(row["p2"]) == pt["p2"]
        assert row["feasible"] in ("True", "False")
        assert (row["rank"] == "") == (pt["rank"] is None)


def _csv_numeric_cells_parse(run, *args):
    r = ok(run(*args, "--format", "csv"))
    bad = []
    for row in csv.DictReader(io.StringIO(r.out)):
        for k in (*NUMBER_KEYS, *BREAKDOWN_KEYS, "global_batch", "gpus", "p1", "p2"):
            try:
                if row[k] != "":
                    float(row[k])
            except ValueError:
                bad.append((row["strategy"], k, row[k]))
    assert not bad, bad[:5]


def test_csv_numbers_parse_without_pipeline(run):
    names = "data,spatial,filter,channel,data+filter,data+spatial"
    _csv_numeric_cells_parse(run, *RESNET, "--gpus", "8", "--strategy", names)


def test_csv_numbers_parse_pipeline(run):
    """Pipeline numbers come from numpy reductions; the CSV must hold plain numbers."""
    _csv_numeric_cells_parse(run, *RESNET, "--gpus", "8", "--strategy", "pipeline")


def test_markdown(run):
    r = ok(run(*RESNET, "--gpus", "8,16", "-b", "16", "--format", "markdown"))
    lines = r.out.splitlines()
    assert lines[0].startswith("**ResNet-50 on ABCI")
    table = [line for line in lines if line.startswith("|")]
    assert table[0].startswith("| GPUs | rank | strategy |")
    assert set(table[1].replace("|", "").replace(":", "").replace("-", "").strip()) == set()
    ncols = table[0].count("|")
    pts = json_points(run, *RESNET, "--gpus", "8,16", "-b", "16")
    assert len(table) - 2 == len(pts)
    firsts = 0
    for row, pt in zip(table[2:], pts):
        assert row.count("|") - row.count("\\|") == ncols, row
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells[0] == str(pt["gpus"]) and cells[1] == str(pt["rank"] or "–")
        if pt["rank"] == 1:  # the best point in bold
            firsts += 1
            assert cells[2].startswith("**") and cells[2].endswith("**"), row
        else:
            assert "**" not in cells[2], row
    assert firsts == 2


def test_top_table_and_markdown(run):
    full = json_points(run, *RESNET, "--gpus", "8,16", "-b", "32")
    r = ok(run(*RESNET, "--gpus", "8,16", "-b", "32", "--top", "2", "--format", "markdown"))
    rows = [line for line in r.out.splitlines() if line.startswith(("| 8 ", "| 16 "))]
    assert len(rows) == 4
    expected = [pt for g in (8, 16) for pt in [p for p in full if p["gpus"] == g][:2]]
    for row, pt in zip(rows, expected):
        assert f"| {pt['gpus']} |" in row and pt["strategy"] in row
    t = ok(run(*RESNET, "--gpus", "8,16", "-b", "32", "--top", "2", "--width", "200"))
    body = [line for line in t.out.splitlines() if "×" in line and "p1×p2" not in line]
    assert len(body) == 4


def test_top_json(run):
    """--top applies to every format."""
    pts = json_points(run, *RESNET, "--gpus", "8,16", "-b", "32", "--top", "2")
    assert len(pts) == 4


def test_p2_fixes_the_hybrid_split(run):
    pts = json_points(run, *RESNET, "--gpus", "8,16", "-b", "32", "--p2", "4")
    hybrids = [pt for pt in pts if "+" in pt["strategy"]]
    assert {(pt["strategy"], pt["gpus"]) for pt in hybrids} == {
        (s, g) for s in ("data+filter", "data+spatial") for g in (8, 16)
    }
    for pt in hybrids:
        assert pt["p2"] == 4 and pt["p1"] == pt["gpus"] // 4
        check_record(pt)


def test_a_hybrid_at_a_count_it_cannot_factor_says_why(run):
    """--strategy data+filter at 7 GPUs (a prime: no p1·p2 with both >= 2) is a row naming
    the limit in every format, not an empty table; at 7,8 the 7 stays."""
    args = (*RESNET, "--strategy", "data+filter", "--gpus", "7,8", "-b", "32")
    why = "p=7 has no factorization p1·p2 with p1, p2 >= 2"
    pts = json_points(run, *args)
    assert [(pt["gpus"], pt["p1"], pt["p2"], pt["feasible"]) for pt in pts if pt["gpus"] == 7] == [(7, 0, 0, False)]
    assert why in pts[0]["limits"][0] and pts[0]["limit_codes"] == ["no_factorization"]
    assert {pt["gpus"] for pt in pts} == {7, 8}
    for pt in pts:
        check_record(pt)
    table = run(*args, "--width", "250")
    assert table.code == 0 and any(ln.split()[:1] == ["7"] and why in ln for ln in table.out.splitlines())
    rows = list(csv.DictReader(io.StringIO(run(*args, "-f", "csv").out)))
    assert rows[0]["gpus"] == "7" and why in rows[0]["limits"]
    md = run(*args, "-f", "markdown").out
    assert "| 7 | – | data+filter | – |" in md and why in md


def test_segments(run):
    pipe = ("--gpus", "4,8", "-b", "32", "--strategy", "pipeline")
    pts = json_points(run, *RESNET, *pipe, "--segments", "8")
    assert [pt["segments"] for pt in pts] == [8, 8]
    default = json_points(run, *RESNET, *pipe)
    assert [pt["segments"] for pt in default] == [16, 32]  # min(B, 4p)


def test_strong_scaling_batch(run):
    pts = json_points(run, *RESNET, "--gpus", "4-64", "--batch", "256")
    assert pts and all(pt["global_batch"] == 256 for pt in pts)
    assert all(math.isclose(pt["iterations_per_epoch"], 1281167 / 256) for pt in pts)
    data = {pt["gpus"]: pt for pt in pts if pt["strategy"] == "data"}
    fb4 = data[4]["breakdown"]["forward_backward_s"]
    for g, pt in data.items():
        assert math.isclose(pt["breakdown"]["forward_backward_s"] * g, fb4 * 4, rel_tol=1e-9)


def test_precision_fp16_halves_memory(run):
    """ParaDL's bound is δ times elements: half the bytes at fp16."""
    a = json_points(run, *RESNET, "--gpus", "8", "-b", "32", "--memory-model", "paradl")
    b = json_points(run, *RESNET, "--gpus", "8", "-b", "32", "--precision", "fp16", "--memory-model", "paradl")
    ma = {(p["strategy"], p["p1"], p["p2"]): p["memory_bytes"] for p in a}
    mb = {(p["strategy"], p["p1"], p["p2"]): p["memory_bytes"] for p in b}
    assert ma.keys() == mb.keys()
    for k in ma:
        assert math.isclose(mb[k], ma[k] / 2, rel_tol=1e-12), k
    r = ok(run(*RESNET, "--gpus", "8", "-b", "32", "--precision", "fp16", "--width", "200"))
    assert "fp16 (δ=2; --precision, profile at fp32: converted)" in r.out  # issue 23: said, not silent


def test_memory_reuse_and_contention_accepted(run):
    a = json_points(run, *RESNET, "--gpus", "8", "-b", "32", "--memory-model", "paradl")
    b = json_points(
        run, *RESNET, "--gpus", "8", "-b", "32", "--memory-reuse", "0.5", "--contention", "3",
        "--memory-model", "paradl",
    )  # fmt: skip
    ma = {(p["strategy"], p["p1"], p["p2"]): p for p in a}
    for p in b:
        k = (p["strategy"], p["p1"], p["p2"])
        assert math.isclose(p["memory_bytes"], ma[k]["memory_bytes"] / 2, rel_tol=1e-12)
        assert p["communication_s"] >= ma[k]["communication_s"] * (1 - 1e-12)


# --------------------------------------------------------------------------------------
# -o FILE
# --------------------------------------------------------------------------------------


def test_output_file_json_equals_stdout(run, tmp_path):
    args = (*RESNET, "--gpus", "4,8", "-b", "32", "--format", "json")
    out = tmp_path / "points.json"
    r = ok(run(*args, "-o", out))
    assert r.out == ""
    assert out.read_text(encoding="utf-8") == ok(run(*args)).out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["points.json"]


def test_output_file_csv_and_table(run, tmp_path):
    args = (*RESNET, "--gpus", "4,8", "-b", "32")
    out = tmp_path / "points.csv"
    ok(run(*args, "--format", "csv", "-o", out))
    assert out.read_text(encoding="utf-8") == ok(run(*args, "--format", "csv")).out
    table = tmp_path / "table.txt"
    ok(run(*args, "--width", "150", "-o", table))
    assert table.read_text(encoding="utf-8") == ok(run(*args, "--width", "150")).out
    # overwriting an existing file works
    ok(run(*args, "--format", "json", "-o", out))
    assert json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "bad",
    [
        ("--strategy", "nosuch"),
        ("--gpus", "0"),
        ("-m", "nosuchmodel"),
        ("--batch", "8", "--batch-per-gpu", "4"),
    ],
)
def test_output_file_untouched_on_failure(run, tmp_path, bad):
    args = [*RESNET, "--gpus", "4", "--format", "json"]
    # later options win in click, so appending overrides --gpus / -m
    new = tmp_path / "new.json"
    r = run(*args, *bad, "-o", new)
    assert r.code == 2 and r.exception is None
    assert not new.exists()
    old = tmp_path / "old.json"
    old.write_text("keep me\n", encoding="utf-8")
    r = run(*args, *bad, "-o", old)
    assert r.code == 2
    assert old.read_text(encoding="utf-8") == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]  # no temp file left


def test_output_into_missing_folder(run, tmp_path):
    r = run(*RESNET, "--gpus", "4", "--format", "json", "-o", tmp_path / "nope" / "x.json")
    assert r.code == 2 and r.exception is None
    assert r.err.startswith("oracle: error:") and "does not exist" in r.err
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------
# errors: exit 2, one message on stderr, no traceback
# --------------------------------------------------------------------------------------

# errors oracle itself validates (OracleError): one 'oracle: error: ...' line
ORACLE_ERRORS = {
    "gpus-zero": (("--gpus", "0"), "--gpus"),
    "gpus-abc": (("--gpus", "abc"), "abc"),
    "gpus-down": (("--gpus", "64-4"), "64-4"),
    "unknown-strategy": (("--gpus", "4", "--strategy", "dataa"), "dataa"),
    "both-batches": (("--gpus", "4", "--batch", "64", "--batch-per-gpu", "4"), "--batch"),
}
# errors click validates (option types); main.py turns them into one line too
CLICK_ERRORS = {
    "batch-negative": (("--gpus", "4", "--batch", "-1"), "--batch"),
    "batch-per-gpu-zero": (("--gpus", "4", "--batch-per-gpu", "0"), "--batch-per-gpu"),
    "memory-reuse-zero": (("--gpus", "4", "--memory-reuse", "0"), "--memory-reuse"),
    "memory-reuse-1.5": (("--gpus", "4", "--memory-reuse", "1.5"), "--memory-reuse"),
    "contention-0.5": (("--gpus", "4", "--contention", "0.5"), "--contention"),
    "precision-fp8": (("--gpus", "4", "--precision", "fp8"), "fp8"),
    "top-zero": (("--gpus", "4", "--top", "0"), "--top"),
    "unknown-option": (("--gpus", "4", "--nosuch"), "--nosuch"),
}


@pytest.mark.parametrize("case", list(ORACLE_ERRORS) + list(CLICK_ERRORS))
def test_bad_values_exit_2_without_traceback(run, case):
    args, mention = {**ORACLE_ERRORS, **CLICK_ERRORS}[case]
    r = run(*RESNET, *args)
    assert r.code == 2, (r.code, r.err)
    assert r.exception is None
    assert r.out == ""
    assert "Traceback" not in r.err and "Traceback" not in r.out
    assert mention in r.err, r.err


@pytest.mark.parametrize("case", list(ORACLE_ERRORS) + list(CLICK_ERRORS))
def test_bad_values_one_line(run, case):
    args, _ = {**ORACLE_ERRORS, **CLICK_ERRORS}[case]
    r = run(*RESNET, *args)
    assert len(r.err_lines) == 1, r.err
    assert r.err_lines[0].startswith("oracle: error: ")


def test_unknown_model_named_with_hint(run):
    r = run("predict", "-m", "resnet5", "-s", "abci", "-p", "resnet50_v100")
    assert r.code == 2 and r.exception is None
    assert len(r.err_lines) == 1
    assert r.err.startswith("oracle: error:")
    assert "'resnet5'" in r.err
    assert "did you mean 'resnet50'?" in r.err


def test_shipped_names_in_other_case_or_separators(run, tmp_path):
    """A shipped name spelled with other case or separators ("ResNet-50", "PyTorch",
    "DGX1_V100") names that file; a name two shipped names could be stays an error."""
    from oracle.resources import loose_match

    args = ("--strategy", "data", "--gpus", "8", "-b", "64", "-f", "json")
    exact = run("predict", "-m", "resnet50", "-s", "dgx1-v100", "-p", "resnet50_v100", "--stack", "pytorch", *args)
    loose = run("predict", "-m", "ResNet-50", "-s", "DGX1_V100", "-p", "ResNet50_V100", "--stack", "PyTorch", *args)
    assert exact.code == 0 and loose.code == 0, loose.err
    assert json.loads(loose.out) == json.loads(exact.out)
    assert loose_match("TensorFlow", ["mxnet", "tensorflow"]) == "tensorflow"
    assert loose_match("ab", ["a-b", "a_b"]) is None  # two names: no guess
    assert loose_match("tf", ["tensorflow"]) is None  # an abbreviation is not a spelling
    # a near miss is an error with the near name (framework names such as "torch" are
    # aliases instead: tests/test_name_aliases.py)
    r = run("predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--stack", "pytorh")
    assert r.code == 2 and "did you mean 'pytorch'?" in r.err


def test_choices_in_any_case(run):
    """An option's fixed choices take any case (--precision FP16, --overlap Buckets, -f JSON)."""
    base = ("predict", "-m", "resnet50", "-s", "dgx1-v100", "-p", "resnet50_v100", "--strategy", "data", "--gpus", "8",
            "-b", "64", "--mixed-precision")  # fmt: skip
    lower = run(*base, "--precision", "fp16", "--overlap", "buckets", "-f", "json")
    upper = run(*base, "--precision", "FP16", "--overlap", "Buckets", "-f", "JSON")
    assert lower.code == 0 and upper.code == 0, upper.err
    assert json.loads(upper.out) == json.loads(lower.out)


def test_unknown_system_lists_shipped(run):
    r = run("predict", "-m", "resnet50", "-s", "nowhere-at-all", "-p", "resnet50_v100")
    assert r.code == 2
    assert "nowhere-at-all" in r.err and "abci" in r.err


def test_directory_as_model(run, tiny):
    r = run("predict", "-m", tiny.dir, "-s", tiny.system, "-p", tiny.profile)
    assert r.code == 2 and r.exception is None
    assert len(r.err_lines) == 1 and r.err.startswith("oracle: error:")
    assert str(tiny.dir) in r.err and "directory" in r.err


def test_missing_file(run, tiny):
    missing = tiny.dir / "missing.yaml"
    r = run("predict", "-m", missing, "-s", tiny.system, "-p", tiny.profile)
    assert r.code == 2 and r.exception is None
    assert len(r.err_lines) == 1 and r.err.startswith("oracle: error:")
    assert "missing.yaml" in r.err and "no such file" in r.err


def test_profile_of_another_model(run, tiny):
    r = run("predict", "-m", tiny.model, "-s", tiny.system, "-p", "resnet50_v100")
    assert r.code == 2 and r.exception is None
    assert "Tiny" in r.err and "ResNet-50" in r.err


def test_bad_model_file_names_file_and_layer(run, tiny):
    bad = tiny.dir / "bad.yaml"
    bad.write_text(
        "name: Tiny\ninput: [3, 4, 4]\ndataset: {samples: 10}\nlayers:\n"
        "  - {name: conv1, type: conv, filters: 4, kernel: 7}\n",
        encoding="utf-8",
    )
    r = run("predict", "-m", bad, "-s", tiny.system, "-p", tiny.profile)
    assert r.code == 2 and r.exception is None
    assert len(r.err_lines) == 1
    assert "bad.yaml" in r.err and "conv1" in r.err and "kernel" in r.err


def test_missing_required_option(run):
    r = run("predict", "-m", "resnet50", "-p", "resnet50_v100")
    assert r.code == 2 and r.exception is None
    assert "--system" in r.err and "Traceback" not in r.err


# --------------------------------------------------------------------------------------
# Python API
# --------------------------------------------------------------------------------------


def test_api_predict_points():
    import oracle
    from oracle.compute.cost import Point

    points = oracle.predict("resnet50", "abci", "resnet50_v100", gpus=[8, 16], batch_per_gpu=32)
    assert points and all(isinstance(p, Point) for p in points)
    assert {p.gpus for p in points} == {8, 16}
    assert {p.strategy for p in points} == set(PARALLEL_STRATEGIES)
    assert all((p.rank is None) == (not p.feasible) for p in points)
    # at 32 samples/GPU ResNet-50 keeps ~4.5 GB (PyTorch: 86 MB a sample): it fits;
    # ParaDL's bound says ~21 GB, more than a 16 GB V100
    assert all(p.feasible for p in points if p.strategy == "data")
    bound = oracle.predict("resnet50", "abci", "resnet50_v100", gpus=[8], batch_per_gpu=32, memory_model="paradl")
    assert not any(p.feasible for p in bound if p.strategy == "data")
    fits = oracle.predict("resnet50", "abci", "resnet50_v100", gpus=8, batch_per_gpu=16)
    assert [p.strategy for p in fits if p.rank == 1] == ["data"]


def test_api_predict_frame_matches_csv(run):
    import oracle

    df = oracle.predict(
        "resnet50", "abci", "resnet50_v100", gpus=[8, 16], batch_per_gpu=32, as_frame=True
    )
    r = ok(run(*RESNET, "--gpus", "8,16", "--batch-per-gpu", "32", "--format", "csv"))
    header = next(csv.reader(io.StringIO(r.out)))
    assert list(df.columns) == header
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert len(df) == len(rows)
    assert list(df["strategy"]) == [row["strategy"] for row in rows]
    assert list(df["gpus"]) == [int(row["gpus"]) for row in rows]


def test_api_errors_are_oracle_errors():
    import oracle
    from oracle.errors import OracleError

    with pytest.raises(OracleError):
        oracle.predict("resnet50", "abci", "resnet50_v100", gpus=[8], strategies="nosuch", batch=64)
    with pytest.raises(OracleError):
        oracle.predict("resnet50", "abci", "resnet50_v100", gpus=[8], batch=64, memory_reuse=0)


def test_caption_says_what_helps_when_nothing_fits(run):
    r = ok(run(*RESNET, "--gpus", "8,16", "-b", "32", "--width", "160", "--memory-model", "paradl"))
    text = " ".join(r.out.split())  # the caption wraps
    assert "nothing fits in GPU memory at 8, 16 GPUs" in text and "--memory-model framework" in text
    r = ok(run(*RESNET, "--gpus", "8,16", "-b", "32", "--width", "160"))
    assert "nothing fits" not in r.out
    r = ok(run(*RESNET, "--gpus", "8,16", "-b", "512", "--width", "160"))
    text = " ".join(r.out.split())
    assert "nothing fits in GPU memory at 8, 16 GPUs" in text and "--max-batch" in text


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_a_hybrid_without_a_split_shows_a_dash_and_its_limit(run, fmt):
    """--p2 2 on 7 GPUs has no p1 (p2 does not divide p): the p1×p2 cell is '–', not '0×2',
    next to the limit that says why; 8 GPUs keep their 4×2."""
    r = run("predict", "-m", "resnet50", "-s", "dgx-h100-superpod", "--strategy", "data+filter", "--gpus", "7,8",
            "--p2", "2", "-f", fmt, "--width", "200")
    assert r.code == 0, r.err
    (seven,) = [line for line in r.out.splitlines() if "p=7 is not a multiple of p2=2" in line]
    assert re.search(r"data\+filter\W+–\W+224\W", seven), seven  # strategy, p1×p2, batch
    assert "0×2" not in r.out and re.search(r"data\+filter\W+4×2\W+256\W", r.out)


def test_fmt_split():
    from oracle.units import fmt_split

    assert (fmt_split(4, 2), fmt_split(1, 7), fmt_split(0, 7)) == ("4×2", "1×7", "–")
