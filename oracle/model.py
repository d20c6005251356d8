"""The frozen data types shared by loaders, the cost model and the renderers.

Units are converted once, at load time: times in seconds, sizes in bytes or elements,
bandwidth as seconds per byte.  Field names carry their unit where they have one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from oracle.vocabulary import COLLNET, FP32, NVLS, RING

# Layer types (docs/model-format.md).  Element-wise activations share one behaviour.
ACTIVATIONS = (
    "relu", "relu6", "leakyrelu", "elu", "gelu", "silu", "sigmoid", "tanh",
    "hardswish", "hardsigmoid",
)  # fmt: skip
SPATIAL_TYPES = ("conv", "maxpool", "avgpool", "convtranspose", "upsample")  # halos
WEIGHT_TYPES = ("conv", "fc", "convtranspose", "attention")  # split by filter/channel parallelism
LAYER_TYPES = (
    "conv",
    "convtranspose",
    "fc",
    "matmul",
    "maxpool",
    "avgpool",
    "globalavgpool",
    "adaptiveavgpool",
    "adaptivemaxpool",
    "upsample",
    "batchnorm",
    "groupnorm",
    "layernorm",
    "lrn",
    *ACTIVATIONS,
    "dropout",
    "add",
    "mul",
    "concat",
    "flatten",
    "reshape",
    "permute",
    "channelshuffle",
    "softmax",
    # transformer layers (oracle/compute/layers/shapes_tokens.py)
    "attention",
    "scale",
    "posembedding",
    "classtoken",
    "slice",
    "unsupported",
)
MULTI_INPUT_TYPES = ("add", "mul", "concat", "matmul")  # layers that take 2+ inputs
MODEL_INPUT = "input"  # the name by which `inputs:` refers to the model's input


@dataclass(frozen=True)
class Layer:
    """One layer as written in the model file (defaults filled in)."""

    name: str
    type: str
    inputs: tuple[str, ...]  # names of producer layers; MODEL_INPUT for the data
    filters: int | None = None  # conv: output channels
    outputs: int | None = None  # fc: output features
    kernel: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    padding: tuple[int, ...] = ()
    dilation: tuple[int, ...] = ()
    groups: int = 1
    bias: bool = False
    ceil_mode: bool = False
    line: int | None = None
    # newer layer types (docs/model-format.md)
    output_padding: tuple[int, ...] = ()  # convtranspose
    axis: int = 0  # concat: per-sample dimension (0 = channels); softmax likewise
    size: tuple[int, ...] = ()  # upsample, adaptive pools: output spatial extents; lrn: (channels in its window,)
    scale: tuple[float, ...] = ()  # upsample: factor per spatial dimension
    mode: str = ""  # upsample: nearest | linear
    affine: bool = True  # groupnorm, layernorm: learnable scale and shift
    dims: int = 1  # layernorm: trailing per-sample dimensions normalised
    shape: tuple[int, ...] = ()  # reshape: per-sample target (-1 once); unsupported: output
    perm: tuple[int, ...] = ()  # permute: per-sample dimension order
    op: str = ""  # unsupported: the operation the importer did not know
    # transformer layers (docs/model-format.md "Transformer layers")
    heads: int = 0  # attention: heads
    window: tuple[int, ...] = ()  # attention: tokens per window along each dimension but the last
    shift: tuple[int, ...] = ()  # attention: cyclic shift of the windows (Swin)
    position_bias: int = 0  # attention: relative-position table entries per head
    position_mlp: int = 0  # attention: hidden width of Swin V2's position-bias MLP
    cosine: bool = False  # attention: Swin V2's cosine attention (a learned scale per head)
    fused: bool = False  # attention: scores by a fused kernel (PyTorch's scaled_dot_product_attention)
    tokens: int = 1  # classtoken: learned tokens put in front
    start: int = 0  # slice: first index along axis
    stop: int = 0  # slice: one past the last index


@dataclass(frozen=True)
class LayerInfo:
    """What shape inference derives for one layer (per sample, no batch dimension)."""

    input_shapes: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...]
    weights: int  # trainable weight elements (conv/fc kernels, batch-norm scale)
    biases: int  # trainable bias elements (conv/fc bias, batch-norm shift)
    flops: float  # forward FLOPs per sample (2 per multiply-add, see shapes.py)

    @property
    def parameters(self) -> int:
        return self.weights + self.biases

    @property
    def input_elements(self) -> int:
        """|x_l|: elements of all inputs of one sample."""
        total = 0
        for shape in self.input_shapes:
            n = 1
            for d in shape:
                n *= d
            total += n
        return total

    @property
    def output_elements(self) -> int:
        """|y_l|: elements of the output of one sample."""
        n = 1
        for d in self.output_shape:
            n *= d
        return n


@dataclass(frozen=True)
class Model:
    name: str
    input_shape: tuple[int, ...]  # channels, then 1-3 spatial extents
    dataset_name: str
    dataset_samples: int
    layers: tuple[Layer, ...]
    info: tuple[LayerInfo, ...]
    source: str = ""
    file: str = ""
    dataset_bytes_per_sample: float | None = None

    @property
    def parameters(self) -> int:
        return sum(i.parameters for i in self.info)

    @property
    def flops(self) -> float:
        return sum(i.flops for i in self.info)

    @cached_property
    def index(self) -> dict[str, int]:
        return {layer.name: i for i, layer in enumerate(self.layers)}

    @property
    def spatial_dims(self) -> int:
        return len(self.input_shape) - 1


@dataclass(frozen=True)
class Protocol:
    """Another α-β line of a network level (a protocol regime such as NCCL's LL or
    LL128, compute/protocols.py): collectives take the cheapest line for their size."""

    name: str
    alpha_s: float
    beta_s_per_byte: float


@dataclass(frozen=True)
class NetworkLevel:
    """One level of the interconnect (docs/file-formats.md): used by collectives whose span fits."""

    name: str
    max_gpus: int
    alpha_s: float
    beta_s_per_byte: float
    source: str = ""
    protocols: tuple[Protocol, ...] = ()  # small-message regimes; () = one line (docs/cost-model.md)
    basis: str = ""  # measured | fitted | calibrated | nominal: where α and β come from ("" unstated)


@dataclass(frozen=True)
class Interconnect:
    """What the interconnect offers collectives (issue 25; docs/file-formats.md ``interconnect:``),
    read by NCCL's choice of algorithm (compute/nccl.py).  The NICs per node (rails) are
    :attr:`System.links_per_node`."""

    nvlink_domain_gpus: int | None = None  # GPUs all-to-all over NVLink/NVSwitch (None: one node)
    nvswitch_generation: int = 0  # vocabulary.NVSWITCH_GENERATIONS: 0 no NVSwitch, ..., 4 Blackwell
    nvls: bool = False  # NVLink SHARP: all-reduce inside the NVSwitch (generation 3 or later)
    sharp: bool = False  # SHARP: the fabric's switches reduce (NCCL CollNet with the SHARP plugin)
    source: str = ""

    def cannot_run(self, algorithm: str) -> str | None:
        """Why NCCL pinned to ``algorithm`` (vocabulary.NCCL_PINNED) cannot run here, else None:
        NVLS reduces inside an NVSwitch with NVLink SHARP, CollNet in the fabric's switches
        (SHARP); NCCL fails a collective whose NCCL_ALGO leaves it no algorithm it can run
        (NVIDIA/nccl src/enqueue.cc: "no algorithm/protocol available")."""
        if algorithm == NVLS and not self.nvls:
            return "NVLS needs an NVSwitch with NVLink SHARP (interconnect.nvls), which this system lacks"
        if algorithm == COLLNET and not self.sharp:
            return "CollNet needs switches that reduce in the network (interconnect.sharp), which this system lacks"
        return None


@dataclass(frozen=True)
class OperationOverride:
    """Per-operation transport (docs/cost-model.md): own α/β, or scale factors on the level's."""

    alpha_s: float | None = None
    beta_s_per_byte: float | None = None
    alpha_scale: float = 1.0
    beta_scale: float = 1.0
    source: str = ""
    algorithm: str | None = None  # all-reduce / all-gather algorithm of this operation
    factor: float = 1.0  # calibratable: the operation takes factor x its modelled time


@dataclass(frozen=True)
class InputPipeline:
    """How fast training data arrives (docs/cost-model.md "Input pipeline"; ParaDL §2.1.1 IO).

    Rates are samples per second after decoding and augmentation; bandwidths bytes per
    second.  A missing value is no bound.  With ``overlap`` the loaders prefetch in the
    background, so an iteration lasts max(compute + communication, loading); without,
    the two add up."""

    loader_samples_per_s: float | None = None  # one loading process
    node_samples_per_s: float | None = None  # all loading processes of one node together
    leader_samples_per_s: float | None = None  # a group leader's loader, if it differs
    storage_Bps: float | None = None  # aggregate file-system read bandwidth
    node_storage_Bps: float | None = None  # read bandwidth of one node
    overlap: bool = True
    source: str = ""


@dataclass(frozen=True)
class CollectiveTable:
    """Measured times of one collective at one scale (``collectives: table``, issue 5):
    used instead of α-β for that operation on exactly that many GPUs and span.
    ``bytes`` follows nccl-tests: the all-reduce's buffer, the all-gather's output."""

    operation: str  # allreduce | allgather
    gpus: int
    span: int
    bytes: tuple[float, ...]
    seconds: tuple[float, ...]
    source: str = ""


@dataclass(frozen=True)
class Anchor:
    """A measured run a system's projections are anchored on (issue 26; the system file's
    ``anchors:``, written by ``oracle fit runs --calibrate all``; compute/calibration/anchor.py).
    Times are measured seconds per iteration; the options are those the run used."""

    model: str  # the model's name (as its file names it)
    strategy: str
    gpus: int
    global_batch: float
    iteration_s: float
    p1: int | None = None
    p2: int | None = None
    segments: int | None = None
    compute_s: float | None = None  # measured compute per iteration, with comm_s
    comm_s: float | None = None
    precision: str = ""  # as a runs file's precision column (fp32, ..., AMP); "": the profile's
    stack: str = ""  # the software stack's name or path; "": none
    options: tuple[tuple[str, object], ...] = ()  # compute/options.Flags.parse keywords
    source: str = ""  # the runs file and line it was measured on


@dataclass(frozen=True)
class Implementation:
    """How the training code communicates, where implementations differ (docs/cost-model.md).

    ``data_spatial_allreduce``: "flat" (docs/cost-model.md: one all-reduce over all GPUs) or
    "leader" (ParaDL §4.5.1: reduce inside each spatial group to a leader GPU, all-reduce
    among the leaders, broadcast back)."""

    data_spatial_allreduce: str = "flat"
    # compute efficiency of split layers (docs/cost-model.md; ParaDL §5.3.3 and Fig. 8: a conv with
    # 1/q of the filters or a 1/q tile does not run q times faster): a layer split q ways
    # takes (f + (1-f)/q) of its full time (Amdahl, f = split_serial_fraction) plus
    # split_overhead_s per split layer and iteration (split/concat, extra launches)
    split_serial_fraction: float = 0.0
    split_overhead_s: float = 0.0
    # compute model (issue 13): element-wise activations after batchnorm/add run inside
    # that kernel (cuDNN fused ops, XLA); false for frameworks that launch them apart
    fused_activations: bool = True
    # compute model: the fraction of the HBM bandwidth batchnorm's, maxpool's and avgpool's
    # kernels reach (set by a software stack, compute.reduction_memory_efficiency,
    # compute.maxpool_memory_efficiency and compute.avgpool_memory_efficiency); None: the
    # compute model's default
    reduction_memory_efficiency: float | None = None
    maxpool_memory_efficiency: float | None = None
    avgpool_memory_efficiency: float | None = None
    # compute model: windowed pooling's elements per issued thread instruction (a stack's
    # compute.pool_window_efficiency; compute/kernels.py); None: the compute model's default
    pool_window_efficiency: float | None = None
    source: str = ""
    # issue 14: the gradient exchange of data+filter's data groups, "flat" (docs/cost-model.md) or
    # "leader" (ParaDL §4.5.1's pattern, as for data+spatial)
    data_filter_allreduce: str = "flat"
    # the backward collective of filter/channel parallelism after each split layer:
    # "allreduce" of the full input gradient (docs/cost-model.md, ParaDL eq. 15), "reduce_scatter"
    # (each GPU keeps its slice, Megatron-LM's sequence-parallel pattern, Korthikanti et
    # al. 2022), "allreduce_slice" (an all-reduce of one slice) or "none"
    layer_backward: str = "allreduce"
    # the spatial decomposition: "grid" (docs/cost-model.md, balanced over the dimensions) or
    # "strips" (the first spatial dimension only, as strip-decomposing codes do)
    spatial_decomposition: str = "grid"
    # the halo exchange as a serialized neighbour chain (each GPU sends after it has
    # received, behind a device synchronization): the exchange of a layer takes f-1
    # hops of the concurrent exchange, f the largest split factor, plus halo_sync_s
    halo_chain: bool = False
    halo_sync_s: float = 0.0
    # issue 14: this implementation's forward, backward and update times against each
    # model's profile, (model name, factor) pairs: the framework or kernels of the runs
    # differ from the profile's; fitted by `oracle fit runs --calibrate all` from runs
    # that measure compute (docs/calibration.md); a model not listed runs at 1
    compute_factors: tuple[tuple[str, float], ...] = ()
    # issue 26: the samples per GPU each model's factor was measured at; for a profile
    # that records no batch, the compute model's batch curve is taken from there
    compute_batches: tuple[tuple[str, float], ...] = ()

    def compute_factor(self, model_name: str) -> float:
        """The time factor on ``model_name``'s profile (1 when not calibrated)."""
        return dict(self.compute_factors).get(model_name, 1.0)

    def compute_batch(self, model_name: str) -> float | None:
        """The samples per GPU ``model_name``'s compute factor was measured at, or None."""
        return dict(self.compute_batches).get(model_name)


@dataclass(frozen=True)
class FrameworkMemory:
    """What a training framework keeps on a GPU besides the model's tensors
    (``framework:`` in a system file; the ``--memory-model framework`` of docs/memory.md and docs/cost-model.md).

    Defaults describe PyTorch >= 1.13 with CUDA >= 11.7 and DistributedDataParallel:
    - ``cuda_context_bytes``: the CUDA context (driver state, loaded kernels) that
      ``nvidia-smi`` counts and ``torch.cuda.memory_allocated`` does not: ~300 MB with
      CUDA 11.7's lazy module loading, over 1 GB before it (pytorch/pytorch#107667,
      #20532).
    - ``workspace_bytes``: cuDNN/cuBLAS workspaces the convolution algorithms ask for
      (PyTorch allocates them per call from its caching allocator, aten/src/ATen/native/
      cudnn/Conv_v7.cpp); 0.5 GB is the budget assumed here, an assumption a system file
      may override.
    - ``allocator_overhead``: the fraction of tensor memory the caching allocator holds
      beyond what tensors use (c10/cuda/CUDACachingAllocator.cpp rounds large blocks to
      2 MiB and keeps freed blocks cached; fragmentation); 0.1, inside the 0.092-0.125
      that calls both sides of the out-of-memory line of timm's RTX 3090 runs best
      (``python benchmarks/memory_model.py --fit``, docs/memory.md).
    - ``gradient_bucket_copy``: DDP all-reduces gradients through flat bucket buffers as
      large as the gradients unless ``gradient_as_bucket_view=True``
      (torch/nn/parallel/distributed.py, the parameter's documentation)."""

    cuda_context_bytes: float = 0.3e9
    workspace_bytes: float = 0.5e9
    allocator_overhead: float = 0.1
    gradient_bucket_copy: bool = True
    name: str = "PyTorch (DDP)"
    source: str = ""


@dataclass(frozen=True)
class System:
    name: str
    gpu_model: str
    gpu_memory_bytes: float
    gpu_peak_flops: float | None
    gpu_memory_bandwidth_Bps: float | None
    gpus_per_node: int
    nodes: int
    network: tuple[NetworkLevel, ...]
    contention_factor: float | None = None
    links_per_node: int | None = None
    operations: tuple[tuple[str, OperationOverride], ...] = ()
    source: str = ""
    file: str = ""
    input: InputPipeline | None = None
    implementation: Implementation = field(default_factory=Implementation)
    collective_tables: tuple[CollectiveTable, ...] = ()
    collective_algorithm: str = RING  # one of vocabulary.ALGORITHMS
    # whether the file states it (collectives: algorithm); unstated, a stack whose library
    # chooses from the topology (NCCL) runs its choice (compute/stack.stack_system)
    collective_algorithm_stated: bool = False
    collnet: bool = False  # NCCL CollNet (SHARP) enabled (collectives: collnet; needs interconnect.sharp)
    # collectives.ll128_across_nodes: whether NCCL runs LL128 in collectives that cross NCCL
    # nodes (false where the GPUs reach their NICs through the CPU, compute/nccl.py)
    ll128_across_nodes: bool = True
    # collectives.tree_beyond_gpus (issue 25): the most GPUs the ring-formula levels were fitted
    # on, measured under a library with trees (NCCL >= 2.4); library_trees: set by
    # compute/stack.stack_system where such a library's choice is in force, so that a ring
    # all-reduce over more GPUs may take the tree's latency (compute/trees.with_trees)
    tree_beyond_gpus: int | None = None
    library_trees: bool = False
    ps_servers: int = 1  # parameter servers for the "ps" algorithm (collectives: ps_servers)
    gpu_workspace_bytes: float = 0.0  # memory the framework takes besides the model (issue 8)
    framework: FrameworkMemory = field(default_factory=FrameworkMemory)  # memory model (issue 12)
    # compute model (issue 13): dense peak FLOP/s per precision, SM count
    gpu_peaks: tuple[tuple[str, float], ...] = ()
    gpu_sm_count: int | None = None
    # vocabulary.ARCHITECTURES (``gpu.architecture``); "": inferred from gpu_model (gpus.architecture_of)
    gpu_architecture: str = ""
    use_for: str = ""  # what the file is good for, which parts are measured (oracle list systems)
    interconnect: Interconnect = field(default_factory=Interconnect)  # issue 25
    anchors: tuple[Anchor, ...] = ()  # issue 26: measured runs its projections are anchored on
    # issue 25: the software stack a projection on this system uses when --stack is not given
    # (a shipped stack's name, or NO_STACK), and why (``stack:`` in the file)
    stack: str = "none"
    # NCCL_ALGO: the algorithms NCCL may choose (a stack's communication.nccl_algorithms;
    # compute/stack.stack_system); (): all the system offers
    nccl_algorithms: tuple[str, ...] = ()
    stack_source: str = "no stack named: the options as given"
    # issue 26: (model name, System): a model's own calibration where the shared one left it > 5% off
    models: tuple[tuple[str, System], ...] = ()

    def for_model(self, name: str) -> System:
        """The system ``name``'s projections use: its own calibration (``models:``), with
        this system's anchors, else this system."""
        from dataclasses import replace

        own = dict(self.models).get(name)
        keep = dict(anchors=self.anchors, models=(), stack=self.stack, stack_source=self.stack_source)
        return replace(own, **keep) if own is not None else self

    def gpu_peak(self, precision: str) -> float | None:
        for prec, value in self.gpu_peaks:
            if prec == precision:
                return value
        return self.gpu_peak_flops if precision == FP32 else None

    def table(self, op: str, gpus: int, span: int) -> CollectiveTable | None:
        for t in self.collective_tables:
            if t.operation == op and t.gpus == gpus and t.span == span:
                return t
        return None

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    def operation(self, op: str) -> OperationOverride | None:
        for name, override in self.operations:
            if name == op:
                return override
        return None


@dataclass(frozen=True)
class LayerTimes:
    fw_s: float  # forward, per sample
    bw_s: float  # backward, per sample
    wu_s: float  # weight update, per iteration
    # bytes per sample the layer saves for the backward, measured at fp32 (oracle
    # profile's saved-tensor hooks); None: the memory model's estimate is used
    saved_bytes: float | None = None


@dataclass(frozen=True)
class Profile:
    model: str
    device: str
    framework: str
    layers: tuple[tuple[str, LayerTimes], ...]  # in the order of the model's layers
    kind: str  # "measured" (per layer), "total" (spread by FLOPs) or "estimated"
    measured_samples_per_gpu: int | None = None
    source: str = ""
    file: str = ""
    total_fw_bw_per_sample_s: float | None = None
    total_wu_per_iteration_s: float | None = None
    meta: tuple[tuple[str, str], ...] = ()
    precision: str = FP32  # arithmetic precision the times were measured at (issue 13)
    # the software stack the times were measured under (``stack:``; "" none named) and the
    # compute model's kernel fields it sets (Stack.kernel_constants), which a conversion
    # starts from (compute/conversion.py)
    stack: str = ""
    kernels: tuple[tuple[str, object], ...] = ()

    def times(self) -> dict[str, LayerTimes]:
        return dict(self.layers)

    @property
    def fw_bw_per_sample_s(self) -> float:
        return sum(t.fw_s + t.bw_s for _, t in self.layers)

    @property
    def wu_per_iteration_s(self) -> float:
        return sum(t.wu_s for _, t in self.layers)
