"""Overlap of communication with computation (issue 8): hand-computed timelines."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import cli_runner

from oracle import api
from oracle.cli.main import cli
from oracle.compute.overlap import buckets_of, exposed_halo, gradient_timeline


def cost(m):  # 10 bytes per second
    return m / 10.0


def test_one_bucket_per_layer():
    # forward order: layers 0, 1, 2; backward runs 2, 1, 0, one second each
    # layer 2's 20 B are ready at t=1 and sent 1..3; layer 0's 10 B at t=3, sent 3..4
    tl = gradient_timeline(np.array([1.0, 1.0, 1.0]), np.array([10.0, 0.0, 20.0]), [cost], bucket_bytes=None)
    assert (tl.total_s, tl.exposed_s, tl.buckets) == (3.0, 1.0, 2)
    assert tl.overlap_ratio == pytest.approx(2 / 3)


def test_a_bucket_waits_for_its_last_layer():
    # a 25-byte bucket only closes with layer 0 (20 + 10 >= 25): one all-reduce after the backward
    tl = gradient_timeline(np.array([1.0, 1.0, 1.0]), np.array([10.0, 0.0, 20.0]), [cost], bucket_bytes=25)
    assert (tl.total_s, tl.exposed_s, tl.buckets) == (3.0, 3.0, 1)
    assert tl.overlap_ratio == 0.0


def test_one_channel_queues_buckets():
    # ready at 1, 2, 3; each takes 3 s: sent 1-4, 4-7, 7-10 (not in parallel)
    tl = gradient_timeline(np.ones(3), np.array([10.0, 10.0, 10.0]), [lambda m: 3.0], bucket_bytes=None)
    assert (tl.total_s, tl.exposed_s) == (9.0, 7.0)


def test_buckets_do_not_mix_groups():
    b = buckets_of(np.array([10.0, 10.0, 10.0]), np.array([0, 0, 1]), bucket_bytes=1e9)
    assert [(layers, size, kind) for layers, size, kind in b] == [([2], 10.0, 1), ([1, 0], 20.0, 0)]


def test_exposed_halo():
    assert list(exposed_halo(np.array([1.0, 3.0]), np.array([2.0, 1.0]))) == [0.0, 2.0]


def _pts(**kw):
    """Without a stack (the file's pytorch would turn overlap on and change the compute):
    the overlap option alone is compared."""
    return api.predict("resnet50", "dgx-h100-superpod", "resnet50_v100", gpus=[64], strategies="data", batch_per_gpu=32,
                       stack="none", **kw)  # fmt: skip


def test_data_parallel_resnet50_becomes_compute_bound_on_a_fast_network():
    (plain,) = _pts()
    (ov,) = _pts(overlap="buckets")
    assert ov.compute_s == pytest.approx(plain.compute_s)
    # everything but the last bucket hides behind the backward pass
    assert ov.communication_s < 0.05 * ov.compute_s
    assert ov.communication_s < plain.communication_s
    total = ov.detail("communication_total_s")
    assert total >= plain.communication_s  # more, smaller all-reduces: more latency terms
    assert 0.5 < ov.detail("overlap_ratio") <= 1.0


def test_data_parallel_exposed_communication_by_hand(tmp_path):
    """A 2-layer chain: the timeline of its two all-reduces against its backward."""
    (tmp_path / "m.yaml").write_text(
        "name: Two\ninput: [4, 8, 8]\ndataset: {samples: 800}\nlayers:\n"
        "  - {name: a, type: conv, filters: 16, kernel: 3, padding: 1, bias: false}\n"
        "  - {name: b, type: fc, outputs: 100, bias: false}\n"
    )
    (tmp_path / "p.yaml").write_text(
        "model: Two\nlayers:\n  a: {fw_s: 0.001, bw_s: 0.002}\n  b: {fw_s: 0.0005, bw_s: 0.001}\n"
    )
    (tmp_path / "s.yaml").write_text(
        "name: S\ngpu: {model: x, memory_GB: 100}\ngpus_per_node: 8\nnodes: 1\n"
        "network:\n  - {name: n, max_gpus: 8, alpha_s: 1.0e-4, beta_s_per_byte: 1.0e-8}\n"
    )
    (pt,) = api.predict(tmp_path / "m.yaml", tmp_path / "s.yaml", tmp_path / "p.yaml", gpus=[4],
                        strategies="data", batch=32, overlap="buckets", bucket_mb=0)  # fmt: skip
    b = 32 / 4
    wa, wb = 16 * 4 * 9, 1024 * 100
    ar = lambda w: 2 * 3 * (1e-4 + 4 * w / 4 * 1e-8)  # noqa: E731 - ring AR(4, 4w bytes)
    # backward: b's ends at 8 x 0.001, a's at 8 x (0.001 + 0.002); b's all-reduce first
    end_b, end_a = b * 0.001, b * 0.003
    channel = max(end_b, 0) + ar(wb)
    channel = max(end_a, channel) + ar(wa)
    exposed = max(0.0, channel - end_a)
    I = 800 / 32
    assert pt.breakdown.gradient_exchange_s == pytest.approx(I * exposed)
    assert pt.detail("communication_total_s") == pytest.approx(I * (ar(wa) + ar(wb)))


def test_spatial_halo_overlap_hides_halos_behind_compute():
    kw = dict(gpus=[4], strategies="spatial", batch=8)
    (plain,) = api.predict("resnet50", "abci-chainermnx", "resnet50_v100", **kw)
    (ov,) = api.predict("resnet50", "abci-chainermnx", "resnet50_v100", overlap="buckets", **kw)
    assert 0 <= ov.breakdown.halo_s < plain.breakdown.halo_s
    # nothing is sent less: the same halos, the gradients in more (smaller) all-reduces
    assert ov.detail("communication_total_s") >= plain.communication_s
    assert ov.total_s < plain.total_s


def test_overlap_json_and_defaults():
    r = cli_runner().invoke(cli, ["predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "16",
                                 "--strategy", "data", "-b", "32", "--overlap", "buckets", "-f", "json"])  # fmt: skip
    (d,) = json.loads(r.stdout)
    assert d["communication_total_s"] >= d["communication_s"] and 0 <= d["overlap_ratio"] <= 1
    assert d["total_s"] == pytest.approx(d["compute_s"] + d["communication_s"])
    r = cli_runner().invoke(cli, ["predict", "-m", "resnet50", "-s", "abci", "-p", "resnet50_v100", "--gpus", "16",
                                 "--strategy", "data", "-b", "32", "-f", "json"])  # fmt: skip
    (d,) = json.loads(r.stdout)
    assert d["overlap_ratio"] == 0 and d["communication_total_s"] == d["communication_s"]
