"""Projection baselines: record the projections of a set of cases, and later find every
point that moved (a change to a model file, a system file or the code).

A case is a predict invocation: model, system, profile, stack, gpus, strategies, batch
and options.  Points are matched by (strategy, gpus, p1, p2).  A numeric field moved when
|new - old| > rtol · max(|old|, 1e-300); a change of feasibility, limits, rank or of the
stack in force (each point records it: a case's ``stack:``, else the system file's, as
--stack; a baseline written before points recorded it is not checked for it) is a move
whatever the tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

NUMERIC = (
    "compute_s",
    "communication_s",
    "total_s",
    "iteration_s",
    "memory_bytes",
    "iterations_per_epoch",
)
# what a baseline keeps of each point (the docs/cli.md record minus the prose)
KEPT = (
    "strategy",
    "gpus",
    "p1",
    "p2",
    "global_batch",
    "segments",
    *NUMERIC,
    "feasible",
    "rank",
    "limit_codes",
    "breakdown",
    "stack",  # the stack in force, as outputs name it (oracle/stack.stack_label); optional on read
)
CASE_KEYS = (
    "model",
    "system",
    "profile",
    "gpus",
    "strategy",
    "batch",
    "batch_per_gpu",
    "p2",
    "segments",
    "precision",
    "memory_reuse",
    "memory_model",
    "mixed_precision",
    "optimizer",
    "contention",
    "samples",
    "compute_scaling",  # issue 13: the shipped cases pin ParaDL's "linear"
    "stack",  # a shipped stack's name, a stack file's path or none, as --stack (absent: the system's)
)


@dataclass(frozen=True)
class Move:
    case: str
    point: str
    field: str
    old: object
    new: object

    def describe_change(self) -> str:
        old, new = self.old, self.new
        if isinstance(old, (int, float)) and isinstance(new, (int, float)) and not isinstance(old, bool):
            rel = f" ({100 * (new - old) / old:+.4g}%)" if old else ""
            return f"{self.field} {old:.6g} -> {new:.6g}{rel}"
        return f"{self.field} {old!r} -> {new!r}"


def point_key(d: dict) -> tuple:
    return (d["strategy"], d["gpus"], d["p1"], d["p2"])


def point_label(d: dict) -> str:
    """'data on 8 GPUs (8x1)'; a point with no split p1·p2 (p1 = 0: units.fmt_split) says so."""
    split = f"{d['p1']}x{d['p2']}" if d["p1"] > 0 else "no split p1·p2"
    return f"{d['strategy']} on {d['gpus']} GPUs ({split})"


def _moved(old, new, rtol: float) -> bool:
    if old is None or new is None:
        return old is not new
    if isinstance(old, bool) or isinstance(new, bool):
        return old != new
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        if math.isnan(old) and math.isnan(new):
            return False
        return abs(new - old) > rtol * max(abs(old), 1e-300)
    return old != new


def diff_points(case: str, old: Sequence[dict], new: Sequence[dict], rtol: float) -> list[Move]:
    moves: list[Move] = []
    old_by = {point_key(d): d for d in old}
    new_by = {point_key(d): d for d in new}
    for key, o in old_by.items():
        label = point_label(o)
        n = new_by.get(key)
        if n is None:
            moves.append(Move(case, label, "point", "present", "gone"))
            continue
        for f in NUMERIC:
            if _moved(o.get(f), n.get(f), rtol):
                moves.append(Move(case, label, f, o.get(f), n.get(f)))
        for f, v in (o.get("breakdown") or {}).items():
            if _moved(v, (n.get("breakdown") or {}).get(f), rtol):
                moves.append(Move(case, label, f, v, n["breakdown"].get(f)))
        for f in ("feasible", "rank", "limit_codes", "stack"):
            if (f != "stack" or f in o) and o.get(f) != n.get(f):  # an older baseline records no stack
                moves.append(Move(case, label, f, o.get(f), n.get(f)))
    for key, n in new_by.items():
        if key not in old_by:
            moves.append(Move(case, point_label(n), "point", "absent", "new"))
    return moves
