"""docs/ stays true to the code (issue 17): the CLI reference is the commands' own help."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_cli_reference_is_current():
    from oracle.render.clidoc import reference

    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert doc == reference(), "docs/cli.md is stale: python -m oracle.render.clidoc > docs/cli.md"
