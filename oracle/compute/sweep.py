"""A sweep: every requested strategy at every GPU count, ranked per GPU count.

Ranking (docs/cli.md): feasible points of the same GPU count ordered by total time
(rank 1 = fastest); infeasible points have no rank and keep their reasons.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from oracle.compute.context import Context, Options
from oracle.compute.cost import Point
from oracle.compute.paradl import paradl_stack
from oracle.compute.strategies import REGISTRY, names
from oracle.compute.strategies.base import Config, no_factorization
from oracle.compute.strategies.data import Data
from oracle.errors import OracleError, did_you_mean
from oracle.model import LayerTimes, Model, System


def parse_strategies(spec: str | Sequence[str] | None) -> tuple[list[str], bool]:
    """Strategy names from 'all', 'data,filter' or a list; also whether the list was
    explicit.  With 'all', 1 GPU lists only serial (every strategy degenerates to it)
    and serial is not listed at more GPUs."""
    if spec is None or spec == "all" or (not isinstance(spec, str) and list(spec) == ["all"]):
        return list(names()), False
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    chosen: list[str] = []
    for raw in items:
        name = str(raw).strip().lower()
        if not name:
            continue
        if name == "all":
            for n in names():
                if n not in chosen:
                    chosen.append(n)
            continue
        if name not in REGISTRY:
            hint = did_you_mean(name, names()) or "strategies: " + ", ".join(names()) + ", all"
            raise OracleError(f"unknown strategy '{raw}'", path="--strategy", hint=hint)
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise OracleError("no strategy given", path="--strategy", hint="e.g. data,filter or all")
    return chosen, True


def sweep(
    model: Model,
    system: System,
    times: tuple[LayerTimes, ...],
    gpus: Iterable[int],
    strategies: str | Sequence[str] | None = "all",
    *,
    batch: float | None = None,
    batch_per_gpu: float | None = None,
    p2: int | None = None,
    options: Options | None = None,
    profile_kind: str = "",
    conversion=None,
    top: int | None = None,
    brief: bool = False,
    stream: bool = False,
):
    """Evaluate and rank.  Exactly one of ``batch`` (strong scaling, B fixed) and
    ``batch_per_gpu`` (weak scaling, B = b·p) must be given.  ``top``: only the first
    ``top`` points of every GPU count (issue 29: the rest are evaluated in arrays, never
    built as points).  ``brief``: points with only the details a CSV row shows
    (compute/vector/run.materialize).  Returns the points, or with ``stream`` an
    iterator of the points of successive runs of GPU counts (compute/engine.chunks),
    one run held at a time."""
    options = options or Options()  # valid by construction (compute/options.check_options)
    chosen, explicit, counts = check_request(gpus, strategies, batch, batch_per_gpu, p2, options, top, stream)
    ctx = Context(model, system, times, options, profile_kind, conversion=conversion)
    if stream:
        return _streamed(ctx, counts, chosen, explicit, batch, batch_per_gpu, p2, top, brief)
    return _sweep(ctx, counts, chosen, explicit, batch, batch_per_gpu, p2, top, brief)


def _streamed(ctx, counts, chosen, explicit, *args) -> Iterator[list[Point]]:
    from oracle.compute.engine import chunks, prepare

    prepare(ctx, counts, chosen)  # every count's partitions at once, as one sweep's
    for part in chunks(counts, chosen, explicit, args[2], args[3]):  # args: batch, batch_per_gpu, p2, top, brief
        yield _sweep(ctx, part, chosen, explicit, *args)


def check_request(gpus, strategies, batch, batch_per_gpu, p2, options: Options, top: int | None = None,
                  streamed: bool = False) -> tuple[list[str], bool, list[int]]:  # fmt: skip
    """The checks of :func:`sweep` before anything is evaluated (also for oracle sweep's
    cases, before any output): the strategies, whether they were explicit, the counts;
    the memory of the points built (``top`` per count; the rest evaluated in arrays,
    compute/vector, or point by point keeping only their numbers; ``streamed``: of the
    largest run of counts evaluated at once)."""
    chosen, explicit = parse_strategies(strategies)
    if options.replicated_gradients and Data.name not in chosen:  # issue 18: Lee et al. replicate within data parallelism
        raise OracleError("applies to data parallelism, which --strategy leaves out",
                          path="--replicated-gradients", hint="add data to --strategy, or leave the option out")  # fmt: skip
    if (batch is None) == (batch_per_gpu is None):
        raise OracleError(
            "give exactly one of --batch (global mini-batch, strong scaling) and"
            " --batch-per-gpu (weak scaling)"
        )
    for label, value in (("--batch", batch), ("--batch-per-gpu", batch_per_gpu)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise OracleError(f"got {value}; expected a positive number", path=label)
    if p2 is not None and p2 < 1:
        raise OracleError(f"got {p2}; expected p2 >= 1", path="--p2")
    counts = sorted(set(int(g) for g in gpus))
    if not counts:
        raise OracleError("no GPU counts given", path="--gpus")
    if counts[0] < 1:
        raise OracleError(f"got {counts[0]}; GPU counts must be >= 1", path="--gpus")
    from oracle.compute.engine import check_memory

    check_memory(counts, chosen, explicit, p2, top, streamed)  # issue 29: a request's output must fit in memory
    return chosen, explicit, counts


def _sweep(ctx, counts, chosen, explicit, batch, batch_per_gpu, p2, top=None, brief=False) -> list[Point]:
    """Every configuration evaluated in arrays (compute/vector; per point where a strategy
    or option is not covered there), ranked, and the points output built."""
    from oracle.compute.engine import prepare
    from oracle.compute.vector import run

    prepare(ctx, counts, chosen)  # issue 29: per-count work for every count at once
    if top is None and not brief:  # every point is built in full: the arrays would only add their own cost
        out: list[Point] = []
        for p in counts:
            B = float(batch) if batch is not None else float(batch_per_gpu) * p
            out.extend(rank(evaluate_all(ctx, configurations(ctx, p, B, chosen, explicit, p2))))
        return out
    cols = run.columns(ctx, counts, chosen, explicit, batch, batch_per_gpu, p2, keep=top is None)
    return run.materialize(ctx, cols, run.ranked(cols, top), brief)


def configurations(
    ctx: Context, p: int, B: float, names: Sequence[str], explicit: bool = True, p2: int | None = None
) -> list[Config]:
    """Every configuration of the named strategies on p GPUs with global batch B (with
    'all', not ``explicit``: serial at 1 GPU only, the others from 2 GPUs; a named hybrid at
    a count with no factorization p1·p2, p1, p2 >= 2: one infeasible point saying so)."""
    out: list[Config] = []
    for name in names:
        strategy = REGISTRY[name]
        if not explicit and (strategy.one_gpu != (p == 1)):
            continue
        configs = strategy.configurations(ctx, p, B, p2)
        if explicit and strategy.hybrid and not configs:  # a hybrid named at a count it cannot factor:
            configs = [no_factorization(name, p, B)]      # one point says so (its limit)
        out += configs
    return out


def evaluate_all(ctx: Context, configs: Iterable[Config]) -> list[Point]:
    """The points of configurations, unranked: the one function through which predict,
    report and plot (the sweep) and search (its uniform strategies, compute/layerwise/search.py)
    cost a configuration, so that one configuration has one number (issue 23)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # overflowing inputs become the "overflow" limit of a point, not warnings
        return [evaluate(ctx, cfg) for cfg in configs]


def evaluate(ctx: Context, cfg: Config) -> Point:
    """One configuration's point, by its strategy's formulas or, where the run's stack says
    so, by ParaDL's own tool (issue 27, compute/paradl/paradl_stack.py); compare and calibration
    cost a measured run's configuration with it too."""
    if paradl_stack.uses_tool(ctx):
        point = paradl_stack.evaluate(ctx, cfg)
        if point is not None:
            return point
    return REGISTRY[cfg.strategy].evaluate(ctx, cfg)


def rank(group: list[Point]) -> list[Point]:
    """Rank the points of one GPU count: feasible by total time, then the rest."""
    if len(group) == 1:  # --top 1's output (compute/vector/run.materialize): nothing to sort
        (pt,) = group
        return [pt.with_rank(1 if pt.feasible else None)]
    order = {name: i for i, name in enumerate(names())}

    def key(pt: Point) -> tuple:
        total = pt.total_s
        return (
            not pt.feasible,
            math.isnan(total),
            total if not math.isnan(total) else 0.0,
            order.get(pt.strategy, 99),
            pt.p2,
        )

    ordered = sorted(group, key=key)
    out = []
    r = 0
    for pt in ordered:
        if pt.feasible:
            r += 1
            out.append(pt.with_rank(r))
        else:
            out.append(pt.with_rank(None))
    return out


def rank_runs(points: list) -> list:
    """:func:`rank` of each run of points of one GPU count (``points`` ordered by count) in
    one stable sort by the same keys (numpy's lexsort, as sorted() is stable: the same
    order and ranks, issue 29: a sweep's 10^6 rows); a compute/vector/rows.BriefRow,
    built for this output alone, takes its rank in place."""
    from oracle.compute.vector.rows import BriefRow

    n = len(points)
    if n == 0:
        return []
    order = {name: i for i, name in enumerate(names())}
    gpus = np.fromiter([pt.gpus for pt in points], np.int64, n)
    total = np.fromiter([pt.total_s for pt in points], float, n)
    feasible = np.fromiter([pt.feasible for pt in points], bool, n)
    strategy = np.fromiter([order.get(pt.strategy, 99) for pt in points], np.int64, n)
    nan = np.isnan(total)
    idx = np.lexsort((np.fromiter([pt.p2 for pt in points], np.int64, n), strategy, np.where(nan, 0.0, total), nan,
                      ~feasible, gpus))  # fmt: skip
    g, ok = gpus[idx], feasible[idx]
    start = np.maximum.accumulate(np.where(np.r_[True, g[1:] != g[:-1]], np.arange(n), 0))
    seen = np.cumsum(ok)
    ranks = np.where(ok, seen - np.r_[0, seen][start], 0).tolist()
    out = []
    for i, r in zip(idx.tolist(), ranks):
        pt = points[i]
        if type(pt) is BriefRow:
            pt.rank = r or None
            out.append(pt)
        else:
            out.append(pt.with_rank(r or None))
    return out

