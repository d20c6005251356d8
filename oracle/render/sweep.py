"""The rows of ``oracle sweep`` (issue 29) as CSV, JSON or Markdown, one case at a
time: :func:`begin`, then :func:`rows` for each case's points, then :func:`end`; the
text of each call can be written at once, so output starts before the sweep ends.

CSV and JSON hold the columns and keys of ``oracle predict --format csv/json``
(render/records.py) after ``case`` (the case's label) and ``where`` (its entry in the
sweep file); Markdown a short table of the same rows."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from oracle.compute.cost import Point

FORMATS = ("csv", "json", "markdown")
MD_HEAD = ("case", "GPUs", "strategy", "p1 x p2", "time/epoch (s)", "time/iteration (s)", "memory/GPU", "limits")


def begin(fmt: str) -> str:
    if fmt == "csv":
        return _csv_line(["case", "where", *_columns()])
    if fmt == "json":
        return "["
    return "| " + " | ".join(MD_HEAD) + " |\n|" + "|".join("---" for _ in MD_HEAD) + "|\n"


def rows(fmt: str, label: str, where: str, points: Sequence[Point], first: bool) -> str:
    """One case's points (a compute/vector/rows.BriefRow as its point, issue 29);
    ``first``: no case was written before (JSON's commas)."""
    if fmt == "csv":
        from oracle.render.records import csv_lines

        return csv_lines(points, (label, where))
    if fmt == "json":
        from oracle.render.records import point_to_dict
        from oracle.render.rows_json import ONE_LINE, item_texts

        def write(pt: Point) -> str:
            return json.dumps({"case": label, "where": where, **point_to_dict(pt)}, allow_nan=False)

        head = f'"case": {json.dumps(label)}, "where": {json.dumps(where)}'
        return _join_json(item_texts(list(points), write, ONE_LINE, head), first)
    from oracle.compute.vector.rows import points as row_points

    return "".join(_md_row(label, pt) for pt in row_points(points))


def _join_json(items: list[str], first: bool) -> str:
    if not items:
        return ""
    return ("\n" if first else ",\n") + ",\n".join(items)


def end(fmt: str, wrote_any: bool) -> str:
    if fmt == "json":
        return "\n]\n" if wrote_any else "]\n"
    return ""


def _columns() -> list[str]:
    from oracle.render.records import csv_columns

    return csv_columns()


def _csv_line(values: list) -> str:
    from oracle.textsafe import csv_cell

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([csv_cell(v) for v in values])
    return buf.getvalue()


def _md_row(label: str, pt: Point) -> str:
    from oracle.units import fmt_gb

    cells = (label, str(pt.gpus), pt.strategy, f"{pt.p1} x {pt.p2}", f"{pt.total_s:.4g}", f"{pt.iteration_s:.4g}",
             fmt_gb(pt.memory_bytes), "; ".join(lim.reason for lim in pt.limits))  # fmt: skip
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |\n"
