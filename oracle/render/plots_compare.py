"""The compare plot: projected against measured time per run (``oracle plot compare``).

Shared styles and helpers are in :mod:`oracle.render.plots`."""

from __future__ import annotations

from itertools import groupby

from oracle.errors import OracleError
from oracle.render.compare import pct_text, ratio_cell
from oracle.render.plots import EDGE, RC, is_finite, new_figure, plain_log_ticks, strategy_style


def compare_figure(rows, summary=None, title_text: str = ""):
    """Projected versus measured, like ParaDL's Figure 3: one panel per model, system,
    stack in force (named in its title) and strategy; per run a measured bar (hatched), the projected time and the projected
    communication beside it, with the accuracy above.  Log time axis: every bar stands
    on the axis (a part stacked on another would not read as its value)."""
    import matplotlib
    from matplotlib.patches import Patch

    key = lambda r: (r.point.model, r.point.system, r.point.stack, r.run.strategy)  # noqa: E731
    groups: list[tuple[tuple, list]] = []
    for k, grp in groupby(rows, key=key):
        if groups and groups[-1][0] == k:
            groups[-1][1].extend(grp)
        else:
            groups.append((k, list(grp)))
    merged: dict[tuple, list] = {}
    for k, grp in groups:
        merged.setdefault(k, []).extend(grp)
    groups = list(merged.items())
    if not groups:
        raise OracleError("no runs to plot")
    widest = max(len(g) for _, g in groups)
    with matplotlib.rc_context(RC):
        fig = new_figure(max(7.0, 0.55 * widest + 2.5), 3.2 * len(groups) + 1.0)
        axes = fig.subplots(len(groups), 1, squeeze=False)
        for ax, ((model, system, stack, strategy), grp) in zip((a[0] for a in axes), groups):
            grp = sorted(grp, key=lambda r: (r.run.gpus, r.run.global_batch, r.run.line))
            colour, _ = strategy_style(strategy)
            show_batch = len({r.run.gpus for r in grp}) < len(grp) or len({r.run.global_batch / r.run.gpus
                                                                            for r in grp}) > 1
            values = []
            for x, r in enumerate(grp):
                values += _run_bars(ax, x, r, colour)
                top = max(v for v in (r.measured_s, r.predicted_s) if is_finite(v))
                label = f"{100 * r.accuracy:.0f}%" if r.scored else "✗ " + ", ".join(  # the limit, as breakdown's bars
                    dict.fromkeys(lim.code for lim in r.point.limits))
                ax.annotate(label, (x, top), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom",
                            fontsize=7, fontweight="bold" if not r.accuracy >= 0.75 else "normal",
                            rotation=90 if len(grp) > 14 else 0)
            ax.set_yscale("log")
            lo = min(v for v in values if v > 0)
            hi = max(values)
            ax.set_ylim(lo / 3, hi * (6 if len(grp) > 14 else 3))
            plain_log_ticks(ax.yaxis)
            bases = {r.run.basis for r in grp}
            basis = bases.pop() if len(bases) == 1 else "run"
            ax.set_ylabel(f"time per {basis} (s, log scale)")
            ax.set_xticks(range(len(grp)))
            ax.set_xticklabels([f"{r.run.gpus:,}" + (f"\nB={r.run.global_batch:g}" if show_batch else "")
                                for r in grp], fontsize=7)
            ax.set_xlabel("GPUs" + (" (B: global batch)" if show_batch else ""))
            ax.grid(axis="x", visible=False)
            ax.set_title(f"{model} on {system} · stack {stack} · {strategy} · {_mean_text(grp)}", loc="left",
                         fontweight="bold")
            ax.legend(handles=[
                Patch(facecolor="white", edgecolor=colour, hatch="////", label="measured"),
                Patch(facecolor=colour, edgecolor=EDGE, label="projected (compute + communication)"),
                Patch(facecolor=colour, alpha=0.45, edgecolor=EDGE, label="of which communication"),
            ], loc="upper right", fontsize=7, frameon=False, ncol=3)
        head = title_text or "projected versus measured"
        if summary is not None:
            s = summary.overall
            head += (f"\n{s.n} runs{_unscored_text(s.unscored)} · mean accuracy {pct_text(s.mean_accuracy)} · measured /"
                     f" projected {ratio_cell(s)} (geometric mean)")
        head += " · label: accuracy = 1 − |projected − measured| / measured"
        fig.suptitle(head, x=0.01, ha="left", fontsize=10)
    return fig


def _mean_text(grp) -> str:
    """The mean accuracy of a panel's scored runs, and how many runs it holds."""
    kept = [r.accuracy for r in grp if r.scored]
    mean = sum(kept) / len(kept) if kept else float("nan")
    return (f"mean accuracy {pct_text(mean)} ({len(kept)} run{'s' if len(kept) != 1 else ''}"
            f"{_unscored_text(len(grp) - len(kept))})")


def _unscored_text(n: int) -> str:
    return f", {n} infeasible in the model, not scored" if n else ""


def _run_bars(ax, x: int, r, colour: str) -> list[float]:
    """One run's bars: measured, projected, projected communication (each from the
    axis); the values drawn."""
    m = r.measured_s
    ax.bar(x - 0.28, m, width=0.26, color="white", edgecolor=colour, hatch="////", lw=1.2, zorder=2)
    drawn = [m]
    if is_finite(r.predicted_s) and r.predicted_s > 0:
        ax.bar(x, r.predicted_s, width=0.26, color=colour, edgecolor=EDGE, lw=0.5, zorder=2)
        drawn.append(r.predicted_s)
        comm = r.predicted_comm_s
        if comm is not None and is_finite(comm) and comm > 0:
            ax.bar(x + 0.28, comm, width=0.26, color=colour, alpha=0.45, edgecolor=EDGE, lw=0.5, zorder=2)
            drawn.append(comm)
    return drawn
