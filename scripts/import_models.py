"""Write the shipped models that come through the importer (``oracle import-model``).

    python scripts/import_models.py [--out models/]

needs torch and torchvision (``pip install 'oracle[torch]'``).  Each model is built
without weights, traced and written by ``oracle.importer``; the header says where the
architecture comes from.  tests/test_shipped_imports.py checks that re-running this
script reproduces the files byte for byte and pins their parameters and FLOPs.

Models:
- ``unet3d``: the 3-D U-Net of NVIDIA DeepLearningExamples, TensorFlow/Segmentation/
  UNet_3D_Medical (model/unet3d.py, model/layers.py), defined below in PyTorch from
  that code: Çiçek et al., MICCAI 2016 (arXiv:1606.06650), widths 32-64-128-256-320-320,
  instance norm and leaky ReLU (0.01) after every 3x3x3 convolution, 2x2x2 transposed
  convolutions, 4 input modalities and 4 classes (BraTS 2019), 128^3 crops.
- ``mobilenet_v2``, ``efficientnet_b0``, ``efficientnet_b4``: torchvision's builders.
- ``resnext101_32x4d``: torchvision's ResNet with Bottleneck blocks [3, 4, 23, 3],
  32 groups of width 4 (Xie et al., CVPR 2017), the architecture of DeepLearningExamples'
  PyTorch/Classification/ConvNets resnext101-32x4d (widths 128..1024, expansion 2).
- ``se_resnext101_32x4d``: the same with a squeeze-excitation block in every bottleneck,
  reduction 16 (Hu et al., CVPR 2018, arXiv:1709.01507), as in DeepLearningExamples'
  se-resnext101-32x4d.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch import nn
from torchvision.models import efficientnet_b0, efficientnet_b4, mobilenet_v2
from torchvision.models.resnet import Bottleneck, ResNet

from oracle.importer.build import import_model

SCRIPT = "scripts/import_models.py"
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "models"
IMAGENET = ("ImageNet-1k", 1281167)
# BraTS 2019: 335 training cases; DeepLearningExamples trains on 4 of --num_folds 5
# folds (runtime/arguments.py), 268 volumes
BRATS = ("BraTS-2019 (4 of 5 folds)", 268)


# -- U-Net 3-D (DeepLearningExamples TensorFlow/Segmentation/UNet_3D_Medical) -------------


class ConvBlock(nn.Sequential):
    """layers.convolution(): a 3x3x3 convolution without bias ('same' padding), instance
    norm (center and scale, epsilon 1e-6) and leaky ReLU (alpha 0.01)."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__(
            nn.Conv3d(cin, cout, 3, stride=stride, padding=1, bias=False),
            nn.InstanceNorm3d(cout, eps=1e-6, affine=True),
            nn.LeakyReLU(0.01),
        )


class Down(nn.Sequential):
    """layers.downsample_block(): a stride-2 convolution block, then a stride-1 one."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__(ConvBlock(cin, cout, stride=2), ConvBlock(cout, cout))


class Up(nn.Module):
    """layers.upsample_block(): a 2x2x2 stride-2 transposed convolution with bias (its
    normalization is 'none'), concatenation with the skip connection, two blocks."""

    def __init__(self, cin: int, cskip: int, cout: int) -> None:
        super().__init__()
        self.up = nn.ConvTranspose3d(cin, cout, 2, stride=2)
        self.conv1 = ConvBlock(cout + cskip, cout)
        self.conv2 = ConvBlock(cout, cout)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        return self.conv2(self.conv1(torch.cat([self.up(x), skip], dim=1)))


class UNet3D(nn.Module):
    """unet3d.Builder: input block (32), five downsampling blocks (64, 128, 256, 320,
    320), five upsampling blocks back to 32, a 3x3x3 output convolution with bias to the
    classes and a softmax (model_fn.py: n_classes=4)."""

    def __init__(self, channels: int = 4, classes: int = 4) -> None:
        super().__init__()
        self.input_block = nn.Sequential(ConvBlock(channels, 32), ConvBlock(32, 32))
        self.down1, self.down2 = Down(32, 64), Down(64, 128)
        self.down3, self.down4, self.down5 = Down(128, 256), Down(256, 320), Down(320, 320)
        self.up1, self.up2 = Up(320, 320, 320), Up(320, 256, 256)
        self.up3, self.up4, self.up5 = Up(256, 128, 128), Up(128, 64, 64), Up(64, 32, 32)
        self.output = nn.Conv3d(32, classes, 3, padding=1)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s128 = self.input_block(x)
        s64 = self.down1(s128)
        s32 = self.down2(s64)
        s16 = self.down3(s32)
        s8 = self.down4(s16)
        out = self.down5(s8)
        out = self.up2(self.up1(out, s8), s16)
        out = self.up5(self.up4(self.up3(out, s32), s64), s128)
        return self.softmax(self.output(out))


# -- ResNeXt-101 32x4d and SE-ResNeXt-101 32x4d ----------------------------------------------


def resnext101_32x4d() -> nn.Module:
    return ResNet(Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=4)


class SEBottleneck(Bottleneck):
    """Bottleneck with squeeze-excitation on the residual branch before the sum (Hu et
    al., Fig. 3): global average pool, 1x1 conv to C/16 (bias), ReLU, 1x1 conv back to C
    (bias), sigmoid, channel-wise product."""

    def __init__(self, inplanes: int, planes: int, *args, **kwargs) -> None:
        super().__init__(inplanes, planes, *args, **kwargs)
        c = planes * self.expansion
        self.se_pool = nn.AdaptiveAvgPool2d(1)
        self.se_reduce = nn.Conv2d(c, c // 16, 1)
        self.se_relu = nn.ReLU(inplace=True)
        self.se_expand = nn.Conv2d(c // 16, c, 1)
        self.se_gate = nn.Sigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        gate = self.se_gate(self.se_expand(self.se_relu(self.se_reduce(self.se_pool(out)))))
        return self.relu(out * gate + identity)


def se_resnext101_32x4d() -> nn.Module:
    return ResNet(SEBottleneck, [3, 4, 23, 3], groups=32, width_per_group=4)


# -- the files ------------------------------------------------------------------------------

MODELS = {
    # file: (callable, display name, input, dataset, description, source lines)
    "unet3d": (UNet3D, "U-Net-3D-Medical", (4, 128, 128, 128), BRATS,
               "3-D U-Net for brain-tumour segmentation (BraTS 2019), 4 x 128^3 crops",
               ["NVIDIA DeepLearningExamples TensorFlow/Segmentation/UNet_3D_Medical",
                "(model/unet3d.py, model/layers.py, model/model_fn.py), after Cicek et al.,",
                "MICCAI 2016 (arXiv:1606.06650). Instance norm is written as a groupnorm with one",
                "group per channel; TensorFlow's 'same' padding of the stride-2 convolutions pads",
                "0 before and 1 after, PyTorch's padding 1 both sides: same shapes and cost."]),
    "mobilenet_v2": (mobilenet_v2, "MobileNetV2", (3, 224, 224), IMAGENET,
                     "MobileNetV2 1.0, ImageNet-1k classification at 224x224",
                     ["torchvision.models.mobilenet_v2 (Sandler et al., CVPR 2018, arXiv:1801.04381)."]),
    "efficientnet_b0": (efficientnet_b0, "EfficientNet-B0", (3, 224, 224), IMAGENET,
                        "EfficientNet-B0, ImageNet-1k classification at 224x224",
                        ["torchvision.models.efficientnet_b0 (Tan & Le, ICML 2019, arXiv:1905.11946).",
                         "Stochastic depth is imported as dropout (a per-sample mask in training)."]),
    "efficientnet_b4": (efficientnet_b4, "EfficientNet-B4", (3, 380, 380), IMAGENET,
                        "EfficientNet-B4, ImageNet-1k classification at 380x380",
                        ["torchvision.models.efficientnet_b4 (Tan & Le, ICML 2019, arXiv:1905.11946: width",
                         "1.4, depth 1.8) at its 380x380 (NVIDIA DeepLearningExamples PyTorch/Classification/",
                         "ConvNets configs.yml efficientnet_b4_params_4k: image_size 380, the size its",
                         "efficientnet-b4 trains at). Stochastic depth is imported as dropout."]),
    "resnext101_32x4d": (resnext101_32x4d, "ResNeXt-101 32x4d", (3, 224, 224), IMAGENET,
                         "ResNeXt-101 (32x4d), ImageNet-1k classification at 224x224",
                         ["torchvision.models.resnet.ResNet(Bottleneck, [3, 4, 23, 3], groups=32,",
                          "width_per_group=4) (Xie et al., CVPR 2017, arXiv:1611.05431), the network of",
                          "NVIDIA DeepLearningExamples PyTorch/Classification/ConvNets resnext101-32x4d."]),
    "se_resnext101_32x4d": (se_resnext101_32x4d, "SE-ResNeXt-101 32x4d", (3, 224, 224), IMAGENET,
                            "SE-ResNeXt-101 (32x4d), ImageNet-1k classification at 224x224",
                            ["ResNeXt-101 32x4d with squeeze-excitation (reduction 16) in every",
                             "bottleneck (Hu et al., CVPR 2018, arXiv:1709.01507; SE-ResNeXt-101 (32x4d):",
                             "48.9M parameters, 8.00 G multiply-adds), as NVIDIA DeepLearningExamples",
                             "PyTorch/Classification/ConvNets se-resnext101-32x4d."]),
}  # fmt: skip


def build(key: str) -> str:
    make, name, shape, dataset, description, source = MODELS[key]
    first = import_model(f"{__file__}:{make.__name__}", shape, name=name, dataset=dataset,
                         description=description, header=[])  # fmt: skip
    model = first.model
    header = [
        f"Generated by {SCRIPT} through oracle's importer - do not edit; change the script.",
        *source,
        f"Input {'x'.join(map(str, shape))}; {len(model.layers)} layers; layer names are PyTorch module paths.",
        f"Parameters: {model.parameters:,} (PyTorch: {first.reference_parameters:,}).",
        f"Forward GFLOPs per sample: {model.flops / 1e9:.3f} (2 per multiply-add).",
    ]
    text = first.text.replace(f"imported from {__file__}:{make.__name__}", f"imported from {SCRIPT}:{make.__name__}")
    return "\n".join(f"# {line}" for line in header) + "\n" + text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the shipped models that come through the importer.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default: models/)")
    parser.add_argument("names", nargs="*", choices=[[], *MODELS], help="models to write (default: all)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for key in args.names or MODELS:
        path = args.out / f"{key}.yaml"
        path.write_bytes(build(key).encode("ascii"))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
