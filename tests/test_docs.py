"""docs/ stays true to the code (issue 17): the CLI reference is the commands' own help."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_cli_reference_is_current():
    from oracle.cli.clidoc import reference

    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert doc == reference(), "docs/cli.md is stale: python -m oracle.cli.clidoc > docs/cli.md"


def test_help_names_no_internal_issue():
    """Users read the help; the tracker's issue numbers mean nothing to them (issue 23:
    `oracle profile --help` said "(issue 13)")."""
    import re

    from oracle.cli.clidoc import reference

    hits = [ln.strip() for ln in reference().splitlines() if re.search(r"\bissues? \d+", ln)]
    assert not hits, hits


def test_no_pointer_to_an_unshipped_document():
    """Help texts, errors, comments and docs point to docs/, never to a SPEC users do
    not have (issue 17)."""
    import re

    shipped = ("systems", "profiles", "models", "scripts", "benchmarks", "baselines", "validation")
    files = [*ROOT.glob("oracle/**/*.py"), ROOT / "README.md", *ROOT.glob("docs/*.md"),
             *(f for d in shipped for f in (ROOT / d).rglob("*") if f.suffix in (".py", ".yaml", ".sh", ".md"))]
    offenders = []
    for f in files:
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bSPEC\b", line):
                offenders.append(f"{f.relative_to(ROOT)}:{i}")
    assert not offenders, offenders


def test_readme_is_a_front_page_whose_links_exist():
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 300
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
    for doc in ROOT.glob("docs/*.md"):
        for target in re.findall(r"\]\(([^)#]+)\)", doc.read_text(encoding="utf-8")):
            if not target.startswith("http"):
                assert (doc.parent / target).exists(), (doc.name, target)
