"""``oracle fit``: model parameters fitted to measurements.

``network`` (:mod:`oracle.cli.fit.network`) fits α, β per network level to collective
benchmark logs; ``runs`` (:mod:`oracle.cli.fit.runs`) calibrates a system from measured
training runs.  The commands parse their options, call :mod:`oracle.services` and render.
"""

from __future__ import annotations

import click


@click.group()
def fit() -> None:
    """Fit model parameters to measurements.

    \b
    network  α, β per level from collective benchmark logs (nccl-tests, OSU)
    runs     collective bandwidths or input-loader rates from measured training runs
    """


from oracle.cli.fit import network as _network  # noqa: E402  (registers the commands)
from oracle.cli.fit import runs as _runs  # noqa: E402,F401

__all__ = ["fit"]
