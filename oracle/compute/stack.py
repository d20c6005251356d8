"""Applying a software stack (issue 25, oracle/stack.py) to a projection.

- Options: the stack's overlap, bucket size, all-reduce algorithm policy ("system": the
  system file decides), memory model and compute scaling, unless the user set them.
- Compute: an ESTIMATED profile's times (the compute model's, ``oracle profile
  --estimate``) are divided by the stack's efficiency for the run's precision class on the
  system's GPU; measured profiles already carry their software's speed and are left alone.
- Beyond one GPU the forward and backward run at the stack's data-parallel efficiency
  (a fitted fraction: collective kernels overlapped with the backward and the input
  pipeline share the GPU's SMs and memory bandwidth and the host's CPUs).
- Optimizer step: an ESTIMATED profile's weight update (the compute model's SGD-momentum
  pass, compute/kernels.WU_PASSES) is scaled to the stack's ``update_bytes_per_parameter``
  (what its optimizer and precision really move per parameter: foreach SGD's separate
  weight-decay and momentum passes, AMP's casts and unscaling), at the same bandwidth.
- Per iteration: ``fixed_s`` is added to the weight update (the optimizer step's overhead,
  synchronisations, loss and BatchNorm reductions beyond the kernels); an ESTIMATED
  profile's forward and backward gain ``layers x gpu_overhead_s_per_layer`` (the GPU's own
  time between and around each layer's kernels, which the kernel model leaves out); and
  they last at least ``layers x launch_floor_s_per_layer`` (the host launching kernels one
  by one; 0 with CUDA graphs), the GPU's gaps hiding under the host's launches.
- Collectives started in cycles (Horovod's background loop): the last gradients wait half
  a cycle on average, added to the gradient exchange beyond one GPU.
- Input: the stack's loader rates become the system's input pipeline (prefetched, as
  DataLoader workers and DALI do) where the system file describes none.
"""

from __future__ import annotations

from dataclasses import replace

from oracle.compute.cost import Breakdown
from oracle.compute.kernels import WU_PASSES
from oracle.compute.options import Options
from oracle.model import InputPipeline, System
from oracle.stack import PRECISION_CLASSES, TWO_BYTE, Stack, stack_label
from oracle.vocabulary import NCCL, PRECISION_BYTES


def precision_class(options: Options) -> str:
    return PRECISION_CLASSES[1] if options.mixed_precision or options.precision in TWO_BYTE else PRECISION_CLASSES[0]


def stack_values(stack: Stack) -> dict:
    """The options a stack sets (compute/options.Options fields)."""
    algorithm = stack.algorithm.value
    return {
        "overlap": stack.overlap.value,
        "bucket_bytes": float(stack.bucket_MB.value) * 2**20,
        "collective": None if algorithm == "system" else algorithm,
        "memory_model": stack.memory_model.value,
        "compute_scaling": stack.compute_scaling.value,
    }


def stack_flags(stack: Stack, flags: dict) -> dict:
    """Options keywords (compute/options.Flags.parse) with the stack's values for those not
    given (absent or None; one given wins, also at its default value), and the stack."""
    out = dict(flags, stack=stack)
    for key, value in stack_values(stack).items():
        if flags.get(key) is None:
            out[key] = value
    return out


def given_over_stack(options: Options) -> list[tuple[str, str, str]]:
    """The options in force that differ from their stack's values, as (flag, in force, the
    stack's): those given over it (:func:`stack_flags`), for the header to say so."""
    if options.stack is None:
        return []
    flags = {"overlap": "--overlap", "bucket_bytes": "--bucket-MB", "collective": "--collective",
             "memory_model": "--memory-model", "compute_scaling": "--compute-scaling"}  # fmt: skip

    def text(key: str, value) -> str:
        if key == "bucket_bytes":
            return f"{value / 2**20:g}"
        return "the system's" if value is None else str(value)

    return [(flags[key], text(key, getattr(options, key)), text(key, value))
            for key, value in stack_values(options.stack).items() if getattr(options, key) != value]  # fmt: skip


def stack_options(options: Options, stack: Stack, given: frozenset[str] = frozenset()) -> Options:
    """``options`` with the stack's values, except the fields named in ``given``."""
    return replace(options, stack=stack, **{k: v for k, v in stack_values(stack).items() if k not in given})


def stack_system(system: System, stack: Stack | None) -> System:
    """The system with the stack's NCCL_ALGO (:func:`nccl_algorithms`), its fused or
    separate activations, its input pipeline where the system file describes none, and the
    stack's ``paths:`` (compute/stack_paths.py)."""
    if stack is not None and stack.paths is not None:
        from oracle.compute.stack_paths import apply_paths

        plain = replace(stack, paths=None)
        return apply_paths(stack_system(system, plain), stack.paths, stack.label, system.input is not None)
    if stack is None:
        return system
    system = nccl_algorithms(system, stack)
    if _chooses_from_topology(stack) and not system.collective_algorithm_stated:
        system = replace(system, collective_algorithm=NCCL)
    trees = not system.nccl_algorithms or "tree" in system.nccl_algorithms  # NCCL_ALGO may exclude them
    if _chooses_from_topology(stack) and system.tree_beyond_gpus is not None and trees:
        system = replace(system, library_trees=True)  # beyond the ring-fitted GPUs, NCCL's tree (compute/trees.py)
    # the software's kernels: fused or separate activations, batchnorm's and maxpool's
    # bandwidth shares (compute/conversion.py converts to them)
    kernels = {("fused_activations" if k == "fuse_activations" else k): v for k, v in stack.kernel_constants().items()}
    if kernels:
        system = replace(system, implementation=replace(system.implementation, **kernels))
    if system.input is not None or (stack.input_samples_per_s_per_gpu is None and stack.input_samples_per_s_per_node is None):
        return system
    gpu, node = stack.input_samples_per_s_per_gpu, stack.input_samples_per_s_per_node
    pipe = InputPipeline(loader_samples_per_s=gpu.value if gpu else None, node_samples_per_s=node.value if node else None,
                         overlap=True, source=f"stack {stack.label}: " + "; ".join(s.source for s in (gpu, node) if s))  # fmt: skip
    return replace(system, input=pipe)


def _chooses_from_topology(stack: Stack) -> bool:
    """A stack whose all-reduce algorithm is the library's choice ("system") over NCCL: on a
    system file that states no algorithm, NCCL's tuner picks ring, tree, NVLS or CollNet and
    a protocol per call from the topology (compute/nccl.py; NVIDIA/nccl src/graph/tuning.cc),
    as NCCL does with NCCL_ALGO unset; it never runs one flat ring over every GPU."""
    return stack.algorithm.value == "system" and str(stack.library.value).lower() == NCCL


def nccl_algorithms(system: System, stack: Stack) -> System:
    """The system restricted to the stack's NCCL_ALGO list (compute/nccl.nccl_algo, the
    vocabulary --collective nvls|collnet pins one algorithm of); an algorithm the system
    cannot run (model.Interconnect.cannot_run: NVLS without NVLink SHARP, CollNet without
    SHARP) is the stack's error."""
    from oracle.errors import OracleError

    if stack.nccl_algorithms is None:
        return system
    names = tuple(str(stack.nccl_algorithms.value).split(","))
    why = [w for w in map(system.interconnect.cannot_run, names) if w]
    if why:
        raise OracleError(f"NCCL_ALGO {stack.nccl_algorithms.value}: {'; '.join(why)} ({system.file or system.name})",
                          file=stack.file, path="communication.nccl_algorithms.value",
                          hint="or drop the name from the list")  # fmt: skip
    return replace(system, nccl_algorithms=names)


def compute_factor(options: Options, system: System, profile_kind: str) -> float:
    """The time factor on the profile's compute times: 1 / the stack's efficiency for an
    estimated profile, else 1."""
    stack = options.stack
    if stack is None or profile_kind != "estimated":
        return 1.0
    eff = stack.efficiency_for(system.gpu_model, precision_class(options))
    return 1.0 / float(eff.value) if eff is not None else 1.0


def layout_factor(options: Options, system: System) -> float:
    """The time factor of --memory-format on an estimated profile's forward and backward
    (compute/context.py; the optimizer step keeps its own): 1 in the stack's layout for
    the run's precision class; else the stack's compute.channels_last_speedup on the
    system's GPU (NCHW over channels-last kernel time, fitted on measured steps), multiplied
    going to NCHW, divided going to channels-last.  Without a stack that states its layout,
    or without a speedup measured on that GPU, one error saying what to add."""
    from oracle.errors import OracleError
    from oracle.vocabulary import NCHW

    wanted, stack = options.memory_format, options.stack
    if wanted is None:
        return 1.0
    cls = precision_class(options)
    own = stack.memory_format_for(cls) if stack is not None else None
    if own is None:
        where = f"stack {stack.label} states none (compute.memory_format)" if stack else "no stack is in force"
        raise OracleError(f"{wanted} moves a stack's speed from the layout the stack runs, and {where}",
                          path="--memory-format", hint="give --stack pytorch, or a stack file with"
                          " compute.memory_format and compute.channels_last_speedup")  # fmt: skip
    if own == wanted:
        return 1.0
    speedup = stack.channels_last_speedup_for(system.gpu_model, cls)
    if speedup is None:
        raise OracleError(f"{wanted}: stack {stack.label} has no channels-last speedup measured on {system.gpu_model}"
                          f" ({cls})", path="--memory-format",
                          hint=f"add compute.channels_last_speedup.<GPU>.{cls} to a stack file of your own"
                          " (docs/cost-model.md, \"Memory format\")")  # fmt: skip
    return float(speedup.value) if wanted == NCHW else 1.0 / float(speedup.value)


def update_factor(options: Options, profile_kind: str) -> float:
    """The factor on an estimated profile's weight update: the stack's bytes per parameter
    over the compute model's (WU_PASSES passes of 4 bytes, or of the precision's bytes when
    the whole run is 2-byte without --mixed-precision); 1 without the stack's value."""
    stack = options.stack
    if stack is None or profile_kind != "estimated":
        return 1.0
    value = stack.update_bytes_for(precision_class(options))
    if value is None:
        return 1.0
    model_bytes = WU_PASSES * (4 if options.mixed_precision else PRECISION_BYTES[options.precision])
    return value / model_bytes


def per_iteration(options: Options, gpus: int, iterations: float, layers: int, forward_backward_s: float,
                  weight_update_s: float, estimated: bool = False) -> tuple[float, float]:  # fmt: skip
    """(forward_backward_s, weight_update_s) per epoch with the stack's per-GPU costs: its
    data-parallel efficiency beyond one GPU, its GPU overhead per layer (an ``estimated``
    profile's only), launch floor and fixed cost per iteration."""
    stack = options.stack
    if stack is None:
        return forward_backward_s, weight_update_s
    if gpus > 1:
        forward_backward_s /= stack.data_parallel_efficiency_for(precision_class(options))
    if estimated:
        forward_backward_s += iterations * layers * stack.gpu_overhead_s()
    floor = iterations * layers * float(stack.launch_floor_s_per_layer.value)
    return max(forward_backward_s, floor), weight_update_s + iterations * float(stack.fixed_s.value)


def with_stack_costs(options: Options, gpus: int, iterations: float, layers: int, bd: Breakdown,
                     estimated: bool = False) -> Breakdown:  # fmt: skip
    """A point's breakdown with the stack's per-GPU costs (:func:`per_iteration`)."""
    if options.stack is None or not iterations > 0:
        return bd
    fb, wu = per_iteration(options, gpus, iterations, layers, bd.forward_backward_s, bd.weight_update_s, estimated)
    # a collective loop in cycles: the last gradients wait half a cycle on average
    wait = iterations * float(options.stack.cycle_time_s.value) / 2 if gpus > 1 and bd.gradient_exchange_s > 0 else 0.0
    return bd.replace(forward_backward_s=fb, weight_update_s=wu, gradient_exchange_s=bd.gradient_exchange_s + wait)


def stack_name(options: Options) -> str:
    """The stack in force as every output names it (oracle/stack.stack_label; ``none`` for none)."""
    return stack_label(options.stack)
