"""``oracle sweep CASES.yaml`` (issue 29): every combination of a case is projected as
``oracle predict`` would (the same rows), best configuration per GPU count or every
point, as CSV, JSON or Markdown; bad names and values name the file and the case."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from test_robustness import files, one_error

from conftest import TINY_SYSTEM, run_cli

ROOT = Path(__file__).resolve().parent.parent
PREDICT_KEYS = ("model", "system", "strategy", "gpus", "p1", "p2", "global_batch", "total_s", "memory_bytes", "rank")


def sweep_file(tmp_path, body: str):
    m, s, p = files(tmp_path)
    (tmp_path / "big.yaml").write_text(TINY_SYSTEM.replace("TinyCluster", "BigCluster").replace("nodes: 4", "nodes: 8"))
    path = tmp_path / "cases.yaml"
    path.write_text("cases:\n" + body.format(m=m.name, s=s.name, p=p.name))
    return path, (m, s, p)


TWO_BY_TWO = "  - {{model: {m}, profile: {p}, system: [{s}, big.yaml], batch: [32, 64], gpus: '1..8'}}\n"


def predict_rows(m, s, p, batch, *extra):
    r = run_cli("predict", "-m", str(m), "-s", str(s), "-p", str(p), "--gpus", "1..8", "-B", str(batch), "-f", "json",
                *extra)  # fmt: skip
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_best_rows_are_predicts_rank_one_for_every_combination(tmp_path):
    path, (m, s, p) = sweep_file(tmp_path, TWO_BY_TWO)
    r = run_cli("sweep", str(path), "-f", "json")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    assert [row["where"] for row in got] == ["cases[0]"] * len(got)
    want = []
    for system in (s, tmp_path / "big.yaml"):
        for batch in (32, 64):
            want += [row for row in predict_rows(m, system, p, batch) if row["rank"] == 1]
    assert [[row[k] for k in PREDICT_KEYS] for row in got] == [[row[k] for k in PREDICT_KEYS] for row in want]
    assert len({row["case"] for row in got}) == 4


def test_all_writes_every_point_as_csv(tmp_path):
    path, (m, s, p) = sweep_file(tmp_path, "  - {{model: {m}, profile: {p}, system: {s}, batch: 32, gpus: '1..8'}}\n")
    r = run_cli("sweep", str(path), "--all")
    assert r.code == 0, r.err
    rows = list(csv.DictReader(io.StringIO(r.out)))
    want = predict_rows(m, s, p, 32)
    assert len(want) > 8  # more than the best per count
    assert [(row["strategy"], int(row["gpus"]), int(row["p2"]), float(row["total_s"]) if row["total_s"] else None)
            for row in rows] == [(w["strategy"], w["gpus"], w["p2"], w["total_s"]) for w in want]  # fmt: skip


def test_markdown_to_a_file(tmp_path):
    path, _ = sweep_file(tmp_path, TWO_BY_TWO)
    out = tmp_path / "out.md"
    r = run_cli("sweep", str(path), "-f", "markdown", "-o", str(out))
    assert r.code == 0 and r.out == "", r.err
    lines = out.read_text().splitlines()
    assert lines[0].startswith("| case | GPUs | strategy")
    assert len(lines) == 2 + 4 * 8  # header, rule, 2 systems x 2 batches x 8 GPU counts (each has a best)


@pytest.mark.parametrize(("key", "value"), [("system", "[{s}, abcx]"), ("model", "resnt50"),
                                            ("stack", "[pytorch, nostack]"), ("profile", "nope.yaml")])  # fmt: skip
def test_an_unknown_name_names_the_file_and_the_case(tmp_path, key, value):
    good = {"model": "{m}", "profile": "{p}", "system": "{s}", "batch": "32", "gpus": "4"}
    bad = {**good, key: value}
    line = "  - {{" + ", ".join(f"{k}: {v}" for k, v in bad.items()) + "}}\n"
    path, _ = sweep_file(tmp_path, "  - {{model: {m}, profile: {p}, system: {s}, batch: 32, gpus: 4}}\n" * 2 + line)
    one_error(run_cli("sweep", str(path)), "cases.yaml", f"cases[2].{key}", value.strip("[]").split(", ")[-1])


def test_stack_none_is_no_stack_as_the_option_is(tmp_path):
    """``stack: none`` projects as ``--stack none`` (not the system file's pytorch, whose
    buckets hide the all-reduce), ``stack: pytorch`` as ``--stack pytorch``."""
    path = tmp_path / "cases.yaml"
    path.write_text("cases:\n  - {model: resnet50, system: dgx-a100-80gb, batch_per_gpu: 32, gpus: 16, strategy: data,"
                    " stack: [none, pytorch]}\n")  # fmt: skip
    r = run_cli("sweep", str(path), "-f", "json")
    assert r.code == 0, r.err
    none, pytorch = json.loads(r.out)
    for row, stack in ((none, "none"), (pytorch, "pytorch")):
        r = run_cli("predict", "-m", "resnet50", "-s", "dgx-a100-80gb", "--gpus", "16", "-b", "32", "--strategy", "data",
                    "--stack", stack, "-f", "json")  # fmt: skip
        assert r.code == 0, r.err
        (want,) = json.loads(r.out)
        assert [row[k] for k in PREDICT_KEYS] == [want[k] for k in PREDICT_KEYS], stack
    assert none["total_s"] > pytorch["total_s"]  # nothing overlapped: none is not the system's stack


@pytest.mark.parametrize(("broken", "says"), [("{value: sometimes", "communication.overlap.value: got 'sometimes'"),
                                               ("{value: [buckets", "YAML syntax error")])  # fmt: skip
def test_a_broken_stack_file_names_its_problem_and_the_case_naming_it(tmp_path, broken, says):
    """The stack file's own line and key, and where the sweep file names it (case, key, line)."""
    text = (ROOT / "stacks" / "pytorch.yaml").read_text()
    at = text.index("overlap: {value: buckets")
    stack = tmp_path / "mine.yaml"
    stack.write_text(text.replace("overlap: {value: buckets", "overlap: " + broken))
    says = f":{text[:at].count(chr(10)) + 1}: {says}"  # the overlap's line
    path, _ = sweep_file(tmp_path, "  - {{model: {m}, profile: {p}, system: {s}, batch: 32, gpus: 4}}\n"
                                   "  - model: {m}\n    profile: {p}\n    system: {s}\n    batch: 32\n"
                                   "    stack: [pytorch, mine.yaml]\n")  # fmt: skip
    line = one_error(run_cli("sweep", str(path)), f"{stack}{says}")
    assert line.endswith(f"(named by cases[1].stack of {path}, line 7)"), line


@pytest.mark.parametrize("value", ["5", "true", "1.5", "{{name: pytorch}}", "[[pytorch]]", "[{{name: x}}]", "''"])
@pytest.mark.parametrize("command", ["sweep", "snapshot"])
def test_a_stack_that_is_no_name_is_one_error_naming_its_line(tmp_path, value, command):
    """`stack: 5` crashed oracle sweep (an int has no algorithm); both readers of a cases
    file share one check: the file, its line, the key and what was expected."""
    path, _ = sweep_file(tmp_path, "  - {{model: {m}, profile: {p}, system: {s}, batch: 32, gpus: 4}}\n"
                                   f"  - model: {{m}}\n    profile: {{p}}\n    system: {{s}}\n    batch: 32\n"
                                   f"    stack: {value}\n")  # fmt: skip
    out = ("-o", str(tmp_path / "b.json")) if command == "snapshot" else ()
    one_error(run_cli(command, str(path), *out), f"{path}:7: cases[1].stack", "expected a name or path")
    assert not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("command", [("predict", "--gpus", "4"), ("profile", "--estimate")])
def test_an_empty_stack_option_is_no_folder(command):
    """--stack "" read the current folder ('.: is a directory')."""
    model = ("-m", "alexnet") if command[0] == "predict" else ("alexnet",)
    line = one_error(run_cli(command[0], *model, "-s", "abci", *command[1:], "--stack", ""), "--stack",
                     "expected a stack name or path")
    assert "directory" not in line


def test_the_api_refuses_a_stack_that_is_no_name():
    import oracle

    for bad in (5, "", True):
        with pytest.raises(oracle.OracleError, match="--stack.*expected a stack name or path"):
            oracle.predict("alexnet", "abci", "estimate", gpus=4, stack=bad)


def test_fixed_choices_take_any_case_as_the_options_do(tmp_path):
    """`precision: FP16` and `memory_model: PARADL` were errors in a cases file though
    `--precision FP16` and a runs file's cells take any case (compute/options.Flags.parse)."""
    rows = {}
    for words in (("FP16", "PARADL", "Linear", "ADAM"), ("fp16", "paradl", "linear", "adam")):
        keys = dict(zip(("precision", "memory_model", "compute_scaling", "optimizer"), words))
        case = ", ".join(f"{k}: {v}" for k, v in keys.items())
        path, _ = sweep_file(tmp_path, f"  - {{{{model: {{m}}, profile: {{p}}, system: {{s}}, batch: 32, gpus: 4, {case}}}}}\n")
        r = run_cli("sweep", str(path), "-f", "json")
        assert r.code == 0, r.err
        rows[words[0]] = [[row[k] for k in PREDICT_KEYS] for row in json.loads(r.out)]
        r = run_cli("snapshot", str(path), "-o", str(tmp_path / f"{words[0]}.json"))
        assert r.code == 0, r.err
    assert rows["FP16"] == rows["fp16"]
    (m, s, p) = files(tmp_path)
    want = predict_rows(m, s, p, 32, "--precision", "FP16", "--memory-model", "PARADL", "--compute-scaling", "Linear",
                        "--optimizer", "ADAM")  # fmt: skip
    assert [[row[k] for k in PREDICT_KEYS] for row in want if row["gpus"] == 4 and row["rank"] == 1] == rows["FP16"]


def test_a_bad_value_names_the_case_before_any_output(tmp_path):
    path, _ = sweep_file(tmp_path, "  - {{model: {m}, profile: {p}, system: {s}, batch: 32, gpus: 4}}\n"
                                   "  - {{model: {m}, profile: {p}, system: {s}, batch: 32, gpus: 4, p2: 0}}\n")  # fmt: skip
    one_error(run_cli("sweep", str(path)), "cases.yaml", "cases[1]")
    path, _ = sweep_file(tmp_path, "  - model: {m}\n    profile: {p}\n    system: {s}\n    batch: 32\n"
                                   "    memory_reuse: 0.5\n")  # an option's rule: the key and its line  # fmt: skip
    one_error(run_cli("sweep", str(path)), f"{path}:6: cases[0].memory_reuse: ")


def test_a_case_streams_in_runs_of_gpu_counts_row_for_row(tmp_path, monkeypatch):
    """Issue 29: a case is evaluated and written compute/engine.CHUNK_POINTS points at a
    time (memory flat): runs of 7 points write what one run writes, in every format."""
    from oracle.compute import engine

    path, _ = sweep_file(tmp_path, "  - {{model: {m}, profile: {p}, system: [{s}, big.yaml], batch_per_gpu: [8, 32],"
                                   " gpus: '1..40'}}\n")  # fmt: skip
    whole = {(fmt, flag): run_cli("sweep", str(path), "-f", fmt, *flag) for fmt in ("csv", "json", "markdown")
             for flag in ((), ("--all",))}  # fmt: skip
    monkeypatch.setattr(engine, "CHUNK_POINTS", 7)
    assert len(engine.chunks(range(1, 41), ["data", "data+filter"])) > 5
    for (fmt, flag), r in whole.items():
        assert r.code == 0, r.err
        assert run_cli("sweep", str(path), "-f", fmt, *flag).out == r.out, (fmt, flag)


def test_with_top_a_run_holds_top_built_points_per_count_and_its_array_points(monkeypatch):
    """With ``top`` only top points per count are built; the rest stay in arrays, so a run
    is bounded by CHUNK_POINTS built points and CHUNK_ARRAY_POINTS evaluated ones (the
    arrays' fixed costs paid per run: predict --top 1 of 1..10,000 GPUs took 20 runs)."""
    from oracle.compute import engine

    counts, chosen = list(range(1, 41)), ["data", "data+filter"]
    assert len(engine.chunks(counts, chosen, top=1)) == 1  # 40 built, far under both bounds
    monkeypatch.setattr(engine, "CHUNK_POINTS", 7)
    assert len(engine.chunks(counts, chosen, top=1)) == 6  # 40 counts, 7 built per run
    assert len(engine.chunks(counts, chosen, top=1)) < len(engine.chunks(counts, chosen))
    monkeypatch.setattr(engine, "CHUNK_POINTS", 10_000)
    monkeypatch.setattr(engine, "CHUNK_ARRAY_POINTS", 30)
    runs = engine.chunks(counts, chosen, top=1)
    assert len(runs) > 2 and [c for r in runs for c in r] == counts
    for r in runs:
        evaluated = sum(engine.count_points([c], chosen)[0] for c in r)
        assert evaluated <= 30 or len(r) == 1, (r, evaluated)


@pytest.mark.parametrize("flag", [(), ("--all",)])
def test_the_progress_bar_counts_gpu_counts_run_by_run(tmp_path, monkeypatch, flag):
    """Issue 29's progress bar counts every case's GPU counts, so one large case shows it
    as its runs are written (it used to advance once per case: a one-case sweep never
    drew it); its steps add up to all the counts, never more."""
    from contextlib import contextmanager

    from oracle.cli import sweep as cli_sweep
    from oracle.compute import engine
    from oracle.render import progress

    advanced, totals = [], []

    class Bar:
        def advance(self, description=None, steps=1):
            advanced.append(steps)

    @contextmanager
    def fake(description, total=None, **_):
        totals.append(total)
        yield Bar()

    monkeypatch.setattr(progress, "progress", fake)
    monkeypatch.setattr(progress, "wanted", lambda stream=None: True)
    monkeypatch.setattr(cli_sweep._Progress, "AFTER_S", -1.0)  # drawn from the first run on
    monkeypatch.setattr(engine, "CHUNK_POINTS", 7)
    monkeypatch.setattr(engine, "CHUNK_ARRAY_POINTS", 20)  # the best per count builds one point a count
    path, _ = sweep_file(tmp_path, "  - {{model: {m}, profile: {p}, system: [{s}], batch_per_gpu: 8, gpus: '1..40'}}\n"
                                   "  - {{model: {m}, profile: {p}, system: [big.yaml], batch_per_gpu: 8, gpus: [2, 4]}}\n")  # fmt: skip
    r = run_cli("sweep", str(path), *flag)
    assert r.code == 0, r.err
    assert totals == [42]  # 40 + 2 GPU counts
    assert sum(advanced) == 42 and len([s for s in advanced if s]) > 5, advanced  # many runs, not one per case


def test_a_case_over_the_memory_budget_at_once_streams(tmp_path):
    """What predict would hold at once (and refuses) a sweep's case holds a run at a time."""
    from oracle.compute.context import Options
    from oracle.compute.sweep import check_request
    from oracle.errors import OracleError

    with pytest.raises(OracleError, match="60,000 points"):
        check_request(range(1, 60001), "data", 32.0, None, None, Options(), top=1)
    check_request(range(1, 60001), "data", 32.0, None, None, Options(), top=1, streamed=True)
    check_request(range(1, 60001), "all", 32.0, None, None, Options(), streamed=True)  # every point, too


def test_plot(tmp_path):
    pytest.importorskip("matplotlib")
    path, _ = sweep_file(tmp_path, TWO_BY_TWO)
    png = tmp_path / "which.png"
    r = run_cli("sweep", str(path), "--plot", str(png), "-o", str(tmp_path / "rows.csv"))
    assert r.code == 0, r.err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_plot_name_without_an_image_suffix_is_refused_before_the_sweep(tmp_path):
    pytest.importorskip("matplotlib")
    path, _ = sweep_file(tmp_path, TWO_BY_TWO)
    one_error(run_cli("sweep", str(path), "--plot", str(tmp_path / "which.txt")), "which.txt")
