"""The branching ImageNet models of the model generator (scripts/generate_models.py):
GoogLeNet as soumith/convnet-benchmarks times it and torchvision's Inception-v3."""

from __future__ import annotations

from model_dicts import IMAGENET, IMAGENET_INPUT, conv, fc, pool, simple

# --------------------------------------------------------------------------------------
# GoogLeNet (Inception-v1), as soumith/convnet-benchmarks times it
# --------------------------------------------------------------------------------------

# (name, 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj): Szegedy et al. 2015, table 1
GOOGLENET_BLOCKS = (
    ("inception_3a", 64, 96, 128, 16, 32, 32), ("inception_3b", 128, 128, 192, 32, 96, 64), "pool3",
    ("inception_4a", 192, 96, 208, 16, 48, 64), ("inception_4b", 160, 112, 224, 24, 64, 64),
    ("inception_4c", 128, 128, 256, 24, 64, 64), ("inception_4d", 112, 144, 288, 32, 64, 64),
    ("inception_4e", 256, 160, 320, 32, 128, 128), "pool4",
    ("inception_5a", 256, 160, 320, 32, 128, 128), ("inception_5b", 384, 192, 384, 48, 128, 128),
)  # fmt: skip


def _conv_relu(name, filters, kernel, stride=1, padding=0, inputs=None):
    return [conv(name, filters, kernel, stride=stride, padding=padding, inputs=inputs), simple(f"{name}_relu", "relu")]


def _inception_v1(block, x) -> list[dict]:
    """Four branches of conv + relu (biased, no batch norm) reading ``x``, concatenated."""
    name, b1, r3, b3, r5, b5, proj = block
    layers = _conv_relu(f"{name}_1x1", b1, 1, inputs=[x])
    layers += _conv_relu(f"{name}_3x3_reduce", r3, 1, inputs=[x]) + _conv_relu(f"{name}_3x3", b3, 3, padding=1)
    layers += _conv_relu(f"{name}_5x5_reduce", r5, 1, inputs=[x]) + _conv_relu(f"{name}_5x5", b5, 5, padding=2)
    layers.append(simple(f"{name}_pool", "maxpool", inputs=[x], kernel=3, stride=1, padding=1))
    layers += _conv_relu(f"{name}_pool_proj", proj, 1)
    outs = [f"{name}_{b}_relu" for b in ("1x1", "3x3", "5x5", "pool_proj")]
    return layers + [simple(name, "concat", inputs=outs)]


def googlenet() -> dict:
    layers = [*_conv_relu("conv1", 64, 7, stride=2, padding=3), pool("pool1", "maxpool", 3, 2, padding=1)]
    layers += [*_conv_relu("conv2_reduce", 64, 1), *_conv_relu("conv2", 192, 3, padding=1),
               pool("pool2", "maxpool", 3, 2, padding=1)]  # fmt: skip
    prev = "pool2"
    for block in GOOGLENET_BLOCKS:
        if isinstance(block, str):
            layers.append(pool(block, "maxpool", 3, 2, padding=1))
        else:
            layers += _inception_v1(block, prev)
        prev = layers[-1]["name"]  # the pool's or the concat's
    layers += [simple("pool5", "globalavgpool"), simple("flatten", "flatten"), fc("fc", 1000)]
    return {
        "file": "googlenet",
        "header": [
            "GoogLeNet (Inception-v1) as soumith/convnet-benchmarks times it",
            "(torch7/imagenet_winners/googlenet.lua @b458aab), 224x224 input.",
            "Source: Szegedy et al., 'Going Deeper with Convolutions', CVPR 2015",
            "(arXiv:1409.4842), table 1 (the widths of every inception module).",
            "Choices:",
            "- As the benchmark: biased convs each followed by relu, no local response",
            "  normalisation ('LRN (not added for now)'), no auxiliary classifiers, no dropout;",
            "  3x3/2 max pools with padding 1; the 7x7 average pool is the global one at 224x224.",
            "  torchvision's googlenet differs (batch norm, 3x3 in place of 5x5).",
            "- The benchmark's relu after the final fc is left out (1,000 elements).",
            "- Layer names follow BVLC's bvlc_googlenet prototxt (inception_3a_1x1, ...).",
            "Parameters: 6,998,552 (the same layers built in PyTorch: 6,998,552).",
        ],
        "doc": {
            "name": "GoogLeNet",
            "input": IMAGENET_INPUT,
            "dataset": IMAGENET,
            "source": "Szegedy et al., CVPR 2015 (Inception-v1), as soumith/convnet-benchmarks' googlenet.lua",
            "description": "GoogLeNet (Inception-v1) without LRN or auxiliary heads, ImageNet-1k at 224x224",
            "layers": layers,
        },
    }


# --------------------------------------------------------------------------------------
# Inception-v3 (a DAG with concat; used by the layer-wise search, issue 8)
# --------------------------------------------------------------------------------------


def _basic(name, filters, kernel, stride=1, padding=0, inputs=None):
    """torchvision's BasicConv2d: conv (no bias) + batchnorm + relu; returns the layers
    and the name of the relu (the block's output)."""
    return [
        conv(name, filters, kernel, stride=stride, padding=padding, bias=False, inputs=inputs),
        simple(f"{name}_bn", "batchnorm"),
        simple(f"{name}_relu", "relu"),
    ], f"{name}_relu"


def _branch(prefix, x, specs):
    """A chain of BasicConv2d reading ``x``: specs are (suffix, filters, kernel, stride,
    padding).  Returns (layers, output name)."""
    layers, prev = [], x
    for i, (suffix, filters, kernel, stride, padding) in enumerate(specs):
        more, prev = _basic(
            f"{prefix}_{suffix}", filters, kernel, stride, padding, inputs=[x] if i == 0 else None
        )
        layers += more
    return layers, prev


def _avg_pool_branch(prefix, x, filters):
    """branch_pool of InceptionA/C/E: avg_pool2d(3, stride 1, padding 1) + 1x1 BasicConv2d."""
    layers = [
        simple(f"{prefix}_branch_pool_avg", "avgpool", inputs=[x], kernel=3, stride=1, padding=1)
    ]
    more, out = _basic(f"{prefix}_branch_pool", filters, 1)
    return layers + more, out


def _branches(name, x, branch_specs):
    """Several :func:`_branch` chains reading ``x``: their layers and output names."""
    layers, outs = [], []
    for specs in branch_specs:
        more, out = _branch(name, x, specs)
        layers += more
        outs.append(out)
    return layers, outs


def _inception_a(name, x, pool_features):
    layers, outs = _branches(name, x, (
        [("branch1x1", 64, 1, 1, 0)],
        [("branch5x5_1", 48, 1, 1, 0), ("branch5x5_2", 64, 5, 1, 2)],
        [
            ("branch3x3dbl_1", 64, 1, 1, 0),
            ("branch3x3dbl_2", 96, 3, 1, 1),
            ("branch3x3dbl_3", 96, 3, 1, 1),
        ],
    ))
    more, out = _avg_pool_branch(name, x, pool_features)
    layers += more
    outs.append(out)
    return layers + [simple(name, "concat", inputs=outs)], name


def _inception_b(name, x):
    layers, outs = _branches(name, x, (
        [("branch3x3", 384, 3, 2, 0)],
        [
            ("branch3x3dbl_1", 64, 1, 1, 0),
            ("branch3x3dbl_2", 96, 3, 1, 1),
            ("branch3x3dbl_3", 96, 3, 2, 0),
        ],
    ))
    layers.append(simple(f"{name}_branch_pool", "maxpool", inputs=[x], kernel=3, stride=2))
    outs.append(f"{name}_branch_pool")
    return layers + [simple(name, "concat", inputs=outs)], name


def _inception_c(name, x, c7):
    row, col = ([1, 7], [0, 3]), ([7, 1], [3, 0])  # (kernel, padding) of 1x7 and 7x1
    layers, outs = [], []
    for specs in (
        [("branch1x1", 192, 1, 1, 0)],
        [("branch7x7_1", c7, 1, 1, 0), ("branch7x7_2", c7, row[0], 1, row[1]),
         ("branch7x7_3", 192, col[0], 1, col[1])],
        [("branch7x7dbl_1", c7, 1, 1, 0), ("branch7x7dbl_2", c7, col[0], 1, col[1]),
         ("branch7x7dbl_3", c7, row[0], 1, row[1]), ("branch7x7dbl_4", c7, col[0], 1, col[1]),
         ("branch7x7dbl_5", 192, row[0], 1, row[1])],
    ):  # fmt: skip
        more, out = _branch(name, x, specs)
        layers += more
        outs.append(out)
    more, out = _avg_pool_branch(name, x, 192)
    layers += more
    outs.append(out)
    return layers + [simple(name, "concat", inputs=outs)], name


def _inception_d(name, x):
    layers, outs = [], []
    for specs in (
        [("branch3x3_1", 192, 1, 1, 0), ("branch3x3_2", 320, 3, 2, 0)],
        [("branch7x7x3_1", 192, 1, 1, 0), ("branch7x7x3_2", 192, [1, 7], 1, [0, 3]),
         ("branch7x7x3_3", 192, [7, 1], 1, [3, 0]), ("branch7x7x3_4", 192, 3, 2, 0)],
    ):  # fmt: skip
        more, out = _branch(name, x, specs)
        layers += more
        outs.append(out)
    layers.append(simple(f"{name}_branch_pool", "maxpool", inputs=[x], kernel=3, stride=2))
    outs.append(f"{name}_branch_pool")
    return layers + [simple(name, "concat", inputs=outs)], name


def _inception_e(name, x):
    layers, outs = [], []
    more, out = _branch(name, x, [("branch1x1", 320, 1, 1, 0)])
    layers += more
    outs.append(out)
    # two branches that each fork into a 1x3 and a 3x1 conv, concatenated
    for stem, split in (
        ([("branch3x3_1", 384, 1, 1, 0)], "branch3x3_2"),
        ([("branch3x3dbl_1", 448, 1, 1, 0), ("branch3x3dbl_2", 384, 3, 1, 1)], "branch3x3dbl_3"),
    ):
        more, trunk = _branch(name, x, stem)
        layers += more
        a, a_out = _basic(f"{name}_{split}a", 384, [1, 3], 1, [0, 1], inputs=[trunk])
        b, b_out = _basic(f"{name}_{split}b", 384, [3, 1], 1, [1, 0], inputs=[trunk])
        joined = f"{name}_{split.rsplit('_', 1)[0]}"
        layers += a + b + [simple(joined, "concat", inputs=[a_out, b_out])]
        outs.append(joined)
    more, out = _avg_pool_branch(name, x, 192)
    layers += more
    outs.append(out)
    return layers + [simple(name, "concat", inputs=outs)], name


def inception_v3() -> dict:
    """torchvision.models.inception_v3 (aux_logits=False) at 299x299."""
    layers: list[dict] = []
    prev = None
    for name, filters, kernel, stride, padding in (
        ("Conv2d_1a_3x3", 32, 3, 2, 0),
        ("Conv2d_2a_3x3", 32, 3, 1, 0),
        ("Conv2d_2b_3x3", 64, 3, 1, 1),
    ):
        more, prev = _basic(name, filters, kernel, stride, padding)
        layers += more
    layers.append(pool("maxpool1", "maxpool", 3, 2))
    for name, filters, kernel in (("Conv2d_3b_1x1", 80, 1), ("Conv2d_4a_3x3", 192, 3)):
        more, prev = _basic(name, filters, kernel)
        layers += more
    layers.append(pool("maxpool2", "maxpool", 3, 2))
    x = "maxpool2"
    for name, builder in (
        ("Mixed_5b", lambda n, i: _inception_a(n, i, 32)),
        ("Mixed_5c", lambda n, i: _inception_a(n, i, 64)),
        ("Mixed_5d", lambda n, i: _inception_a(n, i, 64)),
        ("Mixed_6a", _inception_b),
        ("Mixed_6b", lambda n, i: _inception_c(n, i, 128)),
        ("Mixed_6c", lambda n, i: _inception_c(n, i, 160)),
        ("Mixed_6d", lambda n, i: _inception_c(n, i, 160)),
        ("Mixed_6e", lambda n, i: _inception_c(n, i, 192)),
        ("Mixed_7a", _inception_d),
        ("Mixed_7b", _inception_e),
        ("Mixed_7c", _inception_e),
    ):
        more, x = builder(name, x)
        layers += more
    layers += [
        simple("avgpool", "globalavgpool"),
        simple("dropout", "dropout"),
        simple("flatten", "flatten"),
        fc("fc", 1000),
    ]
    return {
        "file": "inception_v3",
        "header": [
            "Inception-v3 as defined by torchvision (torchvision.models.inception_v3) with",
            "aux_logits=False, 299x299 input.",
            "Source: Szegedy, Vanhoucke, Ioffe, Shlens, Wojna, 'Rethinking the Inception",
            "Architecture for Computer Vision', CVPR 2016 (arXiv:1512.00567); layer list of",
            "torchvision's implementation (Mixed_5b..Mixed_7c = InceptionA x3, B, C x4, D, E x2).",
            "Choices:",
            "- Every BasicConv2d is a conv without bias + batchnorm + relu (names NAME, NAME_bn,",
            "  NAME_relu); batchnorm eps and transform_input do not change shapes or costs.",
            "- Branches read the block input through `inputs:`; a block ends in a `concat`",
            "  named after the block (Mixed_5b, ...); InceptionE's forked 1x3/3x1 pairs are",
            "  concatenated first (Mixed_7b_branch3x3, Mixed_7b_branch3x3dbl).",
            "- branch_pool of InceptionA/C/E: avg_pool2d(3, stride 1, padding 1) (the layer",
            "  NAME_branch_pool_avg) then a 1x1 BasicConv2d; InceptionB/D: max_pool2d(3, 2).",
            "- The auxiliary classifier (AuxLogits, 3,326,696 parameters) is left out:",
            "  torchvision counts 27,161,264 parameters with it, 23,834,568 without.",
            "- Head: global average pool, dropout, flatten, fc 2048 -> 1000.",
            "Parameters: 23,834,568.",
        ],
        "doc": {
            "name": "Inception-v3",
            "input": [3, 299, 299],
            "dataset": IMAGENET,
            "source": "torchvision.models.inception_v3, aux_logits=False (Szegedy et al., CVPR 2016)",
            "description": "Inception-v3, ImageNet-1k classification at 299x299",
            "layers": layers,
        },
    }
