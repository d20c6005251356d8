"""The cost record every strategy returns: one (strategy, gpus, p1, p2) point.

Times are per epoch, in seconds; memory is bytes per GPU.  ``compute_s``,
``communication_s`` and ``total_s`` are sums of the breakdown phases, so they always
add up (a property the tests check).  A point that hits a limit is still reported,
with its reasons; numbers that cannot be computed (e.g. a pipeline with more stages
than layers) are NaN and render as "n/a" / JSON null.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from oracle.vocabulary import NO_STACK


@dataclass(frozen=True)
class Phase:
    """A phase of the per-epoch time breakdown: its key (seconds per epoch), the sum it
    joins (compute, communication or input) and how plots draw it.  The style is plain
    data (matplotlib stays in oracle/render): a legend label (None: no style of its
    own), a fill colour and a hatch."""

    name: str
    part: str  # "compute" | "communication" | "input"
    label: str | None = None
    colour: str = "#999999"
    hatch: str | None = None


# The phases every strategy may use; a strategy's module declares the ones it adds
# (spatial: halo_s, pipeline: pipeline_p2p_s), placed by the strategy's order.  Colours:
# greys for compute, Paul Tol's "muted" (colour-blind safe) with hatches for communication.
COMMON_PHASES = (
    Phase("forward_backward_s", "compute", "compute: forward + backward", "#BBBBBB"),
    Phase("weight_update_s", "compute", "compute: weight update", "#777777"),
    Phase("gradient_exchange_s", "communication", "comm: gradient exchange", "#332288"),
    Phase("layer_collectives_s", "communication", "comm: layer collectives", "#CC6677", "//"),
)
# input_s: time the GPUs wait for data beyond compute and communication (exposed input
# stall, docs/cost-model.md input pipeline); 0 unless the system describes its input pipeline
INPUT_PHASE = Phase("input_s", "input")
PARTS = ("compute", "communication", "input")
_declared: dict[str, tuple[tuple, Phase]] = {}  # phases strategies add: name -> (sort key, phase)
_cache: dict[str, tuple] = {}


def declare_phase(phase: Phase, key: tuple) -> None:
    """Add a strategy's phase (compute/strategies/base.register; ``key`` places it:
    the strategy's order, then its position there).  A name already used is refused."""
    if phase.part not in PARTS:
        raise ValueError(f"phase '{phase.name}': part '{phase.part}' is not one of {', '.join(PARTS)}")
    if phase.name in phase_names():
        raise ValueError(f"phase '{phase.name}' is declared already")
    _declared[phase.name] = (key, phase)
    _cache.clear()


def forget_phase(name: str) -> None:
    _declared.pop(name, None)
    _cache.clear()


def phases() -> tuple[Phase, ...]:
    """Every phase in breakdown order: compute, communication (the common ones first,
    then the strategies' in strategy order), the input stall last."""
    if "all" not in _cache:
        common = (*COMMON_PHASES, INPUT_PHASE)
        added = [ph for _, ph in sorted(_declared.values(), key=lambda kv: kv[0])]
        _cache["all"] = tuple(ph for part in PARTS for ph in (*common, *added) if ph.part == part)
        _cache["names"] = tuple(ph.name for ph in _cache["all"])
        for part in PARTS:
            _cache[part] = tuple(ph.name for ph in _cache["all"] if ph.part == part)
    return _cache["all"]


def phase_names(part: str | None = None) -> tuple[str, ...]:
    """The keys of :func:`phases` (of one part)."""
    phases()
    return _cache["names" if part is None else part]


def _sum(values: list) -> float:
    """Left to right, as ``a + b + c`` (the same float whatever the number of terms)."""
    total = values[0]
    for v in values[1:]:
        total = total + v
    return total


class Breakdown:
    """Per-epoch seconds by phase (docs/cli.md): ``Breakdown(forward_backward_s=...,
    halo_s=...)``, each phase of :func:`phases` an attribute (0 unless given).
    Immutable."""

    # _names: the phase names when made (the keys of _s, in order); _sums: (phase names,
    # compute_s, communication_s), made once
    __slots__ = ("_s", "_names", "_sums")

    def __init__(self, **seconds: float) -> None:
        names = phase_names()
        unknown = [k for k in seconds if k not in names]
        if unknown:
            raise TypeError(f"unknown phase {unknown[0]!r}; phases: {', '.join(names)}")
        object.__setattr__(self, "_s", {n: seconds.get(n, 0.0) for n in names})
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_sums", None)

    @staticmethod
    def filled(value: float) -> Breakdown:
        """Every phase ``value`` (NaN: a point whose numbers cannot be formed)."""
        return Breakdown(**{n: value for n in phase_names()})

    def __getattr__(self, name: str) -> float:
        if name in self._s:
            return self._s[name]
        if name in phase_names():  # a phase declared after this breakdown was made
            return 0.0
        raise AttributeError(f"'Breakdown' has no phase '{name}'")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Breakdown is immutable: use replace()")

    def __reduce__(self):
        return (_from_dict, (self._s,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Breakdown) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.as_dict().items()))

    def __repr__(self) -> str:
        return "Breakdown(" + ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items()) + ")"

    def replace(self, **seconds: float) -> Breakdown:
        return Breakdown(**{**self._s, **seconds})

    @property
    def compute_s(self) -> float:
        return self._parts()[1]

    @property
    def communication_s(self) -> float:
        return self._parts()[2]

    def _parts(self) -> tuple:
        """The two sums, computed once per set of declared phases (a point asks for them
        several times: ranking, totals, rendering)."""
        names = _cache.get("names") or phase_names()
        sums = self._sums
        if sums is None or sums[0] is not names:
            get = self._s.get
            sums = (
                names,
                _sum([get(n, 0.0) for n in phase_names("compute")]),
                _sum([get(n, 0.0) for n in phase_names("communication")]),
            )
            object.__setattr__(self, "_sums", sums)
        return sums

    def _get(self, name: str) -> float:
        return self._s.get(name, 0.0)

    def as_dict(self) -> dict[str, float]:
        names = phase_names()
        if names is self._names:  # no phase declared since: _s has these keys, in this order
            return dict(self._s)
        return {name: self._get(name) for name in names}


def _from_dict(seconds: dict) -> Breakdown:
    return Breakdown(**seconds)



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
    stack: str = NO_STACK  # issue 25: the software stack in force, as oracle/stack.stack_label names it

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
        """This point with a rank: a field-for-field copy (what ``dataclasses.replace``
        makes, without re-running __init__ for each of a sweep's points)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        object.__setattr__(new, "rank", rank)
        return new
