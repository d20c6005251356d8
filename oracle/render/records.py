"""Points as plain records: the JSON schema of docs/cli.md, flat CSV rows, DataFrames."""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import repeat

import numpy as np

from oracle.compute.cost import Point, phase_names
from oracle.compute.vector.rows import BriefRow
from oracle.render.jsontext import IndentedWriter
from oracle.textsafe import csv_cell


def _num(v: float) -> float | None:
    """A plain Python float (never a numpy scalar); JSON has no NaN, so a number that
    could not be computed is null."""
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def plain_value(v: object) -> object:
    """A detail in JSON's types: tuples as lists, a non-finite float as None."""
    if isinstance(v, tuple):
        return [plain_value(x) for x in v]
    if isinstance(v, float):
        return _num(v)
    return v


def point_to_dict(pt: Point, plain: Callable[[object], object] = plain_value) -> dict:
    """docs/cli.md keys (exactly those names), then extras; ``plain`` turns each detail
    into JSON's types (to_json passes tuples on as they are: its writer expands them once)."""
    return {
        "model": pt.model,
        "system": pt.system,
        "strategy": pt.strategy,
        "gpus": pt.gpus,
        "p1": pt.p1,
        "p2": pt.p2,
        "global_batch": int_if_whole(pt.global_batch),
        "segments": pt.segments,
        "iterations_per_epoch": _num(pt.iterations_per_epoch),
        "compute_s": _num(pt.compute_s),
        "communication_s": _num(pt.communication_s),
        "total_s": _num(pt.total_s),
        "iteration_s": _num(pt.iteration_s),
        "memory_bytes": _num(pt.memory_bytes),
        "feasible": pt.feasible,
        "limits": [lim.reason for lim in pt.limits],
        "rank": pt.rank,
        "breakdown": {k: _num(v) for k, v in pt.breakdown.as_dict().items()},
        # extras
        "limit_codes": [lim.code for lim in pt.limits],
        "profile_kind": pt.profile_kind,  # "estimated": a roofline estimate, not measured
        "memory_model": pt.memory_model,  # framework | paradl (docs/memory.md and docs/cost-model.md)
        "compute_conversion": pt.compute_conversion,  # issue 13: from -> to, or "" (ParaDL linear)
        "stack": pt.stack,  # issue 25: the software stack in force (oracle/stack.stack_label: none when none)
        "memory_breakdown": {k: _num(v) for k, v in (pt.detail("memory") or {}).items()} or None,
        "max_batch_per_gpu": _num(pt.detail("max_batch_per_gpu")),  # the largest that fits
        # with --overlap: communication_s is the exposed part; this is everything sent
        "communication_total_s": _num(pt.detail("communication_total_s", pt.communication_s)),
        "overlap_ratio": _num(pt.detail("overlap_ratio", 0.0)),
        "details": {k: plain(v) for k, v in pt.details if k not in TOP_DETAILS},
    }


TOP_DETAILS = ("memory", "communication_total_s", "overlap_ratio", "max_batch_per_gpu")
# memory_breakdown parts as CSV columns (framework model: all; ParaDL: the first five)
MEMORY_PARTS = (
    "activations_bytes",
    "transient_bytes",
    "weights_bytes",
    "gradients_bytes",
    "optimizer_bytes",
    "buffers_bytes",
    "allocator_bytes",
    "workspace_bytes",
    "cuda_context_bytes",
)


def int_if_whole(v: float) -> float | int | None:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return int(v) if isinstance(v, float) and v.is_integer() else v


def to_json(points: Sequence[Point]) -> str:
    """== json.dumps([point_to_dict(p) for p in points], indent=2, allow_nan=False) + "\n"."""
    return "".join(json_texts([points]))


def json_texts(runs: Iterable[Sequence]) -> Iterator[str]:
    """:func:`to_json`'s text of the points of successive runs (issue 29: a run of GPU
    counts at a time, its compute/vector/rows.BriefRow's made points there), a piece per
    run that has points, then the end."""
    from oracle.render.rows_json import item_texts

    writer = IndentedWriter(expand=plain_value)

    def write(pt: Point) -> str:
        return writer.write(point_to_dict(pt, plain=_keep_tuples), "  ")

    first = True
    for run in runs:
        if run:
            body = ",\n  ".join(item_texts(run, write))
            yield ("[\n  " if first else ",\n  ") + body
            first = False
    yield "[]\n" if first else "\n]\n"


def csv_texts(runs: Iterable[Sequence]) -> Iterator[str]:
    """:func:`to_csv`'s text: the header, then the lines of each run of points."""
    yield ",".join(csv_columns()) + "\n"
    for run in runs:
        yield csv_lines(run)


def _keep_tuples(v: object) -> object:
    return v if isinstance(v, tuple) else plain_value(v)


def csv_columns() -> list[str]:
    """The CSV header: the JSON fields flattened, every breakdown phase its own column."""
    return [*_CSV_HEAD, *phase_names(), *_CSV_TAIL]


_CSV_HEAD = [
    "model",
    "system",
    "strategy",
    "gpus",
    "p1",
    "p2",
    "global_batch",
    "segments",
    "iterations_per_epoch",
    "compute_s",
    "communication_s",
    "total_s",
    "iteration_s",
    "memory_bytes",
    "feasible",
    "rank",  # last: a block's rows are written around it (_block_cells)
]
_CSV_TAIL = [
    "limits",
    "profile_kind",
    "memory_model",
    "max_batch_per_gpu",
    *MEMORY_PARTS,
    "compute_conversion",
    "stack",
]


def to_rows(points: Sequence[Point]) -> list[dict]:
    rows = []
    head = [k for k in csv_columns() if k != "limits"]  # the columns a point's dict may hold
    for pt in points:
        d = point_to_dict(pt, plain=_keep_tuples)  # details are no column: not expanded
        row = {k: d[k] for k in head if k in d}
        row.update(d["breakdown"])
        row["limits"] = "; ".join(d["limits"])
        row["profile_kind"] = d["profile_kind"]
        row["memory_model"] = d["memory_model"]
        row["max_batch_per_gpu"] = d["max_batch_per_gpu"]
        row.update({k: (d["memory_breakdown"] or {}).get(k) for k in MEMORY_PARTS})
        row["compute_conversion"] = d["compute_conversion"]
        row["stack"] = d["stack"]
        rows.append(row)
    return rows


def to_csv(points: Sequence[Point]) -> str:
    return "".join(csv_texts([points]))  # the names need no quotes


def csv_lines(points, prefix: Sequence[str] = ()) -> str:
    """The CSV lines (csv.writer's) of points, each after the ``prefix`` cells (oracle
    sweep's case): a Point's by :func:`csv_cells`, a compute/vector/rows.BriefRow's
    joined from its block's cells, formatted once and quoted as the writer quotes (issue
    29; tests/test_brief_rows.py holds the lines of both equal)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    pre = [csv_cell(x) for x in prefix]
    head = "".join(_quoted(x) + "," for x in pre)
    write = buf.write
    blocks = {id(pt.block): pt.block for pt in points if type(pt) is BriefRow and pt.block.cells is None}
    for block, nums in zip(blocks.values(), float_columns([_block_floats(b.values) for b in blocks.values()])):
        block.cells = _block_cells(block.values, nums)
    for pt in points:
        if type(pt) is not BriefRow:
            writer.writerow(pre + csv_cells(pt) if pre else csv_cells(pt))
            continue
        left, right = pt.block.cells[pt.i]
        write(f"{head}{left},{'' if pt.rank is None else pt.rank},{right}\n")
    return buf.getvalue()


def csv_cells(pt: Point) -> list:
    """A point's CSV cells in :func:`csv_columns`' order: ``_cell`` of each value of
    :func:`to_rows`' row (issue 29: without building the row's dicts)."""
    nums = _nums
    memory = pt.detail("memory") or {}
    return [
        _text(pt.model), _text(pt.system), _text(pt.strategy), _cell(pt.gpus), _cell(pt.p1), _cell(pt.p2),
        _cell(int_if_whole(pt.global_batch)), _cell(pt.segments),
        *nums((pt.iterations_per_epoch, pt.compute_s, pt.communication_s, pt.total_s, pt.iteration_s,
               pt.memory_bytes)),
        _cell(pt.feasible), _cell(pt.rank), *nums(pt.breakdown.as_dict().values()),
        _text("; ".join(lim.reason for lim in pt.limits)), _text(pt.profile_kind), _text(pt.memory_model),
        *nums((pt.detail("max_batch_per_gpu"),)), *nums(memory.get(k) for k in MEMORY_PARTS),
        _text(pt.compute_conversion), _text(pt.stack),
    ]  # fmt: skip


def _block_floats(v: dict) -> list[list]:
    """The columns of floats of a block (compute/vector/rows.Block), in :func:`_block_cells`' order."""
    memory = v["memory"] or {}
    return [*(v[k] for k in _BLOCK_NUMS), *(v["phases"][k] for k in phase_names()), v["max_batch_per_gpu"],
            *(memory[k] for k in MEMORY_PARTS if k in memory)]  # fmt: skip


def _block_cells(v: dict, nums: list) -> list[tuple[str, str]]:
    """Every row of a block (compute/vector/rows.Block) as the text of its CSV cells
    before and after the rank (each row's own), written as :func:`csv_cells` and the
    writer write a Point's: column by column, each distinct value formatted once (a str:
    the same cell in every row; ``nums``: :func:`float_columns` of :func:`_block_floats`)."""
    from oracle.textsafe import csv_texts

    n = len(v["gpus"])
    memory = v["memory"] or {}
    parts = [k for k in MEMORY_PARTS if k in memory]
    part_cells = dict(zip(parts, nums[len(nums) - len(parts) :]))
    left = [_joined_const((v["model"], v["system"], v["strategy"])), *(list(map(str, v[k])) for k in ("gpus", "p1", "p2")),
            by_value(lambda b: str(_cell(int_if_whole(b))))(v["global_batch"]), by_value(lambda s: str(_cell(s)))(v["segments"]),
            *nums[: len(_BLOCK_NUMS)], by_value(str)(v["feasible"])]  # fmt: skip
    right = [*nums[len(_BLOCK_NUMS) : len(nums) - len(parts) - 1],
             _quoted_texts(csv_texts(["; ".join([lim.reason for lim in r]) for r in v["limits"]])),
             _joined_const((v["profile_kind"], v["memory_model"])), nums[len(nums) - len(parts) - 1],
             *(part_cells.get(k, "") for k in MEMORY_PARTS),
             by_value(lambda x: _quoted(_text(x)))(v["compute_conversion"]), _joined_const((v["stack"],))]  # fmt: skip
    return list(zip(_joined(left, n), _joined(right, n)))


_BLOCK_NUMS = ("iterations_per_epoch", "compute_s", "communication_s", "total_s", "iteration_s", "memory_bytes")


def _joined_const(values: tuple) -> str:
    """The cells of texts every row of a block shares, joined."""
    return ",".join(_quoted(_text(x)) for x in values)


def _joined(cols: list, n: int) -> list[str]:
    """The ``n`` rows of ``cols`` (lists of cells, or a str: every row's cell) joined by
    commas, adjacent shared cells joined once."""
    merged: list = []
    for col in cols:
        if type(col) is str and merged and type(merged[-1]) is str:
            merged[-1] += "," + col
        else:
            merged.append(col)
    if len(merged) == 1 and type(merged[0]) is str:
        return [merged[0]] * n
    return list(map(",".join, zip(*(repeat(c, n) if type(c) is str else c for c in merged))))


def by_value(fmt: Callable[[object], str]) -> Callable[[list], list]:
    """``fmt`` of each value of a column, once per distinct value (values equal as dict
    keys must have one text: not for floats, whose 0.0 and -0.0 differ; :func:`float_columns`)."""

    def column(values: list) -> list:
        seen = {x: fmt(x) for x in set(values)}
        return list(map(seen.__getitem__, values))

    return column


_QUOTED: dict[str, str] = {}
_SPECIAL = re.compile(r'[,"\r\n]')


def _quoted(s: object) -> str:
    """A cell's text as csv.writer writes it among others (quoted where it must be)."""
    if type(s) is not str:
        return str(s)
    if not _SPECIAL.search(s):  # no delimiter, quote or line break: written as it is
        return s
    hit = _QUOTED.get(s)
    if hit is None:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow([s, ""])  # not alone: an empty cell alone is quoted
        hit = buf.getvalue()[:-2]
        if len(_QUOTED) < 4096:
            _QUOTED[s] = hit
    return hit


def _quoted_texts(texts: list[str]) -> list[str]:
    """:func:`_quoted` of each text, with one search over them all."""
    if _SPECIAL.search("\t".join(texts)):  # a tab is written as it is
        return [_quoted(t) for t in texts]
    return texts


def _nums(values) -> list:
    """``_cell(_num(v))`` of each value: repr of a finite float, else empty (NaN compares false)."""
    return [repr(f) if v is not None and -math.inf < (f := float(v)) < math.inf else "" for v in values]


def float_columns(blocks: list[list[list]], empty: str = "") -> list[list]:
    """:func:`_nums` of each block's columns of floats (None: empty), each distinct value
    of them all (bit for bit: 0.0 and -0.0 differ) formatted once, in every block (issue
    29: a value recurs across the blocks of a sweep's run of counts); a column whose rows
    are all the same cell as that cell's str; ``empty``: the cell of a non-finite value."""
    arrays = [np.asarray(cols, dtype=float).reshape(len(cols), -1) for cols in blocks]  # exactly; None as NaN
    flat = np.concatenate([a.reshape(-1) for a in arrays]) if arrays else np.zeros(0)
    bits, inverse = np.unique(flat.view(np.int64), return_inverse=True)
    values = bits.view(float)
    finite = np.isfinite(values)
    texts = np.full(values.size, empty, dtype=object)
    texts[finite] = list(map(repr, values[finite].tolist()))  # empty where not finite
    out, start = [], 0
    for a in arrays:
        at = inverse.reshape(-1)[start : start + a.size].reshape(a.shape)
        start += a.size
        out.append([str(texts[r[0]]) if r.size and (r == r[0]).all() else texts[r].tolist() for r in at])
    return out


_TEXT: dict[str, object] = {}  # csv_cell of the few distinct texts of a sweep (names, labels)


def _text(v: str) -> object:
    hit = _TEXT.get(v)
    if hit is None:
        hit = _cell(v)
        if len(_TEXT) < 4096:
            _TEXT[v] = hit
    return hit


def _cell(v: object) -> object:
    kind = type(v)
    if kind is float:  # repr of a float is a number: csv_cell leaves it as it is
        return repr(v)
    if v is None:
        return ""
    if kind is int or kind is bool:  # csv_cell leaves what is not a str as it is
        return v
    return csv_cell("" if v is None else repr(v) if isinstance(v, float) else v)


def to_frame(points: Sequence[Point]):
    import pandas as pd

    return pd.DataFrame(to_rows(points), columns=csv_columns())
