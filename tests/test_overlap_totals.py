"""With --overlap, a point reports its exposed communication next to the total and the
share hidden (strategies/base.overlap_details).  What is added after the overlap -- ZeRO-3's
extra volume, a Horovod stack's half cycle of waiting -- is exposed and belongs to the total
too: the exposed part never exceeds the total, on both paths."""

from __future__ import annotations

import numpy as np
import pytest
from test_vector import _sample, default_context

from oracle.compute.strategies import names
from oracle.compute.strategies.base import Config
from oracle.compute.sweep import evaluate_all
from oracle.compute.vector import kinds, run


@pytest.mark.parametrize(("stack", "zero"), [("mxnet", 0), ("tensorflow", 0), ("pytorch", 3), ("mxnet", 3)])
def test_exposed_never_exceeds_the_total_and_the_arrays_agree(tmp_path, stack, zero):
    ctx = default_context(tmp_path, "resnet50", "dgx-a100-80gb", stack=stack, batch_per_gpu=32.0, zero=zero)
    counts = np.array([1, 8, 64, 512, 4096], dtype=np.int64)
    checked = 0
    for name in names():
        if not kinds.covers(ctx, name):
            continue
        cols = kinds.evaluate_many(ctx, name, *_sample(run.config_arrays(name, counts, 32.0 * counts, None)))
        if cols.overlap is None:
            continue
        cfgs = [Config(cols.strategy, int(cols.gpus[i]), int(cols.p1[i]), int(cols.p2[i]), float(cols.batch[i]), None)
                for i in range(cols.size)]  # fmt: skip
        for i, pt in enumerate(evaluate_all(ctx, cfgs)):
            total, ratio = pt.detail("communication_total_s"), pt.detail("overlap_ratio")
            assert pt.communication_s <= total * (1 + 1e-12), (name, pt.gpus)
            assert total == pytest.approx(float(cols.overlap["communication_total_s"][i]), rel=1e-9)
            assert ratio == pytest.approx(float(cols.overlap["overlap_ratio"][i]), rel=1e-9, abs=1e-12)
            checked += 1
    assert checked > 20


def test_horovods_cycle_wait_is_in_the_total(tmp_path):
    """mxnet (Horovod, 5 ms cycles) on 8 A100s: the total is the all-reduces' time plus the
    half cycle per iteration the exposed part holds."""
    ctx = default_context(tmp_path, "resnet50", "dgx-a100-80gb", stack="mxnet", batch_per_gpu=32.0)
    (pt,) = evaluate_all(ctx, [Config("data", 8, 8, 1, 256.0, None)])
    wait = pt.iterations_per_epoch * 0.005 / 2
    hidden = pt.detail("overlap_ratio") * pt.detail("communication_total_s")
    assert pt.detail("communication_total_s") == pytest.approx(pt.communication_s + hidden, rel=1e-12)
    assert pt.communication_s >= wait
