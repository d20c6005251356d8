"""JSON and Markdown straight from the arrays' rows, written a run of GPU counts at a time
(issue 29): a row of the arrays (compute/vector/rows.BriefRow) renders the JSON
(``predict``'s indented objects and ``oracle sweep``'s one-line ones) and the Markdown
rows of the per-point path's point, byte for byte, feasible or not, whatever its rank,
over shipped models, systems and options (a row whose details need its evaluation:
its evaluated point); ``predict -f csv|json|markdown`` written in runs is the whole
sweep's text rendered at once; the JSON parses and has the documented keys."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli
from test_brief_rows import sampled_rows

from oracle.compute.context import Options
from oracle.compute.cost import phase_names
from oracle.compute.strategies import names
from oracle.compute.vector.rows import brief_rows
from oracle.render import sweep as rs
from oracle.render.predict import markdown_texts
from oracle.render.records import MEMORY_PARTS, to_json

MODELS = ["resnet50", "vgg16", "unet3d", "mobilenet_v2"]
OPTIONS = (Options(), Options(memory_model="paradl", zero=3, mixed_precision=True), Options(zero=1, optimizer="adam"),
           Options(overlap="buckets"), Options(overlap="buckets", bucket_layers=2, zero=3, memory_model="paradl"))  # fmt: skip
DELAYED = {"unet3d": "convtranspose"}  # --delayed-update's layers of a model without fc layers (the others' fc)
META = {"model": "m", "system": "s", "profile": "p", "scaling": "x", "samples": 1, "precision": "fp32",
        "memory_model": "framework", "gamma": 1.0}  # fmt: skip


def _texts(items: list) -> tuple:
    """What each output format writes of ``items``."""
    label = 'a "case", ünïcode'
    return (to_json(items), rs.rows("json", label, "cases[1]", items, False), rs.rows("markdown", label, "", items, True),
            "".join(markdown_texts([items], META)))  # fmt: skip


@pytest.mark.parametrize("model_name", MODELS)
def test_json_and_markdown_of_rows_are_their_points(model_name):
    compared = infeasible = 0
    delayed = Options(overlap="buckets", delayed_update=(DELAYED.get(model_name, "fc"),), bucket_bytes=0)
    for ctx, c, rows, points in sampled_rows(model_name, MODELS, (*OPTIONS, delayed), ((512.0, None), (None, 2.0)), 3,
                                             n=30):  # fmt: skip
        got = [row.with_rank(k % 3 or None) for k, row in enumerate(brief_rows(ctx, c, rows))]
        want = [pt.with_rank(k % 3 or None) for k, pt in enumerate(points)]
        assert _texts(got) == _texts(want), (ctx.system.name, ctx.options, c.strategy)
        compared += len(want)
        infeasible += sum(not pt.feasible for pt in want)
    assert compared > 500 and infeasible > 50


# ParaDL's own tool (the paradl stack, compute/vector/paradl.py): refusals (every number
# NaN), its bounds on p, past the system's size, strong and weak scaling
TOOL_CASES = (("cosmoflow", "abci", None, 32.0), ("cifar_resnet20", "dgx-h100-superpod", 256.0, None),
              ("resnet50", "abci-2020", None, 32.0), ("vgg16", "dgx1-v100", 512.0, None))  # fmt: skip


def test_the_tools_rows_are_its_points(tmp_path):
    """The rows of the tool's columns (its details and the wording of its limits:
    Columns.details, Columns.wording) write the CSV, JSON and Markdown of the per-point
    path's points, byte for byte, whatever their rank."""
    from test_brief_rows import _config
    from test_vector import counts_for, default_context

    from oracle.compute.sweep import evaluate_all
    from oracle.compute.vector import paradl, run
    from oracle.render.records import csv_lines

    seen = set()
    for model_name, system_name, batch, per_gpu in TOOL_CASES:
        flags = {"batch": batch} if batch else {"batch_per_gpu": per_gpu}
        ctx = default_context(tmp_path, model_name, system_name, stack="paradl", **flags)
        counts = sorted(set(counts_for(ctx.system)) | {4, 16, 24, 48, 96})
        for c in run.columns(ctx, counts, names(), True, batch, per_gpu, None):
            if not paradl.covers(ctx, c.strategy):  # pipeline: oracle's formulas (test_brief_rows)
                continue
            if c.points and (c.p2 == 0).all():  # a hybrid at counts with no p1·p2: its one point, point by point
                continue
            assert c.brief_rows.all(), c.strategy
            bad = np.flatnonzero(~c.feasible())
            rows = np.union1d(np.arange(0, c.size, max(1, c.size // 25)), bad[:: max(1, bad.size // 25)])
            evaluated = evaluate_all(ctx, [_config(c, r) for r in rows.tolist()])
            points = [pt.with_rank(k % 3 or None) for k, pt in enumerate(evaluated)]
            got = [row.with_rank(k % 3 or None) for k, row in enumerate(brief_rows(ctx, c, rows))]
            assert (csv_lines(got), _texts(got)) == (csv_lines(points), _texts(points)), (system_name, c.strategy)
            seen |= {(c.strategy, lim.reason.endswith(("(ParaDL's tool)", "tool:405)", "tool:578-581)")), lim.code)
                     for pt in points for lim in pt.limits}  # fmt: skip
    refusals = {(s, True, "memory") for s in ("filter", "channel", "spatial")}
    bounds = {("filter", True, "filters"), ("channel", True, "channels"), ("spatial", True, "spatial")}
    assert refusals | bounds | {("data", False, "gpus"), ("data", False, "memory")} <= seen


ARGS = ("-m", "resnet50", "-p", "resnet50_v100", "--gpus", "1..40,96,1000,5000")


@pytest.mark.parametrize(("system_name", "extra"), [("abci", ("-b", "32")), ("lassen", ("-B", "256", "--zero", "2")),
                                                    ("dgx1-v100", ("-b", "64", "--top", "2"))])  # fmt: skip
def test_predict_written_in_runs_is_the_whole_sweep(monkeypatch, system_name, extra):
    """Runs of a few GPU counts (compute/engine.CHUNK_POINTS) joined: the text of every
    point evaluated and rendered at once (a system with DDP's buckets: rows evaluated)."""
    import csv
    import io

    from oracle.compute import engine
    from oracle.render.predict import markdown, select_top
    from oracle.render.records import csv_cells, csv_columns, point_to_dict
    from oracle.services.project import project

    top = int(extra[-1]) if "--top" in extra else None
    flags = dict(zip(("batch_per_gpu" if extra[0] == "-b" else "batch",), (float(extra[1]),)))
    if "--zero" in extra:
        flags["zero"] = 2
    points, meta, _ = project("resnet50", system_name, "resnet50_v100", ARGS[-1], **flags)  # every point built
    shown = select_top(points, top)
    table = io.StringIO()
    csv.writer(table, lineterminator="\n").writerows([csv_columns()] + [csv_cells(pt) for pt in shown])
    text = json.dumps([point_to_dict(pt) for pt in shown], indent=2, allow_nan=False) + "\n"
    monkeypatch.setattr(engine, "CHUNK_POINTS", 40)
    for fmt, want in (("json", text), ("csv", table.getvalue()), ("markdown", markdown(points, meta, top))):
        r = run_cli("predict", "-s", system_name, *ARGS, *extra, "-f", fmt)
        assert r.code == 0, r.err
        assert r.out == want, (fmt, system_name)
    assert len(engine.chunks(sorted({*range(1, 41), 96, 1000, 5000}), names(), False)) > 5


DOCUMENTED = ("model", "system", "strategy", "gpus", "p1", "p2", "global_batch", "segments", "iterations_per_epoch",
              "compute_s", "communication_s", "total_s", "iteration_s", "memory_bytes", "feasible", "limits",
              "limit_codes", "rank", "breakdown", "memory_model", "memory_breakdown", "max_batch_per_gpu",
              "compute_conversion", "stack", "profile_kind", "communication_total_s", "overlap_ratio", "details")  # fmt: skip


def test_json_parses_and_has_the_documented_keys(monkeypatch, tmp_path):
    """docs/file-formats.md "Output: a projected point": predict's objects (written in runs)
    and oracle sweep's, after its case and where."""
    from oracle.compute import engine

    monkeypatch.setattr(engine, "CHUNK_POINTS", 40)
    r = run_cli("predict", "-s", "abci", *ARGS, "-b", "32", "-f", "json")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    cases = tmp_path / "cases.yaml"
    cases.write_text("cases:\n  - {model: resnet50, profile: resnet50_v100, system: abci, batch: 32, gpus: '1..40'}\n")
    r = run_cli("sweep", cases, "--all", "-f", "json")
    assert r.code == 0, r.err
    swept = json.loads(r.out)
    assert [list(row)[:2] for row in swept] == [["case", "where"]] * len(swept)
    for row in got + [{k: v for k, v in row.items() if k not in ("case", "where")} for row in swept]:
        assert sorted(row) == sorted(DOCUMENTED)
        assert list(row["breakdown"]) == list(phase_names())
        assert row["memory_breakdown"] is None or set(row["memory_breakdown"]) <= set(MEMORY_PARTS)
        assert len(row["limits"]) == len(row["limit_codes"]) and row["feasible"] == (not row["limits"])
    assert {row["strategy"] for row in got} == set(names())
    assert any(not row["feasible"] for row in got) and any(row["details"].get("grid") for row in got)


def test_overlap_rows_are_written_from_the_columns(monkeypatch):
    """--overlap buckets (the pytorch stack's): the rows of the strategies that report the
    hidden share (data, data+filter, data+spatial, spatial; the delayed update too) are
    written from the columns' communication_total_s and overlap_ratio, none evaluated
    point by point (compute/vector/rows.resolved), and some hide part of it; the hybrids at
    the counts with no p1·p2 (1, 2, primes) are their one infeasible point, and only those."""
    from oracle.compute import sweep

    evaluated: list = []
    real = sweep.evaluate_all
    monkeypatch.setattr(sweep, "evaluate_all", lambda ctx, configs: evaluated.extend(configs) or real(ctx, configs))
    overlapped = "data,data+filter,data+spatial,spatial"
    for extra in ((), ("--delayed-update", "fc", "--zero", "3")):
        r = run_cli("predict", "-s", "dgx-h100-superpod", *ARGS[:4], "--gpus", "1..70", "-b", "32", "--overlap",
                    "buckets", "--strategy", overlapped, *extra, "-f", "json")  # fmt: skip
        assert r.code == 0, r.err
        got = json.loads(r.out)
        assert {row["strategy"] for row in got} == set(overlapped.split(","))
        unfactored = [row for row in got if row["limit_codes"] == ["no_factorization"]]
        assert {(r["gpus"], r["p2"]) for r in unfactored} == {(p, 0) for p in (1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31,
                                                                               37, 41, 43, 47, 53, 59, 61, 67)}
        assert all(row["details"] for row in got if row not in unfactored)
        assert any(0.0 < row["overlap_ratio"] < 1.0 for row in got if row["strategy"] == "data+spatial")
        assert any(row["communication_total_s"] > row["communication_s"] for row in got if row["strategy"] == "data")
        r = run_cli("predict", "-s", "dgx-h100-superpod", *ARGS[:4], "--gpus", "1..70", "-b", "32", "--overlap",
                    "buckets", "--strategy", overlapped, *extra, "-f", "markdown")  # fmt: skip
        assert r.code == 0 and r.out.count("| data+spatial |") > 50, r.err
    assert evaluated and all(cfg.p1 == cfg.p2 == 0 for cfg in evaluated)
