"""Lee et al.'s overlap scheme and parameter-server synchronisation (issue 18, first
part): chunks of k layers, the delayed update of chosen layers, and the `ps` algorithm,
each checked by hand; overlap never makes a configuration slower."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from oracle.compute.network import Group, allreduce_algorithm, link
from oracle.compute.overlap import buckets_of, gradient_timeline
from oracle.load.system import parse_system


def test_chunks_of_k_layers():
    grads = np.array([10.0, 0.0, 20.0, 30.0, 40.0, 50.0])  # layer 1 has no parameters
    kinds = np.zeros(6, dtype=int)
    chunks = buckets_of(grads, kinds, None, bucket_layers=2)
    assert [c[0] for c in chunks] == [[5, 4], [3, 2], [0]]  # backward order, layer 1 skipped
    assert [c[1] for c in chunks] == [90.0, 50.0, 10.0]


def test_delayed_update_by_hand():
    """Two layers, backward 1 s each (the last layer first); each all-reduce takes 1.5 s.
    Plain: layer 1 done at 1, its bucket 1-2.5; layer 0 done at 2, its bucket 2.5-4:
    exposed 2 s.  Delaying layer 1 (an fc at the end): layer 0's bucket goes first,
    2-3.5 (exposed 1.5), layer 1's 3.5-5; the next forward reaches layer 1 after layer
    0's forward (0.5 s) from 2 + 1.5 = 3.5, i.e. at 4: 1 s more exposed, 2.5 in all; with
    a 2 s forward of layer 0 it is hidden: 1.5."""
    back = np.array([1.0, 1.0])
    grads = np.array([1.0, 1.0])
    cost = [lambda m: 1.5]
    plain = gradient_timeline(back, grads, cost, None)
    assert plain.exposed_s == pytest.approx(2.0)
    delayed = np.array([False, True])
    tl = gradient_timeline(back, grads, cost, None, delayed=delayed, forward_s=np.array([0.5, 0.2]))
    assert tl.exposed_s == pytest.approx(2.5) and tl.total_s == pytest.approx(3.0)
    tl = gradient_timeline(back, grads, cost, None, delayed=delayed, forward_s=np.array([2.0, 0.2]))
    assert tl.exposed_s == pytest.approx(1.5)


@settings(max_examples=40, deadline=None)
@given(k=st.integers(0, 6), delay=st.booleans(), gpus=st.sampled_from([8, 32, 128]))
def test_overlap_never_makes_a_configuration_slower(k, delay, gpus):
    base = dict(gpus=[gpus], strategies="data", batch_per_gpu=32)
    (plain,) = oracle.predict("vgg16", "abci", "vgg16_v100", **base)
    options = dict(overlap="buckets", bucket_layers=k, delayed_update=("fc",) if delay else ())
    (over,) = _predict(**base, **options)
    assert over.total_s <= plain.total_s * (1 + 1e-12)
    assert over.detail("communication_total_s") >= over.communication_s * (1 - 1e-12)


def _predict(**kw):
    from oracle.compute.binding import bind_profile
    from oracle.compute.context import Options
    from oracle.compute.sweep import sweep
    from oracle.load import load_model, load_profile, load_system

    m = load_model("vgg16")
    options = Options(overlap=kw.pop("overlap"), bucket_layers=kw.pop("bucket_layers"),
                      delayed_update=kw.pop("delayed_update"))  # fmt: skip
    times = bind_profile(m, load_profile("vgg16_v100"))
    return sweep(m, load_system("abci"), times, kw["gpus"], kw["strategies"], batch_per_gpu=kw["batch_per_gpu"],
                 options=options)  # fmt: skip


SYSTEM = """
name: PS
gpu: {model: G, memory_GB: 16}
gpus_per_node: 4
nodes: 8
network:
  - {name: all, max_gpus: 32, alpha_s: 1.0e-5, beta_s_per_byte: 1.0e-10}
collectives: {algorithm: ps, ps_servers: 4}
"""


def test_parameter_server_by_hand():
    """t = 2α + 2·m·β·max(1, p/s): 16 workers, 4 servers, 100 MB."""
    s = parse_system(yaml.safe_load(SYSTEM), "ps.yaml")
    t, used = allreduce_algorithm(s, Group(16, 4, 4, 16), 1e8, "ps")
    assert used == "ps"
    assert t == pytest.approx(2e-5 + 2 * 1e8 * 1e-10 * 4)
    t2, _ = allreduce_algorithm(s, Group(2, 1, 2, 2), 1e8, "ps")
    assert t2 == pytest.approx(2e-5 + 2 * 1e8 * 1e-10)  # fewer workers than servers: the workers' links


def test_parameter_server_cost_grows_with_replicas():
    s = parse_system(yaml.safe_load(SYSTEM), "ps.yaml")
    times = [allreduce_algorithm(s, Group(p, 1, p, p), 1e8, "ps")[0] for p in (4, 8, 16, 32)]
    assert times == sorted(times) and times[-1] > times[0]
    assert link(s, 16, "allreduce").alpha_s == 1e-5
    # auto never picks it
    assert allreduce_algorithm(s, Group(16, 4, 4, 16), 1e8, "auto")[1] != "ps"


@pytest.mark.parametrize(
    "args,words",
    [
        (("--delayed-update", "fc"), ["--overlap buckets"]),
        (("--overlap", "buckets", "--delayed-update", "fcc"), ["no layer or layer type 'fcc'", "did you mean"]),
        (("--overlap", "buckets", "--bucket-layers", "-1"), ["--bucket-layers"]),
    ],
)
def test_bad_overlap_options(run, args, words):
    r = run("predict", "-m", "vgg16", "-s", "abci", "-p", "vgg16_v100", "--gpus", "8", *args)
    assert r.code == 2 and "Traceback" not in r.err
    for w in words:
        assert w in r.err, (w, r.err)
