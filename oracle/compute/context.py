"""Everything a strategy needs, precomputed once per (model, profile, system, options).

Per-layer quantities become numpy arrays (ParaDL Table 2 notation):
    x, y   elements of one sample's input(s) / output of layer l   (|x_l|, |y_l|)
    w      trainable parameters of layer l                         (|w_l|)
    fw, bw forward / backward seconds per sample                    (FW_l, BW_l)
    wu     weight-update seconds per iteration                      (WU_l)
    C, F   input channels / output channels                        (C_l, F_l)
and each strategy's *split set* (docs/cost-model.md, "Split layers"; the strategy's module
says which layers) is a boolean mask with its sums cached, so that a point costs O(1) arithmetic plus a few vector operations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from oracle.compute.layers.shapes_tokens import split_widths
from oracle.compute.memory import (
    SavedActivations,
    excess_bytes,
    excess_coefficients,
    saved_activations,
    stages_excess,
    transient_elements,
)
from oracle.compute.named_layers import check_named_layers
from oracle.compute.options import Options, check_runnable
from oracle.compute.partition import partition_cached
from oracle.compute.stack import compute_factor as stack_factor
from oracle.compute.stack import layout_factor, update_factor
from oracle.model import MODEL_INPUT, WEIGHT_TYPES, LayerTimes, Model, System
from oracle.vocabulary import FP32, PARADL, PRECISION_BYTES


@dataclass(frozen=True)
class Stages:
    """The contiguous layer ranges [starts[i], stops[i]) of pipeline stages, covering
    every layer in order: memory of all stages at once (one array entry per stage)."""

    starts: np.ndarray
    stops: np.ndarray


@dataclass(frozen=True)
class SplitSums:
    """Sums over a strategy's split layers (s) and the replicated rest (r)."""

    mask: np.ndarray
    fb_s: float
    fb_r: float
    wu_s: float
    wu_r: float
    w_s: float
    w_r: float
    act_s: float  # Σs (x + y)
    act_r: float
    coll_y: np.ndarray  # y_l of split layers except the last split layer (filter/channel)
    last: int  # index of the last split layer (-1 if none)
    # per entry of coll_y: the groups of the convolution that decides whether its
    # gradient (filter) or output (channel) is a reduction; 1: dense (see filter.py)
    coll_groups: np.ndarray = field(default_factory=lambda: np.zeros(0))


class Context:
    """Model, system, profile and options, with cached per-strategy sums."""

    def __init__(
        self,
        model: Model,
        system: System,
        times: tuple[LayerTimes, ...],
        options: Options,
        profile_kind: str = "",
        conversion=None,
    ) -> None:
        self.model = model
        # compute conversion (issue 13): None or a compute.conversion.Conversion
        self.conversion = conversion if options.compute_scaling == "model" else None
        self._at_cache: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._sum_cache: dict[tuple, float] = {}
        self.profile_kind = profile_kind
        if options.collective is not None and system.library_trees:  # an algorithm the options pin runs as pinned
            system = replace(system, library_trees=False)
        self.system = system
        self.options = options
        self.delta = options.delta
        # bytes per gradient element all-reduced: the activations' (ParaDL's δ), or 4 where the
        # stack keeps fp32 gradients under mixed precision (torch.cuda.amp: fp32 parameters)
        grads = options.stack.gradient_precision if options.stack is not None else None
        wide = grads is not None and grads.value == FP32 and options.mixed_precision
        self.grad_delta = PRECISION_BYTES[FP32] if wide else options.delta
        self.gamma = options.memory_reuse
        self.D = float(options.samples or model.dataset_samples)
        info = model.info
        self.G = len(info)
        self.x = np.array([i.input_elements for i in info], dtype=float)
        self.y = np.array([i.output_elements for i in info], dtype=float)
        self.w = np.array([i.parameters for i in info], dtype=float)
        self.times = times  # the profile's, before the implementation's compute factor
        # issue 14: the implementation's time factor on this model's profile (1 unless calibrated)
        self.compute_factor = k = system.implementation.compute_factor(model.name) * stack_factor(options, system, profile_kind)
        layout = layout_factor(options, system) if profile_kind == "estimated" else 1.0  # --memory-format: fw, bw
        self.fw = np.array([t.fw_s for t in times], dtype=float) * (k * layout)
        self.bw = np.array([t.bw_s for t in times], dtype=float) * (k * layout)
        self.wu = np.array([t.wu_s for t in times], dtype=float) * k * update_factor(options, profile_kind)
        if self.conversion is not None and self.conversion.active:
            self.wu = self.wu * self.conversion.update_factor()
        self.fb = self.fw + self.bw
        self.types = [layer.type for layer in model.layers]
        self.C, self.F = (np.array(w, dtype=int) for w in split_widths(model.layers, info))
        self.groups = np.array([layer.groups if t in WEIGHT_TYPES else 1 for t, layer in zip(
            self.types, model.layers)], dtype=int)  # fmt: skip
        self.names = [layer.name for layer in model.layers]
        self.sum_fb = float(self.fb.sum())
        self.sum_wu = float(self.wu.sum())
        self.sum_w = float(self.w.sum())
        self.sum_act = float((self.x + self.y).sum())
        check_runnable(options, system)
        self.algorithm = options.collective or system.collective_algorithm
        self.saved = _saved_activations(model, times)
        if options.spatial_split_after is not None:
            self._split_point(options.spatial_split_after, self.default_spatial_last())  # fail early
        for named, option in (("delayed_update", "--delayed-update"), ("replicated_gradients", "--replicated-gradients")):
            if getattr(options, named):
                check_named_layers(self, named, option)
        self.transient = transient_elements(model)

    # -- memory (docs/memory.md and docs/cost-model.md: framework model; ParaDL's bound in strategies/base.py) --------
    @property
    def memory_model(self) -> str:
        return self.options.memory_model

    @property
    def paradl_mode(self) -> bool:
        """ParaDL mode, oracle's reading of the paper's Table 3 (docs/cost-model.md):
        ``--memory-model paradl --compute-scaling linear``.  Where the table departs from
        what a run must do (channel parallelism's last output, docs/cost-model.md), this
        mode keeps the table."""
        return self.memory_model == PARADL and self.options.compute_scaling == "linear"

    @property
    def memory_source(self) -> str:
        """Where the saved-activation bytes come from: the model's rules or a profile."""
        return self.saved.source

    def layer_memory_elements(self) -> np.ndarray:
        """Per layer and sample, the activation elements that the per-layer search's
        memory formula 2·n·(this) + 2|w| uses: x + y (ParaDL), or half the saved
        elements (the framework model, indices and masks in element equivalents)."""
        if self.memory_model == PARADL:
            return self.x + self.y
        return 0.5 * (self.saved.elements + self.saved.fixed_bytes / self.delta)

    def memory_scale(self) -> float:
        """Bytes per element of the per-layer memory: γδ (ParaDL) or δ (framework)."""
        return self.gamma * self.delta if self.memory_model == PARADL else float(self.delta)

    def memory_total(self, tensors_bytes: float) -> float:
        """Per-GPU memory of a per-layer assignment from its tensors' bytes: as is
        (ParaDL), or with the framework's allocator overhead, workspace and context."""
        if self.memory_model == PARADL:
            return tensors_bytes
        fw = self.system.framework
        fixed = self.system.gpu_workspace_bytes or (fw.workspace_bytes + fw.cuda_context_bytes)
        return tensors_bytes * (1.0 + fw.allocator_overhead) + fixed

    def mask_stats(self, mask) -> tuple:
        """(saved bytes per sample inside a split, outside it, what the backward's peak adds):
        ``mask`` None (every layer) or a boolean array, the peak as memory.excess_coefficients
        (for :meth:`transient_bytes`); or :class:`Stages`, every pipeline stage at once
        (:meth:`stage_stats`).  Cached per mask object; the cache keeps the mask alive, so
        its id stays unique."""
        if isinstance(mask, Stages):
            return self.stage_stats(mask.starts, mask.stops)
        key = id(mask)
        cache = self.__dict__.setdefault("_mask_cache", {})
        if key not in cache:
            per = self.saved_per_sample
            inside = np.ones(self.G, dtype=bool) if mask is None else mask
            peak = excess_coefficients(per, self.transient, self.delta, inside)
            cache[key] = (float(per[inside].sum()), float(per[~inside].sum()), peak, mask)
        return cache[key][:3]

    def stage_stats(self, starts, stops) -> tuple:
        """Per contiguous stage [starts[i], stops[i]) (arrays): its saved bytes per sample,
        0 outside, and the bytes per sample its backward's peak adds (memory.stages_excess)."""
        pre = self.saved_prefix
        return pre[stops] - pre[starts], 0.0, self.delta * stages_excess(pre, self.transient, self.delta, starts, stops)

    @cached_property
    def saved_per_sample(self) -> np.ndarray:
        """Saved bytes per sample of every layer (activation precision; indices, masks)."""
        return self.delta * self.saved.elements + self.saved.fixed_bytes

    @cached_property
    def saved_prefix(self) -> np.ndarray:
        return np.concatenate([[0.0], np.cumsum(self.saved_per_sample)])

    def held_activation_bytes(self, mask, split_n: float, rest_n: float) -> float:
        """Bytes of saved activations one GPU holds when it keeps ``split_n`` samples of
        the layers in ``mask`` and ``rest_n`` samples of the others (None: all split)."""
        s_in, s_out, _ = self.mask_stats(mask)
        return split_n * s_in + rest_n * s_out

    def transient_bytes(self, mask, split_n: float, rest_n: float) -> float:
        """What the backward's peak adds to the saved activations when the split's layers
        hold ``split_n`` samples and the others ``rest_n`` (memory.excess_bytes)."""
        _, _, peak = self.mask_stats(mask)
        if isinstance(mask, Stages):
            return split_n * peak
        return float(excess_bytes(peak, split_n, rest_n))

    # -- split sets (docs/cost-model.md "Split layers") ------------------------------------------
    def _sums(self, mask: np.ndarray, coll_groups: np.ndarray | None = None) -> SplitSums:
        idx = np.flatnonzero(mask)
        last = int(idx[-1]) if idx.size else -1
        coll = idx[:-1] if idx.size else idx
        if coll_groups is None:
            coll_groups = np.ones(coll.size, dtype=int)
        r = ~mask
        return SplitSums(
            mask=mask,
            fb_s=float(self.fb[mask].sum()),
            fb_r=float(self.fb[r].sum()),
            wu_s=float(self.wu[mask].sum()),
            wu_r=float(self.wu[r].sum()),
            w_s=float(self.w[mask].sum()),
            w_r=float(self.w[r].sum()),
            act_s=float((self.x + self.y)[mask].sum()),
            act_r=float((self.x + self.y)[r].sum()),
            coll_y=self.y[coll],
            last=last,
            coll_groups=coll_groups,
        )

    def split(self, strategy: str) -> SplitSums:
        """The layers ``strategy`` splits (its module's ``split_layers``), with their sums,
        computed once per context."""
        cache = self.__dict__.setdefault("_splits", {})
        if strategy not in cache:
            from oracle.compute.strategies import REGISTRY

            cache[strategy] = self._sums(*REGISTRY[strategy].split_layers(self))
        return cache[strategy]

    def delayed_mask(self, field: str = "delayed_update") -> np.ndarray:
        """The layers --delayed-update (or ``field``, e.g. replicated_gradients) names
        (by name or by layer type)."""
        want = set(getattr(self.options, field))
        return np.array([n in want or t in want for n, t in zip(self.names, self.types)], dtype=bool)

    def spatial_last(self) -> int:
        """The last layer spatial parallelism splits: --spatial-split-after's, else
        :meth:`default_spatial_last`."""
        last = self.default_spatial_last()
        stack = self.options.stack
        name = self.options.spatial_split_after or (stack.spatial_split_for(self.model.name) if stack else None)
        if name is not None:  # the option, else the stack's layer configuration (issue 27)
            last = self._split_point(name, last)
        return last

    @property
    def filter_types(self) -> tuple[str, ...]:
        """The layer types filter and channel split: the stack's (issue 27), else every
        layer with weights (docs/cost-model.md "Split layers")."""
        stack = self.options.stack
        return (stack.filter_types() if stack is not None else None) or WEIGHT_TYPES

    def default_spatial_last(self) -> int:
        """docs/cost-model.md: the last layer with a spatial extent > 1 before one changes the rank (flatten, tokens)."""
        last, rank = -1, len(self.model.input_shape)
        for i, info in enumerate(self.model.info):
            if len(info.output_shape) != rank:
                break
            if math.prod(info.output_shape[1:]) > 1:
                last = i
        return last

    def _split_point(self, name: str, default_last: int) -> int:
        from oracle.errors import OracleError

        if name not in self.model.index:
            from oracle.errors import did_you_mean

            raise OracleError(f"model '{self.model.name}' has no layer '{name}'", path="--spatial-split-after",
                              hint=did_you_mean(name, self.names))  # fmt: skip
        i = self.model.index[name]
        if i > default_last:
            raise OracleError(
                f"layer '{name}' comes after the last layer with a spatial output"
                f" ({self.names[default_last]}); spatial parallelism cannot split it",
                path="--spatial-split-after",
            )
        return i

    # -- compute at a per-GPU batch (issue 13; identity in linear mode) -------------------
    def times_at(self, batch: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(FW, BW, FW+BW) per sample of every layer when a GPU's kernels work on
        ``batch`` samples: the profile's, converted by the compute model (the profile's
        own arrays when there is nothing to convert)."""
        conv = self.conversion
        if conv is None:
            return self.fw, self.bw, self.fb
        hit = self._at_cache.get(batch)
        if hit is None:
            f = conv.factors(batch)
            if f is None:
                hit = (self.fw, self.bw, self.fb)
            else:
                fw, bw = self.fw * f[0] + f[2], self.bw * f[1] + f[3]
                hit = (fw, bw, fw + bw)
            self._at_cache[batch] = hit
        return hit

    def fb_sum(self, batch: float, sums: SplitSums | None = None, part: str = "s") -> float:
        """Σ (FW+BW) at per-GPU batch ``batch`` over all layers (``sums`` None), or over
        the split layers (``part`` "s") or the replicated rest ("r") of ``sums``; the
        profile's own cached sums when nothing converts (exactly ParaDL's)."""
        fb = self.times_at(batch)[2]
        if fb is self.fb:
            return self.sum_fb if sums is None else (sums.fb_s if part == "s" else sums.fb_r)
        key = (batch, id(sums), part)
        hit = self._sum_cache.get(key)
        if hit is None:
            if sums is None:
                hit = float(fb.sum())
            else:
                hit = float(fb[sums.mask if part == "s" else ~sums.mask].sum())
            self._sum_cache[key] = hit
        return hit

    def conversion_label(self, batch: float) -> str:
        label = self.conversion.label(batch) if self.conversion is not None else ""
        k = self.compute_factor  # issue 14
        return label if k == 1.0 else f"{label}; times x {k:.4g} (the system's compute factor)".lstrip("; ")

    def split_compute(self, sums: SplitSums, samples: float, q: int, iterations: float,
                      batch: float | None = None) -> float:  # fmt: skip
        """Per-epoch forward+backward time of the split layers when each of ``samples``
        samples is split q ways: samples·Σs(FW+BW)/q by default (docs/cost-model.md), with the
        system's split efficiency (Implementation: Amdahl fraction f, a fixed overhead
        per split layer and iteration) samples·Σs(FW+BW)·(f + (1-f)/q) + I·n_s·o.
        ``batch``: the per-GPU work per kernel, in samples (compute model, issue 13)."""
        impl = self.system.implementation
        f = impl.split_serial_fraction if q > 1 else 0.0
        fb_s = sums.fb_s if batch is None else self.fb_sum(batch, sums, "s")
        t = samples * fb_s * (f + (1.0 - f) / q)
        if q > 1 and impl.split_overhead_s:
            t += iterations * int(sums.mask.sum()) * impl.split_overhead_s
        return t

    def layer_split_fb(self, split: np.ndarray, D: float, p1: int, p2: int, I: float, B: float) -> np.ndarray:
        """Per layer FW+BW per epoch (the per-layer search): a split layer's D/p1 samples
        split p2 ways, with the system's split efficiency (as :meth:`split_compute`); a
        replicated one's D/p1.  Compute model (issue 13): split layers work on
        B/(p1·p2) samples per kernel, replicated ones on B/p1."""
        impl = self.system.implementation
        f = impl.split_serial_fraction if p2 > 1 else 0.0
        split_t = D / p1 * self.times_at(B / (p1 * p2))[2] * (f + (1.0 - f) / p2)
        if p2 > 1 and impl.split_overhead_s:
            split_t = split_t + I * impl.split_overhead_s
        return np.where(split, split_t, D / p1 * self.times_at(B / p1)[2])

    # -- pipeline (optimal contiguous partition) -------------------------------------
    @cached_property
    def _prefix_fb(self) -> np.ndarray:
        return np.concatenate([[0.0], np.cumsum(self.fb)])

    @cached_property
    def crossing(self) -> np.ndarray:
        """Elements per sample crossing a cut after layer k (k = 0..G-1).

        For a chain this is y_k, as in docs/cost-model.md ("y_Gi is the output of group i's last
        layer").  In a DAG every tensor produced at or before k and consumed after k
        crosses (a residual shortcut too); we count them all, which is what a real
        pipeline sends (documented deviation, equal to ParaDL's formula on line graphs).
        """
        last_use = np.arange(self.G)  # a layer's own index if nothing reads it later
        for j, layer in enumerate(self.model.layers):
            for name in layer.inputs:
                if name != MODEL_INPUT:
                    i = self.model.index[name]
                    last_use[i] = max(last_use[i], j)
        diff = np.zeros(self.G + 1)
        for i in range(self.G):
            if last_use[i] > i:
                diff[i] += self.y[i]  # crosses cuts i .. last_use-1
                diff[last_use[i]] -= self.y[i]
        out = np.cumsum(diff)[: self.G]
        # the last layer of a group always hands its output on when it has a consumer;
        # make sure a chain gives exactly y_k even for a layer nobody reads
        return np.maximum(out, 0.0)

    def partition(self, p: int) -> list[tuple[int, int]]:
        """Optimal contiguous partition of the layers into p non-empty groups that
        minimises the largest group FW+BW time (the linear partition problem).
        Returns [(start, stop), ...] with stop exclusive.  Requires 1 <= p <= G."""
        return partition_cached(self, p)


def _saved_activations(model: Model, times: tuple[LayerTimes, ...]) -> SavedActivations:
    """Measured saved bytes (a profile's, at fp32) when every layer has them, else the
    rules of compute/memory.py."""
    if times and all(t.saved_bytes is not None for t in times):
        measured = np.array([t.saved_bytes for t in times], dtype=float)
        return SavedActivations(measured / 4.0, np.zeros(len(times)), "profile")
    return saved_activations(model)
