"""Options of a projection that are not part of the input files (precision, memory
model, overlap, collectives, ...): one frozen record per run, shared by every strategy."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from oracle.errors import OracleError, did_you_mean
from oracle.limits import (
    BATCH,
    BATCH_PER_GPU,
    BUCKET_MB,
    CONTENTION,
    COUNT,
    REUSE,
    SAMPLES,
    check_option,
)
from oracle.vocabulary import (
    ALGORITHMS,
    FP32,
    FRAMEWORK,
    MEMORY_FORMATS,
    MEMORY_MODELS,
    PARADL,
    PRECISION_BYTES,
    TF32,
)

COMPUTE_SCALINGS = ("model", "linear")  # issue 13, docs/cost-model.md
# weak scaling's per-GPU batch when neither an option nor the profile gives one: the
# documented CLI default (README, "Without a batch"), also the spread batch of conversion.py
DEFAULT_BATCH_PER_GPU = 32


@dataclass(frozen=True)
class Options:
    """Implementation parameters that are not part of the input files."""

    precision: str = FP32  # δ: bytes per item (docs/cost-model.md)
    # what GPU memory counts (docs/memory.md and docs/cost-model.md): FRAMEWORK (saved tensors, compute/memory.py)
    # or PARADL (Table 3's upper bound, scaled by γ)
    memory_model: str = FRAMEWORK
    memory_reuse: float = 1.0  # γ, 0 < γ <= 1 (ParaDL §4.2); paradl memory model only
    contention: float | None = None  # φ override (docs/cost-model.md)
    segments: int | None = None  # pipeline S; default min(B, 4p)
    samples: int | None = None  # D override (e.g. ParaDL's rounded 1.28M)
    collective: str | None = None  # all-reduce algorithm override (vocabulary.ALGORITHMS)
    # memory beyond ParaDL (issue 8; defaults reproduce ParaDL's formula)
    optimizer: str = "sgd"  # sgd | momentum | adam: optimizer state per parameter
    mixed_precision: bool = False  # 2-byte activations/weights/gradients + fp32 master weights
    zero: int = 0  # ZeRO stage 0-3 across the data-parallel group
    checkpointing: bool = False  # pipeline: keep stage inputs only, recompute the forward
    # overlap of communication with computation (issue 8): "none" (ParaDL) or "buckets"
    overlap: str = "none"
    bucket_bytes: float = 25 * 2**20  # gradient bucket size (PyTorch DDP default); 0: one per layer
    # issue 14: the last layer spatial parallelism splits (default: the last layer whose
    # output still has a spatial extent > 1, docs/cost-model.md); CosmoFlow codes gather earlier
    # (after conv2/pool2, ParaDL §4.5.1)
    spatial_split_after: str | None = None
    # overlap as Lee et al. (HiPC 2017) do it (issue 18): gradients in chunks of k layers
    # (0: by bucket_bytes), and the delayed update of chosen layers (names or layer types,
    # e.g. "fc"), whose gradient exchange overlaps the next iteration's forward
    bucket_layers: int = 0
    delayed_update: tuple[str, ...] = ()
    # Lee et al. (HiPC 2017) §III-C-2: chosen layers (names or types) compute their weight
    # gradient for the whole mini-batch on every GPU after an all-gather of their inputs
    # and output errors, instead of all-reducing it (data parallelism)
    replicated_gradients: tuple[str, ...] = ()
    # compute model (issue 13, docs/memory.md and docs/cost-model.md): "model" converts a profile to the system's GPU,
    # the run's precision and each point's per-GPU batch (when the caller passes the
    # profile's origin to Context); "linear" is ParaDL's per-sample arithmetic
    compute_scaling: str = "model"
    # issue 25: the software stack in force (oracle/stack.py, applied by compute/stack.py); None: none named
    stack: Any = None
    # the convolutions' tensor layout (vocabulary.MEMORY_FORMATS); None: the stack's
    # (compute/stack.layout_factor moves an estimated profile's speed by the stack's speedup)
    memory_format: str | None = None

    def __post_init__(self) -> None:
        check_options(self)  # an Options is valid wherever it was built

    @property
    def memory_model_extended(self) -> bool:
        return (
            self.optimizer != "sgd" or self.mixed_precision or self.zero > 0 or self.checkpointing
        )

    @property
    def delta(self) -> int:
        """Bytes per activation, gradient and message item: the precision's, or 2 with
        mixed precision (whose fp32 master weights are counted in memory only)."""
        return 2 if self.mixed_precision else PRECISION_BYTES[self.precision]




def check_options(options: Options) -> None:
    """Every rule an Options keeps, each with its error line (run by ``Options()`` itself)."""
    if options.precision not in PRECISION_BYTES:
        raise OracleError(
            f"unknown precision '{options.precision}'",
            path="--precision",
            hint="one of " + ", ".join(PRECISION_BYTES),
        )
    if options.collective is not None:
        if options.collective not in ALGORITHMS:
            raise OracleError(
                f"unknown collective algorithm '{options.collective}'",
                path="--collective",
                hint=did_you_mean(options.collective, ALGORITHMS) or "one of " + ", ".join(ALGORITHMS),
            )
    from oracle.compute.memory import OPTIMIZER_BYTES

    if options.optimizer not in OPTIMIZER_BYTES:
        raise OracleError(
            f"unknown optimizer '{options.optimizer}'", path="--optimizer", hint="one of " + ", ".join(OPTIMIZER_BYTES)
        )
    if options.memory_model not in MEMORY_MODELS:
        raise OracleError(
            f"unknown memory model '{options.memory_model}'", path="--memory-model",
            hint=did_you_mean(options.memory_model, MEMORY_MODELS) or " or ".join(MEMORY_MODELS),
        )  # fmt: skip
    _check_overlap(options)
    if options.zero not in (0, 1, 2, 3):
        raise OracleError(f"got {options.zero}; expected a ZeRO stage 0, 1, 2 or 3", path="--zero")
    check_option(REUSE, options.memory_reuse, "--memory-reuse")
    for kind, value, option in ((CONTENTION, options.contention, "--contention"),
                                (COUNT, options.segments, "--segments"), (SAMPLES, options.samples, "--samples")):
        if value is not None:  # one kind of number, the limits of every option and file (oracle/limits.py)
            check_option(kind, value, option)
    if options.compute_scaling not in COMPUTE_SCALINGS:
        raise OracleError(f"unknown compute scaling '{options.compute_scaling}'", path="--compute-scaling",
                          hint="one of " + ", ".join(COMPUTE_SCALINGS))  # fmt: skip
    if options.memory_format is not None and options.memory_format not in MEMORY_FORMATS:
        raise OracleError(f"unknown memory format '{options.memory_format}'", path="--memory-format",
                          hint="one of " + ", ".join(MEMORY_FORMATS))  # fmt: skip


def check_runnable(options: Options, system) -> None:
    """The one place a run's all-reduce algorithm meets the system: an algorithm pinned to
    one NCCL algorithm the system cannot run (NVLS without NVLink SHARP, CollNet without
    SHARP; model.Interconnect.cannot_run) is an error naming the stack file's key or the
    option that asked for it."""
    algorithm = options.collective
    why = system.interconnect.cannot_run(algorithm) if algorithm else None
    if why is None:
        return
    message = f"'{algorithm}': {why} ({system.file})"
    stack = options.stack
    if stack is not None and stack.algorithm.value == algorithm:
        raise OracleError(message, file=stack.file, path="communication.algorithm")
    raise OracleError(message, path="--collective")


def _check_overlap(options: Options) -> None:
    if (options.bucket_layers or options.delayed_update) and options.overlap != "buckets":
        stack = options.stack  # the stack in force, where its overlap is the one in force
        why = f"stack {stack.name} has overlap {options.overlap}: " if stack and stack.overlap.value == options.overlap else ""
        raise OracleError("--bucket-layers and --delayed-update shape the overlap", path="--overlap",
                          hint=f"{why}add --overlap buckets")  # fmt: skip
    if options.bucket_layers < 0:
        raise OracleError(f"got {options.bucket_layers}; expected a number of layers >= 0", path="--bucket-layers")
    if options.overlap not in ("none", "buckets"):
        raise OracleError(f"unknown overlap '{options.overlap}'", path="--overlap", hint="none or buckets")
    if not (options.bucket_bytes >= 0):
        raise OracleError(f"got {options.bucket_bytes}; expected a bucket size >= 0", path="--bucket-MB")


@dataclass(frozen=True)
class FromProfile:
    """A run value that follows the profile unless an option sets it (issue 23)."""

    value: Any
    given: bool  # set by an option
    recorded: Any  # what the profile records (None: nothing)
    why: str = ""  # why the value is not the profile's though no option set it


@dataclass(frozen=True)
class Run:
    """What one projection runs with: its options, and its precision and batch with where
    they came from (issue 23).  ``batch`` is strong scaling's global batch (then
    ``batch_per_gpu`` is None), else ``batch_per_gpu`` weak scaling's per-GPU batch."""

    options: Options
    precision: FromProfile
    batch: float | None
    batch_per_gpu: FromProfile | None

    @property
    def per_gpu(self) -> float | None:
        """Weak scaling's samples per GPU (None under strong scaling)."""
        return self.batch_per_gpu.value if self.batch_per_gpu is not None else None


@dataclass(frozen=True)
class Flags:
    """A projection's options as a command's flags or the Python API's keywords give them,
    every rule checked: the one builder of every command and of oracle.api (issue 24).
    What they leave to the input files (precision, batch) :meth:`resolve` fills in."""

    options: Options  # its precision the flag's, else the file format's fp32 until resolved
    precision: str | None = None  # None: the profile's
    batch: float | None = None  # strong scaling: the global mini-batch
    batch_per_gpu: float | None = None  # weak scaling; None (and no batch): the profile's
    # parsed before the stack in force was known (parse's stack_pending): checked, but what a
    # stack sets is not yet in force; parse again under the stack (api.system_flags) to project
    pending: bool = False

    @classmethod
    def parse(cls, *, precision: str | None = None, memory_reuse: float | None = None, bucket_mb: float | None = None,
              bucket_layers: int | None = None, delayed_update=None, replicated_gradients=None,
              batch: float | None = None, batch_per_gpu: float | None = None, stack=None,
              stack_pending: bool = False, **same) -> Flags:  # fmt: skip
        """From the flags by their names (``--memory-reuse`` is ``memory_reuse``, ``--bucket-MB``
        ``bucket_mb``; None: not given); the others keep the names and defaults of
        :class:`Options`.  Layer lists are comma-separated text or a sequence of names.
        ``stack_pending`` (with no ``stack``): the stack in force is not known yet (the flags
        name none and the system file's is still to be read), so the rules on options a stack
        sets (--overlap for --bucket-layers and --delayed-update, --memory-model for
        --memory-reuse) wait for the parse under it, where not given (Flags.pending)."""
        if batch is not None and batch_per_gpu is not None:
            raise OracleError("give either --batch (strong scaling) or --batch-per-gpu (weak scaling), not both")
        # fixed choices in any case, as the CLI's click.Choice(case_sensitive=False) takes
        # them: the one place a cases file's, a runs file's and the API's are read
        precision = choice_case(precision)
        same = {k: choice_case(v) if k in CHOICE_KEYWORDS else v for k, v in same.items()}
        if batch is not None:
            check_option(BATCH, batch, "--batch")
        if batch_per_gpu is not None:
            check_option(BATCH_PER_GPU, batch_per_gpu, "--batch-per-gpu")
        if bucket_mb is not None:
            same["bucket_bytes"] = check_option(BUCKET_MB, bucket_mb, "--bucket-MB") * 2**20
        # None: not given (the CLI's options a stack may set default to None), so the stack's
        # value, else Options' default; one given wins over a stack, also at its default value
        same = {k: v for k, v in same.items() if v is not None or getattr(Options, k, None) is None}
        if stack is not None:  # issue 25: a loaded oracle.stack.Stack, for the options not given
            from oracle.compute.stack import stack_flags

            same = stack_flags(stack, same)
        pending = stack_pending and stack is None
        layers, delayed = _chunk_layers(bucket_layers), _layer_names(delayed_update)
        if pending and (layers or delayed) and "overlap" not in same:
            same["overlap"] = "buckets"  # provisional: the stack in force decides (Flags.pending)
        options = Options(
            precision=precision or Options.precision, memory_reuse=_memory_reuse(memory_reuse, same, pending),
            bucket_layers=layers, delayed_update=delayed,
            replicated_gradients=_layer_names(replicated_gradients), **same,
        )  # fmt: skip
        return cls(options, precision, batch, batch_per_gpu, pending)

    def estimate_precision(self, system, precision: str | None = None, mixed_precision: bool | None = None) -> str:
        """The precision ``-p estimate`` makes the profile of a run of these flags at: the
        arithmetic it computes in on ``system``'s GPU (None: fp32): fp16 or bf16 under mixed
        precision (compute.conversion.run_precision), TF32 where the stack runs float32 in it
        there (:func:`stack_precision`).  ``precision`` and ``mixed_precision``: a measured
        run's own, before the flags (as :meth:`resolve`)."""
        from oracle.compute.conversion import run_precision

        self._check_in_force()
        mixed = bool(self.options.mixed_precision if mixed_precision is None else mixed_precision)
        value = run_precision(precision or self.precision or FP32, mixed)
        return stack_precision(value, self.options.stack, mixed, system)[0]

    def resolve(self, profile, precision: str | None = None, mixed_precision: bool | None = None,
                system=None) -> Run:  # fmt: skip
        """The run of these flags on ``profile`` (issue 23): precision and per-GPU batch are
        the flags' where given, else what the profile records (its ``precision``, fp32 by
        the file format's default; its ``measured_samples_per_gpu``, else
        :data:`DEFAULT_BATCH_PER_GPU`).  ``precision``/``mixed_precision``: a measured
        run's own (its precision column), before the flags.  The device is always the
        system's GPU: a profile's TF32 on a ``system`` whose GPU has none (before Ampere)
        runs in fp32, as the same script would there (:func:`profile_precision`)."""
        self._check_in_force()
        given = precision or self.precision
        value, why = (given, "") if given else profile_precision(profile.precision, system)
        mixed = self.options.mixed_precision if mixed_precision is None else mixed_precision
        mapped, because = stack_precision(value, self.options.stack, mixed, system)
        value, why = (mapped, because) if because else (value, why)
        chosen = FromProfile(value, given is not None, profile.precision, why)
        options = replace(self.options, precision=chosen.value, mixed_precision=mixed)
        if self.batch is not None:
            return Run(options, chosen, float(self.batch), None)
        recorded = float(profile.measured_samples_per_gpu) if profile.measured_samples_per_gpu else None
        value = self.batch_per_gpu if self.batch_per_gpu is not None else (recorded or float(DEFAULT_BATCH_PER_GPU))
        return Run(options, chosen, None, FromProfile(float(value), self.batch_per_gpu is not None, recorded))

    def _check_in_force(self) -> None:
        if self.pending:  # a bug: no run is made of options a stack is yet to set
            raise RuntimeError("flags parsed before their stack was known: parse them under it (api.system_flags)")


def profile_precision(recorded: str, system) -> tuple[str, str]:
    """The precision a run takes from a profile recording ``recorded`` on ``system``, and
    why when it is not that: TF32 is a tensor-core mode PyTorch and TensorFlow fall back
    from to fp32 on GPUs without it (V100: torch.backends.cudnn.allow_tf32 only acts on
    Ampere and later), so a TF32 profile projects such a GPU in fp32."""
    if recorded != TF32 or system is None:
        return recorded, ""
    from oracle.compute.conversion import system_spec

    spec = system_spec(system)
    if spec is None or spec.peak(TF32) is not None:
        return recorded, ""
    return FP32, f"{system.gpu_model} lacks"


def stack_precision(value: str, stack, mixed: bool, system) -> tuple[str, str]:
    """fp32 as the stack's software runs it, and why when that is not fp32: where the
    stack says its float32 convolutions and GEMMs run on TF32 tensor cores by default
    (``compute.fp32_math: tf32``: PyTorch's cudnn.allow_tf32, TensorFlow's TensorFloat-32
    execution, cuDNN's default math) and the system's GPU has them (Ampere and later), an
    fp32 run projects in tf32.  With --mixed-precision the convolutions run in fp16 anyway."""
    math = None if stack is None or stack.fp32_math is None else stack.fp32_math.value
    if value != FP32 or mixed or math != TF32 or system is None:
        return value, ""
    from oracle.compute.conversion import system_spec

    spec = system_spec(system)
    if spec is None or spec.peak(TF32) is None:
        return value, ""
    return TF32, f"runs in TF32 under stack {stack.label}"


# Flags.parse's keywords that take one of fixed words (vocabulary.py, COMPUTE_SCALINGS,
# compute/memory.OPTIMIZER_BYTES): every one of them lower case
CHOICE_KEYWORDS = ("collective", "overlap", "compute_scaling", "memory_model", "optimizer", "memory_format")


def choice_case(value):
    """A fixed choice (text) given in any case, as its word (all are lower case); other values as they are."""
    return value.lower() if isinstance(value, str) else value


def _memory_reuse(gamma: float | None, same: dict, pending: bool = False) -> float:
    """γ applies to ParaDL's bound only: with the framework model it is a usage error
    (``pending``: no --memory-model given and the stack that may set one not known yet)."""
    if gamma is None:
        return Options.memory_reuse
    if pending and "memory_model" not in same:
        return gamma
    if same.get("memory_model", Options.memory_model) != PARADL:
        raise OracleError(
            "γ scales ParaDL's memory bound; the framework memory model counts"
            " what is kept instead",
            path="--memory-reuse",
            hint="add --memory-model paradl, or drop --memory-reuse",
        )
    return gamma


def _layer_names(text) -> tuple[str, ...]:
    """A comma-separated list of layer names or types (or a sequence of them)."""
    items = text.split(",") if isinstance(text, str) else [str(x) for x in text or ()]
    return tuple(x.strip() for x in items if x.strip())


def _chunk_layers(k) -> int:
    """--bucket-layers K: None (not given) is 0, chunks by size; an explicit 0 is an error."""
    if k is None:
        return 0
    if k < 1:
        raise OracleError(f"got {k}; a chunk holds at least 1 layer", path="--bucket-layers",
                          hint="leave it out to chunk by --bucket-MB")  # fmt: skip
    return k


# issue 26: a runs file's option columns (docs/file-formats.md), also a system's anchors':
# each the flag's name with underscores (--bucket-MB is bucket_MB) -> Flags.parse's keyword
# and the value's type; a row's column wins over the command's flag for that row
OPTION_COLUMNS: dict[str, tuple[str, type]] = {
    "collective": ("collective", str), "overlap": ("overlap", str), "bucket_MB": ("bucket_mb", float),
    "bucket_layers": ("bucket_layers", int), "delayed_update": ("delayed_update", str),
    "replicated_gradients": ("replicated_gradients", str), "spatial_split_after": ("spatial_split_after", str),
    "compute_scaling": ("compute_scaling", str), "memory_model": ("memory_model", str),
    "memory_reuse": ("memory_reuse", float), "contention": ("contention", float), "samples": ("samples", int),
    "optimizer": ("optimizer", str), "mixed_precision": ("mixed_precision", bool), "zero": ("zero", int),
    "checkpointing": ("checkpointing", bool), "memory_format": ("memory_format", str),
}  # fmt: skip
# the Flags.parse keywords a software stack sets where they are not given (compute/stack.stack_values)
STACK_KEYWORDS = ("collective", "overlap", "bucket_mb", "memory_model", "compute_scaling")
_YES, _NO = ("yes", "true", "1"), ("no", "false", "0")
# columns whose values are fixed choices, taken in any case as the CLI takes its flags'
# (Flags.parse: CHOICE_KEYWORDS)
CHOICE_COLUMNS = ("collective", "overlap", "compute_scaling", "memory_model", "optimizer", "memory_format")


def column_flags(cells: dict) -> dict:
    """Flags.parse keywords from a row's option columns (text; empty cells: not given),
    each checked as Flags.parse checks the flag; errors name the column."""
    out = {}
    for col in cells.keys() & OPTION_COLUMNS.keys():
        text = str(cells[col] or "").strip()
        if text:
            key, kind = OPTION_COLUMNS[col]
            out[key] = _column_value(col, text, kind)
    if out and tuple(sorted(out.items())) not in _CHECKED:
        try:
            Flags.parse(**out, stack_pending=True)  # the row's stack checks what it sets (api.Inputs)
        except OracleError as exc:
            exc.path = _column_of(exc.path) or exc.path
            raise
        _CHECKED.add(tuple(sorted(out.items())))
    return out


_CHECKED: set = set()  # option columns already checked (a runs file repeats them row after row)


def _column_value(col: str, text: str, kind: type):
    where = f"column '{col}'"
    if kind is bool:
        if text.lower() not in _YES + _NO:
            raise OracleError(f"got '{text}'; expected yes or no", path=where)
        return text.lower() in _YES
    if kind is str:
        return choice_case(text) if col in CHOICE_COLUMNS else text
    try:
        x = float(text)
    except ValueError:
        raise OracleError(f"'{text}' is not a number", path=where) from None
    if not math.isfinite(x) or (kind is int and x != int(x)):
        raise OracleError(f"got '{text}'; expected a {'whole ' if kind is int else ''}number", path=where)
    return int(x) if kind is int else x


def _column_of(flag: str | None) -> str | None:
    """``column 'bucket_MB'`` for the flag ``--bucket-MB`` when it has a column, else None."""
    col = (flag or "").lstrip("-").replace("-", "_")
    return f"column '{col}'" if flag and flag.startswith("--") and col in OPTION_COLUMNS else None


def row_column(flag: str | None, row_flags) -> str | None:
    """``column 'collective'`` for an error at the flag ``--collective`` raised projecting a
    runs-file row whose option columns (``row_flags``, Flags.parse keywords) give it: the
    row's value is the one that failed, not the command's option; else None."""
    column = _column_of(flag)
    col = (flag or "").lstrip("-").replace("-", "_")
    return column if column and OPTION_COLUMNS[col][0] in dict(row_flags) else None


def given_flags(flags: dict) -> dict:
    """The option-column keywords of ``flags`` (a command's) given: those a stack may set
    (:data:`STACK_KEYWORDS`) whenever not None, the others set away from their defaults."""
    plain = Options()
    out = {}
    for key, _ in OPTION_COLUMNS.values():
        value = flags.get(key)
        default = None if key in STACK_KEYWORDS else getattr(plain, key, None)
        if value not in (None, "", (), default):
            out[key] = value
    return out


def _same_value(key: str, theirs, mine) -> bool:
    """A row's column and the command's option say the same (a precision in any spelling)."""
    if key == "precision":
        from oracle.compute.calibration.compare import PRECISION_COLUMN, precision_key

        a, b = precision_key(str(theirs)), precision_key(str(mine))
        return a is not None and b is not None and PRECISION_COLUMN[a] == PRECISION_COLUMN[b]
    return str(theirs) == str(mine)


def option_clashes(runs: list, flags: dict) -> list[tuple[str, str, str, list[int]]]:
    """Where runs' option, stack or precision columns differ from the command's options given
    (``flags``, Flags.parse keywords; stack by its name): (column, the rows' value, the
    command's, their lines), for one warning each (issue 26: each row's column wins)."""
    given = given_flags(flags)
    if flags.get("stack") is not None:
        given["stack"] = str(getattr(flags["stack"], "label", flags["stack"]))
    if flags.get("precision"):
        given["precision"] = flags["precision"]
    columns = {key: col for col, (key, _) in OPTION_COLUMNS.items()} | {"stack": "stack", "precision": "precision"}
    found: dict = {}
    for run in runs:
        theirs = dict(run.flags) | ({"stack": run.stack} if run.stack else {})
        theirs |= {"precision": run.get("precision")} if run.get("precision") else {}
        for key, value in theirs.items():
            if key in given and not _same_value(key, value, given[key]):
                found.setdefault((columns[key], str(value), str(given[key])), []).append(run.line)
    return [(col, value, mine, lines) for (col, value, mine), lines in found.items()]
