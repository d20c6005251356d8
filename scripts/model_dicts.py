"""Layer constructors of the model generator (scripts/generate_models.py): plain dicts
whose key order is the order written to the file."""

from __future__ import annotations

IMAGENET = {"name": "ImageNet-1k", "samples": 1281167}
IMAGENET_INPUT = [3, 224, 224]

# --------------------------------------------------------------------------------------
# Layer constructors (plain dicts; key order is the order written to the file)
# --------------------------------------------------------------------------------------


def conv(name, filters, kernel, stride=1, padding=0, bias=True, inputs=None):
    d = {"name": name, "type": "conv"}
    if inputs is not None:
        d["inputs"] = list(inputs)
    d.update(filters=filters, kernel=kernel, stride=stride, padding=padding)
    if not bias:
        d["bias"] = False
    return d


def fc(name, outputs, bias=True):
    d = {"name": name, "type": "fc", "outputs": outputs}
    if not bias:
        d["bias"] = False
    return d


def pool(name, kind, kernel, stride, padding=0):
    d = {"name": name, "type": kind, "kernel": kernel, "stride": stride}
    if padding:
        d["padding"] = padding
    return d


def simple(name, kind, inputs=None, **kw):
    d = {"name": name, "type": kind}
    if inputs is not None:
        d["inputs"] = list(inputs)
    d.update(kw)
    return d
