"""The kinds of numbers oracle takes, each with its plausible limits, defined once (issue 28).

Every command option (oracle/cli/types.py), every file loader (oracle/load/fields.py
``of(KIND)``, the runs and cases loaders) and the options builder of the Python API
(oracle/compute/options.py) check a value of a kind against the same bounds, so that a
value refused in one place is refused everywhere: ``--contention 1e308`` and a cases
file's ``contention: 1e308``, ``--batch 1e-7`` and a layer-wise file's ``batch: 1e-7``.
The limits are plausibility bounds, not physics: beyond them the cost model's products
leave the range where its output means anything (a global batch below one sample prints
as "B = 0"; φ = 1e308 gives totals of 1e308 s)."""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_GPUS = 10**7  # beyond any machine; keeps arithmetic and output bounded


@dataclass(frozen=True)
class Kind:
    """A kind of number: what it is called in messages and its closed range [lo, hi]
    (``lo_open``: lo itself is refused); ``whole``: integers only (2.0 counts as 2);
    ``integral``: whole values written as any number (a batch of 1e6 or 256.0), kept as floats."""

    what: str
    lo: float
    hi: float
    whole: bool = False
    lo_open: bool = False
    integral: bool = False

    @property
    def expected(self) -> str:
        return f"{self.what} {'>' if self.lo_open else '>='} {_num(self.lo)} and <= {_num(self.hi)}"

    def problem(self, value) -> str | None:
        """None if ``value`` (an int or float, not a bool) is of this kind, else the
        message: 'got X; expected ...'."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"got {value!r}; expected {self.expected}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"got {value!r}; expected {self.expected}"
        if self.whole and isinstance(value, float) and value != int(value):
            return f"got {value!r}; expected {self.expected} (a whole number)"
        shown = shown_number(value)
        too_low = value <= self.lo if self.lo_open else value < self.lo
        if value > self.hi or too_low and value > 0 and self.lo > 0:  # the right sign, not a plausible size
            return f"got {shown}, which is not plausible; expected {self.expected}"
        if too_low:
            return f"got {shown}; expected {self.expected}"
        if self.integral and value != int(value):
            return f"got {shown}; expected {self.expected}, a whole number"
        return None

    def convert(self, value):
        """``value`` as this kind's type (int for whole kinds); call after :meth:`problem`."""
        return int(value) if self.whole else float(value)


def shown_number(value) -> str:
    """A number for a message: huge integers by their number of digits."""
    if isinstance(value, int) and abs(value) >= 10**30:
        return f"a {len(str(abs(value)))}-digit number"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        value = int(value)  # a count read from a CSV cell: 100,000,000, not 1e+08
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def _num(x: float) -> str:
    if x == int(x) and abs(x) < 10**16:
        return f"{int(x):,}"
    return f"{x:g}"


# -- the kinds ---------------------------------------------------------------------------
GPUS = Kind("a GPU count", 1, MAX_GPUS, whole=True)
# p1, p2, segments, GPUs per node, nodes, layers in a chunk: counts bounded by the GPUs
COUNT = Kind("a count", 1, MAX_GPUS, whole=True)
# a global mini-batch is a whole number of samples, at least one; 10^12 is beyond any
# dataset's epoch (a weak-scaling point's B = b·p that is not one is a limit: base.sample_limit)
BATCH = Kind("a global mini-batch (samples)", 1, 1e12, integral=True)
# weak scaling's samples per GPU may be a fraction (CosmoFlow-256: 0.25 per GPU, 4 GPUs a sample)
BATCH_PER_GPU = Kind("samples per GPU", 1e-6, 1e12)
SAMPLES = Kind("a dataset size D (samples)", 1, 1e15, whole=True)
CONTENTION = Kind("a contention factor φ", 1, 1000)  # ParaDL §4.3 measures φ of 1-3
REUSE = Kind("a memory reuse factor γ", 0, 1, lo_open=True)  # ParaDL §4.2: 0 < γ <= 1
WIDTH = Kind("a width in characters", 60, 10_000, whole=True)
MAX_BYTES = 2**60  # a message or bucket: 1 EiB
BYTES = Kind("a size in bytes", 0, MAX_BYTES, whole=True)
BUCKET_MB = Kind("a bucket size in MiB", 0, MAX_BYTES / 2**20)


def check_option(kind: Kind, value, option: str):
    """``value`` of an option (a flag or the Python API's keyword) if it is of ``kind``,
    else one error line naming the option (a cases file's key is named by its caller)."""
    from oracle.errors import OracleError

    problem = kind.problem(value)
    if problem:
        raise OracleError(problem, path=option)
    return value
