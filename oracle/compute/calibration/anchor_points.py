"""Projections anchored on a system's stored anchors (issue 26, point 1): a system written
by ``oracle fit runs --calibrate all`` lists the runs it was calibrated on (``anchors:``,
oracle.model.Anchor), and ``oracle predict`` projects each point as its nearest anchor's
measured compute and communication times the cost model's ratio between the two
configurations (compute/calibration/anchor.py: the same choice of anchor and the same ratio as
``oracle compare --calibrate-on``).  Each anchor is projected under the options it ran
with, each point under the command's; at an anchor's own configuration and options the
projection is its measurement.  A point of a model or strategy family no anchor has is
left as the cost model projects it."""

from __future__ import annotations

import math
from dataclasses import replace

from oracle.compute.calibration.anchor import (
    family,
    nearest,
    phase_factors,
    reach,
    residual_note,
    samples_per_replica,
)
from oracle.compute.cost import phase_names
from oracle.records import MeasuredRun


def anchor_run(anchor, index: int) -> MeasuredRun:
    """A stored anchor as the measured run it was (its ``line``: its place in the list)."""
    return MeasuredRun(line=index, model=anchor.model, system="", profile="", strategy=anchor.strategy,
                       gpus=anchor.gpus, global_batch=anchor.global_batch, p1=anchor.p1, p2=anchor.p2,
                       segments=anchor.segments, iteration_s=anchor.iteration_s, compute_s=anchor.compute_s,
                       comm_s=anchor.comm_s, source=anchor.source)  # fmt: skip


def _point_run(pt) -> MeasuredRun:
    return MeasuredRun(line=0, model=pt.model, system="", profile="", strategy=pt.strategy, gpus=pt.gpus,
                       global_batch=pt.global_batch, p1=pt.p1, p2=pt.p2, iteration_s=pt.iteration_s)  # fmt: skip


def anchor_points(points: list, rows: list, gpus_per_node: int) -> list:
    """``points`` (a sweep) each anchored on its nearest of ``rows`` (the anchors'
    CompareRows: each stored anchor projected under its own options), re-ranked per GPU
    count; the point's ``anchor`` detail names the anchor and how far it extrapolates."""
    from oracle.compute.sweep import rank

    rows = [r for r in rows if math.isfinite(r.predicted_s) and r.predicted_s > 0]
    out = [_anchored(pt, rows, gpus_per_node) for pt in points]
    ranked: list = []
    for gpus in dict.fromkeys(pt.gpus for pt in out):
        ranked += rank([pt for pt in out if pt.gpus == gpus])
    return ranked


def _anchored(pt, rows: list, gpus_per_node: int):
    if not (pt.feasible and math.isfinite(pt.total_s)) or not rows:
        return pt
    run = _point_run(pt)
    anchor = nearest(run, rows, samples_per_replica)
    if anchor is None:
        return pt
    kc, km, kin, how = phase_factors(anchor)
    factor = {**{n: kc for n in phase_names("compute")}, **{n: km for n in phase_names("communication")},
              **{n: kin for n in phase_names("input")}}  # fmt: skip
    bd = pt.breakdown.replace(**{n: v * factor[n] for n, v in pt.breakdown.as_dict().items()})
    where = anchor.run.source or f"anchor {anchor.run.line}"
    note = f"anchor: {where} ({how}{residual_note(anchor)}): {reach(run, anchor.run, samples_per_replica, gpus_per_node)}"
    return replace(pt, breakdown=bd, details=(*pt.details, ("anchor", note)))


def unanchored(points: list, anchors) -> list[str]:
    """The models and strategy families of ``points`` no stored anchor covers (said in
    the caption: those points are the cost model's alone)."""
    have = {(a.model, family(a.strategy)) for a in anchors}
    return sorted({f"{pt.model} {family(pt.strategy)}" for pt in points if (pt.model, family(pt.strategy)) not in have})
