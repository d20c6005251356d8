"""--replicated-gradients in arrays (compute/vector/replicated.py, issue 29; Lee et al.
§III-C-2, compute/replicated.py point by point): data parallelism's all-gathers of the
named layers' activations and errors, the all-reduce of the others and the extra
weight-gradient computation equal the per-point numbers, with and without --overlap
buckets (the all-gathers as buckets of their own kind, the extra computation hiding
them) and --delayed-update, under the systems' defaults (NCCL on the DGX files), other
--collective algorithms, an operation entry naming the all-gather's algorithm and
measured tables, strong and weak scaling."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_vector import counts_for, default_context, mismatches
from test_vector_tables import tables_for, with_tables

from oracle.compute.context import Context
from oracle.compute.strategies import names
from oracle.compute.vector import kinds, run
from oracle.model import OperationOverride as Op

CASES = (  # (model, --replicated-gradients, more flags)
    ("vgg16", "fc6,fc7", {}),
    ("vgg16", "conv,fc", {"overlap": "none"}),  # every layer with weights: no all-reduce
    ("vgg16", "fc", {"overlap": "buckets"}),
    ("resnet50", "fc", {"overlap": "buckets", "delayed_update": "fc", "bucket_mb": 1.0}),
    ("resnet50", "conv", {"overlap": "buckets", "bucket_layers": 3}),
    ("resnet50", "conv", {"overlap": "none", "collective": "auto"}),
    ("mobilenet_v2", "fc", {"overlap": "none", "collective": "leader"}),
)


def check(ctx: Context, counts, per_gpu: bool) -> None:
    """Every strategy covered; data's columns equal the per-point points and differ from
    the same context's without the option (its forward-backward and gradient exchange)."""
    assert all(kinds.covers(ctx, n) for n in names())
    c = np.array(counts, dtype=np.int64)
    B = 32.0 * c if per_gpu else np.full(c.size, 256.0)
    arrays = run.config_arrays("data", c, B, None)
    cols = kinds.evaluate_many(ctx, "data", *arrays)
    assert not mismatches(ctx, cols)
    plain = Context(ctx.model, ctx.system, ctx.times, replace(ctx.options, replicated_gradients=()),
                    ctx.profile_kind, conversion=ctx.conversion)  # fmt: skip
    before = kinds.evaluate_many(plain, "data", *arrays)
    for phase in ("forward_backward_s", "gradient_exchange_s"):
        assert (cols.phases[phase] != before.phases[phase]).any(), phase


@pytest.mark.parametrize("system_name", ["abci", "lassen", "dgx1-v100", "dgx-h100-superpod", "hgx-h200"])
def test_replicated_gradients_in_arrays(tmp_path, system_name):
    counts = sorted(set(counts_for(default_context(tmp_path, "vgg16", system_name).system)) | {4, 16, 24, 48})
    for k, (model_name, layers, flags) in enumerate(CASES):
        per_gpu = k % 2 == 0
        scaling = {"batch_per_gpu": 32.0} if per_gpu else {"batch": 256.0}
        ctx = default_context(tmp_path, model_name, system_name, replicated_gradients=layers, **flags, **scaling)
        assert ctx.options.replicated_gradients
        check(ctx, counts, per_gpu)


def test_replicated_gradients_with_an_allgather_entry_and_tables(tmp_path):
    """The system's ``allgather`` operation names the all-gather's algorithm and scales
    it (network.link: the replicated layers' all-gathers are not --collective's); and
    measured all-gather and all-reduce tables at the data groups."""
    ops = (("allgather", Op(algorithm="rhd", factor=1.5)),)
    for system_name, flags in (("abci", {}), ("dgx1-v100", {"overlap": "buckets"})):
        ctx = default_context(tmp_path, "vgg16", system_name, replicated_gradients="fc", batch_per_gpu=32.0, **flags)
        counts = sorted(set(counts_for(ctx.system)) | {4, 16, 24, 48})
        check(with_tables(ctx, replace(ctx.system, operations=ctx.system.operations + ops)), counts, True)
        check(with_tables(ctx, replace(ctx.system, collective_tables=tables_for(ctx.system))), counts, True)
