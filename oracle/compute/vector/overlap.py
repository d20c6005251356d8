"""--overlap buckets over many configurations at once (issue 29; compute/overlap.py's
gradient_timeline point by point, Lee et al. HiPC 2017, PyTorch DDP's buckets): the
buckets (overlap.buckets_of, the per-point function) once per distinct gradient vector,
then the one-channel timeline of every configuration with those buckets in arrays, the
per-point arithmetic in its order: a bucket starts when its last layer's backward is
done and the previous bucket has ended, exposed = min(total, max(0, end of the last
all-reduce - end of the backward)).  Python's max(a, b) keeps a unless b > a, and
min(a, b) keeps a unless b < a: the np.where below.  The delayed update (Lee et al.
§IV; overlap._delayed_timeline): the delayed layers' buckets after the others', the
update of the others waiting for theirs, the delayed ones hidden also by the next
forward up to the first delayed layer."""

from __future__ import annotations

import numpy as np

from oracle.compute.overlap import buckets_of

ROWS_PER_BLOCK = 4096  # configurations per block of the (configurations x layers) arrays


def covers(ctx) -> bool:
    """Whether the options' overlap is within this module: none, or buckets."""
    return ctx.options.overlap in ("none", "buckets")


def _delayed(ctx):
    """The --delayed-update layers (base.overlapped_gradients), None where none is named."""
    if not ctx.options.delayed_update:
        return None
    mask = ctx.delayed_mask()
    return mask if mask.any() else None


def buckets(ctx, grads: np.ndarray, kinds: np.ndarray) -> list:
    """gradient_timeline's buckets of one gradient vector: those with bytes."""
    o = ctx.options
    return [b for b in buckets_of(grads, kinds, o.bucket_bytes or None, o.bucket_layers) if b[1] > 0]


def timeline(ctx, backward, key: np.ndarray, grads_of, costs, kinds=None, tail=None) -> tuple[np.ndarray, np.ndarray]:
    """(exposed, total) seconds per iteration of every configuration (base.overlapped_gradients).
    ``backward(rows)``: those configurations' backward seconds per layer (rows x layers);
    ``key``: configurations with equal keys have the gradient bytes ``grads_of(key)``
    (per layer); ``costs[kind]``: compute/vector/collectives.Collective of every
    configuration for a bucket of that kind; ``kinds``: per layer (None: all 0);
    ``tail``: per configuration the computation after the backward that hides the
    buckets as it does (gradient_timeline's tail_s; None: none).  The configurations in
    blocks, sorted by key; each key's buckets packed once."""
    n = key.size
    kinds = np.zeros(ctx.G, dtype=int) if kinds is None else kinds
    exposed, total = np.zeros(n), np.zeros(n)
    order = np.argsort(key, kind="stable")
    packed: dict = {}
    delayed = _delayed(ctx)
    for lo in range(0, n, ROWS_PER_BLOCK):
        block = order[lo : lo + ROWS_PER_BLOCK]
        bwd = backward(block)
        done = np.cumsum(bwd[:, ::-1], axis=1)[:, ::-1]  # layer l's backward ends (cumsum adds in order)
        window = None if delayed is None else _window(ctx, bwd, delayed)
        k = key[block]
        groups: dict = {}  # the block's keys by the layers and kinds of their buckets
        for part in np.split(np.arange(block.size), np.flatnonzero(np.diff(k)) + 1):
            kv = k[part[0]].item()
            if kv not in packed:
                packed[kv] = _pack(ctx, grads_of(kv), kinds, delayed)
            groups.setdefault(packed[kv][0], []).append((part, packed[kv][1]))
        for shape, members in groups.items():
            part = np.concatenate([m[0] for m in members])
            sizes = [np.concatenate([np.broadcast_to(m[1][j], (m[0].size, m[1][j].size)) for m in members])
                     for j in range(len(shape))]  # fmt: skip
            rows = block[part]
            exposed[rows], total[rows] = _channel(done[part], shape, sizes, [c.take(rows) for c in costs],
                                                  None if window is None else window[part],
                                                  0.0 if tail is None else tail[rows])  # fmt: skip
    return exposed, total


def _pack(ctx, grads: np.ndarray, kinds: np.ndarray, delayed) -> tuple[tuple, list]:
    """A gradient vector's buckets (the delayed update: the others' and then the delayed
    layers'): their layers and kinds, and their bytes (an array per list of buckets)."""
    parts = [buckets(ctx, grads, kinds)] if delayed is None else [
        buckets(ctx, np.where(delayed, 0.0, grads), kinds), buckets(ctx, np.where(delayed, grads, 0.0), kinds)]  # fmt: skip
    shape = tuple(tuple((tuple(layers), kind) for layers, _, kind in bk) for bk in parts)
    return shape, [np.array([size for _, size, _ in bk], dtype=float) for bk in parts]


def _window(ctx, bwd: np.ndarray, delayed: np.ndarray) -> np.ndarray:
    """Per configuration, the next forward's seconds before the first delayed layer
    (base.overlapped_gradients' forward, in proportion to the backward, summed as
    overlap._delayed_timeline sums it: a row's contiguous slice)."""
    first = int(np.flatnonzero(delayed)[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        forward = np.where(ctx.bw > 0, bwd * ctx.fw / ctx.bw, 0.0)
    return np.array([float(np.sum(row[:first])) for row in forward])


def _channel(done: np.ndarray, parts: tuple, sizes: list, costs: list, window=None, tail=0.0) -> tuple[np.ndarray, np.ndarray]:
    """gradient_timeline's loop over the buckets for configurations whose layers' backward
    ends at ``done`` (configurations x layers); each kind's buckets costed at once.
    ``parts``: the buckets' (layers, kind), or with ``window`` (the delayed update) the
    others' and then the delayed layers' (overlap._delayed_timeline); ``sizes``: their
    bytes per configuration (configurations x buckets, one array per part); ``tail``:
    timeline's."""
    n = done.shape[0]
    end = (done[:, 0] if done.shape[1] else np.zeros(n)) + tail
    channel, total, stall = np.zeros(n), np.zeros(n), np.zeros(n)
    for j, bk in enumerate(parts):
        durations = _durations(bk, sizes[j], costs, n)
        for i, (layers, _) in enumerate(bk):
            ready = done[:, list(layers)].max(axis=1)
            channel = np.where(channel > ready, channel, ready) + durations[:, i]
            total = total + durations[:, i]
        if window is not None and j == 0:  # the update of the other layers waits for theirs
            stall = channel - end
            stall = np.where(stall > 0.0, stall, 0.0)
    if window is not None:
        late = channel - (end + stall + window)
        return stall + np.where(late > 0.0, late, 0.0), total
    if not parts[0]:
        return np.zeros(n), total
    late = channel - end
    late = np.where(late > 0.0, late, 0.0)
    return np.where(late < total, late, total), total


def _durations(bk: tuple, sizes: np.ndarray, costs: list, n: int) -> np.ndarray:
    """Each bucket's all-reduce seconds (configurations x buckets), each kind's at once."""
    durations = np.zeros((n, len(bk)))
    for kind, cost in enumerate(costs):
        cols = [i for i, b in enumerate(bk) if b[1] == kind]
        if cols:
            durations[:, cols] = cost(sizes[:, cols])
    return durations


def backward_of(ctx, samples: np.ndarray) -> np.ndarray:
    """Per entry and layer, the backward seconds of ``samples`` samples at that per-GPU
    batch: samples · context.times_at(samples)'s BW, once per distinct value."""
    u, inv = np.unique(samples, return_inverse=True)
    bw = np.stack([ctx.times_at(float(v))[1] for v in u.tolist()])[inv.reshape(-1)]
    return samples[:, None] * bw


def bucketed(ctx, costs, grads_of, samples, rest=None, mask=None, key=None, kinds=None, tail=None) -> tuple:
    """(exposed, total) gradient exchange per iteration of every configuration with
    --overlap buckets (:func:`timeline`; total - exposed: the hidden share that
    base.overlap_details reports): ``samples`` per entry the samples a GPU's layers hold
    (``mask``: the masked layers', ``rest`` the others'), ``key`` None: one gradient
    vector for all."""
    key = np.zeros(samples.size, dtype=np.int64) if key is None else key

    def backward(r):
        if mask is None:
            return backward_of(ctx, samples[r])
        return np.where(mask, backward_of(ctx, samples[r]), backward_of(ctx, rest[r]))

    return timeline(ctx, backward, key, grads_of, costs, kinds, tail)
