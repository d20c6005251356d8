"""``oracle snapshot`` and ``oracle check``: record the projections of a cases file as a
baseline, recompute a baseline and list the points that moved (oracle/cli/snapshot.py
prints them).  Relative paths in a cases file are taken from its folder; the baseline
stores them relative to its own folder."""

from __future__ import annotations

from pathlib import Path

from oracle.load.baseline import FORMAT_TAG


def snapshot_text(cases_file: str, output: str | None) -> tuple[str, int, int]:
    """The baseline JSON of ``cases_file`` (paths relative to ``output``'s folder), its
    number of points and of cases."""
    import datetime

    import oracle

    cases, lines = _load_cases(cases_file)
    src = Path(cases_file).parent
    dst = Path(output).parent if output else Path(".")
    _check_names(cases, src, cases_file, lines)
    entries = []
    for i, case in enumerate(cases):
        stored = _rebase(case, src, dst)
        points = _named(_run_case(case, src, cases_file, f"cases[{i}]"), stored)
        entries.append({"case": stored, "points": points})
    doc = {
        "format": FORMAT_TAG,
        "oracle_version": oracle.__version__,
        "created": datetime.date.today().isoformat(),
        "cases_file": str(cases_file),
        "cases": entries,
    }
    return _dump(doc), sum(len(e["points"]) for e in entries), len(entries)


def check_baseline(baseline: str, rtol: float) -> tuple[int, int, dict]:
    """Recompute ``baseline``: its number of points and cases, and the moves by
    (case, point), each list with the total time first."""
    from oracle.compute.baseline import diff_points
    from oracle.load.baseline import load_baseline

    cases = load_baseline(baseline)
    base_dir = Path(baseline).parent
    _check_names([case for case, _ in cases], base_dir, baseline, where="cases[{}].case")
    moves = []
    n_points = 0
    for i, (case, points) in enumerate(cases):
        n_points += len(points)
        new = _named(_run_case(case, base_dir, baseline, f"cases[{i}].case"), case)
        moves += diff_points(_case_label(case), points, new, rtol)
    by_point: dict[tuple[str, str], list] = {}
    for m in moves:
        by_point.setdefault((m.case, m.point), []).append(m)
    for ms in by_point.values():
        ms.sort(key=lambda m: m.field != "total_s")
    return n_points, len(cases), by_point


def _check_names(cases: list[dict], base_dir, path: str, lines=None, where: str = "cases[{}]") -> None:
    """Every model, system, profile and stack the cases name loaded before anything is
    projected: an unknown one names ``path``, the case's key (``cases[0].stack``) and its
    line (``lines``: each case's key lines), as a sweep file's (services/sweep.check_names)."""
    from oracle.load import Files
    from oracle.load.sweepfile import Case, rebased
    from oracle.services.sweep import check_names

    named = [Case(where.format(i), rebased(case, Path(base_dir)), lines[i] if lines else {})
             for i, case in enumerate(cases)]  # fmt: skip
    check_names(named, Files(), path)


def _load_cases(path: str) -> tuple[list[dict], list[dict]]:
    """The cases of a cases file, and each case's lines of its keys ("": the case's)."""
    from oracle.compute.baseline import CASE_KEYS
    from oracle.errors import OracleError
    from oracle.load.baseline import REQUIRED_KEYS, check_case
    from oracle.load.fields import Fields
    from oracle.load.yamlfile import load_yaml

    doc = load_yaml(path, "cases file")
    top = Fields(doc, path, "")
    cases, lines = [], []
    for i, raw, line in top.items("cases"):
        f = Fields(raw, path, f"cases[{i}]", line)
        lines.append({"": line} | {key: f.key_line(key) for key in CASE_KEYS if f.has(key)})
        case = {}
        for key in CASE_KEYS:
            if f.has(key):
                case[key] = f.map[key]
            f.used.add(key)
        f.done()
        for key in REQUIRED_KEYS:
            if key not in case:
                raise f.error(None, f"missing required key '{key}'")
        if ("batch" in case) == ("batch_per_gpu" in case):
            raise f.error(None, "give exactly one of batch and batch_per_gpu")
        check_case(case, path, f"cases[{i}]", {"": f.line} | {key: f.key_line(key) for key in case})
        cases.append(case)
    top.done()
    if not cases:
        raise OracleError("has no cases", file=path)
    return cases, lines


def _rebase(case: dict, src_dir, dst_dir) -> dict:
    """Paths relative to src_dir, rewritten relative to dst_dir (names stay names)."""
    import os
    from pathlib import Path

    from oracle.load.baseline import PATH_KEYS

    out = dict(case)
    for key in (k for k in PATH_KEYS if k in case):
        v = str(case[key])
        if _is_path(v):
            p = Path(v) if Path(v).is_absolute() else Path(src_dir) / v
            out[key] = os.path.relpath(p.resolve(), Path(dst_dir).resolve())
    return out


def _is_path(value: str) -> bool:
    return "/" in value or value.endswith((".yaml", ".yml"))


def _named(points: list[dict], case: dict) -> list[dict]:
    """``points`` naming a case's stack file by its path as the baseline stores it (relative
    to the baseline's folder: the same wherever oracle runs), not as the run read it."""
    stack = str(case.get("stack", ""))
    return [dict(p, stack=stack) for p in points] if _is_path(stack) else points


def _run_case(case: dict, base_dir, file: str | None = None, where: str = "") -> list[dict]:
    """The projections of one case; a bad value is blamed on ``file`` at ``where``."""
    from oracle import api
    from oracle.compute.baseline import KEPT
    from oracle.errors import OracleError
    from oracle.render.records import point_to_dict

    resolved = _rebase(case, base_dir, ".")
    kwargs = {k: resolved[k] for k in resolved if k not in ("model", "system", "profile", "strategy")}
    try:
        points = api.predict(
            resolved["model"], resolved["system"], resolved["profile"],
            strategies=str(resolved.get("strategy", "all")), **kwargs,
        )  # fmt: skip
    except OracleError as exc:
        if exc.file is None and file is not None:  # a value of the case, named as an option
            key = (exc.path or "").lstrip("-").replace("-", "_")
            exc.file, exc.path = file, where + (f".{key}" if key else "")
        raise
    return [{k: v for k, v in point_to_dict(p).items() if k in KEPT} for p in points]


def _case_label(case: dict) -> str:
    scale = f"B={case['batch']}" if "batch" in case else f"b={case['batch_per_gpu']}/GPU"
    stack = f", stack {case['stack']}" if "stack" in case else ""
    return f"{case['model']}/{case['system']}/{case['profile']} ({scale}, gpus {case.get('gpus', 'default')}{stack})"


def _dump(doc: dict) -> str:
    """Readable and diff-friendly: one point per line."""
    import json

    head = {k: v for k, v in doc.items() if k != "cases"}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f" {json.dumps(k)}: {json.dumps(v)},")
    lines.append(' "cases": [')
    for i, entry in enumerate(doc["cases"]):
        lines.append("  {" + f'"case": {json.dumps(entry["case"])}, "points": [')
        pts = [json.dumps(p, allow_nan=False, separators=(",", ":")) for p in entry["points"]]
        lines.append(",\n".join("   " + p for p in pts))
        lines.append("  ]}" + ("," if i < len(doc["cases"]) - 1 else ""))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"
