"""The strategy registry: one module per strategy, each registering itself.

``REGISTRY[name]`` is a :class:`~oracle.compute.strategies.base.Strategy` whose
``configurations()`` lists the points for p GPUs and ``evaluate()`` returns a
:class:`~oracle.compute.cost.Point`.
"""

from oracle.compute.strategies import (  # noqa: F401 - imported to register
    channel,
    data,
    data_filter,
    data_spatial,
    filter,
    pipeline,
    serial,
    spatial,
)
from oracle.compute.strategies.base import REGISTRY, Config, Strategy

ORDER = ("serial", "data", "spatial", "filter", "channel", "pipeline", "data+filter", "data+spatial")
NAMES = tuple(n for n in ORDER if n in REGISTRY)

__all__ = ["REGISTRY", "NAMES", "Config", "Strategy"]
