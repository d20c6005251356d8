"""Output rows straight from the columns (issue 29: ``oracle sweep`` and ``predict -f
csv|json|markdown`` at 10^5-10^6 points): the rows of a strategy's columns whose numbers
are the per-point path's to the last bit (:attr:`Columns.brief_rows`) as one
:class:`Block` of Python lists, one entry per row, holding what a point's CSV row shows,
and a :class:`BriefRow` per row that ranks and groups as a
:class:`~oracle.compute.cost.Point` does (render/records.csv_cells renders either;
tests/test_brief_rows.py holds their cells equal); with the details the strategy tells
without evaluating (:func:`resolved`) a row is its point (:func:`points`, Markdown) or
its JSON (render/rows_json.py; tests/test_stream.py)."""

from __future__ import annotations

import math
from itertools import repeat

import numpy as np

from oracle.compute.cost import Breakdown, Limit, Point, phase_names
from oracle.compute.engine import per_context
from oracle.compute.strategies import REGISTRY
from oracle.compute.strategies.base import (
    OVERFLOW,
    Config,
    epoch_limit,
    gpus_limit,
    memory_reasons,
    sample_limit,
)
from oracle.compute.vector.columns import Columns


class Block:
    """Rows of one strategy's columns in ``ctx``: ``values`` by a Point's attribute names
    (lists; ``phases`` and ``memory`` dicts of lists, ``memory`` None where no parts were
    kept; ``limits`` each row's Limits; ``details`` each row's dict where the columns hold
    them, else None); ``cells``: a renderer's formatted rows, kept."""

    def __init__(self, values: dict, ctx=None) -> None:
        self.values, self.ctx = values, ctx
        self.cells: list | None = None


class BriefRow:
    """Row ``i`` of a :class:`Block`: the fields a sweep ranks, groups and plots by."""

    __slots__ = ("block", "i", "gpus", "strategy", "p2", "system", "total_s", "feasible", "rank")

    def __init__(self, block: Block, i: int, gpus: int, strategy: str, p2: int, system: str, total_s: float,
                 feasible: bool, rank: int | None = None) -> None:  # fmt: skip
        self.block, self.i, self.gpus, self.strategy, self.p2 = block, i, gpus, strategy, p2
        self.system, self.total_s, self.feasible, self.rank = system, total_s, feasible, rank

    def with_rank(self, rank: int | None) -> BriefRow:
        v = self.block, self.i, self.gpus, self.strategy, self.p2, self.system, self.total_s, self.feasible
        return BriefRow(*v, rank)


def brief_rows(ctx, c: Columns, rows: np.ndarray) -> list[BriefRow]:
    """Rows ``rows`` of ``c`` (among its ``brief_rows``) as make_point would finish them
    (Point's sums in its order: compute, communication, total, per iteration)."""
    from oracle.compute.stack import stack_name

    p, B = c.gpus[rows], c.batch[rows]
    ph = {k: v[rows] for k, v in c.phases.items()}
    compute, comm = (_in_order([ph[n] for n in phase_names(part)]) for part in ("compute", "communication"))
    total = compute + comm + ph["input_s"]
    with np.errstate(divide="ignore", invalid="ignore"):
        it = np.where(B > 0, ctx.D / np.where(B > 0, B, 1.0), np.nan)
        per_it = np.where(it > 0, total / np.where(it > 0, it, 1.0), np.nan)
    gpus, p1, p2, totals, batch = p.tolist(), c.p1[rows].tolist(), c.p2[rows].tolist(), total.tolist(), B.tolist()
    segments = [s or None for s in c.segments[rows].tolist()] if c.segments is not None else [None] * rows.size
    memory = c.memory[rows]
    limits: list = [()] * rows.size
    if c.codes:
        _reasons(ctx, c, rows, (gpus, p1, p2, batch, segments, memory), limits)
    told = None if c.details is None else [c.details[1][k] for k in c.details[0][rows].tolist()]
    values = {
        "model": ctx.model.name, "system": ctx.system.name, "strategy": c.strategy, "gpus": gpus,
        "p1": p1, "p2": p2, "global_batch": batch, "segments": segments,
        "iterations_per_epoch": it.tolist(), "compute_s": compute.tolist(), "communication_s": comm.tolist(),
        "total_s": totals, "iteration_s": per_it.tolist(), "memory_bytes": memory.tolist(),
        "feasible": [not lim for lim in limits], "phases": {k: v.tolist() for k, v in ph.items()},
        "limits": limits, "profile_kind": ctx.profile_kind, "memory_model": ctx.memory_model,
        "max_batch_per_gpu": [None if math.isnan(x) else x for x in c.max_batch[rows].tolist()]
        if c.max_batch is not None else [None] * rows.size,
        "memory": {k: v[rows].tolist() for k, v in c.memory_parts.items()} if c.memory_parts is not None else None,
        "compute_conversion": _labels(ctx, batch, gpus),
        "overlap": {k: v[rows].tolist() for k, v in c.overlap.items()} if c.overlap is not None else None,
        "stack": stack_name(ctx.options), "details": told,
    }  # fmt: skip
    block, n = Block(values, ctx), rows.size
    return list(map(BriefRow, repeat(block, n), range(n), gpus, repeat(c.strategy, n), p2, repeat(ctx.system.name, n),
                    totals, values["feasible"]))  # fmt: skip


def _labels(ctx, batch: list, gpus: list) -> list[str]:
    """make_point's compute conversion of each row, once per per-GPU batch B/p."""
    seen: dict = {}
    out = []
    for b, g in zip(batch, gpus):
        x = b / g if g > 0 else None
        if x not in seen:
            seen[x] = ctx.conversion_label(x) if x is not None else ""
        out.append(seen[x])
    return out


def _in_order(values: list) -> np.ndarray:
    """Left to right, as compute/cost._sum adds a point's phases."""
    total = values[0]
    for v in values[1:]:
        total = total + v
    return total


_FIELDS = ("gpus", "p1", "p2", "batch", "segments")  # a Config's after its strategy, as _reasons gets them


def _reasons(ctx, c: Columns, rows: np.ndarray, fields: tuple, limits: list) -> None:
    """Each infeasible row's reasons into ``limits``, make_point's in its order (the
    system's size, the strategy's own (its ``limits``), the dataset, overflow, GPU
    memory), rows grouped by the codes they hit: the strategy's own limits asked only
    where the columns flag one of its codes, the batch's and the dataset's where they flag
    them; each reason worded once per the values it reads (:class:`_Texts`).  The codes are
    columns.finish's: the system's size, the strategy's own, the batch, the dataset, overflow, memory."""
    codes, n = [code for code, _ in c.codes], len(c.codes)
    hits = np.stack([mask[rows] for _, mask in c.codes], axis=1)
    pattern = hits.astype(np.int64) @ (np.int64(1) << np.arange(n, dtype=np.int64))
    bad, texts = np.flatnonzero(pattern), _Texts(ctx, c.strategy, fields, c.wording)
    for pat in sorted(set(pattern[bad].tolist())):  # np.unique would import numpy.ma (~14 ms)
        hit = [bool(pat >> j & 1) for j in range(n)]
        at = bad[pattern[bad] == pat]
        ats = at.tolist()
        own = [k for k, h in zip(codes[1:-4], hit[1:-4]) if h]
        parts = [texts.gpus(ats) if hit[0] else None, texts.own(own, ats), texts.samples(ats) if hit[-4] else None,
                 texts.dataset(ats) if hit[-3] else None, [(OVERFLOW,)] * len(ats) if hit[-2] else None,
                 texts.memory(at) if hit[-1] else None]  # fmt: skip
        joined: list = [()] * len(ats)
        for part in parts:
            if part is not None:
                joined = [a + b for a, b in zip(joined, part)]
        for i, reasons in zip(ats, joined):
            limits[i] = reasons


class _Texts:
    """The limits of a block's rows (``fields``: gpus, p1, p2, batch, segments as lists,
    then memory as an array), each as a tuple of Limits: the system's size once per
    GPU count, the dataset's once per batch, the strategy's own once per the values of
    the Config fields its hit codes read (Strategy.limit_fields; all of them where
    undeclared), each in the context's :func:`_worded` (every block of a sweep's case);
    GPU memory's of every row at once (base.memory_reasons); ``wording``: Columns.wording."""

    def __init__(self, ctx, strategy: str, fields: tuple, wording=None) -> None:
        self.ctx, self.strategy, self.fields, self.memory_bytes = ctx, strategy, fields[:-1], fields[-1]
        self.wording = wording

    def _by(self, kind: tuple, column: list, at: list, word) -> list:
        seen = _worded(self.ctx, kind)
        for value in {column[i] for i in at}.difference(seen):
            seen[value] = word(value)
        return [seen[column[i]] for i in at]

    def gpus(self, at: list) -> list:
        return self._by(("gpus",), self.fields[0], at, lambda g: (gpus_limit(self.ctx.system, g),))

    def samples(self, at: list) -> list:
        return self._by(("samples",), self.fields[3], at, lambda b: tuple(sample_limit(b)))

    def dataset(self, at: list) -> list:
        return self._by(("dataset",), self.fields[3], at, lambda b: tuple(epoch_limit(self.ctx, b)))

    def memory(self, at: np.ndarray) -> list:
        return [(Limit("memory", text),) for text in memory_reasons(self.ctx.system, self.memory_bytes[at].tolist())]

    def own(self, own: list, at: list) -> list | None:
        if not own:
            return None
        strategy, wording = REGISTRY[self.strategy], self.wording
        declared = (wording or strategy).limit_fields
        used = range(len(_FIELDS))  # a code not declared: the reasons read every field
        if all(k in declared for k in own):
            used = [j for j, f in enumerate(_FIELDS) if any(f in declared[k] for k in own)]
        keys = list(zip(*([self.fields[j][i] for i in at] for j in used)) if used else repeat((), len(at)))
        seen = _worded(self.ctx, (self.strategy, *own))  # one wording per strategy in a context
        out = list(map(seen.get, keys))
        for j in [j for j, reasons in enumerate(out) if reasons is None]:  # not worded yet
            if keys[j] not in seen:
                cfg = Config(self.strategy, *(column[at[j]] for column in self.fields))
                found = wording.limits(self.ctx, cfg, own) if wording else strategy.limits(self.ctx, cfg)
                seen[keys[j]] = tuple(found)
            out[j] = seen[keys[j]]
        return out


@per_context
def _worded(ctx, kind: tuple) -> dict:
    """The limits of ``kind`` (a shared code; a strategy and its own codes) worded so far
    in ``ctx``, by the values they read: filled by :class:`_Texts` (issue 29: a sweep's
    case words a reason once, not once per run of counts)."""
    return {}


def points(items: list) -> list:
    """``items`` with each BriefRow as the per-point path's Point of its row at its rank
    (issue 29: JSON and Markdown of the arrays' rows, a run of GPU counts at a time):
    built from its block's values and the strategy's details (Strategy.brief_details),
    or evaluated (compute/sweep.evaluate_all) where those cannot be told without it."""
    out = list(items)
    blocks: dict = {}
    for j, it in enumerate(items):
        if type(it) is BriefRow:
            blocks.setdefault(id(it.block), []).append(j)
    for js in blocks.values():
        rows = [items[j] for j in js]
        for j, row, got in zip(js, rows, resolved(rows)):
            out[j] = _point(row.block.values, row.i, got, row.rank) if type(got) is dict else got
    return out


def resolved(rows: list[BriefRow]) -> list:
    """Each of ``rows`` (of one block) as the details evaluate gives its configuration
    (the columns' where they hold them (ParaDL's tool), else Strategy.brief_details; with
    --overlap, the columns' communication_total_s and overlap_ratio after them where the
    strategy reports them), or where those cannot be told without evaluating it, its point
    at its rank (compute/sweep.evaluate_all)."""
    from oracle.compute.sweep import evaluate_all

    v, ctx = rows[0].block.values, rows[0].block.ctx
    if v["details"] is not None:  # the columns hold them (Columns.details)
        return [v["details"][r.i] for r in rows]
    strategy = REGISTRY[v["strategy"]]
    fields = [v[k] for k in ("gpus", "p1", "p2", "global_batch", "segments")]
    configs = [Config(v["strategy"], *(f[r.i] for f in fields)) for r in rows]
    out = [strategy.brief_details(ctx, cfg) for cfg in configs]
    if ctx.options.overlap != "none" and strategy.reports_overlap:  # base.overlap_details' two, after the others
        hidden = v["overlap"]
        out = [None if hidden is None or d is None else {**d, **{k: col[r.i] for k, col in hidden.items()}}
               for r, d in zip(rows, out)]  # fmt: skip
    todo = [j for j, d in enumerate(out) if d is None]
    for j, pt in zip(todo, evaluate_all(ctx, [configs[j] for j in todo])):
        out[j] = pt.with_rank(rows[j].rank)
    return out


def _point(v: dict, i: int, details: dict, rank: int | None) -> Point:
    """Row ``i`` of a block's values as make_point finishes it: the strategy's details,
    then the memory parts and the largest batch where the block kept them."""
    if v["memory"] is not None:
        parts = {k: col[i] for k, col in v["memory"].items()}
        details = {**details, "memory": parts, "max_batch_per_gpu": v["max_batch_per_gpu"][i]}
    return Point(
        model=v["model"], system=v["system"], strategy=v["strategy"], gpus=v["gpus"][i], p1=v["p1"][i],
        p2=v["p2"][i], global_batch=v["global_batch"][i], segments=v["segments"][i],
        iterations_per_epoch=v["iterations_per_epoch"][i],
        breakdown=Breakdown(**{k: col[i] for k, col in v["phases"].items()}), memory_bytes=v["memory_bytes"][i],
        limits=v["limits"][i], rank=rank, details=tuple(details.items()), profile_kind=v["profile_kind"],
        memory_model=v["memory_model"], compute_conversion=v["compute_conversion"][i], stack=v["stack"],
    )  # fmt: skip
