#!/usr/bin/env python3
"""Generate the shipped model library (``models/*.yaml``, docs/model-format.md).

Run from anywhere::

    python scripts/generate_models.py              # writes into models/ of this checkout
    python scripts/generate_models.py --out DIR    # writes into DIR instead

The output is deterministic: re-running the script rewrites byte-identical files
(tests/test_model_library.py checks this).  The script does not import ``oracle``; it
only writes text.  Edit the architectures here, never the generated YAML by hand.

Conventions of the generated files:
- one flow-style mapping per layer, e.g.
  ``- {name: conv1, type: conv, filters: 64, kernel: 7, stride: 2, padding: 3, bias: false}``;
- conv and fc layers have a bias unless ``bias: false`` is written;
- a layer's input is the previous layer's output unless ``inputs:`` is given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from model_dicts import IMAGENET, IMAGENET_INPUT, conv, fc, pool, simple
from models_inception import googlenet, inception_v3
from models_inception_v4 import inception_v4
from models_resnet import resnet, resnet50_v1, resnet_basic

from oracle.importer import write

SCRIPT = "scripts/generate_models.py"
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "models"

# --------------------------------------------------------------------------------------
# Architectures
# --------------------------------------------------------------------------------------


def alexnet() -> dict:
    layers = [
        conv("conv1", 64, 11, stride=4, padding=2),
        simple("relu1", "relu"),
        pool("pool1", "maxpool", 3, 2),
        conv("conv2", 192, 5, padding=2),
        simple("relu2", "relu"),
        pool("pool2", "maxpool", 3, 2),
        conv("conv3", 384, 3, padding=1),
        simple("relu3", "relu"),
        conv("conv4", 256, 3, padding=1),
        simple("relu4", "relu"),
        conv("conv5", 256, 3, padding=1),
        simple("relu5", "relu"),
        pool("pool5", "maxpool", 3, 2),
        simple("flatten", "flatten"),
        simple("drop6", "dropout", rate=0.5),
        fc("fc6", 4096),
        simple("relu6", "relu"),
        simple("drop7", "dropout", rate=0.5),
        fc("fc7", 4096),
        simple("relu7", "relu"),
        fc("fc8", 1000),
    ]
    return {
        "file": "alexnet",
        "header": [
            "AlexNet as defined by torchvision (torchvision.models.alexnet), 224x224 input.",
            "Source: Krizhevsky, Sutskever, Hinton, NeurIPS 2012 (one-GPU variant of",
            "Krizhevsky, arXiv:1404.5997, as implemented in torchvision).",
            "Choices:",
            "- torchvision's AdaptiveAvgPool2d((6, 6)) is left out: pool5 already outputs",
            "  256x6x6 at 224x224, where that layer is the identity (no parameters, no work).",
            "- Layer names follow the Caffe convention (conv1..conv5, fc6..fc8).",
            "Parameters: 61,100,840 (torchvision: 61,100,840).",
        ],
        "doc": {
            "name": "AlexNet",
            "input": IMAGENET_INPUT,
            "dataset": IMAGENET,
            "source": (
                "torchvision.models.alexnet (Krizhevsky et al., NeurIPS 2012; arXiv:1404.5997)"
            ),
            "description": "AlexNet, torchvision variant, ImageNet-1k classification at 224x224",
            "layers": layers,
        },
    }


def caffe_alexnet(file: str) -> dict:
    """BVLC's AlexNet (``bvlc_alexnet``) or its CaffeNet variant (``caffenet``: each LRN after
    its pool instead of before): 96-256-384-384-256 filters, conv2/4/5 in two groups, 227x227."""
    lrn = {"size": 5, "alpha": 0.0001, "beta": 0.75, "k": 1}
    def block(n, conv_layer, norm):
        pooled = [pool(f"pool{n}", "maxpool", 3, 2)]
        normed = [simple(f"norm{n}", "lrn", **lrn)] if norm else []
        return [conv_layer, simple(f"relu{n}", "relu"), *(normed + pooled if file == "bvlc_alexnet" else pooled + normed)]
    layers = [
        *block(1, conv("conv1", 96, 11, stride=4), True),
        *block(2, dict(conv("conv2", 256, 5, padding=2), groups=2), True),
        conv("conv3", 384, 3, padding=1), simple("relu3", "relu"),
        dict(conv("conv4", 384, 3, padding=1), groups=2), simple("relu4", "relu"),
        *block(5, dict(conv("conv5", 256, 3, padding=1), groups=2), False),
        simple("flatten", "flatten"),
        fc("fc6", 4096), simple("relu6", "relu"), simple("drop6", "dropout", rate=0.5),
        fc("fc7", 4096), simple("relu7", "relu"), simple("drop7", "dropout", rate=0.5),
        fc("fc8", 1000),
    ]  # fmt: skip
    caffenet = file == "caffenet"
    prototxt = f"BVLC/caffe models/{'bvlc_reference_caffenet' if caffenet else 'bvlc_alexnet'}/deploy.prototxt"
    title = "CaffeNet (BVLC reference CaffeNet)" if caffenet else "AlexNet as BVLC Caffe defines it (bvlc_alexnet)"
    return {
        "file": file,
        "header": [
            f"{title}, 227x227 input.",
            f"Source: {prototxt}",
            "(Krizhevsky, Sutskever, Hinton, NeurIPS 2012, trained on one machine: the",
            "two-GPU split kept as two groups in conv2, conv4 and conv5).",
            "Choices:",
            "- LRN across 5 channels, alpha 1e-4, beta 0.75, k 1, "
            + ("after pool1 and pool2 (CaffeNet's order)." if caffenet else "before pool1 and pool2 (the paper's order)."),
            "- Caffe's layer names; dropout after relu6 and relu7 as in the prototxt.",
            "Parameters: 60,965,224 (the prototxt's blobs).",
        ],
        "doc": {
            "name": "CaffeNet" if caffenet else "BVLC AlexNet",
            "input": [3, 227, 227],
            "dataset": IMAGENET,
            "source": f"{prototxt} (Krizhevsky et al., NeurIPS 2012)",
            "description": f"{title}, ImageNet-1k classification at 227x227",
            "layers": layers,
        },
    }


# Simonyan and Zisserman, ICLR 2015, table 1: (width, convolutions) per block
VGG_CONFIGS = {
    11: ("A", [(64, 1), (128, 1), (256, 2), (512, 2), (512, 2)], "132,863,336"),
    16: ("D", [(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)], "138,357,544"),
    19: ("E", [(64, 2), (128, 2), (256, 4), (512, 4), (512, 4)], "143,667,240"),
}


def vgg(depth: int) -> dict:
    letter, cfg, params = VGG_CONFIGS[depth]
    layers = []
    for block, (width, n) in enumerate(cfg, start=1):
        for i in range(1, n + 1):
            layers.append(conv(f"conv{block}_{i}", width, 3, padding=1))
            layers.append(simple(f"relu{block}_{i}", "relu"))
        layers.append(pool(f"pool{block}", "maxpool", 2, 2))
    layers += [
        simple("flatten", "flatten"),
        fc("fc6", 4096),
        simple("relu6", "relu"),
        simple("drop6", "dropout", rate=0.5),
        fc("fc7", 4096),
        simple("relu7", "relu"),
        simple("drop7", "dropout", rate=0.5),
        fc("fc8", 1000),
    ]
    last = f"conv5_{cfg[-1][1]}"
    return {
        "file": f"vgg{depth}",
        "header": [
            f"VGG{depth} (configuration {letter}, no batch norm) as defined by torchvision",
            f"(torchvision.models.vgg{depth}), 224x224 input.",
            f"Source: Simonyan and Zisserman, ICLR 2015 (arXiv:1409.1556), table 1, column {letter}.",
            "Choices:",
            "- torchvision's AdaptiveAvgPool2d((7, 7)) is left out: pool5 already outputs",
            "  512x7x7 at 224x224, where that layer is the identity (no parameters, no work).",
            f"- Layer names follow the Caffe convention (conv1_1..{last}, fc6..fc8).",
            f"Parameters: {params} (torchvision: {params}).",
        ],
        "doc": {
            "name": f"VGG{depth}",
            "input": IMAGENET_INPUT,
            "dataset": IMAGENET,
            "source": f"torchvision.models.vgg{depth} (Simonyan and Zisserman, ICLR 2015, config {letter})",
            "description": f"VGG{depth} without batch norm, ImageNet-1k classification at 224x224",
            "layers": layers,
        },
    }


COSMO_FILTERS = (16, 32, 64, 128, 256, 256, 128)
COSMO_KERNELS = (3, 3, 3, 3, 2, 2, 2)


def _cosmoflow_layers(strides, paddings) -> list[dict]:
    layers = []
    last = len(COSMO_FILTERS)
    for i, (f, k, s, p) in enumerate(zip(COSMO_FILTERS, COSMO_KERNELS, strides, paddings), 1):
        layers.append(conv(f"conv{i}", f, k, stride=s, padding=p))
        layers.append(simple(f"conv{i}_relu", "relu"))
        if i < last:
            layers.append(pool(f"pool{i}", "avgpool", 2, 2))
    layers += [
        simple("flatten", "flatten"),
        fc("fc1", 2048),
        simple("fc1_relu", "relu"),
        fc("fc2", 256),
        simple("fc2_relu", "relu"),
        fc("fc3", 4),
    ]
    return layers


_COSMO_SOURCE = (
    "CosmoFlow (Mathuriya et al., SC 2018), layer list as used by ParaDL"
    " (Kahira et al., HPDC 2021, table 5)"
)
_COSMO_COMMON = [
    "Source: Mathuriya et al., 'CosmoFlow: Using Deep Learning to Learn the Universe at",
    "Scale', SC 2018; the layer list follows the CosmoFlow model used by ParaDL",
    "(Kahira et al., HPDC 2021, table 5: 1584 samples, about 2M parameters).",
    "Layers: seven 3-D convs with 16, 32, 64, 128, 256, 256, 128 filters and kernels",
    "3, 3, 3, 3, 2, 2, 2, each followed by relu and (except the last) a 2x2x2 average",
    "pool with stride 2; then flatten, fc 2048, relu, fc 256, relu, fc 4 (the regressed",
    "cosmological parameters).  Convs and fcs have biases (there is no batchnorm).",
]


def cosmoflow() -> dict:
    return {
        "file": "cosmoflow",
        "header": [
            "CosmoFlow on 4 x 512^3 volumes.",
            *_COSMO_COMMON,
            "Choices:",
            "- No padding; conv3 has stride 2, all other convs stride 1.  Spatial extents:",
            "  512 -> conv1 510 -> 255 -> conv2 253 -> 126 -> conv3 62 -> 31 -> conv4 29 -> 14",
            "  -> conv5 13 -> 6 -> conv6 5 -> 2 -> conv7 1, so flatten gives 128 features.",
            "- relu as the activation (the original CosmoFlow used leaky relu; the cost is",
            "  the same).",
            "Parameters: 2,131,252.",
        ],
        "doc": {
            "name": "CosmoFlow",
            "input": [4, 512, 512, 512],
            "dataset": {"name": "CosmoFlow", "samples": 1584},
            "source": _COSMO_SOURCE,
            "description": "CosmoFlow 3-D CNN on 4 x 512^3 dark-matter volumes",
            "layers": _cosmoflow_layers(strides=(1, 1, 2, 1, 1, 1, 1), paddings=(0,) * 7),
        },
    }


def cosmoflow256() -> dict:
    return {
        "file": "cosmoflow256",
        "header": [
            "CosmoFlow on 4 x 256^3 volumes (the sample size ParaDL measured layer times on).",
            *_COSMO_COMMON,
            "Choices:",
            "- The 512^3 layer list does not fit 256^3 unchanged: 256 -> 254 -> 127 -> 125 -> 62",
            "  -> conv3 30 -> 15 -> conv4 13 -> 6 -> conv5 5 -> 2 -> conv6 1, and pool6 (kernel 2)",
            "  cannot take a 1^3 input.",
            "- Chosen fix: padding 1 on conv5 and conv6 (the 2x2x2 convs before the last),",
            "  everything else as at 512^3 (conv3 keeps stride 2).  Extents:",
            "  256 -> conv1 254 -> 127 -> conv2 125 -> 62 -> conv3 30 -> 15 -> conv4 13 -> 6",
            "  -> conv5 7 -> 3 -> conv6 4 -> 2 -> conv7 1; flatten gives 128 features, so the",
            "  parameters are the same as the 512^3 model's (2,131,252).",
            "- Why: the layers that carry the work then run the 512^3 model on a half-size",
            "  volume: conv1 and conv2 (96% of the FLOPs) do 1/8.1 and 1/8.3 of their 512^3",
            "  work, conv3 1/8.8, conv4 1/11, the whole model 1/8.2 (activations 1/8.1).",
            "  ParaDL (Kahira et al., section 5) obtained 512^3 layer times by timing 256^3",
            "  and multiplying by 8, which holds for this variant.  The padding only",
            "  touches two cheap convs (conv5 + conv6: 0.25 GFLOP, 0.2% of the total).",
            "- Rejected alternative: conv3 with stride 1 instead (also valid, 1^3 before",
            "  the fc head, same parameters).  It removes one downsampling, so conv3 and",
            "  conv4 keep nearly their 512^3 extents (60^3 and 28^3 outputs, 23.9 and 9.7",
            "  GFLOP, vs 26.4 and 10.8 at 512^3): the model is only 6.5x cheaper than at",
            "  512^3 and its per-layer split of work and memory differs from the 512^3 one.",
            "Parameters: 2,131,252.",
        ],
        "doc": {
            "name": "CosmoFlow-256",
            "input": [4, 256, 256, 256],
            "dataset": {"name": "CosmoFlow-256", "samples": 1584},
            "source": _COSMO_SOURCE,
            "description": (
                "CosmoFlow 3-D CNN on 4 x 256^3 volumes"
                " (conv5/conv6 padded by 1 so the 512^3 layer list fits)"
            ),
            "layers": _cosmoflow_layers(
                strides=(1, 1, 2, 1, 1, 1, 1), paddings=(0, 0, 0, 0, 1, 1, 0)
            ),
        },
    }


def meshtangling() -> dict:
    widths = (32, 64, 128, 256, 512, 1024)
    layers = []
    for block, width in enumerate(widths, start=1):
        for i in range(1, 6):
            name = f"conv{block}_{i}"
            layers += [
                conv(name, width, 3, stride=2 if i == 1 else 1, padding=1, bias=False),
                simple(f"{name}_bn", "batchnorm"),
                simple(f"{name}_relu", "relu"),
            ]
    layers.append(conv("pred", 1, 1))
    return {
        "file": "meshtangling",
        "header": [
            "Mesh-tangling segmentation model for 2048x2048 (2K) inputs with 18 channels.",
            "Source: Dryden et al., 'Improving Strong-Scaling of CNN Training by Exploiting",
            "Finer-Grained Parallelism', IPDPS 2019, section VI: 'a very simple",
            "fully-convolutional model adapted from VGGNet ... six blocks of ... five (2K)",
            "convolution-batch normalization-ReLU operations, using 3x3 convolutional",
            "filters, and a final convolutional layer for prediction.  Downsampling is",
            "performed via stride-2 convolution at the first convolutional filter of each",
            "block.'  Layer names conv1_1 .. conv6_5 as in the paper's figure 3.",
            "Choices (the paper states no channel widths, paddings or prediction-layer shape):",
            "- Channel widths 32, 64, 128, 256, 512, 1024 (VGG-like doubling per block,",
            "  starting at 32).  Assumption.",
            "- 3x3 convs with padding 1, no bias (batchnorm follows each).  Extents:",
            "  2048 -> 1024 -> 512 -> 256 -> 128 -> 64 -> 32 after blocks 1..6.",
            "- Prediction head 'pred': a 1x1 conv with 1 filter and a bias, i.e. one logit",
            "  per output pixel (binary 'does this cell need relaxing', the paper's",
            "  per-pixel task), at the 32x32 resolution of block 6 - the paper describes",
            "  no upsampling/decoder, so none is added.  Assumption.",
            "- Dataset: 10,000 samples, the number the paper states ('We use 10,000 samples",
            "  of each size'); each sample is 18 x 2048^2 float32 = 288 MiB.",
            "Parameters: 56,631,041.",
        ],
        "doc": {
            "name": "MeshTangling-2K",
            "input": [18, 2048, 2048],
            "dataset": {"name": "MeshTangling-2K", "samples": 10000},
            "source": (
                "Dryden et al., Improving Strong-Scaling of CNN Training by Exploiting"
                " Finer-Grained Parallelism, IPDPS 2019 (2K mesh-tangling model)"
            ),
            "description": (
                "Fully-convolutional VGG-like per-pixel predictor of mesh tangling,"
                " 18 x 2048 x 2048 input"
            ),
            "layers": layers,
        },
    }


def cifar_resnet20() -> dict:
    """ResNet-20 for CIFAR-10 (He et al. 2016, section 4.2, n = 3), option B shortcuts."""
    layers = [
        conv("conv1", 16, 3, padding=1, bias=False),
        simple("bn_conv1", "batchnorm"),
        simple("conv1_relu", "relu"),
    ]
    prev = "conv1_relu"
    for s, width in enumerate((16, 32, 64)):
        stage = s + 2
        for b in range(3):
            base = f"res{stage}{'abc'[b]}"
            stride = 2 if (b == 0 and stage > 2) else 1
            br = f"{base}_branch2"
            layers += [
                conv(f"{br}a", width, 3, stride=stride, padding=1, bias=False),
                simple(f"{br}a_bn", "batchnorm"),
                simple(f"{br}a_relu", "relu"),
                conv(f"{br}b", width, 3, padding=1, bias=False),
                simple(f"{br}b_bn", "batchnorm"),
            ]
            if b == 0 and stage > 2:
                layers += [
                    conv(f"{base}_branch1", width, 1, stride=2, bias=False, inputs=[prev]),
                    simple(f"{base}_branch1_bn", "batchnorm"),
                ]
                shortcut = f"{base}_branch1_bn"
            else:
                shortcut = prev
            layers += [
                simple(base, "add", inputs=[f"{br}b_bn", shortcut]),
                simple(f"{base}_relu", "relu"),
            ]
            prev = f"{base}_relu"
    layers += [
        simple("pool5", "globalavgpool"),
        simple("flatten", "flatten"),
        fc("fc10", 10),
    ]
    return {
        "file": "cifar_resnet20",
        "header": [
            "ResNet-20 for CIFAR-10 (32x32 RGB images, 10 classes): a small model that can be",
            "profiled on a CPU in seconds (profiles/cifar_resnet20_cpu.yaml).",
            "Source: He, Zhang, Ren, Sun, 'Deep Residual Learning for Image Recognition',",
            "CVPR 2016 (arXiv:1512.03385), section 4.2: a 3x3 conv with 16 filters, then",
            "three stages of n = 3 basic blocks (two 3x3 convs) with 16, 32 and 64 filters",
            "on 32x32, 16x16 and 8x8 maps (6n + 2 = 20 weighted layers), global average",
            "pooling and a 10-way fc.  The first conv of stages 3 and 4 has stride 2.",
            "Choices:",
            "- Batchnorm after every conv, convs without bias (as in the paper).",
            "- Shortcuts where the shape changes (res3a, res4a): projection, a 1x1 conv",
            "  with stride 2 plus batchnorm (the paper's option B).  The paper's CIFAR",
            "  models use option A (identity with zero-padded extra channels), which a",
            "  model file cannot express; option B adds 2,752 parameters (1%) to option A's",
            "  269,722 and 0.7% to the FLOPs.",
            "- Caffe-style names as in resnet50: conv1, bn_conv1, conv1_relu,",
            "  resXY_branch2{a,b} (+ _bn, _relu), resXY_branch1 (+ _bn), resXY (the add),",
            "  resXY_relu, pool5, flatten, fc10; stages 2, 3, 4, blocks a, b, c.",
            "Parameters: 272,474.",
        ],
        "doc": {
            "name": "ResNet-20-CIFAR",
            "input": [3, 32, 32],
            "dataset": {"name": "CIFAR-10", "samples": 50000},
            "source": "He et al., CVPR 2016 (arXiv:1512.03385), section 4.2, ResNet-20 (n = 3)",
            "description": "ResNet-20, CIFAR-10 classification at 32x32",
            "layers": layers,
        },
    }


MODELS = (
    alexnet,
    lambda: vgg(16),
    lambda: resnet(50, [3, 4, 6, 3]),
    lambda: resnet(101, [3, 4, 23, 3]),
    lambda: resnet(152, [3, 8, 36, 3]),
    cosmoflow,
    cosmoflow256,
    meshtangling,
    cifar_resnet20,
    inception_v3,
    lambda: resnet_basic(18, [2, 2, 2, 2]),
    lambda: resnet_basic(34, [3, 4, 6, 3]),
    lambda: vgg(11),
    lambda: vgg(19),
    lambda: resnet(200, [3, 24, 36, 3]),
    googlenet,
    lambda: caffe_alexnet("bvlc_alexnet"),
    lambda: caffe_alexnet("caffenet"),
    resnet50_v1,
    inception_v4,
)

def render(model: dict) -> str:
    header = [f"Generated by {SCRIPT} - do not edit; change the script and re-run it."]
    return write.render(model["doc"], header + model["header"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the shipped model YAML files.")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="output directory (default: models/)"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for make in MODELS:
        model = make()
        path = args.out / f"{model['file']}.yaml"
        text = render(model)
        path.write_bytes(text.encode("ascii"))
        print(f"wrote {path} ({len(model['doc']['layers'])} layers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
