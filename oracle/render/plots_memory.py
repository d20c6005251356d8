"""The memory plot (``oracle plot memory``): memory per GPU versus GPUs per strategy.

Styles: :mod:`oracle.render.plots`.  Strategies that need about the same memory (filter
and channel, data and data+spatial) are told apart by :mod:`oracle.render.plots_layout`."""

from __future__ import annotations

from collections.abc import Sequence

from oracle.compute.cost import Point
from oracle.render.plots import (
    EDGE,
    RC,
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
from oracle.render.plots_layout import Series, dodge, series_legend, settle


def memory_figure(points: Sequence[Point], meta: dict):
    """Memory per GPU versus GPUs per strategy (its fastest configuration), log-log,
    against the GPU's capacity; markers that would cover one another side by side, and
    a series whose line lies under another's says so in the legend."""
    import matplotlib
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    with matplotlib.rc_context(RC):
        fig = new_figure(9.0, 5.0)
        ax = fig.add_subplot()
        reps = representatives(points)
        counts = sorted({pt.gpus for pt in points})
        series, handles = _memory_lines(ax, reps)
        values = [y for s in series for y in s.points.values()]
        cap = gpu_memory(meta, points)
        if cap:
            gb = cap / 1e9
            top = max(values + [gb]) * 2.0
            ax.axhspan(gb, top, color="#F2F2F2", zorder=0, lw=0)
            ax.axhline(gb, color="black", lw=1.6, ls="--", zorder=2)
            handles.append(Line2D([], [], color="black", lw=1.6, ls="--",
                                  label=f"GPU capacity: {capacity_label(meta)}"))
            handles.append(Patch(color="#F2F2F2", label="above capacity: does not fit"))
            ax.set_ylim(min(values + [gb]) / 2.0, top)
        handles.append(Line2D([], [], marker="o", ms=6.5, mfc="white", mec="#444444", mew=1.4, ls="none",
                              label="hollow: out of memory only"))
        handles.append(Line2D([], [], marker="x", ms=7, mew=1.8, color="#444444", ls="none",
                              label="×: past another limit"))
        log2_gpu_axis(ax, counts)
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
        ax.set_ylabel("memory per GPU (GB, log scale)")
        ax.set_title(title(meta, "memory per GPU versus GPUs"), loc="left")
        twin = series_legend(ax, series, handles)
        settle(fig)
        dodge(ax, series, twin)
    return fig


def _memory_lines(ax, reps) -> tuple[list[Series], list]:
    """A line per strategy with a marker per GPU count (hollow: out of memory only, ×:
    past another limit), drawn in reverse order so that the first strategies end on top.
    Returns (the series in legend order, their legend handles)."""
    from matplotlib.lines import Line2D

    series: dict[str, Series] = {}
    handles: dict[str, Line2D] = {}
    for name, by_gpus in reversed(list(reps.items())):
        colour, marker = strategy_style(name)
        drawn = [(g, pt) for g, pt in by_gpus.items() if is_finite(pt.memory_bytes) and pt.memory_bytes > 0]
        if not drawn:
            continue
        s = series[name] = Series(name)
        s.points = {g: pt.memory_bytes / 1e9 for g, pt in drawn}
        s.add(ax.plot(list(s.points), list(s.points.values()), color=colour, lw=1.8, zorder=3, gid=svg_id(name))[0],
              list(s.points))
        for g, pt in drawn:
            st = status(pt)
            if st == "other":
                mark = ax.plot([g], [s.points[g]], marker="x", ms=7, mew=1.8, color=colour, ls="none", zorder=4)
            else:
                ok = st == "ok"
                mark = ax.plot([g], [s.points[g]], marker=marker, ms=6.5, color=colour, mec=EDGE if ok else colour,
                               mew=0.6 if ok else 1.4, mfc=colour if ok else "white", ls="none", zorder=4)
            s.add(mark[0], [g])
        handles[name] = Line2D([], [], color=colour, marker=marker, mec=EDGE, mew=0.6, lw=1.8, label=name)
    order = [n for n in reps if n in series]
    return [series[n] for n in order], [handles[n] for n in order]
