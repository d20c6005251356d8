"""The Markdown report (``oracle report -o report.md``), from the
:class:`oracle.render.report.ReportData` that :mod:`oracle.render.report` prepares."""

from __future__ import annotations

from collections.abc import Sequence

from oracle.render.compare import RATIO_HEAD, RATIO_NOTE, accuracy_cell, ratio_cell, unscored_line
from oracle.render.predict import memory_label
from oracle.render.report import (
    CAPTIONS,
    NO_PLOTS,
    NUMERIC_HEADS,
    PLOT_KINDS,
    REC_HEAD,
    SECTIONS,
    TOP,
    ReportData,
    config_text,
    findings,
    inputs_rows,
    limits,
    pct,
    rec_cells,
    recommendation,
    stats_rows,
)
from oracle.textsafe import md
from oracle.units import fmt_seconds


def _md(text: object) -> str:
    """A table cell: user text escaped; the bold (**...**) of a chosen strategy kept."""
    s = str(text)
    if s.startswith("**") and s.endswith("**") and len(s) > 4:
        return f"**{md(s[2:-2])}**"
    return md(s)


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[str] = frozenset()) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if h in numeric else "---" for h in head) + "|"]
    out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return out + [""]


def markdown_report(data: ReportData, image_files: dict[str, str] | None) -> str:
    """The report in GitHub-flavoured Markdown.  ``image_files`` maps plot kinds to
    file names (relative to the report) written next to it; None: no matplotlib."""
    m = data.meta
    out = [f"# oracle report: {md(m['model'])} on {md(m['system'])}", "",
           f"{md(m.get('scaling', ''))} · profile {md(m.get('profile', ''))} · {md(m.get('precision', ''))} · "
           f"{md(memory_label(m))} · times per epoch, memory per GPU", ""]
    out += [f"## {SECTIONS['summary']}", ""] + [f"- {md(t)}" for t in findings(data)] + [""]
    out += [f"## {SECTIONS['inputs']}", ""]
    for group, rows in inputs_rows(data):
        out += [f"**{md(group)}**", ""] + _md_table(["", ""], rows)
    out += [f"## {SECTIONS['recommendation']}", "",
            f"The {TOP} fastest feasible configurations at each GPU count, ranked by time per epoch.", ""]
    rows = []
    for g, ok, near in recommendation(data.points):
        if ok:
            for i, pt in enumerate(ok):
                cells = rec_cells(pt, ok[0])
                name = f"**{pt.strategy}**" if i == 0 else pt.strategy
                rows.append([f"{g:,}" if i == 0 else "", cells[0], name, *cells[1:]])
        else:
            text = "no feasible configuration"
            if near is not None:
                text += (f"; closest: {near.strategy} ({config_text(near)}), {fmt_seconds(near.total_s)} per epoch, "
                         + "; ".join(lim.reason for lim in near.limits))
            rows.append([f"{g:,}", "–", text] + [""] * (len(REC_HEAD) - 3))
    out += _md_table(REC_HEAD, rows, NUMERIC_HEADS)
    out += [f"## {SECTIONS['plots']}", ""]
    if image_files is None:
        out += [f"> {NO_PLOTS}", ""]
    else:
        for kind in PLOT_KINDS:
            if kind in image_files:
                out += [f"![{kind} plot]({image_files[kind]})", "", f"*{CAPTIONS[kind]}*", ""]
    out += [f"## {SECTIONS['limits']}", ""]
    lim = limits(data.points)
    if lim:
        out += _md_table(
            ["strategy", "feasible at (GPUs)", "limit", "hit at (GPUs)", "every configuration", "why (first case)"],
            [[r["strategy"] if r["first"] else "", r["feasible"] if r["first"] else "", r["code"], r["gpus"],
              r["every_config"] or "–", f"{r['reason']} ({r['example']})"] for r in lim])
    else:
        out += ["Every configuration projected is feasible.", ""]
    if data.measured is not None:
        meas = data.measured
        s = meas.summary
        out += [f"## {SECTIONS['accuracy']}", "",
                f"{len(meas.rows)} measured runs from {md(meas.file)}. "
                f"Accuracy is 1 − |projected − measured| / measured; {md(RATIO_NOTE)}."
                + (f" {md(unscored_line(s))}." if s.unscored_lines else ""),
                ""]
        out += _md_table(["", "runs", "mean accuracy", "min accuracy", "MAPE", RATIO_HEAD],
                         [[label, str(st.n), pct(st.mean_accuracy), pct(st.min_accuracy), pct(st.mape),
                           ratio_cell(st)] for label, st in stats_rows(s)],
                         {"runs", "mean accuracy", "min accuracy", "MAPE", RATIO_HEAD})
        if image_files and "compare" in image_files:
            out += [f"![compare plot]({image_files['compare']})", "", f"*{CAPTIONS['compare']}*", ""]
        out += ["<details><summary>Every run</summary>", ""]
        out += _md_table(
            ["line", "model", "strategy", "GPUs", "p1×p2", "batch", "measured", "projected", "accuracy"],
            [[str(r.run.line), r.point.model, r.run.strategy, f"{r.run.gpus:,}", f"{r.point.p1}×{r.point.p2}",
              f"{r.run.global_batch:,.0f}", fmt_seconds(r.measured_s), fmt_seconds(r.predicted_s),
              accuracy_cell(r)] for r in meas.rows],
            {"line", "GPUs", "p1×p2", "batch", "measured", "projected", "accuracy"})
        out += ["</details>", ""]
    foot = f"Generated by oracle {data.version}" if data.version else "Generated by oracle"
    if data.command:
        foot += f" with {md(data.command)}"
    out += ["---", "", f"<sub>{foot}.</sub>", ""]
    return "\n".join(out)
