"""Print a pip constraints file that pins every dependency to the lowest version
pyproject.toml allows (`name>=X` becomes `name==X`), for `.ci/run`'s second pass:
the suite runs at both ends of every range (issue 23).

    python scripts/lower_bounds.py [EXTRA ...] > lower.txt
    pip install -c lower.txt '.[test]'

The core dependencies always; the optional ones of each EXTRA named. A dependency with
no lower bound is left out (pip takes the newest). Reads the file with tomllib
(Python >= 3.11) or, on 3.10, a plain scan of the two dependency tables.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
_LOWER = re.compile(r"^\s*([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][0-9A-Za-z.]*)")


def _tables(text: str) -> tuple[list[str], dict[str, list[str]]]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        return _scan(text)
    project = tomllib.loads(text)["project"]
    return project.get("dependencies", []), project.get("optional-dependencies", {})


def _scan(text: str) -> tuple[list[str], dict[str, list[str]]]:
    core = re.search(r"^dependencies\s*=\s*\[(.*?)\]", text, re.S | re.M)
    extras: dict[str, list[str]] = {}
    block = text.split("[project.optional-dependencies]", 1)[-1].split("\n[", 1)[0]
    for name, body in re.findall(r"^(\w+)\s*=\s*\[(.*?)\]", block, re.M):
        extras[name] = re.findall(r'"([^"]+)"', body)
    return re.findall(r'"([^"]+)"', core.group(1)) if core else [], extras


def lower_bounds(extras: list[str]) -> list[str]:
    core, optional = _tables(PYPROJECT.read_text(encoding="utf-8"))
    wanted = list(core)
    for extra in extras:
        if extra not in optional:
            raise SystemExit(f"lower_bounds: no extra '{extra}' in {PYPROJECT.name}")
        wanted += optional[extra]
    pins: dict[str, str] = {}
    for spec in wanted:
        m = _LOWER.match(spec)
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


if __name__ == "__main__":
    print("\n".join(lower_bounds(sys.argv[1:])))
