"""The one error type for user mistakes.

Every problem caused by what the user handed us (a file, a key, a command-line value)
is raised as :class:`OracleError`.  It carries where the problem is (file, line, key
path or layer), what was found and what was expected, and renders as a single line:

    models/x.yaml:12: layers[3] (conv2): kernel 7 is larger than the padded input 5x5

The CLI prints that line on stderr and exits with status 2 (docs/errors-and-robustness.md).  Anything else
that escapes is a bug and is reported as an internal error.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from oracle.textsafe import one_line  # noqa: F401  (re-exported: the messages' escaping)


MAX_MESSAGE = 600  # characters of a message shown; longer ones lose their middle


class OracleError(Exception):
    """A user mistake: bad input file, bad key, bad command-line value."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        path: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.path = path
        self.hint = hint

    def where(self) -> str:
        parts = []
        if self.file:
            parts.append(f"{self.file}:{self.line}" if self.line else self.file)
        if self.path:
            parts.append(self.path)
        return ": ".join(parts)

    def __str__(self) -> str:
        where = self.where()
        message = self.message
        if len(message) > MAX_MESSAGE:  # a user's 100 kB token quoted whole is no longer one line
            message = f"{message[: MAX_MESSAGE - 100]} ... ({len(message) - MAX_MESSAGE + 50:,} characters left out) ... {message[-50:]}"
        text = f"{where}: {message}" if where else message
        if self.hint:
            # a question ("did you mean 'x'?") reads as a second clause; other hints in brackets
            text += f"; {self.hint}" if self.hint.startswith("did you mean") else f" ({self.hint})"
        return one_line(text)


class CheckFailed(Exception):
    """A check the user asked for did not pass (exit status 1), e.g. --min-accuracy."""

    exit_code = 1


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A hint naming the closest valid choice, or None when nothing is close."""
    choices = list(choices)
    close = difflib.get_close_matches(str(word), choices, n=1, cutoff=0.6)
    if not close:
        # also try case-insensitive / prefix matches ("bandwith" -> "beta_s_per_byte"
        # is not close by edit distance; callers may pass their own synonyms)
        low = str(word).lower()
        for c in choices:
            if c.lower() == low:
                close = [c]
                break
    return f"did you mean '{close[0]}'?" if close else None
