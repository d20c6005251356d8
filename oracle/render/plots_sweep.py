"""The plot of ``oracle sweep --plot`` (issue 29), for "which cluster should we use":
time per epoch against GPUs, log-log, a line per case coloured by its system (a
dash pattern per model, batch, ... of that system), each GPU count's fastest strategy
marked with the strategy's marker (the markers of every plot, render/plots.py)."""

from __future__ import annotations

from collections.abc import Sequence

from oracle.render.plots import RC, new_figure, plain_log_ticks, strategy_style, to_bytes

# a colour per system: Paul Tol's "bright" qualitative scheme (colour-blind safe;
# https://personal.sron.nl/~pault/, Fig. 1)
SYSTEM_COLOURS = ("#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB")
DASHES = ("-", "--", ":", "-.")


def sweep_figure(best: Sequence[tuple[str, int, float, str]]):
    """``best``: (case label, system, GPUs, seconds per epoch, strategy) of each case's
    fastest feasible point per GPU count."""
    import math

    import matplotlib
    from matplotlib.ticker import FuncFormatter

    with matplotlib.rc_context(RC):
        fig = new_figure(10.0, 5.4)
        ax = fig.add_subplot()
        systems = list(dict.fromkeys(system for _, system, *_ in best))
        seen: dict[str, int] = {}
        for label in dict.fromkeys(label for label, *_ in best):
            pts = sorted((g, t, s) for lab, _, g, t, s in best if lab == label and math.isfinite(t) and t > 0)
            system = next(sys_ for lab, sys_, *_ in best if lab == label)
            colour = SYSTEM_COLOURS[systems.index(system) % len(SYSTEM_COLOURS)]
            dash = DASHES[seen.setdefault(system, 0) % len(DASHES)]
            seen[system] += 1
            if pts:
                _case_line(ax, pts, colour, dash, label)
        _strategy_legend(ax, sorted({s for *_, s in best}))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        plain_log_ticks(ax.yaxis)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.10g}"))
        ax.set_xlabel("GPUs (log scale)")
        ax.set_ylabel("time per epoch (s, log scale)")
        ax.set_title("fastest configuration per GPU count")
        ax.legend(loc="upper right", fontsize="small")
        return fig


def _case_line(ax, pts, colour: str, dash: str, label: str) -> None:
    """One case: its line, and at each GPU count the marker of the fastest strategy."""
    ax.plot([g for g, _, _ in pts], [t for _, t, _ in pts], dash, color=colour, linewidth=1.2, label=label, zorder=1)
    for g, t, s in pts:
        ax.plot([g], [t], marker=strategy_style(s)[1], color=colour, markeredgecolor="#222222", markersize=6,
                linestyle="none", zorder=2)  # fmt: skip


def _strategy_legend(ax, strategies: Sequence[str]) -> None:
    """The strategies' markers as a second legend (lower left)."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker=strategy_style(s)[1], color="#999999", markeredgecolor="#222222",
                      linestyle="none", label=s)
               for s in strategies]  # fmt: skip
    if handles:
        ax.add_artist(ax.legend(handles=handles, loc="lower left", fontsize="small", title="best strategy"))


def sweep_png(best, fmt: str = "png", dpi: int = 110) -> bytes:
    return to_bytes(sweep_figure(best), fmt, dpi)
