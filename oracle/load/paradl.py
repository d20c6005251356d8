"""ParaDL's own input files, read as ParaDL's tool reads them (issue 27 point 2).

ParaDL (Kahira et al., HPDC 2021) projected its runs with ``parallel_analysis.py``
(TruongThaoNguyen/paraDL-analysis, commit ce36803), which reads three kinds of file;
the line numbers below are that tool's (``load_network``, ``load_layer_configuration``,
``load_platform``):

* a model file ``*.net`` (ParaDL names them ``.net``, ``.net_sc``, ``.net_256``)::

      Dataset|ImageNet                 line 1: the training set's name
      Input|1280000x3x226x226          line 2: samples x channels x spatial extents
      Model|ResNet50                   line 3: the model's name
      CONV_1|3x226x226|3x64x7x7|64x113x113|0.003119502
      BNORM|64x113x113|64x64x0x0|64x113x113|0
      # a comment

  then one layer a line, ``NAME|x|w|y[|seconds]`` (tool lines 1239-1269): input shape
  x = C x spatial, weight shape w = C x F x kernel (pools: 0 x 0 x kernel), output
  y = F x spatial, and the measured forward+backward seconds per sample (ParaDL puts the
  model's whole time on the first layer and spreads it by FLOPs, tool lines 179-186).
  The tool knows a layer's kind by a word in its name (``estimate_layer_flop``, tool
  lines 1287-1321): CONV, MPOOL, APOOL, RELU, FC, BNORM, ADD; anything else costs
  nothing, which here only DROPOUT may (another name is an error);
* a layer configuration ``*.lc``: one line per model layer, ``[INDEX] NAME|0 or 1``, 1
  for a layer the strategy splits, 0 for one it runs unsplit ("sequential mode"; tool
  lines 1188-1204, matched to the model's layers by position);
* a platform file ``*.plat``: ``KEY|value|unit`` lines MEM_PER_NODE (bytes of one GPU),
  NODE_SPEED (FLOP/s), BANDWIDTH (B/s), LATENCY (s), MAX_NODE (GPUs), GPU_PER_NODE
  (tool lines 1143-1186; ParaDL's "node" is one GPU).

Each reader is strict where the tool is lax: a line it cannot read, an unknown layer,
a shape that does not chain or a layer name the model lacks is one OracleError naming
the file and the line.  Nothing here writes: ``oracle/importer/paradl.py`` turns the
results into oracle's files.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from oracle.errors import OracleError
from oracle.load.source import MAX_YAML_BYTES, read_bytes, shown

# the tool's kinds, in the order it tests the words in a name (tool lines 1287-1321)
KINDS = ("CONV", "MPOOL", "APOOL", "RELU", "FC", "BNORM", "ADD", "DROPOUT")
ELEMENTWISE = ("RELU", "BNORM", "ADD", "DROPOUT")  # output shape = input shape
MAX_EXTENT = 10**7  # one dimension of a shape: beyond any image, volume or layer
_DIMS = re.compile(r"\d{1,9}(x\d{1,9})*")
_NUMBERED = re.compile(r"(\d{1,9})\s+(\S.*)")  # ParaDL's longer .lc files: "4 CONV_2a1"
_NUMBER = re.compile(r"[0-9.eE+-]{1,40}")


@dataclass(frozen=True)
class ParadlLayer:
    name: str  # as in the file (ParaDL repeats names: RELU, BNORM, ...)
    kind: str  # one of KINDS
    x: tuple[int, ...]  # input shape, C x spatial
    w: tuple[int, ...]  # weight shape, C x F x kernel
    y: tuple[int, ...]  # output shape
    time_s: float | None  # the fifth field: measured seconds per sample, if given
    line: int

    @property
    def weights(self) -> int:
        """ParaDL's |w|: the product of the weight shape (tool line 1255)."""
        return math.prod(self.w)


@dataclass(frozen=True)
class ParadlNet:
    file: str
    dataset: str
    samples: int  # the first extent of the Input line
    input: tuple[int, ...]  # one sample, C x spatial
    model: str
    layers: tuple[ParadlLayer, ...]

    @property
    def time_s_per_sample(self) -> float:
        """The tool's total compute time per sample: the sum of the fifth fields
        (``summary_network2``'s totalComp, tool line 1373)."""
        return sum(layer.time_s or 0.0 for layer in self.layers)

    @property
    def weights(self) -> int:
        return sum(layer.weights for layer in self.layers)


@dataclass(frozen=True)
class ParadlLcEntry:
    name: str
    split: bool
    line: int
    index: int | None  # the leading number ParaDL's longer files give, if any


@dataclass(frozen=True)
class ParadlLayerConfig:
    file: str
    entries: tuple[ParadlLcEntry, ...]


@dataclass(frozen=True)
class ParadlPlatform:
    file: str
    mem_per_node_bytes: float  # one GPU's memory (ParaDL's node is a GPU)
    node_speed_flops: float
    bandwidth_Bps: float
    latency_s: float
    max_node_gpus: int
    gpu_per_node: int
    lines: dict[str, int]  # key -> line number


def _lines(path: str | Path, what: str) -> list[tuple[int, str]]:
    """The file's lines (split at LF as the tool's file iteration does, a CR before it
    dropped), numbered from 1, stripped; blank ones left out."""
    data = read_bytes(path, what, MAX_YAML_BYTES)  # a description, as the YAML files: the same cap
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise OracleError(f"is not a text file; expected a {what}", file=shown(path)) from None
    return [(i, s.strip()) for i, s in enumerate(text.split("\n"), 1) if s.strip()]


def _shape(text: str, file: str, line: int, what: str, zero: bool = False) -> tuple[int, ...]:
    text = text.strip()
    if not _DIMS.fullmatch(text):
        raise OracleError(f"{what} '{text[:60]}' is not a shape; expected extents joined by 'x', e.g. 3x224x224",
                          file=file, line=line)  # fmt: skip
    dims = tuple(int(v) for v in text.split("x"))
    if max(dims) > MAX_EXTENT or (not zero and min(dims) < 1):
        raise OracleError(f"{what} {text} has an extent {'above ' + format(MAX_EXTENT, ',') if max(dims) > MAX_EXTENT else 'of 0'}",
                          file=file, line=line)  # fmt: skip
    return dims


def _header(lines: list[tuple[int, str]], k: int, key: str, file: str) -> tuple[int, str]:
    if len(lines) <= k:
        raise OracleError(f"ends before its '{key}|...' line; expected Dataset, Input and Model lines, then layers",
                          file=file)  # fmt: skip
    line, text = lines[k]
    head, sep, value = text.partition("|")
    if head.strip().lower() != key.lower() or not sep or not value.split("|")[0].strip():
        raise OracleError(f"expected '{key}|...' here, got '{text[:60]}'", file=file, line=line)
    return line, value.split("|")[0].strip()


def kind_of(name: str) -> str | None:
    """The tool's kind of a layer: the first word of KINDS in its name."""
    return next((k for k in KINDS if k in name), None)


def read_paradl_net(path: str | Path, *, check_shapes: bool = True) -> ParadlNet:
    """A ParaDL ``.net`` model file.  ``check_shapes=False`` keeps a file whose shapes do
    not chain (as the tool would read it); the kinds and the syntax are checked always."""
    file = shown(path)
    lines = _lines(path, "ParaDL model file (.net)")
    _, dataset = _header(lines, 0, "Dataset", file)
    in_line, dims = _header(lines, 1, "Input", file)
    full = _shape(dims, file, in_line, "Input")
    if len(full) < 3:
        raise OracleError(f"Input {dims} needs samples, channels and 1-3 spatial extents, e.g. 1280000x3x226x226",
                          file=file, line=in_line)  # fmt: skip
    _, model = _header(lines, 2, "Model", file)
    layers = tuple(_layer(line, text, file) for line, text in lines[3:] if not text.startswith("#"))
    if not layers:
        raise OracleError("has no layers; expected NAME|x|w|y lines after the Model line", file=file)
    net = ParadlNet(file, dataset, full[0], full[1:], model, layers)
    if check_shapes:
        check_net(net)
    return net


def _layer(line: int, text: str, file: str) -> ParadlLayer:
    fields = [f.strip() for f in text.split("|")]
    if len(fields) < 4 or len(fields) > 5:
        raise OracleError(f"expected NAME|x|w|y or NAME|x|w|y|seconds, got '{text[:60]}'", file=file, line=line)
    name = fields[0]
    kind = kind_of(name)
    if kind is None:
        raise OracleError(f"layer '{name[:60]}' is of no kind ParaDL's tool knows; its name must contain one of "
                          + ", ".join(KINDS), file=file, line=line)  # fmt: skip
    x = _shape(fields[1], file, line, f"layer {name}: x")
    w = _shape(fields[2], file, line, f"layer {name}: w", zero=True)
    y = _shape(fields[3], file, line, f"layer {name}: y")
    time_s = None
    if len(fields) == 5 and fields[4]:
        time_s = _number(fields[4], file, line, f"layer {name}: seconds per sample")
    return ParadlLayer(name, kind, x, w, y, time_s, line)


def _number(text: str, file: str, line: int, what: str, positive: bool = False) -> float:
    try:
        value = float(text) if _NUMBER.fullmatch(text) else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise OracleError(f"{what} '{text[:40]}' is not a {'positive' if positive else 'non-negative'} number",
                          file=file, line=line)  # fmt: skip
    return value


def _fmt(shape: tuple[int, ...]) -> str:
    return "x".join(str(v) for v in shape)


def check_net(net: ParadlNet) -> None:
    """Every layer reads what the one before it writes (the first one the Input), and
    its three shapes agree with its kind."""
    prev_y, prev = net.input, "the Input line"
    for layer in net.layers:
        if layer.x != prev_y:
            raise OracleError(f"layer {layer.name}: its input {_fmt(layer.x)} does not chain: {prev} gives {_fmt(prev_y)}",
                              file=net.file, line=layer.line)  # fmt: skip
        problem = _kind_problem(layer)
        if problem:
            raise OracleError(f"layer {layer.name} ({layer.kind}): {problem}", file=net.file, line=layer.line)
        prev_y, prev = layer.y, f"layer {layer.name} (line {layer.line})"


def _kind_problem(layer: ParadlLayer) -> str | None:
    x, w, y, k = layer.x, layer.w, layer.y, layer.kind
    if k in ELEMENTWISE:
        return None if y == x else f"output {_fmt(y)} differs from its input {_fmt(x)}"
    if k == "FC":
        if len(w) != len(x) + 1 or w[0] != x[0] or w[1] != y[0] or w[2:] != x[1:] or any(v != 1 for v in y[1:]):
            return f"w {_fmt(w)} and y {_fmt(y)} do not fit input {_fmt(x)}: expected w = C x F x spatial, y = F x 1..."
        return None
    if len(w) != len(x) + 1 or len(y) != len(x):
        return f"x {_fmt(x)}, w {_fmt(w)} and y {_fmt(y)} do not have matching ranks (w: C x F x one kernel extent per spatial extent)"
    if k == "CONV" and (w[0] != x[0] or w[1] != y[0]):
        return f"w {_fmt(w)} must be C x F x kernel with C = {x[0]} (input channels) and F = {y[0]} (output channels)"
    if k in ("MPOOL", "APOOL") and y[0] != x[0]:
        return f"a pool keeps the channels, but {x[0]} become {y[0]}"
    if min(w[2:]) < 1:
        return f"kernel {_fmt(w[2:])} has an extent of 0"
    return None


def read_paradl_lc(path: str | Path) -> ParadlLayerConfig:
    """A ParaDL ``.lc`` layer configuration: ``[INDEX] NAME|0 or 1`` a line."""
    file = shown(path)
    entries = []
    for line, text in _lines(path, "ParaDL layer configuration (.lc)"):
        if text.startswith("#"):
            continue
        head, sep, value = text.partition("|")
        numbered = _NUMBERED.fullmatch(head.strip())
        name = numbered.group(2) if numbered else head.strip()
        if not sep or not name or value.strip() not in ("0", "1"):
            raise OracleError(f"expected '[INDEX] NAME|0' or '[INDEX] NAME|1', got '{text[:60]}'", file=file, line=line)
        entries.append(ParadlLcEntry(name, value.strip() == "1", line, int(numbered.group(1)) if numbered else None))
    if not entries:
        raise OracleError("has no layers; expected one 'NAME|0 or 1' line per layer of the model", file=file)
    return ParadlLayerConfig(file, tuple(entries))


def bind_lc(lc: ParadlLayerConfig, net: ParadlNet) -> tuple[bool, ...]:
    """Which of ``net``'s layers ``lc`` splits.  Its lines go with the model's layers in
    order (as the tool reads them); each must name its layer."""
    for i, (entry, layer) in enumerate(zip(lc.entries, net.layers)):
        if entry.index is not None and entry.index != i:
            raise OracleError(f"is numbered {entry.index} but is entry {i} (counting from 0)", file=lc.file, line=entry.line)
        if entry.name != layer.name:
            raise OracleError(f"names layer '{entry.name}', but layer {i} of model {net.model} is '{layer.name}'"
                              f" ({net.file} line {layer.line})", file=lc.file, line=entry.line)  # fmt: skip
    if len(lc.entries) != len(net.layers):
        more = len(lc.entries) > len(net.layers)
        line = lc.entries[len(net.layers)].line if more else lc.entries[-1].line
        raise OracleError(f"has {len(lc.entries)} layers, model {net.model} ({net.file}) has {len(net.layers)}"
                          + ("; this one is past its last" if more else f"; '{net.layers[len(lc.entries)].name}' and"
                             " the layers after it are missing"), file=lc.file, line=line)  # fmt: skip
    if not any(e.split for e in lc.entries):
        raise OracleError("splits no layer (every value is 0); expected 1 for the layers the strategy splits", file=lc.file)
    return tuple(e.split for e in lc.entries)


PLAT_KEYS = ("MEM_PER_NODE", "NODE_SPEED", "BANDWIDTH", "LATENCY", "MAX_NODE", "GPU_PER_NODE")


def read_paradl_plat(path: str | Path) -> ParadlPlatform:
    """A ParaDL ``.plat`` platform file: the six ``KEY|value|unit`` lines of PLAT_KEYS."""
    file = shown(path)
    values: dict[str, float] = {}
    lines: dict[str, int] = {}
    for line, text in _lines(path, "ParaDL platform file (.plat)"):
        fields = [f.strip() for f in text.split("|")]
        key = fields[0].upper()
        if key not in PLAT_KEYS or len(fields) < 2:
            raise OracleError(f"expected KEY|value|unit with KEY one of {', '.join(PLAT_KEYS)}, got '{text[:60]}'",
                              file=file, line=line)  # fmt: skip
        if key in values:
            raise OracleError(f"{key} is given twice (first on line {lines[key]})", file=file, line=line)
        values[key] = _number(fields[1], file, line, key, positive=True)
        lines[key] = line
    missing = [k for k in PLAT_KEYS if k not in values]
    if missing:
        raise OracleError(f"lacks {', '.join(missing)}; a platform file gives {', '.join(PLAT_KEYS)}", file=file)
    for key in ("MAX_NODE", "GPU_PER_NODE"):
        if values[key] != int(values[key]) or values[key] > MAX_EXTENT:
            raise OracleError(f"{key} {values[key]:g} is not a whole number of GPUs", file=file, line=lines[key])
    return ParadlPlatform(file, values["MEM_PER_NODE"], values["NODE_SPEED"], values["BANDWIDTH"],
                          values["LATENCY"], int(values["MAX_NODE"]), int(values["GPU_PER_NODE"]), lines)  # fmt: skip
