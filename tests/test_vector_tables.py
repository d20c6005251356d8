"""Measured collective tables in arrays (compute/vector/tables.py, issue 29): a system
file's ``collectives: table`` times, at exactly a group's GPU count and span, replace
every algorithm's α-β time in the columns as they do point by point
(network.allreduce_algorithm, allgather_algorithm): the tables `oracle fit network
--collectives table` writes from the shipped nccl-tests logs, and all-reduce and
all-gather tables at the sweep's contiguous groups and the hybrids' strided data groups
on shipped systems under their defaults (NCCL, --overlap buckets, the pytorch stack),
--collective auto and leader, an operation entry's factor and the reduce-scatter that
reads the all-reduce's table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import cli_runner
from test_vector import _sample, counts_for, default_context, mismatches

from oracle.cli.main import cli
from oracle.compute.context import Context
from oracle.compute.network import span_contiguous, span_strided
from oracle.compute.strategies import names
from oracle.compute.vector import kinds, run
from oracle.load import load_system
from oracle.model import CollectiveTable
from oracle.model import OperationOverride as Op

ROOT = Path(__file__).resolve().parent.parent
EXTRA_COUNTS = [4, 16, 24, 32, 48, 128]
COLLECTIVES = ("data", "spatial", "filter", "channel", "data+filter", "data+spatial")  # all but serial, pipeline


def tables_for(system) -> tuple[CollectiveTable, ...]:
    """All-reduce and all-gather tables at GPUs 0..p-1 and at the data groups {0, s, 2s, ...}
    (s = 2, 8) of the counts below, times growing with p and the span (so a table read at
    the wrong group, operation or size gives other numbers)."""
    gpn, out = system.gpus_per_node, {}
    for p in (2, 3, 4, 8, 16, 64):
        for span in {span_contiguous(p, gpn), span_strided(p, 2, gpn), span_strided(p, 8, gpn)}:
            for k, op in enumerate(("allreduce", "allgather")):
                scale = (1 + k) * (p + span / 64)
                out[op, p, span] = CollectiveTable(op, p, span, (1e3, 1e6, 1e8),
                                                   (2e-6 * scale, 3e-5 * scale, 2e-3 * scale))  # fmt: skip
    return tuple(out.values())


def with_tables(ctx: Context, system) -> Context:
    return Context(ctx.model, system, ctx.times, ctx.options, ctx.profile_kind, conversion=ctx.conversion)


def check(ctx: Context, counts, batch_per_gpu: float = 32.0) -> None:
    """Every strategy is covered and equals the per-point numbers; the tables change the
    collective strategies' numbers somewhere (compared with the same context without them)."""
    plain = with_tables(ctx, replace(ctx.system, collective_tables=()))
    c = np.array(counts, dtype=np.int64)
    for name in names():
        assert kinds.covers(ctx, name), name
        arrays = _sample(run.config_arrays(name, c, batch_per_gpu * c, None), 80)
        cols = kinds.evaluate_many(ctx, name, *arrays)
        assert not mismatches(ctx, cols), name
        if name in COLLECTIVES:
            before = kinds.evaluate_many(plain, name, *arrays)
            assert any((cols.phases[k] != before.phases[k]).any() for k in cols.phases), name


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Path:
    """ABCI's tables as `oracle fit network --collectives table` writes them from the
    shipped nccl-tests logs (all-reduces of 4-128 GPUs, 1-32 nodes)."""
    out = tmp_path_factory.mktemp("fit") / "abci-tables.yaml"
    logs = sorted(str(p) for p in (ROOT / "data" / "nccl-tests" / "abci-v100").glob("*.txt"))
    res = cli_runner().invoke(cli, ["fit", "network", "--system", "abci-nominal", "--collectives", "table",
                                    "-o", str(out), *logs])  # fmt: skip
    assert res.exit_code == 0, res.stderr
    return out


@pytest.mark.parametrize("collective", [None, "auto", "leader"])
def test_the_fitted_abci_tables_in_arrays(tmp_path, fitted, collective):
    flags = {} if collective is None else {"collective": collective}
    ctx = default_context(tmp_path, "resnet50", str(fitted), batch_per_gpu=32.0, **flags)
    assert ctx.system.collective_tables
    check(ctx, sorted(set(counts_for(ctx.system)) | set(EXTRA_COUNTS)))


@pytest.mark.parametrize("system_name", ["abci", "lassen", "dgx1-v100", "dgx-h100-superpod", "hgx-h200"])
def test_tables_at_every_group_under_the_defaults(tmp_path, system_name):
    """The system's defaults (the DGX/HGX files: NCCL's algorithms, DDP's buckets) with
    all-reduce and all-gather tables at contiguous and strided groups."""
    ctx = default_context(tmp_path, "resnet50", system_name, batch_per_gpu=32.0)
    ctx = with_tables(ctx, replace(ctx.system, collective_tables=tables_for(ctx.system)))
    check(ctx, sorted(set(counts_for(ctx.system)) | set(EXTRA_COUNTS)))


def test_tables_with_operation_factors_and_the_reduce_scatter(tmp_path):
    """An operation entry's factor scales its table's time (network.link); the layer
    collectives' reduce-scatter reads the all-reduce's table (its purpose's primitive);
    ParaDL's leader all-reduce in the hybrids' data groups; --collective auto."""
    ops = (("gradient_allreduce", Op(factor=1.25)), ("layer_allgather", Op(factor=0.8, algorithm="rhd")),
           ("allreduce", Op(factor=1.5)))  # fmt: skip
    for system_name, pattern, collective in (("abci", "reduce_scatter", "auto"), ("dgx1-v100", "allreduce_slice", None)):
        ctx = default_context(tmp_path, "vgg16", system_name, batch_per_gpu=32.0,
                              **({"collective": collective} if collective else {}))  # fmt: skip
        s = ctx.system
        impl = replace(s.implementation, layer_backward=pattern, data_filter_allreduce="leader",
                       data_spatial_allreduce="leader")  # fmt: skip
        system = replace(s, collective_tables=tables_for(s), operations=s.operations + ops, implementation=impl)
        check(with_tables(ctx, system), sorted(set(counts_for(s)) | set(EXTRA_COUNTS)))
