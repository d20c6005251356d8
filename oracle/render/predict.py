"""Rendering a sweep: rich table (grouped by GPU count), Markdown."""

from __future__ import annotations

import io
from collections.abc import Sequence
from itertools import groupby

from oracle.compute.cost import Point
from oracle.units import fmt_bytes, fmt_seconds

BEST_STYLE = "bold green"
INFEASIBLE_STYLE = "dim"


def select_top(points: Sequence[Point], top: int | None) -> list[Point]:
    """The first ``top`` points of every GPU count (points are ranked already)."""
    if not top:
        return list(points)
    out: list[Point] = []
    for _, group in groupby(points, key=lambda p: p.gpus):
        out.extend(list(group)[:top])
    return out


def _parts(pt: Point) -> str:
    return f"{pt.p1}×{pt.p2}"


def _batch(pt: Point) -> str:
    b = pt.global_batch
    return f"{int(b):,}" if float(b).is_integer() else f"{b:,.3g}"


def _strategy(pt: Point) -> str:
    if pt.segments:
        return f"{pt.strategy} (S={pt.segments})"
    return pt.strategy


def header_lines(meta: dict) -> list[str]:
    """Two lines saying what was projected and with which inputs."""
    lines = [f"{meta['model']} on {meta['system']} · profile {meta['profile']}"]
    lines.append(
        f"{meta['scaling']} · D = {meta['samples']:,} samples · {meta['precision']}"
        f" · γ = {meta['gamma']:g} · times per epoch"
    )
    if meta.get("profile_note"):
        lines.append(meta["profile_note"])
    return lines


def table(points: Sequence[Point], meta: dict, top: int | None = None, chart: bool = False):
    from rich import box
    from rich.table import Table
    from rich.text import Text

    shown = select_top(points, top)
    t = Table(
        title="\n".join(header_lines(meta)),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        caption="best per GPU count in bold; infeasible points dimmed, with the limit they hit",
        caption_justify="left",
        pad_edge=False,
    )
    t.add_column("GPUs", justify="right", no_wrap=True)
    t.add_column("#", justify="right", no_wrap=True)
    t.add_column("strategy", no_wrap=True, min_width=max([len(_strategy(p)) for p in shown] + [8]))
    t.add_column("p1×p2", justify="right", no_wrap=True)
    t.add_column("batch", justify="right", no_wrap=True)
    t.add_column("compute", justify="right", no_wrap=True)
    t.add_column("comm", justify="right", no_wrap=True)
    t.add_column("epoch", justify="right", no_wrap=True)
    t.add_column("iteration", justify="right", no_wrap=True)
    t.add_column("mem/GPU", justify="right", no_wrap=True)
    t.add_column("limits / notes", overflow="fold", ratio=1, min_width=12)
    first_group = True
    for gpus, group in groupby(shown, key=lambda p: p.gpus):
        group = list(group)
        if not first_group:
            t.add_section()
        first_group = False
        for i, pt in enumerate(group):
            style = BEST_STYLE if pt.rank == 1 else (INFEASIBLE_STYLE if not pt.feasible else None)
            notes = "; ".join(lim.reason for lim in pt.limits)
            if not notes and pt.rank == 1:
                notes = "best"
            t.add_row(
                str(gpus) if i == 0 else "",
                str(pt.rank) if pt.rank else "–",
                _strategy(pt),
                _parts(pt),
                _batch(pt),
                fmt_seconds(pt.compute_s),
                fmt_seconds(pt.communication_s),
                fmt_seconds(pt.total_s),
                fmt_seconds(pt.iteration_s),
                fmt_bytes(pt.memory_bytes),
                Text(notes),
                style=style,
            )
    return t


def render_text(renderable, width: int = 140, color: bool = False) -> str:
    """Render a rich object to a string of fixed width (files, golden tests)."""
    from rich.console import Console

    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        color_system="truecolor" if color else None,
        force_terminal=color,
        legacy_windows=False,
        soft_wrap=False,
        emoji=False,
        highlight=False,
    )
    console.print(renderable)
    return buf.getvalue()


def markdown(points: Sequence[Point], meta: dict, top: int | None = None) -> str:
    shown = select_top(points, top)
    out = [f"**{line}**  " if i == 0 else f"{line}  " for i, line in enumerate(header_lines(meta))]
    out.append("")
    out.append("| GPUs | rank | strategy | p1×p2 | batch | compute | comm | epoch | iteration | mem/GPU | limits |")
    out.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for pt in shown:
        name = _strategy(pt)
        if pt.rank == 1:
            name = f"**{name}**"
        limits = "; ".join(lim.reason for lim in pt.limits).replace("|", "\\|")
        out.append(
            f"| {pt.gpus} | {pt.rank or '–'} | {name} | {_parts(pt)} | {_batch(pt)} | "
            f"{fmt_seconds(pt.compute_s)} | {fmt_seconds(pt.communication_s)} | "
            f"{fmt_seconds(pt.total_s)} | {fmt_seconds(pt.iteration_s)} | "
            f"{fmt_bytes(pt.memory_bytes)} | {limits} |"
        )
    return "\n".join(out) + "\n"


def bar_chart(points: Sequence[Point], meta: dict, width: int = 100):
    """A compact terminal chart: per GPU count, one bar per feasible strategy (best
    point of each strategy), compute and communication in two shades, log-free so
    the shape is seen at once (issue 6: `predict --chart`)."""
    from rich.table import Table
    from rich.text import Text

    best: dict[tuple[int, str], Point] = {}
    for pt in points:
        if not pt.feasible:
            continue
        key = (pt.gpus, pt.strategy)
        if key not in best or pt.total_s < best[key].total_s:
            best[key] = pt
    if not best:
        return Text("no feasible point to chart")
    longest = max(p.total_s for p in best.values()) or 1.0
    bar_width = max(10, width - 44)
    t = Table(
        title="total time per epoch (█ compute, ▒ communication)",
        title_justify="left",
        show_header=False,
        box=None,
        pad_edge=False,
    )
    t.add_column("GPUs", justify="right", no_wrap=True)
    t.add_column("strategy")
    t.add_column("bar", no_wrap=True)
    t.add_column("time", justify="right", no_wrap=True)
    last = None
    for (gpus, _), pt in sorted(best.items(), key=lambda kv: (kv[0][0], kv[1].total_s)):
        n_comp = int(round(bar_width * pt.compute_s / longest))
        n_comm = int(round(bar_width * pt.communication_s / longest))
        bar = Text("█" * n_comp, style="cyan") + Text("▒" * n_comm, style="magenta")
        style = BEST_STYLE if pt.rank == 1 else None
        t.add_row(str(gpus) if gpus != last else "", Text(pt.strategy, style=style), bar, fmt_seconds(pt.total_s))
        last = gpus
    return t
