"""--overlap buckets over many configurations at once (issue 29; compute/overlap.py's
gradient_timeline point by point, Lee et al. HiPC 2017, PyTorch DDP's buckets): the
buckets (overlap.buckets_of, the per-point function) once per distinct gradient vector,
then the one-channel timeline of every configuration with those buckets in arrays, the
per-point arithmetic in its order: a bucket starts when its last layer's backward is
done and the previous bucket has ended, exposed = min(total, max(0, end of the last
all-reduce - end of the backward)).  Python's max(a, b) keeps a unless b > a, and
min(a, b) keeps a unless b < a: the np.where below.  The delayed update (Lee et al.
§IV) stays point by point (:func:`covers`)."""

from __future__ import annotations

import numpy as np

from oracle.compute.overlap import buckets_of

ROWS_PER_BLOCK = 4096  # configurations per block of the (configurations x layers) arrays


def covers(ctx) -> bool:
    """Whether the options' overlap is within this module: none, or buckets without
    --delayed-update."""
    o = ctx.options
    return o.overlap == "none" or (o.overlap == "buckets" and not o.delayed_update)


def buckets(ctx, grads: np.ndarray, kinds: np.ndarray) -> list:
    """gradient_timeline's buckets of one gradient vector: those with bytes."""
    o = ctx.options
    return [b for b in buckets_of(grads, kinds, o.bucket_bytes or None, o.bucket_layers) if b[1] > 0]


def timeline(ctx, backward, key: np.ndarray, grads_of, costs, kinds=None) -> tuple[np.ndarray, np.ndarray]:
    """(exposed, total) seconds per iteration of every configuration (base.overlapped_gradients).
    ``backward(rows)``: those configurations' backward seconds per layer (rows x layers);
    ``key``: configurations with equal keys have the gradient bytes ``grads_of(key)``
    (per layer); ``costs[kind]``: compute/vector/collectives.Collective of every
    configuration for a bucket of that kind; ``kinds``: per layer (None: all 0).  The
    configurations in blocks, sorted by key; each key's buckets packed once."""
    n = key.size
    kinds = np.zeros(ctx.G, dtype=int) if kinds is None else kinds
    exposed, total = np.zeros(n), np.zeros(n)
    order = np.argsort(key, kind="stable")
    packed: dict = {}
    for lo in range(0, n, ROWS_PER_BLOCK):
        block = order[lo : lo + ROWS_PER_BLOCK]
        done = np.cumsum(backward(block)[:, ::-1], axis=1)[:, ::-1]  # layer l's backward ends (cumsum adds in order)
        k = key[block]
        for part in np.split(np.arange(block.size), np.flatnonzero(np.diff(k)) + 1):
            kv = k[part[0]].item()
            if kv not in packed:
                packed[kv] = buckets(ctx, grads_of(kv), kinds)
            rows = block[part]
            exposed[rows], total[rows] = _channel(done[part], packed[kv], [c.take(rows) for c in costs])
    return exposed, total


def _channel(done: np.ndarray, bk: list, costs: list) -> tuple[np.ndarray, np.ndarray]:
    """gradient_timeline's loop over the buckets for configurations whose layers' backward
    ends at ``done`` (configurations x layers); each kind's buckets costed at once."""
    n = done.shape[0]
    end = (done[:, 0] if done.shape[1] else np.zeros(n)) + 0.0
    channel, total = np.zeros(n), np.zeros(n)
    if not bk:
        return np.zeros(n), total
    durations = np.zeros((n, len(bk)))
    for kind, cost in enumerate(costs):
        cols = [i for i, b in enumerate(bk) if b[2] == kind]
        if cols:
            durations[:, cols] = cost(np.array([bk[i][1] for i in cols])[None, :] * np.ones((n, 1)))
    for i, (layers, _, _) in enumerate(bk):
        ready = done[:, layers].max(axis=1)
        channel = np.where(channel > ready, channel, ready) + durations[:, i]
        total = total + durations[:, i]
    late = channel - end
    late = np.where(late > 0.0, late, 0.0)
    return np.where(late < total, late, total), total


def backward_of(ctx, samples: np.ndarray) -> np.ndarray:
    """Per entry and layer, the backward seconds of ``samples`` samples at that per-GPU
    batch: samples · context.times_at(samples)'s BW, once per distinct value."""
    u, inv = np.unique(samples, return_inverse=True)
    bw = np.stack([ctx.times_at(float(v))[1] for v in u.tolist()])[inv.reshape(-1)]
    return samples[:, None] * bw


def exposed(ctx, costs, grads_of, samples, rest=None, mask=None, key=None, kinds=None) -> np.ndarray:
    """The exposed gradient exchange per iteration of every configuration with --overlap
    buckets (:func:`timeline`): ``samples`` per entry the samples a GPU's layers hold
    (``mask``: the masked layers', ``rest`` the others'), ``key`` None: one gradient
    vector for all."""
    key = np.zeros(samples.size, dtype=np.int64) if key is None else key

    def backward(r):
        if mask is None:
            return backward_of(ctx, samples[r])
        return np.where(mask, backward_of(ctx, samples[r]), backward_of(ctx, rest[r]))

    return timeline(ctx, backward, key, grads_of, costs, kinds)[0]
