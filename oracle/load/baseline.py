"""Reading a projection baseline (``oracle check BASELINE.json``) strictly: every key
known, every number finite and of a plausible size, every list and mapping where one
belongs.  A hand-edited or damaged baseline is an error naming the entry, never a
crash and never a check that passes because a number is NaN."""

from __future__ import annotations

import math
from pathlib import Path

from oracle import limits
from oracle.compute.baseline import CASE_KEYS, KEPT, NUMERIC
from oracle.errors import OracleError, did_you_mean
from oracle.load.source import parse_json
from oracle.load import yamlfile

FORMAT_TAG = "oracle-baseline/1"
TOP_KEYS = ("format", "oracle_version", "created", "cases_file", "cases")
MAX_NUMBER = 1e300  # beyond it relative differences overflow


def load_baseline(path: str | Path) -> list[tuple[dict, list[dict]]]:
    """(case, points) of every case in a baseline file."""
    name = str(path)
    doc = parse_json(yamlfile.read_text(path, "baseline JSON file"), name, allow_nan=False)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_TAG:
        raise OracleError(f"is not an oracle baseline (expected \"format\": \"{FORMAT_TAG}\")", file=name)
    _known(doc, TOP_KEYS, name, "")
    cases = _typed(doc.get("cases"), list, name, "cases", "a list")
    out = []
    for i, entry in enumerate(cases):
        where = f"cases[{i}]"
        entry = _typed(entry, dict, name, where, "an object with 'case' and 'points'")
        _known(entry, ("case", "points"), name, where)
        if "case" not in entry or "points" not in entry:
            raise OracleError("malformed case entry: needs 'case' and 'points'", file=name, path=where)
        case = _case(entry["case"], name, f"{where}.case")
        points = _typed(entry["points"], list, name, f"{where}.points", "a list")
        out.append((case, [_point(p, name, f"{where}.points[{j}]") for j, p in enumerate(points)]))
    return out


def _typed(value, kind, name: str, where: str, expected: str):
    if not isinstance(value, kind):
        raise OracleError(f"is {_what(value)}; expected {expected}", file=name, path=where)
    return value


def _what(value) -> str:
    if value is None:
        return "null"
    return "an object" if isinstance(value, dict) else "a " + yamlfile.kind_of(value)


def _known(d: dict, keys, name: str, where: str) -> None:
    for key in d:
        if key not in keys:
            raise OracleError(f"unknown key '{key}'", file=name, path=where or None,
                              hint=did_you_mean(str(key), keys) or "expected " + ", ".join(keys))


def _number(value, name: str, where: str, *, integer: bool = False, nullable: bool = True, line=None):
    if value is None and nullable:
        return None
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok:
        raise OracleError(f"is {_what(value)}; expected {'an integer' if integer else 'a number'}",
                          file=name, line=line, path=where)
    if isinstance(value, int) and abs(value) > 10**300 or isinstance(value, float) and not math.isfinite(value):
        raise OracleError("is not a plausible number", file=name, line=line, path=where)
    return value


def _case(case, name: str, where: str) -> dict:
    case = _typed(case, dict, name, where, "an object")
    _known(case, CASE_KEYS, name, where)
    check_case(case, name, where)
    return case


REQUIRED_KEYS = ("model", "system", "profile")
PATH_KEYS = (*REQUIRED_KEYS, "stack")  # a shipped name or a path (relative to the file's folder)

# each number of a case is of one kind (oracle/limits.py): the limits of its option
NUMBER_KEYS = {"batch": limits.BATCH, "batch_per_gpu": limits.BATCH_PER_GPU, "p2": limits.COUNT,
               "segments": limits.COUNT, "memory_reuse": limits.REUSE, "contention": limits.CONTENTION,
               "samples": limits.SAMPLES}  # fmt: skip
FLAG_KEYS = ("mixed_precision",)


def check_case(case: dict, name: str, where: str, lines: dict | None = None) -> None:
    """Types of a case's values, the one check of a baseline's, a cases file's and a sweep
    file's cases: gpus text, a number or a list of numbers; NUMBER_KEYS numbers; FLAG_KEYS
    true or false; PATH_KEYS (model, system, profile, stack) a non-empty name or path; the
    rest (names) text.  ``lines``: the file's line of each key ("": the case's), for the errors."""
    lines = lines or {}
    for key in REQUIRED_KEYS:
        if key not in case:
            raise OracleError(f"missing required key '{key}'", file=name, line=lines.get(""), path=where)
    if ("batch" in case) == ("batch_per_gpu" in case):
        raise OracleError("give exactly one of batch and batch_per_gpu", file=name, line=lines.get(""), path=where)
    for key, value in case.items():
        at = {"file": name, "line": lines.get(key) or lines.get(""), "path": f"{where}.{key}"}
        if key == "gpus" and isinstance(value, list):
            for k, v in enumerate(value):
                _of(limits.GPUS, v, {**at, "path": f"{at['path']}[{k}]"})
        elif key in NUMBER_KEYS or key == "gpus" and not isinstance(value, str):
            _of(NUMBER_KEYS.get(key, limits.GPUS), value, at)
        elif key in FLAG_KEYS:
            if not isinstance(value, bool):
                raise OracleError(f"is {_what(value)}; expected true or false", **at)
        elif key in PATH_KEYS:
            if not isinstance(value, str) or not value.strip():
                shown = "empty" if isinstance(value, str) else _what(value)
                raise OracleError(f"is {shown}; expected a name or path", **at)
        elif key != "gpus" and not isinstance(value, str):
            raise OracleError(f"is {_what(value)}; expected a name", **at)


def _of(kind, value, at: dict) -> None:
    _number(value, at["file"], at["path"], nullable=False, line=at["line"])
    problem = kind.problem(value)
    if problem:
        raise OracleError(problem, **at)


def _point(point, name: str, where: str) -> dict:
    point = _typed(point, dict, name, where, "an object")
    _known(point, KEPT, name, where)
    if not isinstance(point.get("strategy"), str):
        raise OracleError(f"'strategy' is {_what(point.get('strategy'))}; expected a name", file=name, path=where)
    for key in ("gpus", "p1", "p2"):
        _number(point.get(key), name, f"{where}.{key}", integer=True, nullable=False)
    for key in ("segments", "rank"):
        _number(point.get(key), name, f"{where}.{key}", integer=True)
    for key in (*NUMERIC, "global_batch"):
        _number(point.get(key), name, f"{where}.{key}")
    if not isinstance(point.get("feasible", False), bool):
        raise OracleError(f"is {_what(point['feasible'])}; expected true or false", file=name, path=f"{where}.feasible")
    if not isinstance(point.get("stack", ""), str):
        raise OracleError(f"is {_what(point['stack'])}; expected a stack's name", file=name, path=f"{where}.stack")
    codes = _typed(point.get("limit_codes", []), list, name, f"{where}.limit_codes", "a list of names")
    if not all(isinstance(c, str) for c in codes):
        raise OracleError("expected a list of names", file=name, path=f"{where}.limit_codes")
    parts = _typed(point.get("breakdown", {}), dict, name, f"{where}.breakdown", "an object")
    for key, value in parts.items():
        _number(value, name, f"{where}.breakdown.{key}")
    return point
