"""ParaDL's own tool in arrays (compute/vector/paradl.py, issue 29; the paradl stack,
compute/paradl/paradl_stack.evaluate point by point): every strategy of every shipped
model under the paradl stack on shipped systems, strong and weak scaling, a total
profile and per-layer times with weight updates, equals the
per-point numbers — the tool's formulas for serial, data, filter, channel, spatial and
the hybrids, oracle's for pipeline — with the tool's refusals (not enough memory, not
one sample fits: every number NaN) and its bounds on p among the limits."""

from __future__ import annotations

import numpy as np
import pytest
from test_vector import MODELS, _sample, counts_for, default_context, mismatches, times_for

from oracle.compute.context import Context
from oracle.compute.paradl import paradl_stack
from oracle.compute.strategies import names
from oracle.compute.vector import kinds, run

SYSTEMS = ("abci", "dgx-h100-superpod", "dgx1-v100", "abci-2020", "lassen")


def codes_seen(ctx, counts, per_gpu: bool, most: int = 60) -> set:
    """Evaluate every strategy in arrays, compare with the per-point points, and return
    the (strategy, limit code) pairs some configuration has."""
    assert paradl_stack.uses_tool(ctx)
    c = np.array(counts, dtype=np.int64)
    B = 32.0 * c if per_gpu else np.full(c.size, 256.0)
    seen = set()
    for name in names():
        assert kinds.covers(ctx, name), name
        cols = kinds.evaluate_many(ctx, name, *_sample(run.config_arrays(name, c, B, None), most))
        assert not mismatches(ctx, cols), name
        seen |= {(name, code) for code, mask in cols.codes if mask.any()}
    return seen


@pytest.mark.parametrize("model_name", MODELS)
def test_the_tool_in_arrays(tmp_path, model_name):
    k = MODELS.index(model_name)
    seen = set()
    for j, system_name in enumerate(SYSTEMS[k % 2 :: 2]):  # the systems by turns (the suite's time)
        per_gpu = (j + k) % 2 == 0
        scaling = {"batch_per_gpu": 32.0} if per_gpu else {"batch": 256.0}
        ctx = default_context(tmp_path, model_name, system_name, stack="paradl", **scaling)
        if j % 2:  # per-layer times with weight updates (the tool spreads only the total: tool:180-186)
            ctx = Context(ctx.model, ctx.system, times_for(ctx.model), ctx.options, ctx.profile_kind,
                          conversion=ctx.conversion)  # fmt: skip
            assert ctx.sum_wu > 0
        seen |= codes_seen(ctx, sorted(set(counts_for(ctx.system)) | {4, 16, 24, 48}), per_gpu)
    assert {("filter", "memory"), ("channel", "memory")} <= seen  # the tool's refusal (tool:405)


def test_the_tool_refuses_and_bounds_in_arrays(tmp_path):
    """CosmoFlow: not one sample fits spatial's GPUs at some counts (tool:578-581);
    the CIFAR ResNet-20: more GPUs than its split layers' fewest filters and channels."""
    ctx = default_context(tmp_path, "cosmoflow", "abci", stack="paradl", batch_per_gpu=32.0)
    assert ("spatial", "memory") in codes_seen(ctx, counts_for(ctx.system), True, 200)
    ctx = default_context(tmp_path, "cifar_resnet20", "dgx-h100-superpod", stack="paradl", batch=256.0)
    seen = codes_seen(ctx, sorted(set(counts_for(ctx.system)) | {16, 24, 48, 96}), False, 200)
    assert {("filter", "filters"), ("channel", "channels"), ("spatial", "spatial")} <= seen


def test_the_tools_rows_are_written_without_its_points(monkeypatch, tmp_path):
    """predict -f csv|json|markdown and oracle sweep (--all or not) under the paradl stack
    write the tool's rows from its columns (compute/vector/rows.py): the tool costs no
    point (paradl_stack.evaluate makes none; pipeline's are oracle's own)."""
    from conftest import run_cli

    made = []

    def counted(ctx, cfg):
        pt = evaluate(ctx, cfg)
        made.extend([cfg] if pt is not None else [])
        return pt

    evaluate = paradl_stack.evaluate
    monkeypatch.setattr(paradl_stack, "evaluate", counted)
    cases = tmp_path / "cases.yaml"
    cases.write_text("cases:\n  - {model: cifar_resnet20, profile: cifar_resnet20_cpu, system: dgx1-v100,"
                     " stack: paradl, batch: [64, 256], gpus: '1..70', strategy: all}\n")  # fmt: skip
    args = ("predict", "-m", "cosmoflow", "-s", "abci", "-p", "cosmoflow_v100", "--stack", "paradl", "--gpus", "1..70")
    for extra in (("-b", "4", "-f", "csv"), ("-B", "64", "-f", "json"), ("-b", "2", "-f", "markdown", "--top", "3")):
        r = run_cli(*args, *extra)
        assert r.code == 0 and "filter" in r.out and "ParaDL's tool" in r.out, r.err
    for extra in (("--all", "-f", "json"), ("-f", "markdown"), ("--all",)):
        r = run_cli("sweep", cases, *extra)
        assert r.code == 0 and "data" in r.out, r.err
    assert made == []
    r = run_cli(*args, "-b", "4")  # the table's points are built in full: the tool's counted
    assert r.code == 0 and made, r.err
