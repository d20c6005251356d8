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
from test_brief_rows import _config
from test_vector import SYSTEMS, counts_for, times_for

from oracle.compute.context import Context, Options
from oracle.compute.cost import phase_names
from oracle.compute.strategies import names
from oracle.compute.sweep import evaluate_all
from oracle.compute.vector import kinds, run
from oracle.compute.vector.rows import brief_rows
from oracle.load import load_model, load_system
from oracle.render import sweep as rs
from oracle.render.predict import markdown_texts
from oracle.render.records import MEMORY_PARTS, to_json

MODELS = ["resnet50", "vgg16", "unet3d", "mobilenet_v2"]
OPTIONS = (Options(), Options(memory_model="paradl", zero=3, mixed_precision=True), Options(zero=1, optimizer="adam"),
           Options(overlap="buckets"))  # fmt: skip
META = {"model": "m", "system": "s", "profile": "p", "scaling": "x", "samples": 1, "precision": "fp32",
        "memory_model": "framework", "gamma": 1.0}  # fmt: skip


def _texts(items: list) -> tuple:
    """What each output format writes of ``items``."""
    label = 'a "case", ünïcode'
    return (to_json(items), rs.rows("json", label, "cases[1]", items, False), rs.rows("markdown", label, "", items, True),
            "".join(markdown_texts([items], META)))  # fmt: skip


@pytest.mark.parametrize("model_name", MODELS)
def test_json_and_markdown_of_rows_are_their_points(model_name):
    m = load_model(model_name)
    compared = infeasible = 0
    for system_name in SYSTEMS[MODELS.index(model_name) :: len(MODELS)]:
        for options in OPTIONS:
            ctx = Context(m, load_system(system_name), times_for(m, 3), options)
            if not kinds.covered(ctx):
                continue
            counts = sorted(set(counts_for(ctx.system)) | {4, 16, 24, 48})
            for batch, per_gpu in ((512.0, None), (None, 2.0)):
                for c in run.columns(ctx, counts, names(), True, batch, per_gpu, None):
                    brief = [] if c.brief_rows is None else np.flatnonzero(c.brief_rows).tolist()
                    rows = [r for r in brief if not c.limit_codes(r)][:30] + [r for r in brief if c.limit_codes(r)][:30]
                    if not rows:
                        continue
                    got = [row.with_rank(k % 3 or None) for k, row in enumerate(brief_rows(ctx, c, np.array(rows)))]
                    want = [pt.with_rank(k % 3 or None) for k, pt in enumerate(evaluate_all(ctx, [_config(c, r) for r in rows]))]
                    assert _texts(got) == _texts(want), (system_name, options, c.strategy)
                    compared += len(rows)
                    infeasible += sum(not pt.feasible for pt in want)
    assert compared > 500 and infeasible > 50


ARGS = ("-m", "resnet50", "-p", "resnet50_v100", "--gpus", "1..40,96,1000,5000")


@pytest.mark.parametrize(("system_name", "extra"), [("abci", ("-b", "32")), ("lassen", ("-B", "256", "--zero", "2")),
                                                    ("dgx1-v100", ("-b", "64", "--top", "2"))])  # fmt: skip
def test_predict_written_in_runs_is_the_whole_sweep(monkeypatch, system_name, extra):
    """Runs of a few GPU counts (compute/engine.CHUNK_POINTS) joined: the text of every
    point evaluated and rendered at once (a system with DDP's buckets: rows evaluated)."""
    from oracle.compute import engine
    from oracle.render.predict import markdown, select_top
    from oracle.render.records import to_csv
    from oracle.services.project import project

    top = int(extra[-1]) if "--top" in extra else None
    flags = dict(zip(("batch_per_gpu" if extra[0] == "-b" else "batch",), (float(extra[1]),)))
    if "--zero" in extra:
        flags["zero"] = 2
    points, meta, _ = project("resnet50", system_name, "resnet50_v100", ARGS[-1], **flags)  # every point built
    shown = select_top(points, top)
    monkeypatch.setattr(engine, "CHUNK_POINTS", 40)
    for fmt, want in (("json", to_json(shown)), ("csv", to_csv(shown)), ("markdown", markdown(points, meta, top))):
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
