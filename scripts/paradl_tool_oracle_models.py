"""Write oracle's shipped ParaDL models as ParaDL's own tool reads them (issue 27), so that the
tool itself can be run on the very inputs the `paradl` stack costs: one `.net` file per model
(the layer table of oracle/compute/paradl/paradl_stack.tool_layers, the profile's per-sample time in
the first layer's time column, the dataset size), the layer configurations the stack uses
(`NAME_filter.lc`: filter, channel, data+filter; `NAME_spatial.lc`: spatial, data+spatial) and
a platform file with the system's GPU memory and GPUs per node. Then prints, one per line, the
tool runs to make (model file, layer configuration, --cmaxB, --cBon, --paratype).

    usage: python scripts/paradl_tool_oracle_models.py OUT_DIR   (scripts/paradl_tool_oracle_reference.sh)
"""

from __future__ import annotations

import sys
from pathlib import Path

from oracle import api
from oracle.compute.context import Context
from oracle.compute.conversion import prepare
from oracle.compute.paradl.paradl_stack import split_mask, tool_layers
from oracle.compute.strategies.filter import Filter
from oracle.compute.strategies.spatial import Spatial

SYSTEM = "abci-nominal"
# model, profile, --cmaxB, --cBon: the batch options of ParaDL's scripts (CosmoFlow: 1 sample per GPU)
MODELS = (("alexnet", "alexnet_v100", 2000000, 512), ("vgg16", "vgg16_v100", 262144, 32),
          ("resnet50", "resnet50_v100", 262144, 64), ("cosmoflow", "cosmoflow_v100", 2000000, 1))  # fmt: skip


def _dims(shape) -> str:
    return "x".join(str(int(d)) for d in shape) or "0"


def write(out: Path, model: str, profile: str) -> Context:
    req = api.request(f"models/{model}.yaml", SYSTEM, f"profiles/{profile}.yaml", stack="paradl", batch_per_gpu=1)
    times, _ = prepare(req.model, req.system, req.profile, req.run.options)
    ctx = Context(req.model, req.system, times, req.run.options, req.profile.kind)
    lines = [f"Dataset|{req.model.dataset_name or model}", f"Input|{int(ctx.D)}x{_dims(req.model.input_shape)}",
             f"Model|{req.model.name}"]  # fmt: skip
    layers = tool_layers(ctx)
    for n, (_, kind, x, w, y) in enumerate(layers):
        lines.append(f"{kind or 'OTHER'}|{_dims(x)}|{_dims(w)}|{_dims(y)}|{ctx.sum_fb if n == 0 else 0!r}")
    (out / f"{model}.net").write_text("\n".join(lines) + "\n")
    for strategy, suffix in ((Filter.name, "filter"), (Spatial.name, "spatial")):
        mask = split_mask(ctx, strategy)
        flags = [f"{kind or 'OTHER'}|{int(mask[i])}" for i, kind, *_ in layers]
        (out / f"{model}_{suffix}.lc").write_text("\n".join(flags) + "\n")
    gpu = req.system
    (out / "oracle.plat").write_text(f"MEM_PER_NODE|{gpu.gpu_memory_bytes!r}|Bytes\nNODE_SPEED|7.8E12|FLOPS\n"
                                     f"BANDWIDTH|12.5E9|Bps\nLATENCY|500E-9|second\nMAX_NODE|4096|GPUs\n"
                                     f"GPU_PER_NODE|{gpu.gpus_per_node}|GPUs\n")  # fmt: skip
    return ctx


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for model, profile, max_batch, per_gpu in MODELS:
        write(out, model, profile)
        print(f"{model}.net - {max_batch} {per_gpu} o,d")
        for kind in ("f", "c", "df"):
            print(f"{model}.net {model}_filter.lc {max_batch} {per_gpu} {kind}")
        for kind in ("s", "ds"):
            print(f"{model}.net {model}_spatial.lc {max_batch} {per_gpu} {kind}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
