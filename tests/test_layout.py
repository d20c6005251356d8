"""The layering of docs/development.md, checked on the source: load -> compute -> render
-> cli, with services between the commands and what they call.  A module that imports
a layer above it (compute importing click, a service importing a command) fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "oracle"

# (package, modules it must never import, whatever the depth of the import)
RULES = [
    ("compute", ("click", "rich", "oracle.cli", "oracle.render", "oracle.services")),
    ("load", ("click", "rich", "oracle.cli", "oracle.render", "oracle.services")),
    ("services", ("click", "oracle.cli")),
]


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append((node.lineno, node.module))
    return out


@pytest.mark.parametrize("package,banned", RULES, ids=[r[0] for r in RULES])
def test_no_layer_imports_one_above_it(package, banned):
    bad = [f"{path.relative_to(PKG.parent)}:{line} imports {name}"
           for path in sorted((PKG / package).rglob("*.py"))
           for line, name in _imports(path)
           if any(name == b or name.startswith(b + ".") for b in banned)]  # fmt: skip
    assert not bad, "\n".join(bad)


def test_tests_import_conftest_as_pytest_puts_it_on_the_path():
    """The README runs plain `pytest`, which puts tests/ on sys.path but not the repository
    root: `from tests.conftest import ...` only works under `python -m pytest` (it broke CI)."""
    import re

    here = Path(__file__).resolve().parent
    bad = [f"{p.name}:{i}" for p in sorted(here.glob("*.py"))
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if re.match(r"\s*(from tests(\.| import)|import tests\b)", line)]  # fmt: skip
    assert not bad, bad
