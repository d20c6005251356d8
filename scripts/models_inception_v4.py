"""Inception-v4 for the model generator (scripts/generate_models.py).

Szegedy, Ioffe, Vanhoucke, Alemi, "Inception-v4, Inception-ResNet and the Impact of
Residual Connections on Learning", AAAI 2017 (arXiv:1602.07261): the stem of figure 3,
4 Inception-A (figure 4), Reduction-A (figure 7 with k, l, m, n = 192, 224, 256, 384),
7 Inception-B (figure 5), Reduction-B (figure 8), 3 Inception-C (figure 6), then average
pooling, dropout and the 1000-way classifier.  Every convolution is a BasicConv2d (conv
without bias, batchnorm, relu), as in the TF-slim model the paper's authors released
(tensorflow/models research/slim/nets/inception_v4.py), which tf_cnn_benchmarks'
'inception4' and timm's 'inception_v4' follow.
"""

from __future__ import annotations

from model_dicts import IMAGENET, fc, simple
from models_inception import _avg_pool_branch, _basic, _branches

ROW, COL = ([1, 7], 1, [0, 3]), ([7, 1], 1, [3, 0])  # (kernel, stride, padding) of a 1x7 and a 7x1 conv
ROW3, COL3 = ([1, 3], 1, [0, 1]), ([3, 1], 1, [1, 0])  # of a 1x3 and a 3x1 conv


def _concat(name, layers, outs):
    return layers + [simple(name, "concat", inputs=outs)], name


def _stem() -> tuple[list[dict], str]:
    """Figure 3: 299x299x3 -> 35x35x384 (V: valid padding, the rest same)."""
    layers = []
    for name, filters, kernel, stride, padding in (
        ("conv1_3x3", 32, 3, 2, 0), ("conv2_3x3", 32, 3, 1, 0), ("conv3_3x3", 64, 3, 1, 1),
    ):  # fmt: skip
        more, x = _basic(name, filters, kernel, stride, padding)
        layers += more
    # Mixed_3a: 3x3/2 max pool beside a 3x3/2 conv of 96 (73x73x160)
    pool_3a = simple("Mixed_3a_pool", "maxpool", inputs=[x], kernel=3, stride=2)
    more, conv_3a = _basic("Mixed_3a_conv", 96, 3, 2, 0, inputs=[x])
    x_layers, x = _concat("Mixed_3a", [pool_3a, *more], ["Mixed_3a_pool", conv_3a])
    layers += x_layers
    # Mixed_4a: two conv chains ending in a valid 3x3 of 96 (71x71x192)
    more, outs = _branches("Mixed_4a", x, (
        [("branch0_1x1", 64, 1, 1, 0), ("branch0_3x3", 96, 3, 1, 0)],
        [("branch1_1x1", 64, 1, 1, 0), ("branch1_1x7", 64, *ROW), ("branch1_7x1", 64, *COL),
         ("branch1_3x3", 96, 3, 1, 0)],
    ))  # fmt: skip
    x_layers, x = _concat("Mixed_4a", more, outs)
    layers += x_layers
    # Mixed_5a: a 3x3/2 conv of 192 beside a 3x3/2 max pool (35x35x384)
    more, conv_5a = _basic("Mixed_5a_conv", 192, 3, 2, 0, inputs=[x])
    pool_5a = simple("Mixed_5a_pool", "maxpool", inputs=[x], kernel=3, stride=2)
    x_layers, x = _concat("Mixed_5a", [*more, pool_5a], [conv_5a, "Mixed_5a_pool"])
    return layers + x_layers, x


def _inception_a(name, x):
    """Figure 4 (35x35x384)."""
    layers, outs = _branches(name, x, (
        [("branch0_1x1", 96, 1, 1, 0)],
        [("branch1_1x1", 64, 1, 1, 0), ("branch1_3x3", 96, 3, 1, 1)],
        [("branch2_1x1", 64, 1, 1, 0), ("branch2_3x3a", 96, 3, 1, 1), ("branch2_3x3b", 96, 3, 1, 1)],
    ))  # fmt: skip
    more, out = _avg_pool_branch(name, x, 96)
    return _concat(name, layers + more, [*outs, out])


def _reduction_a(name, x):
    """Figure 7, k, l, m, n = 192, 224, 256, 384 (35x35x384 -> 17x17x1024)."""
    layers, outs = _branches(name, x, (
        [("branch0_3x3", 384, 3, 2, 0)],
        [("branch1_1x1", 192, 1, 1, 0), ("branch1_3x3a", 224, 3, 1, 1), ("branch1_3x3b", 256, 3, 2, 0)],
    ))  # fmt: skip
    layers.append(simple(f"{name}_branch2_pool", "maxpool", inputs=[x], kernel=3, stride=2))
    return _concat(name, layers, [*outs, f"{name}_branch2_pool"])


def _inception_b(name, x):
    """Figure 5 (17x17x1024)."""
    layers, outs = _branches(name, x, (
        [("branch0_1x1", 384, 1, 1, 0)],
        [("branch1_1x1", 192, 1, 1, 0), ("branch1_1x7", 224, *ROW), ("branch1_7x1", 256, *COL)],
        [("branch2_1x1", 192, 1, 1, 0), ("branch2_7x1a", 192, *COL), ("branch2_1x7a", 224, *ROW),
         ("branch2_7x1b", 224, *COL), ("branch2_1x7b", 256, *ROW)],
    ))  # fmt: skip
    more, out = _avg_pool_branch(name, x, 128)
    return _concat(name, layers + more, [*outs, out])


def _reduction_b(name, x):
    """Figure 8 (17x17x1024 -> 8x8x1536)."""
    layers, outs = _branches(name, x, (
        [("branch0_1x1", 192, 1, 1, 0), ("branch0_3x3", 192, 3, 2, 0)],
        [("branch1_1x1", 256, 1, 1, 0), ("branch1_1x7", 256, *ROW), ("branch1_7x1", 320, *COL),
         ("branch1_3x3", 320, 3, 2, 0)],
    ))  # fmt: skip
    layers.append(simple(f"{name}_branch2_pool", "maxpool", inputs=[x], kernel=3, stride=2))
    return _concat(name, layers, [*outs, f"{name}_branch2_pool"])


def _fork(name, trunk):
    """A 1x3 and a 3x1 conv of 256 reading ``trunk``, concatenated (figure 6)."""
    a, a_out = _basic(f"{name}a", 256, *ROW3, inputs=[trunk])
    b, b_out = _basic(f"{name}b", 256, *COL3, inputs=[trunk])
    return a + b + [simple(name, "concat", inputs=[a_out, b_out])], name


def _inception_c(name, x):
    """Figure 6 (8x8x1536): two of the branches fork into a 1x3 and a 3x1 conv."""
    layers, (b0, t1, t2) = _branches(name, x, (
        [("branch0_1x1", 256, 1, 1, 0)],
        [("branch1_1x1", 384, 1, 1, 0)],
        [("branch2_1x1", 384, 1, 1, 0), ("branch2_3x1", 448, *COL3), ("branch2_1x3", 512, *ROW3)],
    ))  # fmt: skip
    outs = [b0]
    for branch, trunk in (("branch1", t1), ("branch2", t2)):
        more, out = _fork(f"{name}_{branch}_fork", trunk)
        layers += more
        outs.append(out)
    more, out = _avg_pool_branch(name, x, 256)
    return _concat(name, layers + more, [*outs, out])


BLOCKS = (
    [(f"Inception_A{i}", _inception_a) for i in range(1, 5)] + [("Reduction_A", _reduction_a)]
    + [(f"Inception_B{i}", _inception_b) for i in range(1, 8)] + [("Reduction_B", _reduction_b)]
    + [(f"Inception_C{i}", _inception_c) for i in range(1, 4)]
)  # fmt: skip


def inception_v4() -> dict:
    layers, x = _stem()
    for name, block in BLOCKS:
        more, x = block(name, x)
        layers += more
    layers += [simple("avgpool", "globalavgpool"), simple("dropout", "dropout", rate=0.2),
               simple("flatten", "flatten"), fc("fc", 1000)]  # fmt: skip
    return {
        "file": "inception_v4",
        "header": [
            "Inception-v4, 299x299 input.",
            "Source: Szegedy, Ioffe, Vanhoucke, Alemi, 'Inception-v4, Inception-ResNet and the",
            "Impact of Residual Connections on Learning', AAAI 2017 (arXiv:1602.07261), figures",
            "3-9: stem, 4 x Inception-A, Reduction-A (k, l, m, n = 192, 224, 256, 384),",
            "7 x Inception-B, Reduction-B, 3 x Inception-C, average pooling, dropout (keep 0.8),",
            "softmax over 1000 classes.",
            "Choices:",
            "- Every conv is a BasicConv2d as in the authors' TF-slim model (research/slim/nets/",
            "  inception_v4.py), which tf_cnn_benchmarks' inception4 and timm's inception_v4",
            "  follow: conv without bias + batchnorm + relu (names NAME, NAME_bn, NAME_relu).",
            "- Factorised 7x7s in the slim order (Inception-B: 1x7 then 7x1; the paper's figure",
            "  draws some the other way round: the same parameters and FLOPs).",
            "- Average-pool branches: 3x3, stride 1, padding 1 (NAME_branch_pool_avg) then a",
            "  1x1 BasicConv2d; reductions: 3x3/2 max pools without padding.",
            "- No auxiliary classifier (the released model has none).",
            "Parameters: 42,679,816 (timm's inception_v4 built in PyTorch: 42,679,816).",
        ],
        "doc": {
            "name": "Inception-v4",
            "input": [3, 299, 299],
            "dataset": IMAGENET,
            "source": "Szegedy et al., AAAI 2017 (arXiv:1602.07261), as the authors' TF-slim inception_v4",
            "description": "Inception-v4, ImageNet-1k classification at 299x299",
            "layers": layers,
        },
    }

