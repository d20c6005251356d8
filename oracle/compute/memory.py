"""What a training framework keeps in GPU memory (``--memory-model framework``, docs/memory.md and docs/cost-model.md).

ParaDL's Table 3 bounds activation memory by Σ 2B(|x|+|y|): every layer's input and
output and their gradients.  Frameworks keep much less.  PyTorch's autograd saves, in
the forward pass, only the tensors each operation's backward formula needs
(tools/autograd/derivatives.yaml), and a tensor saved by several operations is stored
once; gradients of activations live only while the backward walks past them.  This
module counts those saved tensors per layer type, per sample, by storage:

=================  =========================================================================
conv, fc           the input (weight gradients need it; ``convolution_backward`` and
                   ``addmm``/``mm`` in derivatives.yaml)
batchnorm          the input (``native_batch_norm_backward``: input, save_mean, save_invstd;
                   the two per-channel statistics are not per sample and are ignored)
relu, sigmoid,     the output (``threshold_backward(grad, result, 0)``, ``sigmoid_backward``
tanh, softmax      and ``tanh_backward`` use the result, ``_softmax_backward_data`` too);
                   torchvision's ReLUs run in place, so the output shares the storage of
                   the input, which no one else keeps: counted once either way
relu6, leakyrelu,  the input (``hardtanh_backward``, ``leaky_relu_backward``,
elu, gelu, silu    ``elu_backward(is_result=false)``, ``gelu_backward``, ``silu_backward``)
maxpool            the input and the argmax indices, int64 per output element
                   (``max_pool2d_with_indices_backward``)
avgpool            the input (``avg_pool2d_backward`` takes ``self``)
globalavgpool      nothing: ``adaptive_avg_pool2d`` to 1x1 is a ``mean`` (aten/src/ATen/
                   native/AdaptiveAveragePooling.cpp), whose backward needs only sizes
dropout            a bool mask, 1 byte per element (``native_dropout_backward``)
add, concat        nothing (sums and slices of the gradient)
flatten            nothing, and its output is a view of its input (same storage)
convtranspose      the input (``convolution_backward``, transposed=true)
matmul, mul        both inputs (``mm_mat1_backward``/``mm_mat2_backward`` take the other
                   matrix, ``mul_tensor_backward(grad, other)`` and ``(grad, self)``)
groupnorm,         the input (``native_group_norm_backward``, ``native_layer_norm_backward``
layernorm          take input, mean and rstd; the statistics are per group or row and,
                   like batchnorm's, ignored)
lrn                the input and, inside torch.nn.functional.local_response_norm (a chain
                   of ops), the zero-padded squares (C + size - 1 channels, for avg_pool),
                   the power's base and its result: 3 + (size - 1)/C inputs' worth
                   (measured with saved_tensors_hooks, PyTorch 2.14)
hardswish,         the input (``hardswish_backward(grad, self)``,
hardsigmoid        ``hardsigmoid_backward(grad, self)``)
adaptiveavgpool    the input (``_adaptive_avg_pool2d_backward(grad, self)``)
adaptivemaxpool    the input and int64 indices per output element
                   (``adaptive_max_pool2d_backward(grad, self, result1)``)
upsample           nothing (``upsample_nearest2d_backward`` and ``upsample_bilinear2d_
                   backward`` take only the sizes)
reshape, permute   nothing; the output is a view of the input (``view``, ``permute``)
channelshuffle     nothing (a copy: reshape, transpose, contiguous)
unsupported        nothing (the importer did not know the operation; zero cost)
attention          the input (the q/k/v projection's ``addmm``; windowed: the padded,
                   partitioned copy instead), q, k and v (3·N·E; the score and
                   weighted-sum ``bmm`` take both operands), the softmax output h·N·P
                   (``_softmax_backward_data``; ``fused``: an h·N log-sum-exp) and the
                   context N·E (the output projection's input); shapes_tokens.attention_saved
scale              the input (``mul_tensor_backward(grad, other)`` of the factor's gradient)
posembedding,      nothing (an add; a concatenation)
classtoken
slice              nothing; a view of the input (``narrow``)
=================  =========================================================================

The model's input counts where a layer saves it (the first convolution does).  Checked
against PyTorch's ``torch.autograd.graph.saved_tensors_hooks`` on torchvision's models
(``tests/test_memory_model.py``; ``scripts/measure_saved_tensors.py``).  Parameters
(and their gradients) are counted separately, as weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from oracle.compute.layers.shapes_tokens import attention_saved, saves_input
from oracle.model import ACTIVATIONS, MODEL_INPUT, Layer, LayerInfo, Model
from oracle.vocabulary import FP32, PARADL

INT64_BYTES = 8  # max-pool argmax indices (PyTorch's kLong)
MASK_BYTES = 1  # dropout masks (PyTorch's kBool)


@dataclass(frozen=True)
class SaveRule:
    """What one layer type saves for its backward pass."""

    inputs: bool = False  # the layer's input(s)
    output: bool = False  # the layer's output
    view: bool = False  # the output is a view of the input (no new storage)
    extra_bytes_per_output: float = 0.0  # indices, masks: bytes per output element
    internal: Callable[[Layer, LayerInfo], float] | None = None  # elements saved inside the layer
    inputs_if: Callable[[Layer], bool] | None = None  # with inputs: which layers of the type save them


_OUTPUT_ACTIVATIONS = ("relu", "sigmoid", "tanh")


def _lrn_saved(layer: Layer, info: LayerInfo) -> float:
    """Elements local_response_norm saves beside its input (the table above)."""
    channels = info.input_shapes[0][0]
    return info.input_elements * (3.0 + (layer.size[0] - 1) / channels)


SAVE_RULES: dict[str, SaveRule] = {
    "conv": SaveRule(inputs=True),
    "fc": SaveRule(inputs=True),
    "batchnorm": SaveRule(inputs=True),
    "maxpool": SaveRule(inputs=True, extra_bytes_per_output=INT64_BYTES),
    "avgpool": SaveRule(inputs=True),
    "globalavgpool": SaveRule(),
    "dropout": SaveRule(extra_bytes_per_output=MASK_BYTES),
    "add": SaveRule(),
    "concat": SaveRule(),
    "flatten": SaveRule(view=True),
    "softmax": SaveRule(output=True),
    "convtranspose": SaveRule(inputs=True),
    "matmul": SaveRule(inputs=True),
    "mul": SaveRule(inputs=True),
    "groupnorm": SaveRule(inputs=True),
    "layernorm": SaveRule(inputs=True),
    "lrn": SaveRule(inputs=True, internal=_lrn_saved),
    "adaptiveavgpool": SaveRule(inputs=True),
    "adaptivemaxpool": SaveRule(inputs=True, extra_bytes_per_output=INT64_BYTES),
    "upsample": SaveRule(),
    "reshape": SaveRule(view=True),
    "permute": SaveRule(view=True),
    "channelshuffle": SaveRule(),
    "unsupported": SaveRule(),
    "attention": SaveRule(inputs=True, internal=attention_saved, inputs_if=saves_input),
    "scale": SaveRule(inputs=True),
    "posembedding": SaveRule(),
    "classtoken": SaveRule(),
    "slice": SaveRule(view=True),
    **{a: SaveRule(output=True) if a in _OUTPUT_ACTIVATIONS else SaveRule(inputs=True) for a in ACTIVATIONS},
}


@dataclass(frozen=True)
class SavedActivations:
    """Per layer, per sample: the elements of the saved storages the layer produced
    (the model's input is charged to its first reader) and the bytes of its saved
    indices or masks, whose size does not follow the activation precision."""

    elements: np.ndarray
    fixed_bytes: np.ndarray
    source: str = "model"  # "model" (the rules above) or "profile" (measured)

    def bytes_per_sample(self, delta: float) -> float:
        return float(delta * self.elements.sum() + self.fixed_bytes.sum())


def saved_activations(model: Model) -> SavedActivations:
    """Apply :data:`SAVE_RULES` to every layer, counting each storage once."""
    G = len(model.layers)
    storage: dict[str, str] = {MODEL_INPUT: MODEL_INPUT}  # tensor name -> storage name
    owner: dict[str, int] = {}  # storage name -> layer index charged for it
    size: dict[str, int] = {MODEL_INPUT: 1}
    for d in model.input_shape:
        size[MODEL_INPUT] *= d
    saved: set[str] = set()
    fixed = np.zeros(G)
    inside = np.zeros(G)
    for i, (layer, info) in enumerate(zip(model.layers, model.info)):
        rule = SAVE_RULES[layer.type]
        if MODEL_INPUT in layer.inputs:
            owner.setdefault(MODEL_INPUT, i)
        if rule.view:
            storage[layer.name] = storage[layer.inputs[0]]
        else:
            storage[layer.name] = layer.name
            size[layer.name] = info.output_elements
            owner[layer.name] = i
        if rule.inputs and (rule.inputs_if is None or rule.inputs_if(layer)):
            saved.update(storage[name] for name in layer.inputs)
        if rule.output:
            saved.add(storage[layer.name])
        fixed[i] = rule.extra_bytes_per_output * info.output_elements
        if rule.internal is not None:
            inside[i] = rule.internal(layer, info)
    elements = inside
    for name in saved:
        elements[owner[name]] += size[name]
    return SavedActivations(elements, fixed)


def transient_elements(model: Model) -> np.ndarray:
    """Per layer, per sample: the activation gradients alive while its backward runs,
    the gradient of its output and of its input(s), |x_l| + |y_l|.  Autograd frees a
    gradient once its consumer has used it (ParaDL's bound keeps all of them)."""
    return np.array([i.input_elements + i.output_elements for i in model.info], dtype=float)


# The backward's peak.  While the backward runs layer l, the tensors saved by the layers
# after l are gone: autograd frees a node's saved tensors once its backward has run
# (torch/csrc/autograd/function.h, Node::release_variables, called from the engine unless
# retain_graph).  So the peak is max_l (saved by layers <= l + l's gradient working set),
# not all saved tensors plus the largest working set (what oracle counted before, which
# the early layers' large working sets made 2-3 GB too big at ResNet-50 batch 256, fp32:
# validation/gpu-training-steps.csv, benchmarks/gpu_measured.py).  A storage is charged to
# the layer that produced it, the earliest of its users, so it counts as held until the
# backward has passed all of them: an upper bound.  These functions return what the peak
# adds to all saved tensors (the ``transient_bytes`` part): max_l (delta t_l n_l - the
# bytes saved after l), at least the last layer's working set.


def excess_coefficients(per_bytes: np.ndarray, transient: np.ndarray, delta: float, inside: np.ndarray):
    """The peak's excess when the layers of ``inside`` (a boolean mask) hold n_in samples
    and the others n_out: max_l (a_l n_in + b_l n_out) bytes, where layer l's working set
    counts at its own samples and the saved tensors after l are freed at theirs
    (``per_bytes``: saved bytes per sample, ``transient``: working-set elements per layer).
    Returns (a, b), the layers no other layer beats at every n_in, n_out >= 0."""
    per_in = np.where(inside, per_bytes, 0.0)
    per_out = per_bytes - per_in
    after_in = per_in.sum() - np.cumsum(per_in)  # saved per sample by the layers of ``inside`` after l
    after_out = per_out.sum() - np.cumsum(per_out)
    work = delta * transient
    a = np.where(inside, work, 0.0) - after_in
    b = np.where(inside, 0.0, work) - after_out
    order = np.lexsort((-b, -a))  # a descending, then b descending
    keep, best_b = [], -np.inf
    for i in order.tolist():  # the Pareto front: a layer beaten in both coefficients never decides
        if b[i] > best_b:
            keep.append(i)
            best_b = b[i]
    return a[keep], b[keep]


def excess_bytes(coefficients, n_in, n_out):
    """max_l (a_l n_in + b_l n_out) of :func:`excess_coefficients` (numbers or arrays)."""
    a, b = coefficients
    if not a.size:
        return 0.0 * np.asarray(n_in, dtype=float)
    n_in, n_out = np.asarray(n_in, dtype=float), np.asarray(n_out, dtype=float)
    return np.max(np.multiply.outer(n_in, a) + np.multiply.outer(n_out, b), axis=-1)


def stages_excess(prefix_bytes: np.ndarray, transient: np.ndarray, delta: float, starts, stops) -> np.ndarray:
    """The excess per sample (elements) of every contiguous range [starts[i], stops[i]) at
    once, each holding one number of samples (pipeline stages; ``prefix_bytes``: 0 and the
    cumulative saved bytes per sample)."""
    starts, stops = np.asarray(starts), np.asarray(stops)
    if not starts.size:
        return np.zeros(0)
    lead = transient + prefix_bytes[1:] / delta  # t_l + saved by layers <= l
    lengths = stops - starts  # every range holds a layer
    at = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    ranges = np.arange(int(lengths.sum())) + np.repeat(starts - at, lengths)
    return np.maximum.reduceat(lead[ranges], at) - prefix_bytes[stops] / delta


def assignment_excess_bytes(per_bytes: np.ndarray, transient: np.ndarray, delta: float, held: np.ndarray) -> float:
    """Bytes the backward's peak adds when layer l holds ``held[l]`` samples (a per-layer
    assignment): max_l (delta t_l held_l - saved bytes of the layers after l)."""
    if not held.size:
        return 0.0
    saved = per_bytes * held
    after = saved.sum() - np.cumsum(saved)
    return float(np.max(delta * transient * held - after))


OPTIMIZER_BYTES = {"sgd": 0, "momentum": 4, "adam": 8}  # fp32 state per parameter (Kingma & Ba 2015)


@dataclass(frozen=True)
class MemoryParts:
    """What one GPU holds, as a strategy describes it.

    ParaDL's Table 3 terms: ``activations`` = the Σ 2B(|x|+|y|) elements, ``weights`` =
    the parameters held (their gradients count once more), ``data_group`` = how many
    GPUs hold the same weights and all-reduce their gradients (what ZeRO shards across).
    The framework model's terms: the GPU keeps the saved tensors of ``split_samples``
    samples of the layers in ``split`` (None: every layer) and of ``rest_samples``
    samples of the others, plus ``extra_elements`` more (halo-padded copies, gathered
    tensors, pipeline stage inputs) at the activation precision."""

    activations: float
    weights: float
    data_group: int = 1
    split: object = None  # a boolean mask, context.Stages (one entry per stage), or None: all
    split_samples: float = 0.0
    rest_samples: float = 0.0
    extra_elements: float = 0.0


def paradl_memory(ctx, parts: MemoryParts) -> tuple[dict[str, float], float]:
    """ParaDL Table 3: γ·δ·(activations + 2·weights), with the options of issue 8:
    optimizer state (momentum 4, Adam 8 bytes per parameter), mixed precision
    (Micikevicius et al., ICLR 2018: 2-byte activations, weights and gradients plus an
    fp32 master copy), ZeRO stage 1/2/3 (Rajbhandari et al., SC 2020) shards optimizer
    state (with the master copy) / + gradients / + weights across the data-parallel
    group, and ``gpu.workspace_GB``.  Returns the parts and the bytes that grow with
    the batch."""
    g = ctx.gamma
    out = _weight_parts(ctx, parts, scale=g)
    out = {"activations_bytes": g * ctx.delta * parts.activations, **out}
    out["workspace_bytes"] = ctx.system.gpu_workspace_bytes
    return out, out["activations_bytes"]


def framework_memory(ctx, parts: MemoryParts) -> tuple[dict[str, float], float]:
    """What a training framework holds (module docstring; docs/memory.md and docs/cost-model.md): saved
    activations, the backward's largest gradient working set, weights, gradients,
    optimizer state, DDP's gradient buckets, the caching allocator's overhead on all of
    these, cuDNN workspace and the CUDA context (:class:`oracle.model.FrameworkMemory`).
    ``gpu.workspace_GB``, where a system file gives it, replaces workspace and context.
    Returns the parts and the bytes that grow with the batch."""
    fw = ctx.system.framework
    act = ctx.held_activation_bytes(parts.split, parts.split_samples, parts.rest_samples)
    act += ctx.delta * parts.extra_elements
    trans = ctx.transient_bytes(parts.split, parts.split_samples, parts.rest_samples)
    out = {"activations_bytes": act, "transient_bytes": trans, **_weight_parts(ctx, parts, 1.0)}
    grads = out["gradients_bytes"]
    bucket = fw.gradient_bucket_copy and parts.data_group > 1 and ctx.options.zero == 0
    out["buffers_bytes"] = grads if bucket else 0.0
    out["allocator_bytes"] = fw.allocator_overhead * sum(out.values())
    if ctx.system.gpu_workspace_bytes:
        out["workspace_bytes"] = ctx.system.gpu_workspace_bytes
        out["cuda_context_bytes"] = 0.0
    else:
        out["workspace_bytes"] = fw.workspace_bytes
        out["cuda_context_bytes"] = fw.cuda_context_bytes
    return out, (act + trans) * (1.0 + fw.allocator_overhead)


def _weight_parts(ctx, parts: MemoryParts, scale: float) -> dict[str, float]:
    """Weights, gradients and optimizer state per GPU (ZeRO shards; mixed precision)."""
    o = ctx.options
    d_w = ctx.delta  # 2 with mixed precision
    n = max(parts.data_group, 1)
    zo = n if o.zero >= 1 else 1
    zg = n if o.zero >= 2 else 1
    zw = n if o.zero >= 3 else 1
    w = parts.weights
    return {
        "weights_bytes": scale * d_w * w / zw,
        "gradients_bytes": scale * ctx.grad_delta * w / zg,  # fp32 under AMP where the stack says so
        "optimizer_bytes": scale * optimizer_bytes_per_parameter(o) * w / zo,
    }


def optimizer_bytes_per_parameter(options) -> int:
    """Optimizer state and, with mixed precision, the fp32 master copy per parameter."""
    return OPTIMIZER_BYTES[options.optimizer] + (4 if options.mixed_precision else 0)


def memory_bytes(ctx, parts: MemoryParts) -> tuple[dict[str, float], float]:
    """The parts of one GPU's memory under the context's memory model, and the bytes
    among them that grow in proportion to the batch (for the largest batch that fits)."""
    if ctx.options.memory_model == PARADL:
        return paradl_memory(ctx, parts)
    return framework_memory(ctx, parts)


@dataclass(frozen=True)
class LargestBatch:
    """The largest per-GPU batch that fits one GPU of a system (``oracle show model``)."""

    precision: str  # "fp32" or "mixed precision"
    one_gpu: float  # serial training
    data_parallel: float  # data parallelism (adds DDP's gradient buckets)


def largest_batches(model: Model, system) -> list[LargestBatch]:
    """The largest batch per GPU that fits ``system``'s GPU memory under the framework
    model, at fp32 and with mixed precision, on one GPU and in data parallelism."""
    from oracle.compute.context import Options
    from oracle.compute.strategies.data import Data
    from oracle.compute.strategies.serial import Serial
    from oracle.compute.sweep import sweep
    from oracle.model import LayerTimes

    times = tuple(LayerTimes(0.0, 0.0, 0.0) for _ in model.layers)  # memory needs no times
    out = []
    for label, mixed in ((FP32, False), ("mixed precision", True)):
        options = Options(mixed_precision=mixed)
        found = []
        for gpus, strategy in ((1, Serial.name), (2, Data.name)):
            (pt,) = sweep(model, system, times, [gpus], strategy, batch_per_gpu=1.0, options=options)
            found.append(pt.detail("max_batch_per_gpu") or 0.0)
        out.append(LargestBatch(label, *found))
    return out
