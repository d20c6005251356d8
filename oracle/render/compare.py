"""Rendering of ``oracle compare``: rich table, JSON, CSV and Markdown."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from itertools import groupby

from oracle.compute.calibration.compare import CompareRow, Stats, Summary
from oracle.render.columns import Column
from oracle.textsafe import csv_cell, csv_row, md
from oracle.units import fmt_ratio, fmt_seconds


def _num(v):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return None
    return v


ROW_FIELDS = (
    "line", "model", "system", "strategy", "gpus", "p1", "p2", "global_batch", "segments", "basis",
    "measured_s", "predicted_s", "accuracy", "ratio", "predicted_compute_s", "predicted_comm_s",
    "measured_compute_s", "measured_comm_s", "compute_accuracy", "comm_accuracy", "anomaly",
    "naive_s",  # --calibrate-on: the nearest smaller calibrated run's time
    "beyond_calibration",  # --calibrate-on: why the run extrapolates in batch
    "anchor", "unanchored_s",  # --calibrate-on: the run it is anchored on; the calibrated model alone (issue 26)
    "feasible", "limits", "profile_kind",
    "compute_conversion",  # issue 13
    "stack",  # issue 25: the software stack in force
    "source",
)  # fmt: skip


def _row_values(r: CompareRow) -> tuple:
    """The values of ROW_FIELDS, in that order."""
    run, pt = r.run, r.point
    return (
        run.line, pt.model, pt.system, run.strategy, run.gpus, pt.p1, pt.p2,
        int(run.global_batch) if float(run.global_batch).is_integer() else run.global_batch,
        pt.segments, run.basis, run.measured_s, _num(r.predicted_s), _num(r.accuracy), _num(r.ratio),
        _num(r.predicted_compute_s), _num(r.predicted_comm_s), run.compute_s, run.comm_s,
        _num(r.compute_accuracy), _num(r.comm_accuracy), r.anomaly, _num(r.naive_s), r.beyond_calibration, r.anchor,
        _num(r.unanchored_s), pt.feasible,
        [lim.reason for lim in pt.limits], pt.profile_kind, pt.compute_conversion, pt.stack, run.source,
    )  # fmt: skip


def row_dict(r: CompareRow) -> dict:
    d = dict(zip(ROW_FIELDS, _row_values(r)))
    for k, v in r.run.extra:
        d.setdefault(k, v)
    return d


def stats_dict(s: Stats) -> dict:
    return {
        "n": s.n,  # the runs scored; not_scored: those the model finds infeasible (no accuracy)
        "not_scored": s.unscored,
        "mean_accuracy": _num(s.mean_accuracy),
        "min_accuracy": _num(s.min_accuracy),
        "mape": _num(s.mape),  # null when a run's projection could not be computed
        "bias": _num(s.bias),
        **_ratios(s),
    }


def _ratios(s: Stats) -> dict:
    """measured / projected: geometric mean, lowest, highest (null without projections)."""
    return {"ratio": _num(s.ratio), "ratio_min": _num(s.ratio_min), "ratio_max": _num(s.ratio_max)}


def summary_dict(s: Summary) -> dict:
    return {
        "runs": s.overall.n,
        "not_scored": s.overall.unscored,
        "not_scored_lines": list(s.unscored_lines),
        "mean_accuracy": _num(s.overall.mean_accuracy),
        "min_accuracy": _num(s.overall.min_accuracy),
        "mape": _num(s.overall.mape),
        "bias": _num(s.overall.bias),
        **_ratios(s.overall),
        "by_strategy": {k: stats_dict(v) for k, v in s.by_strategy.items()},
        "by_model": {k: stats_dict(v) for k, v in s.by_model.items()},
        "ranking_agreement": _num(s.ranking_agreement),
        "ranking_pairs": s.ranking_pairs,
        "anomalies": s.anomalies,
        "calibration": [{"system": k, "calibrated": v, "left_out": _left_out(s, k)} for k, v in s.calibration],
        "naive": stats_dict(s.naive) if s.naive else None,
        "model_on_naive_runs": stats_dict(s.model_on_naive_runs) if s.model_on_naive_runs else None,
        "within_calibration": _stats_or_none(s.within_calibration),
        "naive_within_calibration": _stats_or_none(s.naive_within_calibration),
        "beyond_calibration": _stats_or_none(s.beyond_calibration),
        "beyond_calibration_lines": list(s.beyond_lines),
        "unanchored": _stats_or_none(s.unanchored),
    }


def _left_out(s: Summary, system: str) -> list[dict]:
    """--calibrate-on: the runs selected on ``system`` that the model finds infeasible, left
    out of its calibration, with their limits."""
    aside = dict(s.calibration_left_out).get(system, ())
    return [{"line": a.line, "run": a.run, "reason": a.reason} for a in aside]


def _stats_or_none(s: Stats | None) -> dict | None:
    return stats_dict(s) if s is not None else None


def line_text(line: int | None) -> str:
    """A run's line in its runs file; "–" for a run of no file line (compare --log)."""
    return "–" if line is None else str(line)


def _lines(lines) -> str:
    """'line 3; ', 'lines 3, 5; ' for the runs of a runs file ("" for compare --log's run)."""
    known = [str(x) for x in lines if x is not None]
    return f"line{'s' if len(known) > 1 else ''} {', '.join(known)}; " if known else ""


def unscored_line(summary: Summary) -> str:
    """How runs the model finds infeasible count: apart, or "" when there are none."""
    n = len(summary.unscored_lines)
    if not n:
        return ""
    return (f"not scored: {_runs(n)} the model finds infeasible ({_lines(summary.unscored_lines)}the limit in"
            f" the notes), left out of the accuracies, MAPE, ratios and ranking, which are over the other"
            f" {summary.overall.n}")


def held_out_lines(summary: Summary) -> list[str]:
    """--calibrate-on: what was calibrated, and the model against the naive projection."""
    out = [f"{name}: {note} (those runs are not scored)" for name, note in summary.calibration]
    if summary.naive is not None and summary.model_on_naive_runs is not None:
        out.append(
            f"naive projection (time per iteration of the nearest smaller calibrated run of the same model and"
            f" strategy) on {_runs(summary.naive.n)}: mean accuracy {pct_text(summary.naive.mean_accuracy)}; the model on"
            f" the same runs: {pct_text(summary.model_on_naive_runs.mean_accuracy)}"
        )
    elif summary.calibration:
        out.append("naive projection: no evaluated run has a smaller calibrated run of its model and strategy")
    if summary.unanchored is not None:
        out.append(f"anchored: {_runs(summary.unanchored.n)} projected from the measured time of their nearest"
                   f" calibration run times the model's ratio (see notes); the calibrated model alone on them:"
                   f" {pct_text(summary.unanchored.mean_accuracy)}")  # fmt: skip
    return out + _range_lines(summary)


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _range_lines(summary: Summary) -> list[str]:
    """--calibrate-on: the runs within the calibrated samples per replica, and those beyond."""
    if summary.beyond_calibration is None:
        return []
    out = []
    if summary.within_calibration is not None:
        within, naive = summary.within_calibration, summary.naive_within_calibration
        out.append(
            f"within the calibrated batch (a calibration run of the same model and strategy has the run's samples"
            f" per replica): {_runs(within.n)}, mean accuracy {pct_text(within.mean_accuracy)}"
            + (f"; naive projection {pct_text(naive.mean_accuracy)} on {naive.n} of them" if naive else "")
            + _not_scored(within.unscored)
        )
    unscored = set(summary.unscored_lines)
    scored = [line for line in summary.beyond_lines if line not in unscored]
    beyond = summary.beyond_calibration
    out.append(
        f"beyond it (extrapolated in batch, see notes): {_runs(beyond.n)}"
        + (f" ({_lines(scored)[:-2]})" if scored else "")
        + f", mean accuracy {pct_text(beyond.mean_accuracy)}"
        + _not_scored(beyond.unscored, [line for line in summary.beyond_lines if line in unscored])
    )
    return out


def _not_scored(n: int, lines=()) -> str:
    """'; 2 not scored (infeasible in the model: lines 4, 5)' where ``n`` of a range's runs
    are infeasible in the model (its Stats.unscored), "" where none."""
    if not n:
        return ""
    return f"; {n} not scored (infeasible in the model{': ' + _lines(lines)[:-2] if lines else ''})"


def to_json(rows: Sequence[CompareRow], summary: Summary) -> str:
    return json.dumps({"rows": [row_dict(r) for r in rows], "summary": summary_dict(summary)}, indent=2) + "\n"


def to_csv(rows: Sequence[CompareRow]) -> str:
    """The columns of row_dict, then the runs file's extra columns in order of appearance;
    written straight from the records (1e6 runs make dictionaries per row costly)."""
    extra_cols: list[str] = []
    seen = set(ROW_FIELDS)
    for r in rows:
        for k, _ in r.run.extra:
            if k not in seen:
                seen.add(k)
                extra_cols.append(k)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(csv_row([*ROW_FIELDS, *extra_cols]))  # extra columns carry the runs file's own header
    plain = (int, float)  # most cells: written as they are
    for r in rows:
        cells = [v if type(v) in plain else _csv_value(v) for v in _row_values(r)]
        if extra_cols:
            extra = dict(r.run.extra)
            cells += [_csv_value(extra.get(k)) for k in extra_cols]
        w.writerow(cells)
    return buf.getvalue()


def _csv_value(v):
    if v is None:
        return ""
    return csv_cell("; ".join(v) if isinstance(v, list) else v)


def pct_text(v: float | None) -> str:
    return "–" if v is None or not math.isfinite(v) else f"{100 * v:.1f}%"


# how people read the direction of the error (issue 23: a ratio, not a bias of -63%)
RATIO_HEAD = "meas./proj."
RATIO_NOTE = "meas./proj.: geometric mean of measured / projected time (above 1x: runs slower than projected)"


def ratio_cell(s: Stats) -> str:
    return "–" if not math.isfinite(s.ratio) else fmt_ratio(s.ratio)


def _acc_style(a: float | None) -> str | None:
    if a is None:
        return None
    return "green" if a >= 0.9 else ("yellow" if a >= 0.75 else "red")


_KIND = {"total": "total only, spread over the layers", "measured": "measured per layer", "estimated": "ESTIMATED, not measured"}


def profiles_line(rows: Sequence[CompareRow]) -> str:
    """Which profiles the projections used, and how each was obtained."""
    from pathlib import Path

    seen: dict[str, str] = {}
    for r in rows:
        seen.setdefault(Path(r.run.profile).stem, _KIND.get(r.point.profile_kind, r.point.profile_kind))
    return "compute times from profiles: " + ", ".join(f"{k} ({v})" for k, v in seen.items())


TABLE_MAX_RUNS = 1000  # a terminal table of more runs is unreadable and slow to lay out


# at a narrow width the lowest priorities go first; a run's line and configuration are its
# identity (issue 23) and never dropped
COLUMNS = (
    Column("line", "line", "right", identity=True),
    Column("strategy", "strategy", "left", identity=True),
    Column("gpus", "GPUs", "right", identity=True),
    Column("parts", "p1×p2", "right", 5, identity=True),
    Column("batch", "batch", "right", 6, identity=True),
    Column("basis", "on", "left", 3),
    Column("measured", "measured", "right"),
    Column("projected", "projected", "right"),
    Column("accuracy", "accuracy", "right"),
    Column("split", "comp/comm acc.", "right", 4),
)


INFEASIBLE = "infeasible"  # the accuracy cell of a run not scored (CompareRow.scored)


def accuracy_cell(r: CompareRow) -> str:
    return pct_text(r.accuracy) if r.scored else INFEASIBLE


def _cells(r: CompareRow) -> dict:
    parts = ""
    if r.compute_accuracy is not None or r.comm_accuracy is not None:
        parts = f"{pct_text(r.compute_accuracy)} / {pct_text(r.comm_accuracy)}"
    from rich.text import Text

    return {
        "line": line_text(r.run.line),
        "strategy": r.run.strategy,
        "gpus": str(r.run.gpus),
        "parts": f"{r.point.p1}×{r.point.p2}",
        "batch": f"{r.run.global_batch:g}",
        "basis": r.run.basis,
        "measured": fmt_seconds(r.measured_s),
        "projected": fmt_seconds(r.predicted_s),
        "accuracy": Text(accuracy_cell(r), style=_acc_style(r.accuracy) if r.scored else None),
        "split": parts,
        "anomaly": Text(notes(r), style="yellow" if r.anomaly else None),
    }


def notes(r: CompareRow) -> str:
    """The limits of a run not scored, the anomaly and, with --calibrate-on, why the run
    extrapolates in batch."""
    parts = [x for x in (r.limits_note(), r.anomaly) if x]
    if r.beyond_calibration:
        parts.append(f"beyond calibration: {r.beyond_calibration}")
    if r.anchor:
        parts.append(r.anchor)
    return "; ".join(parts)


def table(rows: Sequence[CompareRow], summary: Summary, title: str = ""):
    """Runs (the first TABLE_MAX_RUNS of them) grouped by model, system and the stack in
    force (each heading names it), those not scored dimmed; the summary of all, the profiles used.  Columns fit the width they are rendered at (issue 17)."""
    from rich.console import Group
    from rich.text import Text

    from oracle.render.columns import FitTable, Section
    from oracle.render.predict import INFEASIBLE_STYLE

    key = lambda r: (r.point.model, r.point.system, r.point.stack)  # noqa: E731
    sections, styles = [], {}
    for (model, system, stack), group in groupby(rows[:TABLE_MAX_RUNS], key=key):
        cells = []
        for r in group:
            cells.append(_cells(r))
            if not r.scored:  # dimmed, as predict's infeasible points
                styles[id(cells[-1])] = INFEASIBLE_STYLE
        sections.append(Section(cells, label=f"{model} on {system} · stack {stack}"))
    t = FitTable(
        COLUMNS,
        sections,
        notes=Column("anomaly", "notes"),
        title=title,
        hint="--width or --format csv shows them",
        styles=styles,
    )
    parts = [t]
    if len(rows) > TABLE_MAX_RUNS:
        parts.append(Text(f"... and {len(rows) - TABLE_MAX_RUNS:,} more runs, in the summary below;"
                          " -f csv or -f json lists every run", style="dim"))
    return Group(*parts, summary_table(summary), Text(profiles_line(rows), style="dim"))


def summary_table(summary: Summary):
    """Accuracy of all runs, per strategy and (several models) per model; the columns fit
    the width they are rendered at."""
    from rich.text import Text

    from oracle.render.columns import FitTable, Section

    def row(label: str, s: Stats, style: str | None = None) -> dict:
        return {"label": Text(label, style=style), "runs": str(s.n), "unscored": str(s.unscored),
                "mean": Text(pct_text(s.mean_accuracy), style=_acc_style(s.mean_accuracy)),
                "min": pct_text(s.min_accuracy), "mape": pct_text(s.mape), "ratio": ratio_cell(s)}  # fmt: skip

    rows = [row("all runs", summary.overall, "bold")]
    rows += [row(f"strategy {name}", s) for name, s in summary.by_strategy.items()]
    if len(summary.by_model) > 1:
        rows += [row(f"model {name}", s) for name, s in summary.by_model.items()]
    agree = (
        f"ranking agreement {pct_text(summary.ranking_agreement)} of {summary.ranking_pairs} strategy pairs"
        if summary.ranking_agreement is not None
        else "ranking agreement: no group has runs of two strategies at the same GPU count"
    )
    caption = (
        f"{agree} · {summary.anomalies} anomal{'y' if summary.anomalies == 1 else 'ies'} flagged"
        f" · {RATIO_NOTE}"
    )
    if summary.unscored_lines:
        caption += "\n" + unscored_line(summary)
    if summary.calibration:
        caption += "\n" + "\n".join(held_out_lines(summary))
    unscored = (Column("unscored", INFEASIBLE, "right"),) if summary.unscored_lines else ()
    return FitTable(
        (Column("label", "", identity=True), Column("runs", "runs", "right"), *unscored,
         Column("mean", "mean accuracy", "right"), Column("min", "min accuracy", "right", 6),
         Column("mape", "MAPE", "right", 5), Column("ratio", RATIO_HEAD, "right", 7)),
        [Section(rows)], title="\nsummary", caption=caption, hint="--width or --format json shows them",
    )  # fmt: skip


def markdown(rows: Sequence[CompareRow], summary: Summary) -> str:
    out = [
        "| line | model | system | stack | strategy | GPUs | p1×p2 | batch | on | measured | projected | accuracy | notes |",
        "|---:|---|---|---|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in rows:
        out.append(
            f"| {line_text(r.run.line)} | {md(r.point.model)} | {md(r.point.system)} | {md(r.point.stack)} | {r.run.strategy} |"
            f" {r.run.gpus} | {r.point.p1}×{r.point.p2} | {r.run.global_batch:g} | {r.run.basis} |"
            f" {fmt_seconds(r.measured_s)} | {fmt_seconds(r.predicted_s)} | {accuracy_cell(r)} | {md(notes(r))} |"
        )
    extra = bool(summary.unscored_lines)  # a column of the runs not scored where there are some
    out += ["", f"| | runs |{f' {INFEASIBLE} |' if extra else ''} mean accuracy | min accuracy | MAPE | {RATIO_HEAD} |",
            f"|---|---:|{'---:|' if extra else ''}---:|---:|---:|---:|"]

    def add(label: str, s: Stats) -> None:
        out.append(
            f"| {md(label)} | {s.n} |{f' {s.unscored} |' if extra else ''} {pct_text(s.mean_accuracy)} |"
            f" {pct_text(s.min_accuracy)} | {pct_text(s.mape)} | {ratio_cell(s)} |"
        )

    add("**all runs**", summary.overall)
    for name, s in summary.by_strategy.items():
        add(f"strategy {name}", s)
    for name, s in summary.by_model.items():
        add(f"model {name}", s)
    out += ["", md(RATIO_NOTE) + "."]
    if summary.unscored_lines:
        text = md(unscored_line(summary))
        out.append(text[0].upper() + text[1:] + ".")
    if summary.ranking_agreement is not None:
        out.append(f"Ranking agreement: {pct_text(summary.ranking_agreement)} of {summary.ranking_pairs} strategy pairs.")
    out += [f"{md(line)}." for line in held_out_lines(summary)]
    out.append("")
    out.append(md(profiles_line(rows)) + ".")
    return "\n".join(out) + "\n"
