"""The cost record every strategy returns: one (strategy, gpus, p1, p2) point.

Times are per epoch, in seconds; memory is bytes per GPU.  ``compute_s``,
``communication_s`` and ``total_s`` are sums of the breakdown phases, so they always
add up (a property the tests check).  A point that hits a limit is still reported,
with its reasons; numbers that cannot be computed (e.g. a pipeline with more stages
than layers) are NaN and render as "n/a" / JSON null.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

PHASES = (
    "forward_backward_s",
    "weight_update_s",
    "gradient_exchange_s",
    "layer_collectives_s",
    "halo_s",
    "pipeline_p2p_s",
    "input_s",
)
COMPUTE_PHASES = ("forward_backward_s", "weight_update_s")
COMM_PHASES = ("gradient_exchange_s", "layer_collectives_s", "halo_s", "pipeline_p2p_s")
# input_s: time the GPUs wait for data beyond compute and communication (exposed input
# stall, docs/cost-model.md input pipeline); 0 unless the system describes its input pipeline


@dataclass(frozen=True)
class Breakdown:
    """Per-epoch seconds by phase (docs/cli.md)."""

    forward_backward_s: float = 0.0
    weight_update_s: float = 0.0
    gradient_exchange_s: float = 0.0
    layer_collectives_s: float = 0.0
    halo_s: float = 0.0
    pipeline_p2p_s: float = 0.0
    input_s: float = 0.0

    @property
    def compute_s(self) -> float:
        return self.forward_backward_s + self.weight_update_s

    @property
    def communication_s(self) -> float:
        return self.gradient_exchange_s + self.layer_collectives_s + self.halo_s + self.pipeline_p2p_s

    def scaled(self, factor: float) -> Breakdown:
        return Breakdown(**{f.name: getattr(self, f.name) * factor for f in fields(self)})

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in PHASES}


NAN_BREAKDOWN = Breakdown(*(math.nan,) * len(PHASES))


@dataclass(frozen=True)
class Limit:
    """A limit a point hits: a short code and a human reason."""

    code: str  # gpus, memory, batch, filters, channels, spatial, layers, segments, ...
    reason: str


@dataclass(frozen=True)
class Point:
    """The projection of one configuration (the cost record)."""

    model: str
    system: str
    strategy: str
    gpus: int
    p1: int
    p2: int
    global_batch: float
    segments: int | None
    iterations_per_epoch: float
    breakdown: Breakdown
    memory_bytes: float
    limits: tuple[Limit, ...] = ()
    rank: int | None = None
    details: tuple[tuple[str, object], ...] = field(default=(), compare=False)
    profile_kind: str = ""  # measured | total | estimated: how the compute times were obtained
    memory_model: str = ""  # framework | paradl (docs/memory.md and docs/cost-model.md): what memory_bytes counts
    compute_conversion: str = ""  # issue 13: the profile's (device, precision, batch) -> this run's
    stack: str = ""  # issue 25: the software stack in force (oracle/stack.py); "" when none was named

    @property
    def compute_s(self) -> float:
        return self.breakdown.compute_s

    @property
    def communication_s(self) -> float:
        return self.breakdown.communication_s

    @property
    def input_s(self) -> float:
        return self.breakdown.input_s

    @property
    def total_s(self) -> float:
        """compute + communication (docs/cost-model.md) + any exposed input stall (§4.4)."""
        return self.compute_s + self.communication_s + self.breakdown.input_s

    @property
    def iteration_s(self) -> float:
        it = self.iterations_per_epoch
        return self.total_s / it if it > 0 else math.nan

    @property
    def feasible(self) -> bool:
        return not self.limits

    def detail(self, key: str, default: object = None) -> object:
        for k, v in self.details:
            if k == key:
                return v
        return default

    def with_rank(self, rank: int | None) -> Point:
        return replace(self, rank=rank)
