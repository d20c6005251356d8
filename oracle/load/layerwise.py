"""Layer-wise configuration files: which layers are split, and how (issue 8).

ParaDL's ``.lc`` files say, per layer, how it is parallelized; this format generalises
them to ranges of layers, each with a distribution that uses all the file's GPUs
(Dryden et al., IPDPS 2019, §III; Jia et al., ICML 2018, §4; see
oracle/compute/layerwise/layerwise.py for the costs)::

    model: ResNet-50            # must equal the model's name
    gpus: 64                    # p; every range uses all of them
    batch: 2048                 # optional: global mini-batch B (or batch_per_gpu: b)
    layers:                     # ranges in model order, covering every layer once
      - {from: conv1, to: res3d_relu, distribution: spatial, p2: 4}   # 16 x 4
      - {from: res4a_branch2a, to: fc1000, distribution: data}
      - {layer: fc1000, distribution: filter, p1: 8, p2: 8}           # one layer

Distributions (p = p1·p2):
    data                  samples over all p GPUs (p1 = p, p2 = 1)
    spatial  p1 x p2      p1 sample groups, each splitting height/width over p2 GPUs
    filter   p1 x p2      p1 sample groups, each splitting conv/fc filters over p2 GPUs
    channel  p1 x p2      p1 sample groups, each splitting input channels over p2 GPUs
Give p2 (the model part) or p1 (the data part) or both; with neither, p2 = p.

Errors name the file, the line and the key (``layers[2].from``), and suggest layer
names that are close to unknown ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oracle.compute.layerwise.layerwise import Dist
from oracle.compute.layerwise.layerwise_build import kind_names, kind_table, strategy_kinds
from oracle.compute.strategies.data import Data
from oracle.compute.strategies.spatial import Spatial
from oracle.errors import OracleError, did_you_mean
from oracle.limits import BATCH, BATCH_PER_GPU, COUNT, GPUS
from oracle.load.fields import Fields, choice, integer, of, string
from oracle.load.yamlfile import load_yaml
from oracle.model import Model


@dataclass(frozen=True)
class LayerRange:
    first: str
    last: str
    dist: Dist
    line: int | None = None
    index: int = 0  # position in the file's list


@dataclass(frozen=True)
class LayerwiseConfig:
    model: str
    gpus: int
    ranges: tuple[LayerRange, ...]
    batch: float | None = None
    batch_per_gpu: float | None = None
    source: str = ""
    file: str = ""
    model_line: int | None = None

    def global_batch(self) -> float | None:
        if self.batch is not None:
            return self.batch
        if self.batch_per_gpu is not None:
            return self.batch_per_gpu * self.gpus
        return None


def load_layerwise(path: str | Path) -> LayerwiseConfig:
    name = str(path)
    return parse_layerwise(load_yaml(path, "layer-wise configuration file"), name)


def parse_layerwise(doc: dict, file: str) -> LayerwiseConfig:
    top = Fields(doc, file, "")
    model = top.req("model", string(), "the name of the model")
    gpus = top.req("gpus", of(GPUS), "the number of GPUs every range uses")
    batch = top.opt("batch", of(BATCH))
    bpg = top.opt("batch_per_gpu", of(BATCH_PER_GPU))
    if batch is not None and bpg is not None:
        raise top.error(
            "batch_per_gpu", "give either 'batch' (global) or 'batch_per_gpu', not both"
        )
    source = top.opt("source", string(nonempty=False), "")
    ranges = []
    items = list(top.items("layers"))
    if not items:
        raise top.error("layers", "is empty; expected ranges of layers with their distribution")
    for i, item, line in items:
        f = Fields(item, file, f"layers[{i}]", line)
        single = f.opt("layer", string())
        first = f.opt("from", string())
        last = f.opt("to", string())
        kind = f.req("distribution", choice(kind_names()), " | ".join(kind_names()))
        p1 = f.opt("p1", of(COUNT))
        p2 = f.opt("p2", of(COUNT))
        subset = f.opt("gpus", of(GPUS))  # issue 18: the layer on the first N GPUs (N divides gpus)
        p3 = f.opt("p3", integer(ge=2))  # issue 18: spatial+filter, filters over p3
        f.done()
        if (p3 is None) != (kind != "spatial+filter"):
            raise f.error("p3" if p3 is not None else "distribution",
                          "p3 (the filter split) goes with distribution: spatial+filter, and it needs one",
                          hint="e.g. {distribution: spatial+filter, p2: 2, p3: 2}")  # fmt: skip  # unknown keys first: 'too' is more likely a typo of 'to' than a gap
        if single is not None:
            if first is not None or last is not None:
                raise f.error(
                    "layer", "give either 'layer' (one layer) or 'from'/'to' (a range), not both"
                )
            first = last = single
        elif first is None or last is None:
            missing = "from" if first is None else "to"
            raise f.error(
                None,
                f"missing required key '{missing}' (a layer name)",
                hint="or 'layer:' for one layer",
            )
        dist = _subset_dist(f, kind, gpus, p1, p2, subset, p3 or 1)
        ranges.append(LayerRange(first, last, dist, line, i))
    top.done()
    return LayerwiseConfig(
        model, gpus, tuple(ranges), batch, bpg, source, file, top.key_line("model")
    )


def _subset_dist(f: Fields, kind: str, p: int, p1: int | None, p2: int | None, q: int | None, p3: int = 1) -> Dist:
    """A range's distribution; with ``gpus: q`` on the first q of the p GPUs."""
    if p3 > 1:  # spatial+filter: p1 x p2 over the p/p3 GPUs of a filter slice
        whole = q or p
        if whole % p3:
            raise f.error("p3", f"p3={p3} does not divide gpus={whole}")
        d = _dist(f, Spatial.name, whole // p3, p1, p2)
        return Dist(kind, d.p1, d.p2, of=p if whole != p else 0, p3=p3)
    if q is None or q == p:
        return _dist(f, kind, p, p1, p2)
    if p % q:
        raise f.error("gpus", f"got {q}; a layer's GPUs must divide the file's gpus: {p}",
                      hint="one of " + ", ".join(str(d) for d in range(1, p + 1) if p % d == 0))  # fmt: skip
    if kind == "replicated":
        raise f.error("gpus", "replicated uses every GPU", hint="leave out gpus, or use data")
    d = _dist(f, kind, q, p1, p2) if q > 1 or not kind_table()[kind].grid else None
    if d is None:
        raise f.error("gpus", f"{kind} needs at least 2 GPUs", hint="use data on 1 GPU")
    return Dist(d.kind, d.p1, d.p2, of=p)


def _dist(f: Fields, kind: str, p: int, p1: int | None, p2: int | None) -> Dist:
    if not kind_table()[kind].grid:
        if (p2 is not None and p2 != 1) or (p1 is not None and p1 != p):
            grids = [n for n, k in strategy_kinds().items() if k.grid]
            raise f.error(
                "p2" if p2 is not None else "p1",
                f"{kind} uses all {p} GPUs for samples (p1 = {p}, p2 = 1)",
                hint=f"for a p1 x p2 grid use {', '.join(grids[:-1])} or {grids[-1]}",
            )
        return Dist(kind, p, 1)
    if p1 is None and p2 is None:
        p1, p2 = 1, p
    elif p2 is None:
        assert p1 is not None
        if p % p1:
            raise f.error("p1", f"p1={p1} does not divide gpus={p}")
        p2 = p // p1
    elif p1 is None:
        if p % p2:
            raise f.error("p2", f"p2={p2} does not divide gpus={p}")
        p1 = p // p2
    if p1 * p2 != p:
        raise f.error("p2", f"p1 x p2 = {p1} x {p2} = {p1 * p2}, not gpus={p}")
    if p2 == 1:
        raise f.error(
            "p2", f"{kind} with p2 = 1 is data parallelism", hint="write distribution: data"
        )
    return Dist(kind, p1, p2)


def bind_layerwise(config: LayerwiseConfig, model: Model) -> list[Dist]:
    """The distribution of every layer of ``model``, in model order.  The ranges must
    name layers of the model and cover them all exactly once, in order."""
    file = config.file or None
    if config.model != model.name:
        raise OracleError(
            f"is for model '{config.model}', not '{model.name}'", file=file, line=config.model_line, path="model",
            hint="pass the model the configuration was written for",
        )  # fmt: skip
    names = [layer.name for layer in model.layers]
    out: list[Dist | None] = [None] * len(names)
    expected = 0  # index of the next layer to cover
    for r in config.ranges:
        where = f"layers[{r.index}]"
        a = _index(model, r.first, file, r.line, f"{where}.from")
        b = _index(model, r.last, file, r.line, f"{where}.to")
        if b < a:
            raise OracleError(
                f"range runs backwards: its end '{r.last}' (layer {b + 1}) comes before its start"
                f" '{r.first}' (layer {a + 1})",
                file=file, line=r.line, path=where,
            )  # fmt: skip
        if a != expected:
            if a > expected:
                gap = names[expected]
                last = names[a - 1]
                what = f"'{gap}'" if a - 1 == expected else f"'{gap}' to '{last}'"
                raise OracleError(
                    f"layers {what} are not covered: this range starts at '{r.first}'",
                    file=file, line=r.line, path=f"{where}.from",
                    hint=f"start it at '{gap}' or add a range for the layers before it",
                )  # fmt: skip
            prev = out[a]
            raise OracleError(
                f"'{r.first}' is already covered by an earlier range" + (f" ({prev.label})" if prev else ""),
                file=file, line=r.line, path=f"{where}.from",
                hint=f"ranges must follow each other in model order; the next uncovered layer is"
                f" '{names[expected]}'" if expected < len(names) else "every layer is covered already",
            )  # fmt: skip
        for k in range(a, b + 1):
            out[k] = r.dist
        expected = b + 1
    if expected < len(names):
        last = config.ranges[-1]
        raise OracleError(
            f"layers '{names[expected]}' to '{names[-1]}' are not covered"
            if expected < len(names) - 1
            else f"layer '{names[-1]}' is not covered",
            file=file, line=last.line, path="layers",
            hint=f"end the last range at '{names[-1]}'",
        )  # fmt: skip
    return [d for d in out if d is not None]


def _index(model: Model, name: str, file: str | None, line: int | None, path: str) -> int:
    if name in model.index:
        return model.index[name]
    hint = did_you_mean(name, list(model.index))
    raise OracleError(
        f"model '{model.name}' has no layer '{name}'", file=file, line=line, path=path,
        hint=hint or f"layers run from '{model.layers[0].name}' to '{model.layers[-1].name}'",
    )  # fmt: skip


def ranges_of(model: Model, assignment: list[Dist]) -> list[tuple[int, int, Dist]]:
    """Runs of consecutive layers with the same distribution: (first, last, dist)."""
    out: list[tuple[int, int, Dist]] = []
    for i, d in enumerate(assignment):
        if out and out[-1][2] == d:
            out[-1] = (out[-1][0], i, d)
        else:
            out.append((i, i, d))
    return out


def dump_layerwise(
    model: Model,
    gpus: int,
    assignment: list[Dist],
    *,
    batch: float | None = None,
    comments: list[str] = (),  # type: ignore[assignment]
    source: str = "",
) -> str:
    """A layer-wise configuration file for ``assignment`` (loadable again)."""
    from oracle.textsafe import yaml_comments
    from oracle.textsafe import yaml_scalar as _scalar

    lines = yaml_comments(comments)
    lines.append(f"model: {_scalar(model.name)}")
    lines.append(f"gpus: {gpus}")
    if batch is not None:
        lines.append(f"batch: {int(batch) if float(batch).is_integer() else batch!r}")
    if source:
        lines.append(f"source: {_scalar(source)}")
    lines.append("layers:")
    for a, b, d in ranges_of(model, assignment):
        first, last = model.layers[a].name, model.layers[b].name
        where = (
            f"layer: {_scalar(first)}" if a == b else f"from: {_scalar(first)}, to: {_scalar(last)}"
        )
        grid = "" if d.kind == Data.name else f", p1: {d.p1}, p2: {d.p2}"
        grid += f", p3: {d.p3}" if d.p3 > 1 else ""
        grid += f", gpus: {d.gpus}" if d.of else ""
        count = b - a + 1
        lines.append(
            f"  - {{{where}, distribution: {d.kind}{grid}}}  # {count} layer{'s' if count > 1 else ''}"
        )
    return "\n".join(lines) + "\n"

