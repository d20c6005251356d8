"""The layering of docs/development.md, checked on the source: load -> compute -> render
-> cli, with services between the commands and what they call.  A module that imports
a layer above it (compute importing click or load, render importing a command, a service
importing a command) fails here, and so does a module taking another module's private
(``_name``) names: what two modules share is public."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "oracle"

# (package, modules it must never import, whatever the depth of the import)
# The records both load and compute use (oracle/model.py, oracle/records.py) sit on the
# ground floor, so compute never needs load: the arrows go one way.
RULES = [
    ("compute", ("click", "rich", "oracle.load", "oracle.cli", "oracle.render", "oracle.services")),
    ("load", ("click", "rich", "oracle.cli", "oracle.render", "oracle.services")),
    ("render", ("oracle.cli", "oracle.services")),
    ("services", ("click", "oracle.cli")),
]


def _module(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The module an ``from ... import`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    package = _module(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):  # `from oracle import load` imports oracle.load
            source = _absolute(path, node)
            out += [(node.lineno, source)] + [(node.lineno, f"{source}.{a.name}") for a in node.names]
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_uses(path: Path) -> list[tuple[int, str]]:
    """(line, "module._name") for each private name ``path`` takes from another oracle
    module: ``from oracle.x import _y`` or ``x._y`` on an imported oracle module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here, modules, out = _module(path), {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(path, node)
            for a in node.names:
                full = f"{source}.{a.name}"
                if source.split(".")[0] == "oracle" and source != here:
                    modules[a.asname or a.name] = full  # a module imported from a package
                    if _private(a.name):
                        out.append((node.lineno, full))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "oracle" and a.asname:
                    modules[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr)
                and isinstance(node.value, ast.Name) and node.value.id in modules):  # fmt: skip
            out.append((node.lineno, f"{modules[node.value.id]}.{node.attr}"))
    return out


@pytest.mark.parametrize("package,banned", RULES, ids=[r[0] for r in RULES])
def test_no_layer_imports_one_above_it(package, banned):
    bad = [f"{path.relative_to(PKG.parent)}:{line} imports {name}"
           for path in sorted((PKG / package).rglob("*.py"))
           for line, name in _imports(path)
           if any(name == b or name.startswith(b + ".") for b in banned)]  # fmt: skip
    assert not bad, "\n".join(bad)


def test_no_module_takes_another_modules_private_names():
    """What two modules share is public (issue 24): a ``_name`` imported across modules
    is a helper that belongs to both, hidden from the reader of either."""
    bad = [f"{path.relative_to(PKG.parent)}:{line} takes {name}"
           for path in sorted(PKG.rglob("*.py")) for line, name in _private_uses(path)]  # fmt: skip
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
