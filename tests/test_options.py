"""Options built and validated once (issue 24 point 2)."""

from __future__ import annotations

import pytest

from oracle.errors import OracleError


def test_options_are_valid_wherever_built():
    """An Options checks itself: a direct caller of the cost model gets the same error line
    as a flag would (not a KeyError or a silent fallback deep in a strategy)."""
    from oracle.compute.options import Options

    for bad, path in ((dict(precision="fp64"), "--precision"), (dict(compute_scaling="linaer"), "--compute-scaling"),
                      (dict(memory_reuse=0.0), "--memory-reuse"), (dict(zero=4), "--zero")):  # fmt: skip
        with pytest.raises(OracleError) as exc:
            Options(**bad)
        assert exc.value.path == path
