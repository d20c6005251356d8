"""Rendering a sweep: rich table (grouped by GPU count), Markdown."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby

from oracle.compute.cost import Point
from oracle.textsafe import md
from oracle.units import fmt_bytes, fmt_gap, fmt_seconds, fmt_split
from oracle.vocabulary import PARADL

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
    return fmt_split(pt.p1, pt.p2)


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
        f" · {memory_label(meta)} · times per epoch"
    )
    if meta.get("stack_note"):
        lines.append(meta["stack_note"])
    if meta.get("options_note"):
        lines.append(meta["options_note"])
    if meta.get("memory_note"):
        lines.append(meta["memory_note"])
    if meta.get("profile_note"):
        lines.append(meta["profile_note"])
    if meta.get("compute_conversion"):
        lines.append(f"compute: {meta['compute_conversion']}")
    if meta.get("model_note"):
        lines.append(meta["model_note"])
    return lines


def memory_label(meta: dict) -> str:
    """The memory model in a few words (docs/memory.md and docs/cost-model.md)."""
    if meta.get("memory_model", PARADL) == PARADL:
        return f"memory: ParaDL bound, γ = {meta.get('gamma', 1):g}"
    return "memory: framework model"


def _max_batch(pt: Point) -> str:
    b = pt.detail("max_batch_per_gpu")
    if b is None:
        return "–"
    return f"{int(b):,}" if b < 1e7 else f"{b:.3g}"


# (key, header, justify, priority): at a narrow width the lowest priorities go first (a kept
# column is as wide as its widest cell, so a number is never cut); the GPUs, strategy and
# p1×p2 of a point are its identity and never dropped (issue 23), nor the epoch it is ranked by
IDENTITY = ("gpus", "strategy", "parts")
COLUMNS = (
    ("gpus", "GPUs", "right", 9),
    ("rank", "#", "right", 2),
    ("strategy", "strategy", "left", 9),
    ("parts", "p1×p2", "right", 4),
    ("batch", "batch", "right", 3),
    ("compute", "compute", "right", 6),
    ("comm", "comm", "right", 5),
    ("epoch", "epoch", "right", 9),
    ("iteration", "iteration", "right", 1),
    ("mem", "mem/GPU", "right", 7),
    ("maxb", "max b/GPU", "right", 6),
)
NOTES_MIN = 16  # the limits / notes column wraps on words, never narrower than this


def _cells(pt: Point, first: bool) -> dict[str, str]:
    return {
        "gpus": str(pt.gpus) if first else "",
        "rank": str(pt.rank) if pt.rank else "–",
        "strategy": _strategy(pt),
        "parts": _parts(pt),
        "batch": _batch(pt),
        "compute": fmt_seconds(pt.compute_s),
        "comm": fmt_seconds(pt.communication_s),
        "epoch": fmt_seconds(pt.total_s),
        "iteration": fmt_seconds(pt.iteration_s),
        "mem": fmt_bytes(pt.memory_bytes),
        "maxb": _max_batch(pt),
        "notes": _notes(pt),
    }


def _notes(pt: Point, best: bool = True) -> str:
    """The limits / notes cell: the limits, else "best" (``best``: Markdown bolds the best
    instead), then the hidden communication, the anchor and what NCCL assumed of a partial
    NVLink domain."""
    notes = "; ".join(lim.reason for lim in pt.limits)
    if not notes and pt.rank == 1 and best:
        notes = "best"
    ratio = pt.detail("overlap_ratio")
    if ratio is not None and pt.detail("communication_total_s"):
        hidden = f"{100 * ratio:.0f}% of {fmt_seconds(pt.detail('communication_total_s'))} comm hidden"
        notes = f"{notes}; {hidden}" if notes else hidden
    for key in ("anchor", "nccl_nodes"):  # issue 26: the measured run it is anchored on; a partial NVLink domain
        said = pt.detail(key)
        if said:
            notes = f"{notes}; {said}" if notes else said
    return notes


def table(points: Sequence[Point], meta: dict, top: int | None = None):
    """The ranked projection: header lines, the table, the caption (a FitTable: its
    columns are dropped by priority at the width it is printed at, never cut; a point's
    identity is never dropped)."""
    from oracle.render.columns import Column, FitTable, Section

    shown = select_top(points, top)
    sections, styles = [], {}
    for _, group in groupby(shown, key=lambda p: p.gpus):
        rows = []
        for i, pt in enumerate(group):
            rows.append(_cells(pt, i == 0))
            style = BEST_STYLE if pt.rank == 1 else (INFEASIBLE_STYLE if not pt.feasible else None)
            if style:
                styles[id(rows[-1])] = style
        sections.append(Section(rows))
    columns = tuple(Column(key, head, justify, priority, identity=key in IDENTITY)
                    for key, head, justify, priority in COLUMNS if key != "maxb" or meta.get("show_max_batch"))  # fmt: skip
    caption = "best per GPU count in bold; infeasible points dimmed, with the limit they hit"
    hint = nothing_fits_hint(points, meta)
    return FitTable(
        columns, sections, notes=Column("notes", "limits / notes"), notes_min=NOTES_MIN,
        title="\n".join(header_lines(meta)) + "\n", caption=caption + ("\n" + hint if hint else ""),
        hint="--width or --format csv shows them", styles=styles, expand=True,
    )


def nothing_fits_hint(points: Sequence[Point], meta: dict) -> str:
    """Where no point of a GPU count is feasible only for memory: what would help."""
    counts = []
    for gpus, group in groupby(points, key=lambda p: p.gpus):
        group = list(group)
        if group and not any(pt.feasible for pt in group) and any(
            {lim.code for lim in pt.limits} == {"memory"} for pt in group
        ):
            counts.append(str(gpus))
    if not counts:
        return ""
    where = ", ".join(counts) if len(counts) <= 6 else f"{counts[0]} to {counts[-1]}"
    if meta.get("memory_model", PARADL) == PARADL:
        gamma = meta.get("gamma", 1)
        return (
            f"nothing fits in GPU memory at {where} GPUs: memory is ParaDL's upper bound scaled by γ = {gamma:g};"
            " --memory-model framework counts what a framework keeps, or try --mixed-precision or a smaller batch"
        )
    return (
        f"nothing fits in GPU memory at {where} GPUs: try a smaller batch (--max-batch shows the largest"
        " per-GPU batch that fits), --mixed-precision, --zero, or --checkpointing for the pipeline"
    )


def render_text(renderable, width: int = 140, color: bool = False) -> str:
    """Render a rich object to a string of fixed width (files, golden tests)."""
    from oracle.textsafe import console as safe_console

    buf = io.StringIO()
    console = safe_console(
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
    # no padding after the last character of a line (issue 17: piped output was padded)
    return "\n".join(line.rstrip() for line in buf.getvalue().split("\n"))


def markdown(points: Sequence[Point], meta: dict, top: int | None = None) -> str:
    return "".join(markdown_texts([points], meta, top))


def markdown_texts(runs: Iterable[Sequence], meta: dict, top: int | None = None) -> Iterator[str]:
    """:func:`markdown`'s text: the header and the table's head, then the rows of each
    run of ranked points (issue 29: a run of GPU counts at a time; a
    compute/vector/rows.BriefRow as its point)."""
    from oracle.compute.vector.rows import points as row_points

    out = [f"**{md(line)}**  " if i == 0 else f"{md(line)}  " for i, line in enumerate(header_lines(meta))]
    out.append("")
    out.append("| GPUs | rank | strategy | p1×p2 | batch | compute | comm | epoch | iteration | mem/GPU | limits / notes |")
    out.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    yield "\n".join(out) + "\n"
    for run in runs:
        yield "".join(markdown_row(pt) + "\n" for pt in row_points(select_top(run, top)))


def markdown_row(pt: Point) -> str:
    name = md(_strategy(pt))
    if pt.rank == 1:
        name = f"**{name}**"
    limits = md(_notes(pt, best=False))  # as the text table's, the best in bold
    return (
        f"| {pt.gpus} | {pt.rank or '–'} | {name} | {_parts(pt)} | {_batch(pt)} | "
        f"{fmt_seconds(pt.compute_s)} | {fmt_seconds(pt.communication_s)} | "
        f"{fmt_seconds(pt.total_s)} | {fmt_seconds(pt.iteration_s)} | "
        f"{fmt_bytes(pt.memory_bytes)} | {limits} |"
    )


CHART_COMPUTE = ("█", "cyan")
CHART_COMM = ("▒", "magenta")


def _chart_points(points: Sequence[Point]) -> dict[tuple[int, str], Point]:
    """One point per (GPU count, strategy): its fastest feasible configuration, else
    (when none is feasible) its fastest configuration with a finite time."""
    chosen: dict[tuple[int, str], Point] = {}
    for pt in points:
        total = pt.total_s
        if total != total or total == float("inf"):  # NaN or inf: nothing to draw
            continue
        key = (pt.gpus, pt.strategy)
        old = chosen.get(key)
        if old is None or (pt.feasible, -total) > (old.feasible, -old.total_s):
            chosen[key] = pt
    return chosen


def _chart_note(pt: Point, best: Point | None) -> str:
    if not pt.feasible:
        return "✗ " + ", ".join(dict.fromkeys(lim.code for lim in pt.limits))
    if pt.rank == 1 or best is None:
        return "best"
    return fmt_gap(pt.total_s / best.total_s, digits=0)


def _bar(pt: Point, scale: float, bar_width: int):
    """Compute and communication of one point as glyphs, ``bar_width`` cells for ``scale``
    seconds; a longer bar is cut and ends in '»'."""
    from rich.text import Text

    cut = pt.total_s > scale * 1.0001
    n_total = min(bar_width, max(1, round(bar_width * pt.total_s / scale))) if pt.total_s > 0 else 0
    if cut:
        n_total = bar_width - 1
    n_comp = min(n_total, round(bar_width * pt.compute_s / scale))
    if pt.communication_s > 0.02 * pt.total_s and n_comp == n_total and n_total > 1:
        n_comp -= 1  # a visible communication share gets at least one cell
    if pt.compute_s > 0.02 * pt.total_s and n_comp == 0 and n_total > 1:
        n_comp = 1
    n_comm = n_total - n_comp
    dim = not pt.feasible
    bar = Text(CHART_COMPUTE[0] * n_comp, style="dim" if dim else CHART_COMPUTE[1])
    bar += Text(CHART_COMM[0] * n_comm, style="dim" if dim else CHART_COMM[1])
    if cut:
        bar += Text("»", style="bold")
    return bar


def bar_chart(points: Sequence[Point], meta: dict, width: int = 100):
    """A compact terminal chart of total time per epoch (issue 6: `predict --chart`).

    Per GPU count one bar per strategy (its fastest configuration), compute and
    communication in two glyphs (readable without colour).  Bars are scaled per GPU
    count, so that the strategies at one count compare at a glance: the slowest
    feasible bar fills the width (without a feasible one: up to 3x the fastest);
    longer bars are cut and end in '»'.  The time and the gap to the best are
    printed.  A strategy with no feasible configuration is shown dimmed after the
    others, with the limits it hits.  Fits in ``width`` columns (at least 10 cells
    of bar)."""
    from rich.table import Table
    from rich.text import Text

    chosen = _chart_points(points)
    if not chosen:
        return Text("no point with a finite time to chart")
    rows = []
    for gpus in sorted({g for g, _ in chosen}):
        group = sorted((pt for (g, _), pt in chosen.items() if g == gpus),
                       key=lambda p: (not p.feasible, p.total_s))
        rows.append((gpus, group))

    labels = [(f"{g:,}", pt.strategy, fmt_seconds(pt.total_s),
               _chart_note(pt, group[0] if group[0].feasible else None)) for g, group in rows for pt in group]
    w_gpus = max(4, *(len(a) for a, _, _, _ in labels))
    w_name = max(8, *(len(b) for _, b, _, _ in labels))
    w_time = max(4, *(len(c) for _, _, c, _ in labels))
    w_note = min(24, max(4, *(len(d) for _, _, _, d in labels)))
    bar_width = max(10, width - (w_gpus + w_name + w_time + w_note + 4 * 2))

    t = Table(
        title=f"time per epoch ({CHART_COMPUTE[0]} compute, {CHART_COMM[0]} communication;"
        " bars scaled per GPU count)",
        title_justify="left",
        show_header=True,
        header_style="bold",
        box=None,
        pad_edge=False,
        padding=(0, 2, 0, 0),
        expand=False,
    )
    t.add_column("GPUs", justify="right", no_wrap=True, width=w_gpus)
    t.add_column("strategy", no_wrap=True, width=w_name)
    t.add_column("", no_wrap=True, width=bar_width)
    t.add_column("epoch", justify="right", no_wrap=True, width=w_time)
    t.add_column("", no_wrap=True, width=w_note, overflow="ellipsis")
    for gpus, group in rows:
        feasible = [pt.total_s for pt in group if pt.feasible]
        every = [pt.total_s for pt in group]
        scale = max(feasible) if feasible else min(max(every), 3 * min(every))
        scale = scale if scale > 0 else 1.0
        for i, pt in enumerate(group):
            style = BEST_STYLE if pt.rank == 1 else (INFEASIBLE_STYLE if not pt.feasible else None)
            t.add_row(
                f"{gpus:,}" if i == 0 else "",
                Text(pt.strategy, style=style),
                _bar(pt, scale, bar_width),
                Text(fmt_seconds(pt.total_s), style=style),
                Text(_chart_note(pt, group[0] if group[0].feasible else None), style=style),
            )
        if gpus != rows[-1][0]:
            t.add_row("", "", "", "", "")
    return t
