"""Measure what PyTorch saves for the backward pass of torchvision's models.

For each model: one training-mode forward pass of a random batch under
``torch.autograd.graph.saved_tensors_hooks``; the unique storages saved (parameters and
buffers excluded) are summed and divided by the batch.  These are the reference figures
of ``tests/test_memory_model.py`` (``TORCHVISION_SAVED_BYTES``), produced with

    python scripts/measure_saved_tensors.py --batch 4 resnet50 resnet152 vgg16 alexnet inception_v3

on torch 2.14.1 / torchvision 0.29.1 (CPU).  Models are built without weights
(``weights=None``): nothing is downloaded.  Inception-v3 without its auxiliary head
(``aux_logits=False``), as ``models/inception_v3.yaml``; its input is 3x299x299.
"""

from __future__ import annotations

import argparse
import sys

INPUTS = {"inception_v3": (3, 299, 299)}


def saved_bytes_per_sample(name: str, batch: int) -> float:
    import torch
    from torchvision import models

    from oracle.profiling.saved import saved_storages

    kwargs: dict = {"weights": None}
    if name == "inception_v3":
        kwargs.update(aux_logits=False, init_weights=False)
    net = getattr(models, name)(**kwargs)
    net.train()
    x = torch.randn(batch, *INPUTS.get(name, (3, 224, 224)))
    saved = saved_storages(torch, net, lambda: net(x))
    return sum(nbytes for _, nbytes in saved) / batch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--batch", type=int, default=4)
    args = parser.parse_args(argv)
    for name in args.models:
        print(f"{name}: {saved_bytes_per_sample(name, args.batch):.0f} bytes per sample")
    return 0


if __name__ == "__main__":
    sys.exit(main())
