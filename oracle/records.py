"""The measured records the loaders read and the cost model compares and fits against: a
row of a measured-runs CSV (docs/file-formats.md, read by :mod:`oracle.load.runs`) and a
collective benchmark log (nccl-tests or OSU, read by :mod:`oracle.load.benchlogs`).

They sit on the ground floor with :mod:`oracle.model`, so that ``compute`` uses them
without importing ``load`` (tests/test_layout.py)."""

from __future__ import annotations

from dataclasses import dataclass

REQUIRED = ("model", "system", "strategy", "gpus", "global_batch")
# profile: absent or empty, the compute model's estimate (vocabulary.ESTIMATE)
OPTIONAL = ("profile", "p1", "p2", "segments", "epoch_s", "iteration_s", "compute_s", "comm_s", "source", "stack")


@dataclass(frozen=True)
class MeasuredRun:
    line: int | None  # line of the CSV file (1 = header); None: a run of no file (compare --log)
    model: str
    system: str
    profile: str  # a shipped name, a path, or "estimate" (vocabulary.ESTIMATE)
    strategy: str
    gpus: int
    global_batch: float
    p1: int | None = None
    p2: int | None = None
    segments: int | None = None
    epoch_s: float | None = None
    iteration_s: float | None = None
    compute_s: float | None = None
    comm_s: float | None = None
    source: str = ""
    extra: tuple[tuple[str, str], ...] = ()
    stack: str = ""  # a shipped stack's name or a path; "" when the file does not say
    # issue 26: the row's option columns as compute/options.Flags.parse keywords
    flags: tuple[tuple[str, object], ...] = ()

    @property
    def basis(self) -> str:
        """What the row is compared on: the epoch time when given, else the iteration."""
        return "epoch" if self.epoch_s is not None else "iteration"

    @property
    def measured_s(self) -> float:
        return self.epoch_s if self.epoch_s is not None else self.iteration_s  # type: ignore[return-value]

    def get(self, column: str) -> str | None:
        """Any column by name (for filters), as text; ``line`` is the CSV line."""
        if column == "line":
            return str(self.line)
        if column in REQUIRED or column in OPTIONAL:
            v = getattr(self, column)
            return None if v is None else (f"{v:g}" if isinstance(v, float) else str(v))
        return dict(self.extra).get(column)


@dataclass(frozen=True)
class BenchLog:
    """One benchmark log: ``rows`` are (message bytes m, seconds), out-of-place for
    nccl-tests; ``in_place_rows`` the in-place times (nccl-tests only, else empty)."""

    file: str
    tool: str  # "nccl-tests" | "osu"
    operation: str  # one of load.benchlogs.OPERATIONS
    gpus: int
    nodes: int
    gpus_per_node: int
    rows: tuple[tuple[int, float], ...]
    in_place_rows: tuple[tuple[int, float], ...] = ()
    row_lines: tuple[int, ...] = ()  # 1-based line of each row in the file
    operation_from: str = ""  # how the operation was found (for the report)
    layout_from: str = ""  # how GPUs/nodes were found
    hosts: tuple[str, ...] = ()

    def times(self, in_place: bool = False) -> tuple[tuple[int, float], ...]:
        if in_place and self.tool == "nccl-tests":
            return self.in_place_rows
        return self.rows
