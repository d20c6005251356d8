"""A strategy's points as columns (issue 29): one array entry per configuration, the
breakdown phases, memory per GPU and the limit codes, finished as
compute/strategies/base.make_point finishes one point (memory by the context's memory
model, ZeRO-3's extra communication, the system-size, batch, dataset, overflow and
GPU-memory limits), with the same floating-point operations in the same order."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from oracle.compute.cost import phase_names
from oracle.compute.memory import OPTIMIZER_BYTES, excess_bytes
from oracle.compute.strategies.base import WHOLE_BATCH_RTOL
from oracle.compute.vector.io import with_input
from oracle.compute.vector.stack import per_iteration
from oracle.vocabulary import PARADL


@dataclass
class Columns:
    """The points of one strategy: configuration, phases (every phase of
    compute/cost.phase_names, seconds per epoch), memory bytes per GPU, and limits as
    (code, mask) in the order make_point lists them; ``points``: the per-point path's
    points of the rows it evaluated, by row (their limits are the truth there);
    ``segments``: the pipeline's S per row; ``unfit``: rows the per-point path found
    infeasible whose points were not kept (:meth:`take`)."""

    strategy: str
    gpus: np.ndarray
    p1: np.ndarray
    p2: np.ndarray
    batch: np.ndarray
    phases: dict[str, np.ndarray]
    memory: np.ndarray
    codes: list[tuple[str, np.ndarray]] = field(default_factory=list)
    points: dict = field(default_factory=dict)
    segments: np.ndarray | None = None
    unfit: np.ndarray | None = None
    # issue 29: compute/memory.memory_bytes' parts and base._memory's largest per-GPU batch
    # (NaN: none) of every row, where the memory came from one :func:`memory_total` call
    memory_parts: dict[str, np.ndarray] | None = None
    max_batch: np.ndarray | None = None
    # the rows whose numbers are the per-point path's to the last bit (compute/vector/rows.brief_rows)
    brief_rows: np.ndarray | None = None
    # where not its registered strategy's (ParaDL's tool: compute/vector/paradl.py): the rows'
    # details as (each row's index, the dicts), and who words its own limit codes
    # (``limit_fields``, ``limits(ctx, cfg, codes hit)``; rows.py)
    details: tuple[np.ndarray, tuple[dict, ...]] | None = None
    wording: object | None = None
    # --overlap buckets: the communication seconds per epoch hidden behind computation
    # (base.overlap_details' hidden_s) of every row, and what finish makes of it there:
    # communication_total_s and overlap_ratio (None: the strategy reports no overlap)
    hidden_s: np.ndarray | None = None
    overlap: dict[str, np.ndarray] | None = None

    @property
    def size(self) -> int:
        return int(self.gpus.size)

    def total(self) -> np.ndarray:
        """compute + communication + input, summed as Point.total_s sums them."""
        parts = []
        for part in ("compute", "communication"):
            names = phase_names(part)
            acc = self.phases[names[0]]
            for n in names[1:]:
                acc = acc + self.phases[n]
            parts.append(acc)
        return parts[0] + parts[1] + self.phases["input_s"]

    def feasible(self) -> np.ndarray:
        bad = np.zeros(self.size, dtype=bool)
        for _, mask in self.codes:
            bad |= mask
        if self.unfit is not None:
            bad |= self.unfit
        for i, pt in self.points.items():
            bad[i] = not pt.feasible
        return ~bad

    def limit_codes(self, i: int) -> tuple[str, ...]:
        if i in self.points:
            return tuple(lim.code for lim in self.points[i].limits)
        return tuple(code for code, mask in self.codes if mask[i])

    def take(self, rows: np.ndarray, points: list, keep: bool = True) -> None:
        """Take the per-point path's points for ``rows``: their phases and memory, and the
        points themselves (``keep``) or only whether they are feasible (the output's are
        built again: compute/vector/run.materialize)."""
        if not keep and self.unfit is None:
            self.unfit = np.zeros(self.size, dtype=bool)
        for r, pt in zip(rows.tolist(), points):
            for name, v in pt.breakdown.as_dict().items():
                self.phases[name][r] = v
            self.memory[r] = pt.memory_bytes
            if keep:
                self.points[r] = pt
            elif not pt.feasible:
                self.unfit[r] = True


# compute/memory.paradl_memory's and framework_memory's parts, in their order
PARADL_PARTS = ("activations_bytes", "weights_bytes", "gradients_bytes", "optimizer_bytes", "workspace_bytes")
FRAMEWORK_PARTS = ("activations_bytes", "transient_bytes", "weights_bytes", "gradients_bytes", "optimizer_bytes",
                   "buffers_bytes", "allocator_bytes", "workspace_bytes", "cuda_context_bytes")  # fmt: skip


def memory_total(ctx, activations, weights, data_group, split_samples, split=None, rest_samples=0.0,
                 extra_elements=0.0, stats=None, into: Columns | None = None) -> np.ndarray:  # fmt: skip
    """Bytes per GPU of compute/memory.MemoryParts with these fields (arrays or numbers):
    compute/memory.memory_bytes and base._memory's sum of its parts, in their order.
    ``stats``: context.mask_stats of the split given per entry (pipeline stages);
    ``into``: the columns (one entry per row) that keep the parts and the largest batch."""
    o = ctx.options
    n = np.maximum(data_group, 1)
    zo, zg, zw = (n if o.zero >= k else 1 for k in (1, 2, 3))
    master = 4 if o.mixed_precision else 0
    if o.memory_model == PARADL:  # ParaDL Table 3, memory.paradl_memory
        g = ctx.gamma
        act = g * ctx.delta * activations
        parts = [act, g * ctx.delta * weights / zw, g * ctx.grad_delta * weights / zg,
                 g * (OPTIMIZER_BYTES[o.optimizer] + master) * weights / zo, ctx.system.gpu_workspace_bytes]  # fmt: skip
        return _kept(ctx, into, PARADL_PARTS, parts, act)
    fw = ctx.system.framework  # memory.framework_memory: the framework model
    s_in, s_out, peak = ctx.mask_stats(split) if stats is None else stats
    act = split_samples * s_in + rest_samples * s_out + ctx.delta * extra_elements  # held activations
    if stats is None:  # context.transient_bytes
        trans = excess_bytes(peak, split_samples, rest_samples)
    else:  # pipeline stages (context.stage_stats): each stage's bytes per sample, its layers at split_samples
        trans = split_samples * peak
    grads = 1.0 * ctx.grad_delta * weights / zg
    parts = [act, trans, 1.0 * ctx.delta * weights / zw, grads, 1.0 * (OPTIMIZER_BYTES[o.optimizer] + master) * weights / zo]
    bucket = fw.gradient_bucket_copy and o.zero == 0
    parts.append(np.where((data_group > 1) & bucket, grads, 0.0))
    parts.append(fw.allocator_overhead * _sum(parts))
    if ctx.system.gpu_workspace_bytes:
        parts += [ctx.system.gpu_workspace_bytes, 0.0]
    else:
        parts += [fw.workspace_bytes, fw.cuda_context_bytes]
    return _kept(ctx, into, FRAMEWORK_PARTS, parts, (act + trans) * (1.0 + fw.allocator_overhead))


def _kept(ctx, into: Columns | None, names: tuple[str, ...], parts: list, grow) -> np.ndarray:
    """The parts' sum; with ``into``, the parts and base._memory's largest per-GPU batch
    B/p that fits (memory is affine in the batch: the ``grow`` bytes scale with it)."""
    total = _sum(parts)
    if into is None:
        return total
    n = into.size
    into.memory_parts = {k: np.broadcast_to(np.asarray(v, dtype=float), (n,)) for k, v in zip(names, parts)}
    grow = np.broadcast_to(np.asarray(grow, dtype=float), (n,))
    scale = np.where(grow > 0, (ctx.system.gpu_memory_bytes - (total - grow)) / grow, np.inf)
    fits = np.isfinite(scale) & (into.batch > 0) & (into.gpus > 0)
    into.max_batch = np.where(fits, np.maximum(0.0, np.floor(scale * into.batch / into.gpus * (1 + 1e-12))), np.nan)
    into.brief_rows = np.ones(n, dtype=bool)  # its kinds repeat the per-point operations in their order
    return total


def per_value(ctx, fn, x: np.ndarray) -> np.ndarray:
    """fn(x) of every entry, called once per distinct value (a cached scalar function
    of few values: the context's layer sums at a per-GPU batch); once for all entries
    where the context's times are the same at every batch (no conversion:
    Context.times_at gives the profile's own)."""
    if ctx.conversion is None and x.size:
        return np.full(x.shape, fn(float(x.flat[0])), dtype=float)
    u, inv = np.unique(x, return_inverse=True)
    return np.array([fn(float(v)) for v in u], dtype=float)[inv.reshape(x.shape)]


def unique_pairs(q: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (q, b) pairs (GPU counts, samples), sorted by q then b, and each
    entry's index among them: np.unique(axis=1)'s answer at a numeric sort's cost."""
    q, b = np.asarray(q).astype(np.int64).reshape(-1), np.asarray(b, dtype=float).reshape(-1)
    order = np.lexsort((b, q))
    qs, bs = q[order], b[order]
    new = np.ones(q.size, dtype=bool)
    new[1:] = (qs[1:] != qs[:-1]) | (bs[1:] != bs[:-1])
    inv = np.empty(q.size, dtype=np.int64)
    inv[order] = np.cumsum(new) - 1
    return qs[new], bs[new], inv


def split_compute(ctx, sums, samples, q, iterations, batch) -> np.ndarray:
    """context.split_compute of every entry: samples·Σs(FW+BW)·(f + (1-f)/q) + I·n_s·o."""
    impl = ctx.system.implementation
    f = np.where(q > 1, impl.split_serial_fraction, 0.0)
    fb_s = per_value(ctx, lambda b: ctx.fb_sum(b, sums, "s"), batch)
    t = samples * fb_s * (f + (1.0 - f) / q)
    if impl.split_overhead_s:
        t = np.where(q > 1, t + iterations * int(sums.mask.sum()) * impl.split_overhead_s, t)
    return t


def _sum(values):
    """As Python's sum(): 0 + a + b + ... left to right."""
    total = 0
    for v in values:
        total = total + v
    return total


def _grow_total(overlap: dict, after: np.ndarray, before: np.ndarray) -> None:
    """base._grow_total per entry, where the exposed exchange changed."""
    grew = after != before
    total, ratio = overlap["communication_total_s"], overlap["overlap_ratio"]
    hidden = ratio * total
    new = total + (after - before)
    overlap["communication_total_s"] = np.where(grew, new, total)
    overlap["overlap_ratio"] = np.where(grew, np.where(new > 0, hidden / np.where(new > 0, new, 1.0), 0.0), ratio)


def finish(ctx, cols: Columns, limits: list[tuple[str, np.ndarray]]) -> Columns:
    """make_point's tail for every entry (the overlap's totals of the strategy's
    breakdown first, as its evaluate reports them: Columns.overlap): ZeRO-3, then the limits in make_point's order
    (system size first, the strategy's, the batch's, dataset, overflow, GPU memory); the stack's
    per-GPU costs after ZeRO-3 (compute/vector/stack.py), then the input pipeline's
    stall (compute/vector/io.py)."""
    system = ctx.system
    ph = cols.phases
    if cols.hidden_s is not None:  # base.overlap_details, before make_point: the strategy's exposed part
        names = phase_names("communication")
        total = functools.reduce(np.add, [ph[n] for n in names[1:]], ph[names[0]]) + cols.hidden_s  # Breakdown's sum
        ratio = np.where(total > 0, cols.hidden_s / np.where(total > 0, total, 1.0), 0.0)
        cols.overlap = {"communication_total_s": total, "overlap_ratio": ratio}
    exchange = ph["gradient_exchange_s"]
    if ctx.options.zero >= 3:  # Rajbhandari et al., SC 2020, §7.2: 1.5x the all-reduce volume
        ge = ph["gradient_exchange_s"]
        ph["gradient_exchange_s"] = np.where((ge != 0) | np.isnan(ge), 1.5 * ge, ge)
    per_iteration(ctx, cols)
    if cols.overlap is not None:  # base._grow_total: ZeRO-3's extra and a stack's cycle wait, never hidden
        _grow_total(cols.overlap, ph["gradient_exchange_s"], exchange)
    with_input(ctx, cols)
    codes = [("gpus", cols.gpus > system.total_gpus), *limits, ("batch", _sample_mask(cols, limits)),
             ("dataset", cols.batch > ctx.D)]  # fmt: skip
    values = np.stack([np.broadcast_to(np.asarray(v, dtype=float), (cols.size,)) for v in ph.values()])
    nan = np.isnan(values)
    over = np.isinf(values).any(axis=0) | np.isinf(cols.memory) | (nan.any(axis=0) & ~nan.all(axis=0))
    codes.append(("overflow", over))
    codes.append(("memory", ~np.isnan(cols.memory) & (cols.memory > system.gpu_memory_bytes)))
    cols.codes = codes
    return cols


def _sample_mask(cols: Columns, limits: list[tuple[str, np.ndarray]]) -> np.ndarray:
    """base.shared_batch_limit per entry: a global batch below one sample or not a whole
    number of them, where the strategy's own limits do not already say it is too small."""
    B = cols.batch
    own = np.zeros(cols.size, dtype=bool)
    for code, mask in limits:
        if code == "batch":
            own |= mask
    return ((B < 1) | (np.abs(B - np.round(B)) > WHOLE_BATCH_RTOL * B)) & ~own
