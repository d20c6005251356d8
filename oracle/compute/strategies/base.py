"""What every strategy shares: its configuration, the registry, and the checks common
to all points (GPU count of the system, GPU memory)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import NAN_BREAKDOWN, Breakdown, Limit, Point
from oracle.compute.memory import MemoryParts, memory_bytes
from oracle.compute.stack import stack_name, with_stack_costs
from oracle.units import fmt_gb


@dataclass(frozen=True)
class Config:
    """One configuration to evaluate."""

    strategy: str
    gpus: int  # p
    p1: int  # data-parallel part (hybrids); p for data; 1 for model-parallel
    p2: int  # model-parallel part (hybrids); p for model-parallel; 1 for data
    batch: float  # global mini-batch B
    segments: int | None = None  # pipeline S


class Strategy:
    """A parallelization strategy: which configurations exist for p GPUs, and the cost
    of one.  Subclasses implement :meth:`evaluate`; hybrids override
    :meth:`configurations` to list factorizations."""

    name: str = ""
    hybrid: bool = False
    description: str = ""
    loading: str = "leader"  # who reads the input: every_gpu, leader, per_group (compute/io.py)

    def configurations(
        self, ctx: Context, p: int, batch: float, p2: int | None = None
    ) -> list[Config]:
        return [Config(self.name, p, *self.parts(p), batch)]

    def parts(self, p: int) -> tuple[int, int]:
        """(p1, p2) of a non-hybrid strategy on p GPUs."""
        return (p, 1)

    def evaluate(self, ctx: Context, cfg: Config) -> Point:  # pragma: no cover - abstract
        raise NotImplementedError


REGISTRY: dict[str, Strategy] = {}


def register(cls: type[Strategy]) -> type[Strategy]:
    REGISTRY[cls.name] = cls()
    return cls


def hybrid_configurations(
    name: str, p: int, batch: float, p2: int | None
) -> list[Config]:
    """Factorizations p = p1·p2 of a hybrid.  Without ``p2``: every factorization with
    p1, p2 >= 2 (p1 = 1 or p2 = 1 are the plain strategies, listed under their own
    names).  With ``p2``: that one, infeasible if p2 does not divide p."""
    if p2 is not None:
        return [Config(name, p, p // p2 if p % p2 == 0 else 0, p2, batch)]
    out = []
    for q in range(2, p // 2 + 1):
        if p % q == 0:
            out.append(Config(name, p, p // q, q, batch))
    return out


def make_point(
    ctx: Context,
    cfg: Config,
    breakdown: Breakdown,
    memory: MemoryParts | float,
    limits: list[Limit],
    details: dict | None = None,
) -> Point:
    """Finish a point: memory in bytes (:func:`memory_bytes`; the largest of several
    parts, e.g. pipeline stages), iterations I = D/B, ZeRO-3's extra communication, and
    the limits every strategy shares (system size, GPU memory)."""
    system = ctx.system
    details = dict(details or {})
    if isinstance(memory, MemoryParts):
        memory, details["memory"], details["max_batch_per_gpu"] = _memory(ctx, cfg, memory)
    if ctx.options.zero >= 3 and breakdown.gradient_exchange_s:
        # ZeRO-3 all-gathers the weights in forward and backward besides the gradient
        # reduce-scatter: 1.5x the all-reduce volume (Rajbhandari et al., SC 2020, §7.2)
        breakdown = replace(breakdown, gradient_exchange_s=1.5 * breakdown.gradient_exchange_s)
    if cfg.batch > 0:  # issue 25: the stack's per-GPU costs (none without a stack)
        breakdown = with_stack_costs(ctx.options, cfg.gpus, ctx.D / cfg.batch, len(ctx.model.layers), breakdown)
    if system.input is not None and cfg.batch > 0:
        breakdown = _with_input(ctx, cfg, breakdown)
    limits = list(limits) + epoch_limit(ctx, cfg.batch)
    if cfg.gpus > system.total_gpus:
        limits.insert(
            0,
            Limit("gpus", f"needs {cfg.gpus} GPUs; {system.name} has {system.total_gpus}"),
        )
    phases = breakdown.as_dict().values()
    if any(math.isinf(v) for v in phases) or math.isinf(memory) or (
        any(math.isnan(v) for v in phases) and not all(math.isnan(v) for v in phases)
    ):
        limits.append(
            Limit(
                "overflow",
                "the projection overflows the floating-point range: check the magnitudes"
                " of the inputs (times, α, β, sizes)",
            )
        )
    if not math.isnan(memory) and memory > system.gpu_memory_bytes:
        limits.append(
            Limit(
                "memory",
                f"needs {fmt_gb(memory)} of {fmt_gb(system.gpu_memory_bytes)} GPU memory",
            )
        )
    return Point(
        model=ctx.model.name,
        system=system.name,
        strategy=cfg.strategy,
        gpus=cfg.gpus,
        p1=cfg.p1,
        p2=cfg.p2,
        global_batch=cfg.batch,
        segments=cfg.segments,
        iterations_per_epoch=ctx.D / cfg.batch if cfg.batch > 0 else math.nan,
        breakdown=breakdown,
        memory_bytes=memory,
        limits=tuple(limits),
        details=tuple(details.items()),
        profile_kind=ctx.profile_kind,
        memory_model=ctx.memory_model,
        compute_conversion=ctx.conversion_label(cfg.batch / cfg.gpus) if cfg.gpus > 0 else "",
        stack=stack_name(ctx.options),
    )


def epoch_limit(ctx: Context, batch: float) -> list[Limit]:
    """A global batch larger than the dataset (fewer than one iteration per epoch;
    issue 13, docs/memory.md and docs/cost-model.md): I = D/B < 1 would charge a fraction of an iteration."""
    if batch > ctx.D:
        return [Limit("dataset", f"global batch B={batch:g} exceeds the {ctx.D:g} samples of the dataset"
                      " (fewer than one iteration per epoch)")]  # fmt: skip
    return []


def overlapped_gradients(
    ctx: Context,
    backward_s,
    grad_bytes,
    costs,
    kinds=None,
    tail_s: float = 0.0,
) -> tuple[float, float]:
    """(exposed, total) gradient-exchange seconds per iteration with --overlap buckets
    (compute/overlap.py: bucketed all-reduces on one channel during the backward)."""
    from oracle.compute.overlap import gradient_timeline

    o = ctx.options
    delayed = ctx.delayed_mask() if o.delayed_update else None
    forward = None
    if delayed is not None:  # per-layer forward on this GPU, in proportion to its backward
        with np.errstate(divide="ignore", invalid="ignore"):
            forward = np.where(ctx.bw > 0, np.asarray(backward_s) * ctx.fw / ctx.bw, 0.0)
    tl = gradient_timeline(backward_s, grad_bytes, costs, o.bucket_bytes or None, kinds, o.bucket_layers, delayed,
                           forward, tail_s)  # fmt: skip
    return tl.exposed_s, tl.total_s


def overlap_details(details: dict, breakdown: Breakdown, hidden_s: float) -> dict:
    """Report exposed next to total communication and the overlap ratio (Lee et al.
    eq. 11): the breakdown holds exposed times, so total = exposed + hidden."""
    exposed = breakdown.communication_s
    total = exposed + hidden_s
    details["communication_total_s"] = total
    details["overlap_ratio"] = (hidden_s / total) if total > 0 else 0.0
    return details


def _memory(ctx: Context, cfg: Config, memory: MemoryParts) -> tuple[float, dict, float | None]:
    """Bytes per GPU, their breakdown, and the largest per-GPU batch B/p that fits.
    Parts may hold one entry per pipeline stage (arrays): then the stage that needs the
    most, and the batch with which every stage fits.  Memory is affine in the batch:
    fixed + per_batch·(B'/B)."""
    d, grow = memory_bytes(ctx, memory)
    cap = ctx.system.gpu_memory_bytes
    if not any(np.ndim(v) for v in d.values()):  # one GPU's parts (scalars: the sweep's hot path)
        total = float(sum(d.values()))
        worst = d
        scale = (cap - (total - grow)) / grow if grow > 0 else math.inf
    else:
        n = max(int(np.size(v)) for v in d.values())
        stages = sum(np.broadcast_to(np.asarray(v, dtype=float), (n,)) for v in d.values())
        i = int(np.argmax(stages))
        total = float(stages[i])
        worst = {k: float(np.broadcast_to(np.asarray(v, dtype=float), (n,))[i]) for k, v in d.items()}
        g = np.broadcast_to(np.asarray(grow, dtype=float), (n,))
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = float(np.where(g > 0, (cap - (stages - g)) / g, np.inf).min())
    max_b = None
    if math.isfinite(scale) and cfg.batch > 0 and cfg.gpus > 0:
        max_b = max(0.0, math.floor(scale * cfg.batch / cfg.gpus * (1 + 1e-12)))
    return total, worst, max_b


def _with_input(ctx: Context, cfg: Config, bd: Breakdown) -> Breakdown:
    """Add the exposed input stall (docs/cost-model.md input pipeline, compute/io.py)."""
    from oracle.compute.io import exposed, input_time

    pipe = ctx.system.input
    assert pipe is not None
    kind = REGISTRY[cfg.strategy].loading
    t_io = input_time(
        pipe, kind, cfg.batch, cfg.gpus, max(cfg.p1, 1), cfg.p2, ctx.system.gpus_per_node,
        ctx.model.dataset_bytes_per_sample,
    )  # fmt: skip
    I = ctx.D / cfg.batch
    busy = (bd.compute_s + bd.communication_s) / I
    return replace(bd, input_s=I * exposed(pipe, t_io, busy))


def not_computable(ctx: Context, cfg: Config, limits: list[Limit]) -> Point:
    """A point whose numbers cannot be formed (e.g. more stages than layers)."""
    return make_point(ctx, cfg, NAN_BREAKDOWN, math.nan, limits)


def batch_limit(B: float, parts: int, what: str = "GPU") -> list[Limit]:
    """p <= B: at least one sample per GPU (or per data-parallel group)."""
    if parts > B:
        return [Limit("batch", f"fewer than one sample per {what}: B={B:g} over {parts}")]
    return []


def min_layer(ctx: Context, mask, values) -> tuple[int, str]:
    """The smallest value over the masked layers and the name of that layer."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return (0, "")
    k = int(idx[np.argmin(np.asarray(values)[idx])])
    return (int(values[k]), ctx.names[k])


Evaluator = Callable[[Context, Config], Point]
