"""The breakdown plot: compute and communication per strategy and GPU count (``oracle plot breakdown``).

Shared styles and helpers are in :mod:`oracle.render.plots`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from oracle.compute.cost import Point, phase_names
from oracle.render.plots import (
    EDGE,
    RC,
    infeasible_label,
    is_finite,
    limit_words,
    new_figure,
    phase_styles,
    representatives,
    status,
    strategy_colour,
    time_unit,
    title,
)
from oracle.units import fmt_seconds

# bars taller than the panel's scale end at 1/CUT_ROOM of its height; the room above
# holds their times ("↑ 2.39 h"), two rows of labels when neighbours are both cut
CUT_ROOM = 1.2
LABEL_PT = 6.5  # font size of the labels in a panel
ROW_PT = 9.0  # between the two rows of "↑" labels


def breakdown_figure(points: Sequence[Point], meta: dict, columns: int = 3):
    """Stacked bars of time per epoch by phase, one panel per GPU count, one bar per
    strategy (its fastest configuration); infeasible bars faded with their reason.
    No label covers a bar but the faded one it stands in (on a white box)."""
    import matplotlib
    from matplotlib.patches import Patch

    reps = representatives(points)
    counts = sorted({pt.gpus for pt in points})
    names = list(reps)
    styles = phase_styles()
    used = [ph for ph in phase_names() if any(is_finite(getattr(pt.breakdown, ph)) and getattr(pt.breakdown, ph) > 0
                                       for by in reps.values() for pt in by.values())]
    ncols = max(1, min(columns, len(counts)))
    nrows = max(1, math.ceil(len(counts) / ncols))
    with matplotlib.rc_context(RC):
        fig = new_figure(max(4.4 * ncols, 6.0), 3.4 * nrows + 1.2)
        axes = fig.subplots(nrows, ncols, squeeze=False)
        for i, g in enumerate(counts):
            ax = axes[i // ncols][i % ncols]
            _panel(ax, [(x, reps[n][g]) for x, n in enumerate(names) if g in reps[n]], used, len(names))
            ax.set_title(f"{g:,} GPU{'s' if g > 1 else ''}", loc="left", fontweight="bold")
        for j in range(len(counts), nrows * ncols):
            axes[j // ncols][j % ncols].set_visible(False)
        handles = [Patch(facecolor=styles[ph][1], hatch=styles[ph][2], edgecolor="white",
                         label=styles[ph][0]) for ph in used if ph in styles]
        handles.append(Patch(facecolor="#BBBBBB", alpha=0.3, edgecolor="#888888",
                             label="infeasible (faded, ✗ reason)"))
        fig.legend(handles=handles, loc="outside lower center", ncol=min(4, len(handles)), frameon=False)
        fig.suptitle(title(meta, "time per epoch by phase (fastest configuration of each strategy)"),
                     x=0.01, ha="left", fontsize=10)
    return fig


def _panel(ax, present: list[tuple[int, Point]], used: list[str], slots: int) -> None:
    """One GPU count: a bar per strategy, scaled to serve the candidates (up to 3x the
    fastest); taller bars are cut, their time above the cut."""
    ax.grid(axis="x", visible=False)
    feas = [pt.total_s for _, pt in present if pt.feasible and is_finite(pt.total_s)]
    mem = [pt.total_s for _, pt in present if status(pt) == "memory" and is_finite(pt.total_s)]
    anyf = [pt.total_s for _, pt in present if is_finite(pt.total_s) and pt.total_s > 0]
    cands = feas or mem or anyf or [1.0]
    top = min(max(cands), 3.0 * min(cands)) * 1.3
    cut = top / CUT_ROOM
    unit, div = time_unit(top)
    row = {}
    for x, pt in present:
        _bar(ax, x, pt, used, cut, div)
        if is_finite(pt.total_s) and pt.total_s > cut:
            row[x] = 1 - row[x - 1] if x - 1 in row else 0  # neighbours alternate rows
            ax.annotate(f"↑ {fmt_seconds(pt.total_s)}", (x, cut / div), xytext=(0, 2 + ROW_PT * row[x]),
                        textcoords="offset points", ha="center", va="bottom", fontsize=LABEL_PT, color="#333333",
                        zorder=5)
        if not pt.feasible:
            ax.annotate("✗ " + limit_words(pt).replace("; ", ";\n"), (x, 0), xytext=(0, 6),
                        textcoords="offset points", rotation=90, ha="center", va="bottom", fontsize=LABEL_PT,
                        color="#222222", zorder=6, clip_on=True, linespacing=1.1,
                        bbox=dict(boxstyle="square,pad=0.2", facecolor="white", alpha=0.85, edgecolor="none"))
        if pt.rank == 1:
            ax.text(x, min(pt.total_s, top) / div, "best", ha="center", va="bottom", fontsize=7,
                    fontweight="bold", zorder=6)
    ax.set_ylim(0, top / div)
    ax.set_xlim(-0.6, slots - 0.4)
    ax.set_xticks([x for x, _ in present])
    ax.set_xticklabels([infeasible_label(pt) for _, pt in present], rotation=40, ha="right", rotation_mode="anchor",
                       fontsize=7)
    # the strategy colour under each bar, as in every other plot
    ax.scatter([x for x, _ in present], [0] * len(present), marker="s", s=28,
               c=[strategy_colour(pt.strategy) for _, pt in present], edgecolors=EDGE, linewidths=0.5,
               transform=ax.get_xaxis_transform(), clip_on=False, zorder=7)
    ax.tick_params(axis="x", pad=7)
    ax.set_ylabel(f"time per epoch ({unit})")


def _bar(ax, x: int, pt: Point, used: list[str], cut: float, div: float) -> None:
    """The stacked phases of one point, up to ``cut`` (faded when infeasible)."""
    if not is_finite(pt.total_s):
        return
    bottom = 0.0
    for ph in used:
        v = getattr(pt.breakdown, ph)
        if not is_finite(v) or v <= 0 or bottom >= cut:
            continue
        v = min(v, cut - bottom)
        _, colour, hatch = phase_styles().get(ph, (ph, "#999999", None))
        ax.bar(x, v / div, bottom=bottom / div, width=0.72, color=colour, hatch=hatch,
               edgecolor="white" if pt.feasible else "#888888", lw=0.5, alpha=1.0 if pt.feasible else 0.3, zorder=2)
        bottom += v
