"""``oracle import-system FILE.plat``: a ParaDL platform file as an oracle system file.

What the file says, and nothing more: one GPU's memory (MEM_PER_NODE: ParaDL's node is
a GPU) and speed (NODE_SPEED, oracle's fp32 peak), GPU_PER_NODE, the nodes MAX_NODE GPUs
make, and one network level over all of them with α = LATENCY and 1/β = BANDWIDTH, a
ring all-reduce as ParaDL's cost model has it.  ParaDL's tool reads BANDWIDTH and
LATENCY (tool lines 1163-1172, 194-195) but no analysis uses them: they take α and β
from constants of ABCI's hierarchy written in its code (tool lines 1005-1021, through
``get_network_factor``, lines 1048-1101); oracle's ``abci-nominal`` and ``abci`` systems
describe that hierarchy."""

from __future__ import annotations

from pathlib import Path

import yaml

from oracle import __version__
from oracle.errors import OracleError
from oracle.importer.write import scalar, yaml_float
from oracle.load.paradl import ParadlPlatform, read_paradl_plat
from oracle.load.system import parse_system
from oracle.textsafe import yaml_comments


def _source(plat: ParadlPlatform, key: str) -> str:
    return f"ParaDL platform file {Path(plat.file).name} line {plat.lines[key]} ({key})"


def system_text(path: str, name: str | None = None) -> str:
    """The text of a checked oracle system file for the ParaDL platform file ``path``."""
    plat = read_paradl_plat(path)
    stem = Path(path).stem
    name = name or f"{stem} (ParaDL platform file)"
    nodes = -(-plat.max_node_gpus // plat.gpu_per_node)
    body = [
        f"name: {scalar(name)}",
        f"use_for: {scalar('a ParaDL user' + chr(39) + 's platform file as it is: one flat network level, as the file gives it')}",
        f"source: {scalar(f'ParaDL platform file {Path(path).name} (parallel_analysis.py -plat input)')}",
        "gpu:",
        f"  model: {scalar(f'{stem} GPU (ParaDL platform)')}",
        f"  memory_GB: {yaml_float(plat.mem_per_node_bytes / 1e9)}",
        f"  peak_TFLOPS: {{fp32: {yaml_float(plat.node_speed_flops / 1e12)}}}",
        f"  source: {scalar(_source(plat, 'MEM_PER_NODE') + '; ' + _source(plat, 'NODE_SPEED'))}",
        f"gpus_per_node: {plat.gpu_per_node}",
        f"nodes: {nodes}",
        "network:",
        "  - name: network",
        f"    max_gpus: {nodes * plat.gpu_per_node}",
        "    basis: nominal",
        f"    alpha_s: {yaml_float(plat.latency_s)}",
        f"    bandwidth_GB_per_s: {yaml_float(plat.bandwidth_Bps / 1e9)}",
        f"    source: {scalar(_source(plat, 'LATENCY') + '; ' + _source(plat, 'BANDWIDTH'))}",
    ]
    header = [
        f"Imported by `oracle import-system {Path(path).name}` (oracle {__version__}) from ParaDL's platform file.",
        f"nodes = MAX_NODE {plat.max_node_gpus} GPUs / GPU_PER_NODE {plat.gpu_per_node}"
        + (" (rounded up)" if nodes * plat.gpu_per_node != plat.max_node_gpus else "") + ".",
        "One network level for every span: ParaDL's analyses use its code's ABCI constants instead",
        "(oracle/importer/paradl_system.py); edit the levels to describe your machine's hierarchy.",
    ]
    text = "\n".join(yaml_comments(header) + [""] + body) + "\n"
    try:
        parse_system(yaml.safe_load(text), plat.file)  # the text as oracle will read it
    except OracleError as exc:
        raise OracleError(f"does not make a valid system: {exc.path}: {exc.message}", file=plat.file) from None
    return text
