"""The strategy registry: one module per strategy, each declaring and registering itself
(``@register``: name, order, split layers, phases, plot style, hybrid parts, per-layer
distribution; docs/development.md "How to add a strategy").  Every module of this
package is imported here, so a new one needs no line elsewhere.

``REGISTRY[name]`` is a :class:`~oracle.compute.strategies.base.Strategy` whose
``configurations()`` lists the points for p GPUs and ``evaluate()`` returns a
:class:`~oracle.compute.cost.Point`; :func:`names` lists them in their order.
"""

import importlib
import pkgutil

from oracle.compute.strategies.base import REGISTRY, Config, Strategy, names

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["REGISTRY", "Config", "Strategy", "names"]
