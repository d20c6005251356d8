"""The residual ImageNet models of the model generator (scripts/generate_models.py):
torchvision's ResNet-18/34/50/101/152 (v1.5 for the bottleneck ones), ResNet-200, and
ResNet-50 v1 (the original stride placement, as Caffe and tf_cnn_benchmarks build it)."""

from __future__ import annotations

from model_dicts import IMAGENET, IMAGENET_INPUT, conv, fc, pool, simple


def _block_letter(index: int, blocks: int) -> str:
    """Caffe's block names: a, b, c, ... for short stages; a, b1, b2, ... for long ones."""
    if blocks <= 6:
        return "abcdef"[index]
    return "a" if index == 0 else f"b{index}"


def _resnet_stem() -> list[dict]:
    """torchvision's ResNet stem: 7x7/2 conv, batchnorm, relu, 3x3/2 max pool."""
    return [
        conv("conv1", 64, 7, stride=2, padding=3, bias=False),
        simple("bn_conv1", "batchnorm"),
        simple("conv1_relu", "relu"),
        pool("pool1", "maxpool", 3, 2, padding=1),
    ]


def _resnet_head() -> list[dict]:
    """Global average pool, flatten and the 1000-way classifier."""
    return [simple("pool5", "globalavgpool"), simple("flatten", "flatten"), fc("fc1000", 1000)]


def _bottleneck(br: str, width: int, stride: int) -> tuple[list[dict], str, int]:
    """A bottleneck's branch (1x1, 3x3, 1x1 convs with batchnorm), its last layer and width;
    ResNet v1.5: the stride sits on the 3x3 conv."""
    return _bottleneck_strided(br, width, 1, stride)


def _bottleneck_v1(br: str, width: int, stride: int) -> tuple[list[dict], str, int]:
    """The original ResNet's bottleneck (v1): the stride sits on the first 1x1 conv."""
    return _bottleneck_strided(br, width, stride, 1)


def _bottleneck_strided(br: str, width: int, stride_1x1: int, stride_3x3: int) -> tuple[list[dict], str, int]:
    return [
        conv(f"{br}a", width, 1, stride=stride_1x1, bias=False),
        simple(f"{br}a_bn", "batchnorm"),
        simple(f"{br}a_relu", "relu"),
        conv(f"{br}b", width, 3, stride=stride_3x3, padding=1, bias=False),
        simple(f"{br}b_bn", "batchnorm"),
        simple(f"{br}b_relu", "relu"),
        conv(f"{br}c", 4 * width, 1, bias=False),
        simple(f"{br}c_bn", "batchnorm"),
    ], f"{br}c_bn", 4 * width


def _basic_block(br: str, width: int, stride: int) -> tuple[list[dict], str, int]:
    """A basic block's branch (two 3x3 convs with batchnorm), its last layer and width."""
    return [
        conv(f"{br}a", width, 3, stride=stride, padding=1, bias=False),
        simple(f"{br}a_bn", "batchnorm"),
        simple(f"{br}a_relu", "relu"),
        conv(f"{br}b", width, 3, padding=1, bias=False),
        simple(f"{br}b_bn", "batchnorm"),
    ], f"{br}b_bn", width


def _resnet_layers(stages: list[int], block) -> list[dict]:
    """Stem, ``stages`` of ``block``s (stride 2 on the first block of stages 3-5; a 1x1
    conv + batchnorm projection shortcut where a block changes the shape), head."""
    layers, prev, channels = _resnet_stem(), "pool1", 64
    for s, (blocks, width) in enumerate(zip(stages, (64, 128, 256, 512))):
        stage = s + 2
        for b in range(blocks):
            base = f"res{stage}{_block_letter(b, blocks)}"
            stride = 2 if (b == 0 and stage > 2) else 1
            branch, last, out = block(f"{base}_branch2", width, stride)
            layers += branch
            shortcut = prev
            if stride != 1 or out != channels:
                layers += [
                    conv(f"{base}_branch1", out, 1, stride=stride, bias=False, inputs=[prev]),
                    simple(f"{base}_branch1_bn", "batchnorm"),
                ]
                shortcut = f"{base}_branch1_bn"
            layers += [simple(base, "add", inputs=[last, shortcut]), simple(f"{base}_relu", "relu")]
            prev, channels = f"{base}_relu", out
    return layers + _resnet_head()


def resnet(depth: int, stages: list[int]) -> dict:
    layers = _resnet_layers(stages, _bottleneck)
    params = {50: "25,557,032", 101: "44,549,160", 152: "60,192,808", 200: "64,673,832"}[depth]
    long_stages = [(stage, n) for stage, n in zip((2, 3, 4, 5), stages) if n > 6]
    ends = ", ".join(f"res{stage}b{n - 1}" for stage, n in long_stages)
    which = " and ".join(str(stage) for stage, _ in long_stages)
    verb = "end stages" if len(long_stages) > 1 else "ends stage"
    naming = (
        [
            f"  Stages with more than six blocks use Caffe's a, b1, b2, ... ({ends}",
            f"  {verb} {which}, as in Caffe's ResNet-{depth} prototxt); shorter stages use",
            "  a, b, c (res2a..res2c, res5a..res5c).",
        ]
        if long_stages
        else ["  Blocks are lettered a, b, c, ... within a stage (res2a..res5c)."]
    )
    if depth == 200:  # no torchvision builder: its ResNet class with these stages
        origin = ["ResNet-200 v1.5 as torchvision's ResNet(Bottleneck, [3, 24, 36, 3]) builds it and",
                  "facebook/fb.resnet.torch's models/resnet.lua defines it (stride on the 3x3 conv), 224x224 input.",
                  "Source: He, Zhang, Ren, Sun, ECCV 2016 (arXiv:1603.05027), ResNet-200's stages of",
                  "3, 24, 36 and 3 bottlenecks; v1.5 = the stride-2 on the 3x3 conv of a stage's first bottleneck."]
        where = "torchvision.models.resnet.ResNet(Bottleneck, [3, 24, 36, 3]) (He et al., ECCV 2016; ResNet v1.5)"
    else:
        origin = [f"ResNet-{depth} v1.5 as defined by torchvision (torchvision.models.resnet{depth}),",
                  "224x224 input.",
                  "Source: He, Zhang, Ren, Sun, CVPR 2016 (arXiv:1512.03385); v1.5 = torchvision's",
                  "variant with the stride-2 on the 3x3 conv of a stage's first bottleneck."]
        where = f"torchvision.models.resnet{depth} (He et al., CVPR 2016; ResNet v1.5)"
    return {
        "file": f"resnet{depth}",
        "header": [
            *origin,
            "Choices:",
            (f"- Stages of {', '.join(str(n) for n in stages)} bottleneck blocks; every conv is"
             " followed by batchnorm"),
            "  and has no bias; the first block of each stage has a projection shortcut",
            "  (branch1 = 1x1 conv + batchnorm, stride 2 from stage 3 on).",
            "- Caffe-style layer names: conv1, bn_conv1, conv1_relu, pool1, resXY_branch2{a,b,c}",
            "  (+ _bn, _relu), resXY_branch1 (+ _bn), resXY (the residual add), resXY_relu,",
            "  pool5 (global average pool), flatten, fc1000.",
            *naming,
            f"Parameters: {params} (torchvision: {params}).",
        ],
        "doc": {
            "name": f"ResNet-{depth}",
            "input": IMAGENET_INPUT,
            "dataset": IMAGENET,
            "source": where,
            "description": f"ResNet-{depth} v1.5, ImageNet-1k classification at 224x224",
            "layers": layers,
        },
    }


def resnet_basic(depth: int, stages: list[int]) -> dict:
    """ResNet-18/34: two 3x3 convolutions per block (torchvision's BasicBlock)."""
    layers = _resnet_layers(stages, _basic_block)
    params = {18: "11,689,512", 34: "21,797,672"}[depth]
    return {
        "file": f"resnet{depth}",
        "header": [
            f"ResNet-{depth} as defined by torchvision (torchvision.models.resnet{depth}), 224x224 input.",
            "Source: He, Zhang, Ren, Sun, CVPR 2016 (arXiv:1512.03385), table 1.",
            "Choices:",
            f"- Stages of {', '.join(str(n) for n in stages)} basic blocks (two 3x3 convs, each followed by",
            "  batchnorm, no bias); the first block of stages 3-5 has a projection shortcut",
            "  (branch1 = 1x1 conv + batchnorm, stride 2) and its first 3x3 conv has stride 2.",
            "- Caffe-style layer names as in resnet50: conv1, bn_conv1, conv1_relu, pool1,",
            "  resXY_branch2{a,b} (+ _bn; a + _relu), resXY_branch1 (+ _bn), resXY (the residual",
            "  add), resXY_relu, pool5 (global average pool), flatten, fc1000.",
            f"Parameters: {params} (torchvision: {params}).",
        ],
        "doc": {
            "name": f"ResNet-{depth}",
            "input": IMAGENET_INPUT,
            "dataset": IMAGENET,
            "source": f"torchvision.models.resnet{depth} (He et al., CVPR 2016)",
            "description": f"ResNet-{depth}, ImageNet-1k classification at 224x224",
            "layers": layers,
        },
    }


def resnet50_v1() -> dict:
    """ResNet-50 v1: torchvision's layer list with each stage's stride on the first 1x1 conv."""
    return {
        "file": "resnet50_v1",
        "header": [
            "ResNet-50 v1, the original architecture, 224x224 input.",
            "Source: He, Zhang, Ren, Sun, CVPR 2016 (arXiv:1512.03385), table 1, and the authors'",
            "Caffe model (KaimingHe/deep-residual-networks, ResNet-50-deploy.prototxt): the",
            "stride-2 of stages 3-5 sits on the first 1x1 conv of a stage's first bottleneck",
            "(branch2a) and on its projection shortcut (branch1).  tf_cnn_benchmarks' 'resnet50'",
            "and Caffe's ResNet-50 are this v1; torchvision's resnet50 (shipped as resnet50) is",
            "v1.5, with the stride on the 3x3 conv: the same parameters, about 6% more FLOPs.",
            "Choices:",
            "- As resnet50 (stages of 3, 4, 6, 3 bottlenecks; convs without bias, each followed by",
            "  batchnorm; Caffe-style layer names), except for where the stride sits.",
            "Parameters: 25,557,032 (as resnet50).",
        ],
        "doc": {
            "name": "ResNet-50 v1",
            "input": IMAGENET_INPUT,
            "dataset": IMAGENET,
            "source": "He et al., CVPR 2016 (ResNet v1: stride on the first 1x1 conv), as Caffe and tf_cnn_benchmarks build it",
            "description": "ResNet-50 v1, ImageNet-1k classification at 224x224",
            "layers": _resnet_layers([3, 4, 6, 3], _bottleneck_v1),
        },
    }
