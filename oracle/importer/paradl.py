"""ParaDL's files as oracle's (issue 27 point 2): a ``.net`` model as a model file, a
``.lc`` layer configuration as a layer-wise file, a ``.plat`` platform as a system file.

The readers are :mod:`oracle.load.paradl`; this module maps what they read:

* ``.net`` layers: CONV -> ``conv`` (no bias: ParaDL's |w| is C·F·K^d), MPOOL/APOOL ->
  ``maxpool``/``avgpool``, RELU -> ``relu``, BNORM -> ``batchnorm``, DROPOUT ->
  ``dropout``, FC -> ``fc`` (no bias; a ``flatten`` before the first one), ADD -> ``add``
  of its input with itself: ParaDL's files list no skip connections (a chain of layers),
  so the add has the cost, shape and (no) parameters of a residual add without a
  source the file does not give.  Stride, padding and ceil_mode are not in the file:
  the first that gives ParaDL's output shape (smallest stride, then smallest padding;
  pools try stride = kernel first) is taken, and oracle's shape inference must then
  reproduce every output shape of the file.  A name ParaDL repeats (RELU, BNORM) gets
  its layer's index, as ParaDL's longer ``.lc`` files number them: ``BNORM_1``.
* ``.lc``: see :func:`layerwise_text`.
* ``.plat``: see :mod:`oracle.importer.paradl_system`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oracle import __version__
from oracle.compute.layers.shapes import fmt_shape
from oracle.compute.strategies.channel import Channel
from oracle.compute.strategies.data import Data
from oracle.compute.strategies.filter import Filter
from oracle.compute.strategies.spatial import Spatial
from oracle.errors import OracleError
from oracle.importer.write import render, scalar, yaml_float
from oracle.load.model import parse_model
from oracle.load.paradl import ParadlLayer, ParadlNet, bind_lc, read_paradl_lc, read_paradl_net
from oracle.model import Model
from oracle.textsafe import yaml_comments

SIMPLE = {"RELU": "relu", "BNORM": "batchnorm", "DROPOUT": "dropout"}
POOLS = {"MPOOL": "maxpool", "APOOL": "avgpool"}
LC_STRATEGIES = (Spatial.name, Filter.name, Channel.name)  # what .lc files configure (tool --paratype s, f, c, ds, df)


def is_paradl_net(source: str) -> bool:
    """ParaDL names its model files ``*.net``, ``*.net_sc``, ``*.net_256``."""
    return Path(source).suffix.lower().startswith(".net")


@dataclass(frozen=True)
class NetImport:
    text: str  # the model file
    model: Model  # as oracle loads it
    net: ParadlNet  # as read
    names: tuple[tuple[str, ...], ...]  # per ParaDL layer, the oracle layers it became


def _names(net: ParadlNet) -> list[str]:
    counts: dict[str, int] = {}
    for layer in net.layers:
        counts[layer.name] = counts.get(layer.name, 0) + 1
    out: list[str] = []
    for i, layer in enumerate(net.layers):
        name = layer.name if counts[layer.name] == 1 else f"{layer.name}_{i}"
        while name in out or (name != layer.name and name in counts):  # never twice
            name += "_"
        out.append(name)
    return out


def _one(values: list) -> object:
    return values[0] if len(set(values)) == 1 else values


MAX_PADDING = 1024  # the paddings tried: beyond any real layer's, and the search stays short


def _output(x: int, k: int, s: int, p: int, ceil: bool) -> int:
    """PyTorch's window arithmetic (ceil_mode: the last window must start inside)."""
    span = x + 2 * p - k
    n = (-(-span // s) if ceil else span // s) + 1
    return n - 1 if ceil and (n - 1) * s >= x + p else n


def _window(x: int, k: int, y: int, pool: bool) -> list[tuple[int, int, bool]]:
    """(stride, padding, ceil_mode) that turn extent x into y with kernel k, best first:
    pools stride = kernel first, then the smallest stride, padding, floor before ceil.
    For each padding only the smallest strides that can give y are tried."""
    out = []
    for p in range(0, min(k // 2 if pool else k - 1, MAX_PADDING) + 1):
        span = x + 2 * p - k
        if span < 0:
            continue
        tries = {span // y + 1, -(-span // y), -(-span // max(y - 1, 1)), k if pool else 1}
        for ceil in (False, True) if pool else (False,):
            out += [(st, p, ceil) for st in sorted(tries) if st >= 1 and _output(x, k, st, p, ceil) == y]
    return sorted(set(out), key=lambda c: (pool and c[0] != k, c[0], c[1], c[2]))


def _windowed(layer: ParadlLayer, file: str) -> dict:
    pool = layer.kind in POOLS
    kernel = list(layer.w[2:])
    per_dim = [_window(x, k, y, pool) for x, k, y in zip(layer.x[1:], kernel, layer.y[1:])]
    for first in per_dim[0]:  # the first dimension's best whose ceil_mode every dimension has
        picks = [next((c for c in cands if c[2] == first[2]), None) for cands in per_dim]
        if all(picks):
            ceil = first[2]
            d = {"kernel": _one(kernel), "stride": _one([c[0] for c in picks]), "padding": _one([c[1] for c in picks])}
            return {**d, "ceil_mode": True} if ceil else d
    raise OracleError(f"layer {layer.name}: no stride and padding (the same on both sides) turn {fmt_shape(layer.x)}"
                      f" into {fmt_shape(layer.y)} with kernel {fmt_shape(tuple(kernel))}", file=file, line=layer.line)  # fmt: skip


def _layers(net: ParadlNet, names: list[str]) -> tuple[list[dict], list[tuple[str, ...]]]:
    layers: list[dict] = []
    made: list[tuple[str, ...]] = []
    flat = False
    for layer, name in zip(net.layers, names):
        prev = layers[-1]["name"] if layers else "input"
        new: list[dict] = []
        if layer.kind == "CONV":
            new.append({"name": name, "type": "conv", "filters": layer.y[0], **_windowed(layer, net.file), "bias": False})
        elif layer.kind in POOLS:
            new.append({"name": name, "type": POOLS[layer.kind], **_windowed(layer, net.file)})
        elif layer.kind == "FC":
            if not flat:
                new.append({"name": f"{name}_flatten", "type": "flatten"})
            new.append({"name": name, "type": "fc", "outputs": layer.y[0], "bias": False})
            flat = True
        elif layer.kind == "ADD":
            new.append({"name": name, "type": "add", "inputs": [prev, prev]})
        else:
            new.append({"name": name, "type": SIMPLE[layer.kind]})
        if flat and layer.kind in ("CONV", "MPOOL", "APOOL"):
            raise OracleError(f"layer {layer.name}: a {layer.kind} after an FC layer cannot be imported (oracle's fc"
                              " layers give a flat vector)", file=net.file, line=layer.line)  # fmt: skip
        layers += new
        made.append(tuple(d["name"] for d in new))
    return layers, made


def _same(paradl: tuple[int, ...], oracle_shape: tuple[int, ...]) -> bool:
    """Equal shapes; ParaDL writes an fc output F as F x 1 x 1, oracle as (F,)."""
    if tuple(paradl) == tuple(oracle_shape):
        return True
    return len(oracle_shape) == 1 and paradl[0] == oracle_shape[0] and all(v == 1 for v in paradl[1:])


def import_net(path: str, *, name: str | None = None, dataset: tuple[str, int] | None = None) -> NetImport:
    """A ParaDL ``.net`` file as the text of a checked oracle model file."""
    net = read_paradl_net(path)
    names = _names(net)
    layers, made = _layers(net, names)
    doc = {
        "name": name or net.model,
        "input": list(net.input),
        "dataset": {"name": dataset[0], "samples": dataset[1]} if dataset else {"name": net.dataset, "samples": net.samples},
        "source": f"ParaDL model file {Path(path).name} (parallel_analysis.py's -net input)",
        "notes": "ADD layers add their input to itself: ParaDL's model files list no skip connections",
        "layers": layers,
    }
    try:
        model = parse_model(doc, net.file)
    except OracleError as exc:
        raise OracleError(f"the imported layers do not check: {exc.path}: {exc.message}", file=net.file) from None
    for layer, group in zip(net.layers, made):
        got = model.info[model.index[group[-1]]].output_shape
        if not _same(layer.y, got):
            raise OracleError(f"layer {layer.name}: oracle computes {fmt_shape(got)}, the file says {fmt_shape(layer.y)}",
                              file=net.file, line=layer.line)  # fmt: skip
    return NetImport(render(doc, _net_header(path, net, model)), model, net, tuple(made))


def _net_header(path: str, net: ParadlNet, model: Model) -> list[str]:
    bn = sum(2 * layer.x[0] for layer in net.layers if layer.kind == "BNORM")
    lines = [
        f"Imported by `oracle import-model {Path(path).name}` (oracle {__version__}) from ParaDL's model file.",
        f"ParaDL's {net.model}: {len(net.layers)} layers, input {fmt_shape(net.input)}, {net.samples:,} samples of {net.dataset}.",
        f"Parameters {model.parameters:,}: ParaDL's |w| {net.weights:,} (conv and fc weights, no biases)"
        + (f" + batch norm's scale and shift {bn:,}" if bn else "") + f"; forward {model.flops / 1e9:.4g} GFLOPs per sample.",
        "Stride, padding and ceil_mode are the first that give each output shape of the file (oracle/importer/paradl.py).",
    ]
    if net.time_s_per_sample:
        lines.append(f"ParaDL's measured time: {net.time_s_per_sample:g} s per sample (forward + backward):"
                     " --profile-output writes it as a profile file.")  # fmt: skip
    return lines


def profile_text(got: NetImport, path: str) -> str:
    """ParaDL's measured time per sample as a total-only profile (docs/file-formats.md)
    for the imported model: oracle spreads it over the layers, as ParaDL's tool spreads
    it by FLOPs (tool lines 179-186)."""
    t = got.net.time_s_per_sample
    if not t:
        raise OracleError("gives no measured time (no fifth field on its layers), so it makes no profile",
                          file=got.net.file, path="--profile-output", hint="estimate one: oracle profile --estimate")  # fmt: skip
    header = [
        f"Written by `oracle import-model {Path(path).name} --profile-output` (oracle {__version__}).",
        f"ParaDL's measured forward + backward seconds per sample of {got.net.model} (the fifth fields of its model file).",
        "Total only: oracle spreads it over the layers (docs/file-formats.md); ParaDL's files give no weight-update time.",
    ]
    body = [
        f"model: {scalar(got.model.name)}",
        f"source: {scalar(f'ParaDL model file {Path(path).name}: the measured time per sample')}",
        "total:",
        f"  fw_bw_per_sample_s: {yaml_float(t)}",
        "  wu_per_iteration_s: 0.0",
    ]
    return "\n".join(yaml_comments(header) + [""] + body) + "\n"


def layerwise_text(lc_path: str, net_path: str, strategy: str, gpus: int, p2: int | None = None) -> str:
    """A ParaDL ``.lc`` as an oracle layer-wise file for ``net_path``'s imported model.

    ParaDL splits the layers from the first to the last one marked 1 (its "first
    partition", tool lines 536-545) and runs the rest unsplit after an all-gather (its
    "second partition").  Here: every layer up to the last 1 takes ``strategy`` on a
    p1 x p2 grid (p2 = gpus unless given, ParaDL's pure strategy; p1 > 1 its data+
    hybrids), layers marked 0 inside that range run as oracle's strategy runs a layer of
    their type (filter/channel: relu, batchnorm, pools and adds replicated in the group,
    as ParaDL's sequential mode); the layers after it run unsplit, each group's samples
    on one GPU: ``data`` on the first p1 GPUs."""
    if strategy not in LC_STRATEGIES:
        raise OracleError(f"got {strategy[:40]!r}; a layer configuration is for one of {', '.join(LC_STRATEGIES)}",
                          path="--strategy")  # fmt: skip
    p2 = gpus if p2 is None else p2
    if p2 < 2 or gpus % p2:
        raise OracleError(f"p2={p2} must be at least 2 and divide gpus={gpus}", path="--p2")
    got = import_net(net_path)
    lc = read_paradl_lc(lc_path)
    split = bind_lc(lc, got.net)
    last = max(i for i, s in enumerate(split) if s)
    p1 = gpus // p2
    head = [n for group in got.names[: last + 1] for n in group]
    tail = [n for group in got.names[last + 1 :] for n in group]
    ranges = [{"from": head[0], "to": head[-1], "distribution": strategy, "p1": p1, "p2": p2}]
    if tail:
        ranges.append({"from": tail[0], "to": tail[-1], "distribution": Data.name, "gpus": p1})
    comments = [
        f"Written by `oracle import-layers {Path(lc_path).name} --net {Path(net_path).name} --strategy {strategy}"
        f" --gpus {gpus} --p2 {p2}` (oracle {__version__}).",
        f"From ParaDL's layer configuration: {sum(split)} of {len(split)} layers split; ParaDL splits up to the last"
        f" one, {got.net.layers[last].name} ({Path(lc_path).name} line {lc.entries[last].line}), and runs the rest unsplit.",
        f"For the model `oracle import-model {Path(net_path).name}` writes (docs/search.md, layer-wise files).",
    ]
    body = [f"model: {scalar(got.model.name)}", f"gpus: {gpus}", "layers:"] + [f"  - {scalar(r)}" for r in ranges]
    return "\n".join(yaml_comments(comments) + [""] + body) + "\n"
