"""The CLI reference (docs/cli.md), generated from the click commands themselves, so it
can never say what the commands do not do (tests/test_docs.py fails when it is stale).

    python -m oracle.cli.clidoc > docs/cli.md
"""

from __future__ import annotations

import click

HEADER = """# oracle command-line reference

Generated from the commands' own help by `python -m oracle.cli.clidoc > docs/cli.md`;
`tests/test_docs.py` fails when this file is stale. Exit status of every command: 0
success, 1 a check failed (an accuracy gate, a moved baseline), 2 bad input or usage (one
line on standard error naming the file, key and what was expected), 3 an internal error.
"""


def _walk(cmd: click.Command, path: list[str], parent: click.Context | None = None):
    """(path, help text) of a command and its subcommands, with the contexts the CLI
    itself uses (so -h/--help and widths come out as `oracle ... --help` prints them)."""
    from oracle.cli.main import CONTEXT_SETTINGS

    settings = {**CONTEXT_SETTINGS, "terminal_width": 100, "max_content_width": 100} if parent is None else {}
    ctx = click.Context(cmd, info_name=path[-1], parent=parent, **settings)
    yield path, cmd.get_help(ctx)
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                yield from _walk(sub, [*path, name], ctx)


def reference() -> str:
    from oracle.cli.main import cli

    out = [HEADER]
    for path, text in _walk(cli, ["oracle"]):
        out.append(f"## `{' '.join(path)}`\n")
        out.append("```\n" + text.rstrip() + "\n```\n")
    return "\n".join(out)


if __name__ == "__main__":
    import sys

    sys.stdout.write(reference())
