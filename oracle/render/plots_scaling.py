"""The scaling plot: time per epoch versus GPUs per strategy (``oracle plot scaling``).

Shared styles and helpers are in :mod:`oracle.render.plots`; markers that would cover
one another are set side by side by :mod:`oracle.render.plots_layout`."""

from __future__ import annotations

from collections.abc import Sequence

from oracle.compute.cost import Point
from oracle.render.plots import (
    EDGE,
    RC,
    best_per_gpus,
    capacity_label,
    gpu_memory,
    is_finite,
    log2_gpu_axis,
    new_figure,
    plain_log_ticks,
    representatives,
    status,
    strategy_style,
    svg_id,
    title,
)
from oracle.render.plots_layout import Series, dodge, place_clear, series_legend, settle
from oracle.units import fmt_bytes

HEADROOM = 2.0  # above the slowest point, room for its label (log axis: a factor)
RING_MS = 12  # the ring around the best point: around its marker, clear of one set beside it
# where a "best: strategy" label may go, in points from its point: the first clear one
# (further away, a leader line joins it to its ring)
LABEL_OFFSETS = tuple((dx, dy) for dy in (10, -10, 22, -22, 34, -34, 46, -46) for dx in (10, -10))


def scaling_figure(points: Sequence[Point], meta: dict):
    """Time per epoch versus GPUs, log-log: a line per strategy (fastest configuration
    of each), the ideal linear speed-up, the best strategy per GPU count ringed, and
    points that only exceed the GPU memory drawn hollow (GPU counts where nothing fits
    shaded).  Points past a structural limit are not drawn; markers that would cover one
    another are set side by side, and labels go where they cover no mark."""
    import matplotlib

    with matplotlib.rc_context(RC):
        fig = new_figure(10.0, 5.4)
        ax = fig.add_subplot()
        reps = representatives(points)
        counts = sorted({pt.gpus for pt in points})
        best = best_per_gpus(points)
        series, handles, omitted = _scaling_lines(ax, reps, counts)
        _ideal_line(ax, reps, counts, best, handles)
        labels = _best_rings(ax, counts, best, handles, {s.name: s for s in series})
        _memory_marks(ax, meta, points, reps, counts, best, handles)
        log2_gpu_axis(ax, counts)
        ax.set_yscale("log")
        low, high = ax.get_ylim()
        ax.set_ylim(low, high * HEADROOM)
        plain_log_ticks(ax.yaxis)
        ax.set_ylabel("time per epoch (s, log scale)")
        ax.set_title(title(meta, "time per epoch versus GPUs"), loc="left")
        twin = series_legend(ax, series, handles)
        if omitted:
            names = sorted({pt.strategy for pt in omitted}, key=lambda n: list(reps).index(n))
            fig.text(0.0, -0.01, "not drawn: points past a structural limit (" + ", ".join(names) +
                     "); see the limits in `oracle predict` or the report", fontsize=7, color="#555555",
                     ha="left", va="top")
        settle(fig)
        dodge(ax, series, twin)
        renderer, taken = settle(fig), []
        for text in labels:
            place_clear(ax, text, LABEL_OFFSETS, renderer, taken)
    return fig


def _scaling_lines(ax, reps, counts):
    """A line per strategy (its drawable points; dotted where memory does not fit), drawn
    in reverse order so that the first strategies (data, ...) end on top.
    Returns (the series in legend order, their legend handles, the points not drawn)."""
    from matplotlib.lines import Line2D

    omitted = []
    series: dict[str, Series] = {}
    handles: dict[str, Line2D] = {}
    for name, by_gpus in reversed(list(reps.items())):
        colour, marker = strategy_style(name)
        drawn = [(g, pt) for g, pt in by_gpus.items() if status(pt) != "other" and is_finite(pt.total_s)]
        omitted += [pt for pt in by_gpus.values() if status(pt) == "other" or not is_finite(pt.total_s)]
        if not drawn:
            continue
        s = series[name] = Series(name)
        for (g0, a), (g1, b) in zip(drawn, drawn[1:]):
            if counts.index(g1) - counts.index(g0) != 1:
                continue  # a gap: a structural limit in between
            solid = status(a) == "ok" and status(b) == "ok"
            s.add(ax.plot([g0, g1], [a.total_s, b.total_s], color=colour, lw=2.0 if solid else 1.3,
                          ls="-" if solid else ":", zorder=3, gid=svg_id(name))[0], [g0, g1])
        for g, pt in drawn:
            ok = status(pt) == "ok"
            s.points[g] = pt.total_s
            s.add(ax.plot([g], [pt.total_s], marker=marker, ms=6.5, color=colour, mec=EDGE if ok else colour,
                          mew=0.6 if ok else 1.4, mfc=colour if ok else "white", ls="none", zorder=4)[0], [g])
        handles[name] = Line2D([], [], color=colour, marker=marker, mec=EDGE, mew=0.6, lw=2, label=name)
    order = [n for n in reps if n in series]
    return [series[n] for n in order], [handles[n] for n in order], omitted


def _ideal_line(ax, reps, counts, best, handles) -> None:
    from matplotlib.lines import Line2D

    # ideal linear speed-up from the first GPU count with a point to start from
    ref = None
    for g in counts:
        cands = [by[g] for by in reps.values() if g in by and status(by[g]) != "other" and is_finite(by[g].total_s)]
        if cands:
            ref = best.get(g) or min(cands, key=lambda p: p.total_s)
            break
    if ref is not None and len(counts) > 1:
        xs = [g for g in counts if g >= ref.gpus]
        ax.plot(xs, [ref.total_s * ref.gpus / g for g in xs], color="#555555", lw=1.2, ls="--", zorder=2)
        handles.append(Line2D([], [], color="#555555", lw=1.2, ls="--",
                              label=f"ideal: linear speed-up from {ref.gpus:,} GPU{'s' if ref.gpus > 1 else ''}"))


def _best_rings(ax, counts, best, handles, series: dict[str, Series]) -> list:
    """The best strategy per GPU count ringed (the ring moves with its marker), named
    where it changes; returns the name labels, to be placed once the layout is known."""
    from matplotlib.lines import Line2D

    previous = None
    labels = []
    for g in counts:
        pt = best.get(g)
        if pt is None:
            previous = None
            continue
        ring = ax.plot([g], [pt.total_s], marker="o", ms=RING_MS, mfc="none", mec="black", mew=1.6, ls="none",
                       zorder=5)[0]
        if pt.strategy in series:
            series[pt.strategy].add(ring, [g])
        if pt.strategy != previous:
            text = ax.annotate(f"best: {pt.strategy}", (g, pt.total_s), xytext=(10, 10), textcoords="offset points",
                               fontsize=8, fontweight="bold", zorder=6,
                               arrowprops=dict(arrowstyle="-", color="#444444", lw=0.6, shrinkA=1, shrinkB=RING_MS / 2))
            if pt.strategy in series:
                series[pt.strategy].add(_Anchor(text), [g])
            labels.append(text)
        previous = pt.strategy
    if best:
        handles.append(Line2D([], [], marker="o", ms=RING_MS - 1, mfc="none", mec="black", mew=1.6, ls="none",
                              label="best at this GPU count"))
    return labels


class _Anchor:
    """An annotation's anchor moved with its marker (Series.add expects set_xdata)."""

    def __init__(self, text) -> None:
        self.text = text

    def set_xdata(self, xs) -> None:
        self.text.xy = (xs[0], self.text.xy[1])


def _memory_marks(ax, meta, points, reps, counts, best, handles) -> None:
    """Hollow points out of GPU memory in the legend; GPU counts where nothing fits shaded."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    cap = gpu_memory(meta, points)
    if any(status(pt) == "memory" for by in reps.values() for pt in by.values()):
        handles.append(Line2D([], [], marker="o", ms=6.5, mfc="white", mec="#444444", mew=1.4, ls=":",
                              color="#444444", label=f"hollow: out of GPU memory, {capacity_label(meta)}"))
    none_fit = [g for g in counts if g not in best and any(status(p) == "memory" for p in points if p.gpus == g)]
    for g in none_fit:
        ax.axvspan(g / 2**0.5, g * 2**0.5, color="#EEEEEE", zorder=0, lw=0)
    if none_fit:
        fits = fmt_bytes(cap) if cap else "GPU memory"
        handles.append(Patch(color="#EEEEEE", label=f"no strategy fits in {fits}"))
