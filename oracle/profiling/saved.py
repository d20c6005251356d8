"""Measure the bytes each layer saves for the backward pass (``oracle profile``).

One training forward pass runs under ``torch.autograd.graph.saved_tensors_hooks``;
every tensor autograd saves is recorded by its storage, so a tensor saved by several
operations counts once, and parameters (with buffers) are left out — they are the
weights of the memory model.  Each storage is charged to the layer that produced it
(the model's input to its first reader), like the rules of ``compute/memory.py``;
storages that are no layer's output (a dropout mask, max-pool indices) to the layer
that saved them.  The result is per sample, at the dtype of the network (fp32).

The same counting on torchvision's own modules gives the reference figures of
``tests/test_memory_model.py`` (``scripts/measure_saved_tensors.py``).
"""

from __future__ import annotations

from oracle.model import MODEL_INPUT


def storage_key(tensor) -> tuple[int, int]:
    st = tensor.untyped_storage()
    return (st.data_ptr(), st.nbytes())


def saved_storages(torch, module, run, on_save=None) -> dict[tuple[int, int], int]:
    """The storages ``run()`` saves for the backward (not ``module``'s parameters or
    buffers), each with the order in which it was first saved; ``on_save(key)`` is
    called the first time each one is saved."""
    own = {storage_key(t) for t in list(module.parameters()) + list(module.buffers())}
    seen: dict[tuple[int, int], int] = {}

    def pack(t):
        key = storage_key(t)
        if key not in own and key not in seen:
            seen[key] = len(seen)
            if on_save is not None:
                on_save(key)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()
    return seen


def saved_bytes_per_layer(torch, net, x) -> list[float]:
    """Bytes per sample each layer of an :class:`~oracle.profiling.torchnet.OracleNet`
    saves for the backward, for the batch ``x``."""
    batch = x.shape[0]
    producer: dict[tuple[int, int], int] = {}
    saver: dict[tuple[int, int], int] = {}
    current = [0]
    outputs: dict[str, object] = {MODEL_INPUT: x}

    def run() -> None:
        for i, (module, name, srcs) in enumerate(zip(net.layers, net.names, net.sources)):
            current[0] = i
            if MODEL_INPUT in srcs:
                producer.setdefault(storage_key(x), i)
            out = module(*(outputs[s] for s in srcs))
            outputs[name] = out
            producer.setdefault(storage_key(out), i)

    def on_save(key) -> None:
        saver[key] = current[0]

    saved = saved_storages(torch, net, run, on_save)
    per_layer = [0.0] * len(net.names)
    for key in saved:
        per_layer[producer.get(key, saver[key])] += key[1] / batch
    return per_layer
