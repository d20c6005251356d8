"""What every strategy shares: its configuration, the registry, and the checks common
to all points (GPU count of the system, GPU memory)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from oracle.compute.context import Context
from oracle.compute.cost import (
    PARTS,
    Breakdown,
    Limit,
    Phase,
    Point,
    declare_phase,
    forget_phase,
    phase_names,
)
from oracle.compute.memory import MemoryParts, memory_bytes
from oracle.compute.stack import stack_name, with_stack_costs
from oracle.units import fmt_g_apart, fmt_gb, fmt_gb_apart


@dataclass(frozen=True)
class Config:
    """One configuration to evaluate."""

    strategy: str
    gpus: int  # p
    p1: int  # data-parallel part (hybrids); p for data; 1 for model-parallel
    p2: int  # model-parallel part (hybrids); p for model-parallel; 1 for data
    batch: float  # global mini-batch B
    segments: int | None = None  # pipeline S


@dataclass(frozen=True)
class Style:
    """How plots draw a strategy: plain data, so that compute never imports matplotlib
    (oracle/render/plots.py reads it)."""

    colour: str  # "#RRGGBB"
    marker: str  # a matplotlib marker code


@dataclass(frozen=True)
class LayerwiseKind:
    """A strategy as a per-layer distribution (compute/layerwise/layerwise.py).  ``fill`` writes
    one distribution's column of every layer's costs (compute/layerwise/layerwise_build.Columns),
    called as fill(ctx, cols, reg, k, dist, B); ``grid``: p1 sample groups each split
    the layer over p2 GPUs, at every factorization p = p1·p2 (else all p GPUs split the
    samples, p1 = p, p2 = 1); ``default``: oracle search considers it unless
    --distributions says otherwise."""

    fill: Callable
    grid: bool = True
    default: bool = True


class Strategy:
    """A parallelization strategy, declared in one module: its name, its place in the
    order (--strategy all, tables, plots), the layers it splits, the breakdown phases
    it adds, its plot style, its hybrid parts and its per-layer distribution; which
    configurations exist for p GPUs and the cost of one.  Subclasses implement
    :meth:`evaluate`; hybrids override :meth:`configurations` to list factorizations.
    ``register`` adds a subclass to :data:`REGISTRY` (docs/development.md: how to add a
    strategy)."""

    name: str = ""
    order: float | None = None  # position among the strategies (smaller first); required
    description: str = ""
    hybrid_parts: tuple[str, str] | None = None  # (data part, model part) of a hybrid p = p1·p2
    one_gpu: bool = False  # runs on one GPU only (--strategy all lists it at 1 GPU, the others from 2)
    loading: str = "leader"  # who reads the input: every_gpu, leader, per_group (compute/io.py)
    phases: tuple[Phase, ...] = ()  # breakdown phases it adds to compute/cost.COMMON_PHASES
    style: Style = Style("#999999", "o")  # grey: declare a colour and marker of its own
    layerwise: LayerwiseKind | None = None  # None: no per-layer distribution
    limit_words: dict[str, str] = {}  # limit code it reports -> a few words for plot labels
    # limit code of :meth:`limits` -> the Config fields its reason reads (with the context):
    # compute/vector/rows.py words each reason once per their values (issue 29); undeclared: per row
    limit_fields: dict[str, tuple[str, ...]] = {}
    # with --overlap its details hold overlap_details' communication_total_s and overlap_ratio
    # (its gradient exchange in buckets, overlapped_gradients; compute/vector/rows.resolved)
    reports_overlap: bool = False

    @property
    def hybrid(self) -> bool:
        return self.hybrid_parts is not None

    def split_layers(self, ctx: Context) -> tuple[np.ndarray, np.ndarray | None]:
        """The layers this strategy splits (docs/cost-model.md "Split layers"), as a mask,
        and per split layer but the first the groups of the convolution that decide
        whether a gradient is a reduction (filter.py; None: dense).  Every layer by
        default; a hybrid's are its model part's.  Context.split(name) sums them once."""
        if self.hybrid_parts is not None:
            return REGISTRY[self.hybrid_parts[1]].split_layers(ctx)
        return np.ones(ctx.G, dtype=bool), None

    def configurations(
        self, ctx: Context, p: int, batch: float, p2: int | None = None
    ) -> list[Config]:
        return [Config(self.name, p, *self.parts(p), batch)]

    def parts(self, p: int) -> tuple[int, int]:
        """(p1, p2) of a non-hybrid strategy on p GPUs."""
        return (p, 1)

    def evaluate(self, ctx: Context, cfg: Config) -> Point:  # pragma: no cover - abstract
        raise NotImplementedError

    def brief_details(self, ctx: Context, cfg: Config) -> dict | None:
        """The details :meth:`evaluate` gives a configuration before make_point's (issue 29:
        compute/vector/rows.points and render/rows_json.py write a row of the arrays with
        them, less overlap_details' two: the rows hold those, :attr:`reports_overlap`); None:
        they cannot be told without evaluating it (the row's point is evaluated)."""
        return None


REGISTRY: dict[str, Strategy] = {}
_changes = [0]  # register/unregister count: what caches of the registry's contents key on


def changes() -> int:
    """How often the registry changed (a key for what is derived from it)."""
    return _changes[0]


def register(cls: type[Strategy]) -> type[Strategy]:
    """Class decorator: add a strategy to :data:`REGISTRY`, and the phases it declares
    to the breakdown.  Refuses a name --strategy could not select (empty, upper case,
    spaces or commas, 'all'), a name or phase registered already, and no order."""
    name = cls.name
    if not isinstance(name, str) or not name or name != name.strip().lower() or "," in name or name == "all":
        raise ValueError(f"{cls.__name__}: a strategy needs a name --strategy can select (lower case, no"
                         f" spaces or commas, not 'all'); got {name!r}")  # fmt: skip
    if name in REGISTRY:
        raise ValueError(f"strategy '{name}' is registered already (by {type(REGISTRY[name]).__qualname__})")
    if not isinstance(cls.order, (int, float)):
        raise ValueError(f"strategy '{name}' needs an order (a number: its place among the strategies)")
    own = vars(cls).get("phases", ())  # a subclass does not declare its parent's phases again
    taken = [ph.name for ph in own if ph.name in phase_names()]
    if taken or len({ph.name for ph in own}) < len(own):
        raise ValueError(f"strategy '{name}': phase {(taken or [own[0].name])[0]!r} is declared already")
    if any(ph.part not in PARTS for ph in own):
        raise ValueError(f"strategy '{name}': a phase's part is one of {', '.join(PARTS)}")
    for i, ph in enumerate(own):
        declare_phase(ph, (cls.order, name, i))
    REGISTRY[name] = cls()
    _changes[0] += 1
    return cls


def unregister(name: str) -> None:
    """Remove a strategy and the phases it declared (a test that adds a toy one)."""
    strategy = REGISTRY.pop(name)
    for ph in vars(type(strategy)).get("phases", ()):
        forget_phase(ph.name)
    _changes[0] += 1


def names() -> tuple[str, ...]:
    """The registered strategies in their order (what --strategy all evaluates)."""
    if _names.get("at") != changes():
        _names.update(at=changes(), names=tuple(sorted(REGISTRY, key=lambda n: (REGISTRY[n].order, n))))
    return _names["names"]


_names: dict = {}


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


def nccl_nodes_detail(ctx: Context, *collectives) -> dict:
    """``{"nccl_nodes": note}`` where NCCL's model costs one of a point's ``collectives``
    (network.Collective) over NVLink domains it fills unequally: what that assumed
    (compute/nccl.partial_domain_note, the one wording); else {}."""
    from oracle.compute.nccl import node_gpus, partial_domain_note
    from oracle.compute.network import nccl_costs

    system = ctx.system
    if node_gpus(system) <= system.gpus_per_node:  # an NVLink domain of one host: never partial
        return {}
    note = partial_domain_note(system, [(c.group, c.stride) for c in collectives if nccl_costs(system, c)])
    return {"nccl_nodes": note} if note else {}


def no_factorization(name: str, p: int, batch: float) -> Config:
    """The one point of a hybrid named at a GPU count with no factorization p = p1·p2, p1,
    p2 >= 2 (1, 2, a prime): infeasible, p1 = p2 = 0 (data_filter.factor_limit says why),
    so that the count does not vanish from what the user asked for (compute/sweep.configurations)."""
    return Config(name, p, 0, 0, batch)


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
    exchange = breakdown.gradient_exchange_s
    if ctx.options.zero >= 3 and breakdown.gradient_exchange_s:
        # ZeRO-3 all-gathers the weights in forward and backward besides the gradient
        # reduce-scatter: 1.5x the all-reduce volume (Rajbhandari et al., SC 2020, §7.2)
        breakdown = breakdown.replace(gradient_exchange_s=1.5 * breakdown.gradient_exchange_s)
    if cfg.batch > 0:  # issue 25: the stack's per-GPU costs (none without a stack)
        breakdown = with_stack_costs(ctx.options, cfg.gpus, ctx.D / cfg.batch, len(ctx.model.layers), breakdown,
                                     ctx.profile_kind == "estimated")  # fmt: skip
    if "communication_total_s" in details and breakdown.gradient_exchange_s != exchange:
        _grow_total(details, breakdown.gradient_exchange_s - exchange)
    if system.input is not None and cfg.batch > 0:
        breakdown = _with_input(ctx, cfg, breakdown)
    limits = list(limits) + shared_batch_limit(limits, cfg.batch) + epoch_limit(ctx, cfg.batch)
    if cfg.gpus > system.total_gpus:
        limits.insert(0, gpus_limit(system, cfg.gpus))
    phases = breakdown.as_dict().values()  # all finite, memory not inf: the common case, one pass
    if not (all(map(math.isfinite, phases)) and not math.isinf(memory)) and (
        any(math.isinf(v) for v in phases) or math.isinf(memory)
        or (any(math.isnan(v) for v in phases) and not all(math.isnan(v) for v in phases))
    ):  # fmt: skip
        limits.append(OVERFLOW)
    if not math.isnan(memory) and memory > system.gpu_memory_bytes:
        limits.append(memory_limit(system, memory))
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


OVERFLOW = Limit("overflow", "the projection overflows the floating-point range: check the magnitudes"
                 " of the inputs (times, α, β, sizes)")  # fmt: skip


def gpus_limit(system, gpus: int) -> Limit:
    """More GPUs than the system has."""
    return Limit("gpus", f"needs {gpus} GPUs; {system.name} has {system.total_gpus}")


def memory_limit(system, memory: float) -> Limit:
    """More bytes per GPU than a GPU holds."""
    return Limit("memory", memory_reasons(system, (memory,))[0])


def memory_reasons(system, memories) -> list[str]:
    """:func:`memory_limit`'s reason of each value, the GPU's size worded once (issue 29:
    a sweep's rows, compute/vector/rows.py), and again with more digits where a need just
    above it would read the same (units.fmt_gb_apart: not "needs 200 GB of 200 GB")."""
    cap = system.gpu_memory_bytes
    have = fmt_gb(cap)
    out = []
    for m in memories:
        need = fmt_gb(m)
        if need == have and m != cap:
            out.append("needs {} of {} GPU memory".format(*fmt_gb_apart(m, cap)))
        else:
            out.append(f"needs {need} of {have} GPU memory")
    return out


def epoch_limit(ctx: Context, batch: float) -> list[Limit]:
    """A global batch larger than the dataset (fewer than one iteration per epoch;
    issue 13, docs/memory.md and docs/cost-model.md): I = D/B < 1 would charge a fraction of an iteration."""
    if batch > ctx.D:
        shown, samples = fmt_g_apart(batch, ctx.D)
        return [Limit("dataset", f"global batch B={shown} exceeds the {samples} samples of the dataset"
                      " (fewer than one iteration per epoch)")]  # fmt: skip
    return []


# a weak-scaling batch b·p is whole when within this relative distance of an integer
# (0.1 x 30 is 3.0000000000000004 in binary floating point)
WHOLE_BATCH_RTOL = 1e-9


def sample_limit(batch: float) -> list[Limit]:
    """A global batch below one sample, or not a whole number of samples (weak scaling's
    B = b·p with a fractional b, e.g. 0.5 per GPU on 1 or 3 GPUs; docs/cost-model.md
    "Batches"): no iteration of every strategy holds it."""
    if batch < 1:
        return [Limit("batch", f"fewer than one sample per iteration: B={batch:g}")]
    if abs(batch - round(batch)) > WHOLE_BATCH_RTOL * batch:
        return [Limit("batch", f"B={batch:g} is not a whole number of samples")]
    return []


def shared_batch_limit(limits, batch: float) -> list[Limit]:
    """:func:`sample_limit`, unless the strategy's own limits already say the batch is too
    small ("fewer than one sample per GPU")."""
    return [] if any(lim.code == "batch" for lim in limits) else sample_limit(batch)


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


def _grow_total(details: dict, added_s: float) -> None:
    """overlap_details' total and ratio after ZeRO-3's extra volume and a stack's cycle wait
    (make_point) added ``added_s`` of exposed exchange: nothing of it hidden, so the total
    holds it too (exposed never exceeds the total)."""
    total = details["communication_total_s"]
    hidden = details["overlap_ratio"] * total
    details["communication_total_s"] = total = total + added_s
    details["overlap_ratio"] = (hidden / total) if total > 0 else 0.0


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
    # one GPU's parts (scalars: the sweep's hot path; isinstance, not np.ndim, which costs more than the rest)
    if not any(isinstance(v, np.ndarray) and v.ndim for v in d.values()):
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
        pipe, kind, cfg.batch, cfg.gpus, max(cfg.p1, 1), max(cfg.p2, 1), ctx.system.gpus_per_node,  # 0: no p1·p2
        ctx.model.dataset_bytes_per_sample,
    )  # fmt: skip
    I = ctx.D / cfg.batch
    busy = (bd.compute_s + bd.communication_s) / I
    return bd.replace(input_s=I * exposed(pipe, t_io, busy))


def not_computable(ctx: Context, cfg: Config, limits: list[Limit]) -> Point:
    """A point whose numbers cannot be formed (e.g. more stages than layers)."""
    return make_point(ctx, cfg, Breakdown.filled(math.nan), math.nan, limits)


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
