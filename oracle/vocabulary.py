"""The words options, files, help texts, validation and the cost model share, each
defined here once (issue 24): memory models, collective algorithms, precisions.
Strategy names are the strategy registry's (oracle/compute/strategies: each module
declares its own).  Ground floor: imports nothing, so the CLI can build its choices
from it without loading numpy."""

# -- memory models (docs/memory.md and docs/cost-model.md) ---------------------------------
FRAMEWORK = "framework"  # what PyTorch keeps: saved tensors, weights, gradients, ... (compute/memory.py)
PARADL = "paradl"  # ParaDL's upper bound Σ 2B(|x|+|y|) + 2|w|, scaled by γ (Table 3)
MEMORY_MODELS = (FRAMEWORK, PARADL)

# a stack's cost model (issue 27, docs/cost-model.md): docs/cost-model.md's formulas, or ParaDL's
# own tool's (compute/paradl/paradl_tool.py)
SPEC_FORMULAS = "spec"
PARADL_TOOL = "paradl-tool"
COST_MODELS = (SPEC_FORMULAS, PARADL_TOOL)

# -- collective algorithms (compute/network.py: their costs and sources) -----------------
RING = "ring"  # ParaDL's all-reduce, the default
AUTO = "auto"  # the cheapest algorithm per call
ALLREDUCE_ALGORITHMS = (RING, "rhd", "tree", "hierarchical", "leader")
# ps (parameter servers): never chosen by auto, a deployment choice (compute/network.py)
# nccl: the algorithm and protocol NCCL's tuner picks per call (ring, tree, NVLS, CollNet x
# LL, LL128, Simple; issue 25, compute/nccl.py), with the topology's intra- and inter-node steps
NCCL = "nccl"
# nvls, collnet: NCCL with its algorithm pinned, as NCCL_ALGO=NVLS / NCCL_ALGO=CollNet (with
# NCCL_COLLNET_ENABLE=1) do; only on a system that offers it (interconnect.nvls / .sharp)
NVLS, COLLNET = "nvls", "collnet"
NCCL_PINNED = (NVLS, COLLNET)
ALGORITHMS = (*ALLREDUCE_ALGORITHMS, "ps", AUTO, NCCL, *NCCL_PINNED)

# -- precisions: bytes per item δ (ParaDL Table 2); tf32 keeps fp32's 4-byte storage and
# rounds only inside the tensor cores (NVIDIA A100 Tensor Core GPU Architecture, 2020)
FP32, TF32, FP16, BF16 = "fp32", "tf32", "fp16", "bf16"
# a stack's communication.gradient_precision: gradients all-reduced in fp32 whatever the
# activations' precision (torch.cuda.amp), or in the activations' ("model", ParaDL's δ)
GRADIENT_PRECISIONS = (FP32, "model")
# tensor layouts of a run's convolutions (--memory-format, a stack's compute.memory_format;
# docs/cost-model.md "Memory format"): NCHW, PyTorch's default, and channels-last (NHWC),
# which cuDNN's tensor-core kernels take without transposing
NCHW, CHANNELS_LAST = "nchw", "channels-last"
MEMORY_FORMATS = (NCHW, CHANNELS_LAST)
PRECISION_BYTES = {FP32: 4, TF32: 4, FP16: 2, BF16: 2}
PRECISIONS = tuple(PRECISION_BYTES)


def precision_bytes_text() -> str:
    """'fp32/tf32 4, fp16/bf16 2': the precisions by their bytes per item."""
    sizes = dict.fromkeys(PRECISION_BYTES.values())
    return ", ".join("/".join(p for p, b in PRECISION_BYTES.items() if b == size) + f" {size}" for size in sizes)

# -- GPU architectures (NVIDIA's generations, oldest first): the compute model's conv/fc
# efficiency is per architecture where measured data exist (compute/kernels.py
# ARCHITECTURE_MATMUL_EFFICIENCY); tensor cores from Volta on (V100 whitepaper, 2017)
ARCHITECTURES = ("kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")
NO_TENSOR_CORES = ("kepler", "maxwell", "pascal")

# issue 25: --stack none / a system file's ``stack: {name: none}``: no software stack (the options as given)
NO_STACK = "none"

# -p estimate / a runs file's profile cell ``estimate`` or empty: no profile file, the compute
# model's estimate for the system's GPU at the run's precision and per-GPU batch (what
# ``oracle profile MODEL --estimate --system S`` would write)
ESTIMATE = "estimate"

# -- interconnect.nvswitch_generation: the generations oracle knows, 0 for no NVSwitch (NVIDIA's
# NVLink and NVSwitch page: the first NVSwitch in DGX-2 with V100, the second with A100, the
# third with H100, the NVLink switch of Blackwell); NVLS from generation 3 on, its efficiency per
# generation in compute/nccl.py NVLS_EFFICIENCY
NVSWITCH_GENERATIONS = {0: "none", 1: "V100, DGX-2", 2: "A100", 3: "H100/H200", 4: "Blackwell"}
