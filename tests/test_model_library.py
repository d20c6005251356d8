"""The shipped model library (models/*.yaml, written by scripts/generate_models.py).

Pins parameter counts, forward FLOPs and a few shapes of every shipped model, checks
that the generator reproduces the shipped files byte for byte, and that
models/README.md quotes the numbers oracle computes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.load import load_model

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "generate_models.py"
MODELS_DIR = ROOT / "models"

SHIPPED = (
    "alexnet",
    "vgg16",
    "resnet50",
    "resnet101",
    "resnet152",
    "cosmoflow",
    "cosmoflow256",
    "meshtangling",
    "cifar_resnet20",
    "inception_v3",
    "resnet18",
    "resnet34",
    "vgg11",
    "vgg19",
    "resnet200",
    "googlenet",
    "bvlc_alexnet",
    "caffenet",
    "resnet50_v1",
    "inception_v4",
)

# --------------------------------------------------------------------------------------
# Hand-computed parameter counts
# --------------------------------------------------------------------------------------

# CosmoFlow (512^3 and 256^3 have the same layers and both reach 1^3 before flatten):
#   conv  params = filters * in_channels * k^3 + filters (bias)
#   conv1  16 *   4 * 27 +  16 =   1,744
#   conv2  32 *  16 * 27 +  32 =  13,856
#   conv3  64 *  32 * 27 +  64 =  55,360
#   conv4 128 *  64 * 27 + 128 = 221,312
#   conv5 256 * 128 *  8 + 256 = 262,400
#   conv6 256 * 256 *  8 + 256 = 524,544
#   conv7 128 * 256 *  8 + 128 = 262,272
#   fc1   128 * 2048 + 2048    = 264,192   (flatten: 128 x 1 x 1 x 1 = 128 features)
#   fc2  2048 *  256 +  256    = 524,544
#   fc3   256 *    4 +    4    =   1,028
#   total                        2,131,252
COSMOFLOW_PARAMS = 2_131_252

# MeshTangling-2K: block b of width w, input channels c: first conv w*c*9, four more
# w*w*9 (no bias), five batchnorms of 2w (scale + shift):
#   block1 (c=18,  w=32):    5,184 +  4*9,216      +    320 =     42,368
#   block2 (c=32,  w=64):   18,432 +  4*36,864     +    640 =    166,528
#   block3 (c=64,  w=128):  73,728 +  4*147,456    +  1,280 =    664,832
#   block4 (c=128, w=256): 294,912 +  4*589,824    +  2,560 =  2,656,768
#   block5 (c=256, w=512): 1,179,648 + 4*2,359,296 +  5,120 = 10,621,952
#   block6 (c=512, w=1024): 4,718,592 + 4*9,437,184 + 10,240 = 42,477,568
#   pred: 1x1 conv 1024 -> 1 with bias: 1,024 + 1 = 1,025
#   total 56,631,041
MESHTANGLING_PARAMS = 56_631_041

PARAMS = {
    "alexnet": 61_100_840,  # torchvision
    "vgg16": 138_357_544,  # torchvision
    "resnet50": 25_557_032,  # torchvision
    "resnet101": 44_549_160,  # torchvision
    "resnet152": 60_192_808,  # torchvision
    "cosmoflow": COSMOFLOW_PARAMS,
    "cosmoflow256": COSMOFLOW_PARAMS,
    "meshtangling": MESHTANGLING_PARAMS,
    # He et al. 2016 section 4.2 ResNet-20: option A (identity shortcuts) has 269,722;
    # the option-B projections of res3a/res4a add 16*32 + 2*32 + 32*64 + 2*64 = 2,752
    "cifar_resnet20": 272_474,
    # torchvision's 27,161,264 minus the AuxLogits head (see INCEPTION_V3_PARAMS below)
    "inception_v3": 23_834_568,
    "resnet18": 11_689_512,  # torchvision
    "resnet34": 21_797_672,  # torchvision
    "vgg11": 132_863_336,  # torchvision
    "vgg19": 143_667_240,  # torchvision
    "resnet200": 64_673_832,  # torchvision's ResNet(Bottleneck, [3, 24, 36, 3])
    # convnet-benchmarks' googlenet.lua rebuilt in PyTorch (biased convs, no aux heads): 6,998,552
    "googlenet": 6_998_552,
    # BVLC/caffe's bvlc_alexnet and bvlc_reference_caffenet prototxts: conv1 96*3*121+96 =
    # 34,944; conv2 256*48*25+256 = 307,456; conv3 384*256*9+384 = 885,120; conv4
    # 384*192*9+384 = 663,936; conv5 256*192*9+256 = 442,624; fc6 9216*4096+4096 =
    # 37,752,832; fc7 16,781,312; fc8 4,097,000
    "bvlc_alexnet": 60_965_224,
    "caffenet": 60_965_224,
    "resnet50_v1": 25_557_032,  # the same layers as v1.5; only the strides move
    # timm's inception_v4 (the authors' TF-slim layout) built in PyTorch: 42,679,816
    "inception_v4": 42_679_816,
}

NAMES = {
    "alexnet": "AlexNet",
    "vgg16": "VGG16",
    "resnet50": "ResNet-50",
    "resnet101": "ResNet-101",
    "resnet152": "ResNet-152",
    "cosmoflow": "CosmoFlow",
    "cosmoflow256": "CosmoFlow-256",
    "meshtangling": "MeshTangling-2K",
    "cifar_resnet20": "ResNet-20-CIFAR",
    "inception_v3": "Inception-v3",
    "resnet18": "ResNet-18",
    "resnet34": "ResNet-34",
    "vgg11": "VGG11",
    "vgg19": "VGG19",
    "resnet200": "ResNet-200",
    "googlenet": "GoogLeNet",
    "bvlc_alexnet": "BVLC AlexNet",
    "caffenet": "CaffeNet",
    "resnet50_v1": "ResNet-50 v1",
    "inception_v4": "Inception-v4",
}

# torchvision model docs, "GFLOPS" column (which counts multiply-adds).  oracle counts
# 2 FLOPs per multiply-add (oracle/compute/layers/shapes.py) plus the small element-wise work.
TORCHVISION_GMACS = {"alexnet": 0.71, "vgg16": 15.47, "resnet50": 4.09, "resnet101": 7.80, "resnet152": 11.51,
                     "resnet18": 1.81, "resnet34": 3.66, "vgg11": 7.61, "vgg19": 19.63}


@pytest.fixture(scope="module")
def models():
    return {name: load_model(name) for name in SHIPPED}


def _info(model, layer_name):
    return model.info[model.index[layer_name]]


def _assert_shapes(model, expected) -> None:
    """Each (layer name, output shape) of ``expected`` is the model's."""
    for name, shape in expected:
        assert _info(model, name).output_shape == shape, name


def _conv_flops(model) -> float:
    return sum(i.flops for layer, i in zip(model.layers, model.info) if layer.type == "conv")


# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_parameter_count(models, name):
    assert models[name].parameters == PARAMS[name]


@pytest.mark.parametrize("name", SHIPPED)
def test_name_and_dataset(models, name):
    m = models[name]
    assert m.name == NAMES[name]
    if name in TORCHVISION_GMACS:
        assert m.input_shape == (3, 224, 224)
        assert (m.dataset_name, m.dataset_samples) == ("ImageNet-1k", 1281167)
    assert m.source


def test_dataset_of_scientific_models(models):
    assert models["cosmoflow"].input_shape == (4, 512, 512, 512)
    assert (models["cosmoflow"].dataset_name, models["cosmoflow"].dataset_samples) == (
        "CosmoFlow",
        1584,
    )
    assert models["cosmoflow256"].input_shape == (4, 256, 256, 256)
    assert (models["cosmoflow256"].dataset_name, models["cosmoflow256"].dataset_samples) == (
        "CosmoFlow-256",
        1584,
    )
    assert models["meshtangling"].input_shape == (18, 2048, 2048)
    # Dryden et al. (IPDPS 2019), section VI: "We use 10,000 samples of each size."
    assert models["meshtangling"].dataset_samples == 10_000


@pytest.mark.parametrize("name", sorted(TORCHVISION_GMACS))
def test_forward_flops_match_torchvision(models, name):
    expected = 2 * TORCHVISION_GMACS[name] * 1e9
    assert models[name].flops == pytest.approx(expected, rel=0.015)


def test_basic_block_resnets_and_vgg_configurations(models):
    """ResNet-18/34: conv1 + two 3x3 convs per basic block + 3 projections (stages 3-5);
    VGG A/D/E: 8/13/16 convs (Simonyan and Zisserman, table 1) and three fc."""
    for name, blocks in (("resnet18", 8), ("resnet34", 16)):
        convs = [(layer.kernel, layer.stride) for layer in models[name].layers if layer.type == "conv"]
        assert len(convs) == 1 + 2 * blocks + 3
        assert sum(1 for k, _ in convs if set(k) == {1}) == 3
    assert _info(models["resnet18"], "pool5").output_shape == (512, 1, 1)
    for name, convs in (("vgg11", 8), ("vgg16", 13), ("vgg19", 16)):
        types = [layer.type for layer in models[name].layers]
        assert types.count("conv") == convs and types.count("fc") == 3
        assert _info(models[name], "pool5").output_shape == (512, 7, 7)


def test_resnet_structure(models):
    for name, blocks in (("resnet50", 16), ("resnet101", 33), ("resnet152", 50)):
        m = models[name]
        types = [layer.type for layer in m.layers]
        # conv1 + 3 per bottleneck + 4 projection shortcuts; a batchnorm after each conv
        assert types.count("conv") == 1 + 3 * blocks + 4
        assert types.count("batchnorm") == types.count("conv")
        assert types.count("add") == blocks
        assert all(not layer.bias for layer in m.layers if layer.type == "conv")
    r50 = models["resnet50"]
    assert r50.layers[r50.index["res2a"]].inputs == ("res2a_branch2c_bn", "res2a_branch1_bn")
    assert r50.layers[r50.index["res2b"]].inputs == ("res2b_branch2c_bn", "res2a_relu")
    # v1.5: the stride is on the 3x3 conv
    assert r50.layers[r50.index["res3a_branch2b"]].stride == (2,)
    assert r50.layers[r50.index["res3a_branch2a"]].stride == (1,)
    r152 = models["resnet152"]
    assert "res3b7" in r152.index and "res4b35" in r152.index and "res5c" in r152.index
    r101 = models["resnet101"]  # Caffe's ResNet-101 names: res3a..res3d, res4a, res4b1..res4b22
    assert "res3d" in r101.index and "res4b22" in r101.index and "res4b23" not in r101.index


def test_shapes(models):
    r50 = models["resnet50"]
    assert _info(r50, "pool1").output_shape == (64, 56, 56)
    assert _info(r50, "res2a").output_shape == (256, 56, 56)
    assert _info(r50, "res3a").output_shape == (512, 28, 28)
    assert _info(r50, "res5c_relu").output_shape == (2048, 7, 7)
    assert _info(r50, "pool5").output_shape == (2048, 1, 1)
    assert _info(models["resnet152"], "pool5").output_shape == (2048, 1, 1)
    assert _info(models["vgg16"], "pool5").output_shape == (512, 7, 7)
    assert _info(models["alexnet"], "pool5").output_shape == (256, 6, 6)
    for name in SHIPPED:
        if name in TORCHVISION_GMACS:
            assert models[name].info[-1].output_shape == (1000,)

    cf = models["cosmoflow"]
    assert _info(cf, "conv1").output_shape == (16, 510, 510, 510)
    assert _info(cf, "conv3").output_shape == (64, 62, 62, 62)
    assert _info(cf, "conv7").output_shape == (128, 1, 1, 1)
    assert _info(cf, "flatten").output_shape == (128,)
    assert cf.info[-1].output_shape == (4,)
    cf256 = models["cosmoflow256"]
    assert _info(cf256, "conv1").output_shape == (16, 254, 254, 254)
    assert _info(cf256, "conv4").output_shape == (128, 13, 13, 13)
    assert _info(cf256, "conv5").output_shape == (256, 7, 7, 7)
    assert _info(cf256, "conv7").output_shape == (128, 1, 1, 1)

    mesh = models["meshtangling"]
    assert _info(mesh, "conv1_1").output_shape == (32, 1024, 1024)
    assert _info(mesh, "conv6_5_relu").output_shape == (1024, 32, 32)
    assert _info(mesh, "pred").output_shape == (1, 32, 32)


def test_cosmoflow_conv_flops_by_hand(models):
    # forward conv FLOPs = (2 * C_in * k^3 + 1 bias) * filters * output voxels
    cf512 = (
        (2 * 4 * 27 + 1) * 16 * 510**3  # conv1:   3,472 * 132,651,000 = 460,564,272,000
        + (2 * 16 * 27 + 1) * 32 * 253**3  # conv2: 27,680 * 16,194,277 = 448,257,587,360
        + (2 * 32 * 27 + 1) * 64 * 62**3  # conv3 (stride 2): 110,656 * 238,328 = 26,372,423,168
        + (2 * 64 * 27 + 1) * 128 * 29**3  # conv4: 442,496 * 24,389 = 10,792,034,944
        + (2 * 128 * 8 + 1) * 256 * 13**3  # conv5: 524,544 * 2,197 = 1,152,423,168
        + (2 * 256 * 8 + 1) * 256 * 5**3  # conv6: 1,048,832 * 125 = 131,104,000
        + (2 * 256 * 8 + 1) * 128 * 1**3  # conv7: 524,416
    )
    assert cf512 == 947_270_369_056
    assert _conv_flops(models["cosmoflow"]) == cf512
    cf256 = (
        (2 * 4 * 27 + 1) * 16 * 254**3
        + (2 * 16 * 27 + 1) * 32 * 125**3
        + (2 * 32 * 27 + 1) * 64 * 30**3
        + (2 * 64 * 27 + 1) * 128 * 13**3
        + (2 * 128 * 8 + 1) * 256 * 7**3  # conv5, padding 1
        + (2 * 256 * 8 + 1) * 256 * 4**3  # conv6, padding 1
        + (2 * 256 * 8 + 1) * 128 * 1**3
    )
    assert _conv_flops(models["cosmoflow256"]) == cf256
    # the 256^3 variant does about 1/8 of the 512^3 work (see models/README.md)
    assert 7.9 < cf512 / cf256 < 8.5
    for name in ("cosmoflow", "cosmoflow256"):
        m = models[name]
        assert m.flops == pytest.approx(_conv_flops(m), rel=0.01)


def test_meshtangling_conv_flops_by_hand(models):
    total = 0
    c_in = 18
    for block, width in enumerate((32, 64, 128, 256, 512, 1024), start=1):
        pixels = (2048 // 2**block) ** 2
        total += 2 * c_in * 9 * width * pixels  # first conv, stride 2, no bias
        total += 4 * (2 * width * 9 * width * pixels)  # four more 3x3 convs
        c_in = width
    total += (2 * 1024 + 1) * 1 * 32**2  # pred: 1x1 conv with bias
    assert _conv_flops(models["meshtangling"]) == total
    assert total == pytest.approx(523.05e9, rel=1e-4)


# --------------------------------------------------------------------------------------
# The generator and the README
# --------------------------------------------------------------------------------------


def test_generator_is_reproducible(tmp_path):
    out = tmp_path / "models"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    generated = sorted(p.name for p in out.iterdir())
    assert generated == sorted(f"{name}.yaml" for name in SHIPPED)
    for fname in generated:
        assert (out / fname).read_bytes() == (MODELS_DIR / fname).read_bytes(), (
            f"models/{fname} differs from what scripts/generate_models.py writes;"
            " re-run the script"
        )
    # and running it twice gives the same bytes
    again = tmp_path / "again"
    subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(again)], check=True, capture_output=True
    )
    for fname in generated:
        assert (again / fname).read_bytes() == (out / fname).read_bytes()


@pytest.mark.parametrize("name", SHIPPED)
def test_generated_header(models, name):
    text = (MODELS_DIR / f"{name}.yaml").read_text()
    assert text.startswith("# Generated by scripts/generate_models.py")
    header = text.split("\nname:", 1)[0]
    assert "Source:" in header and "Choices" in header
    # the parameter count the header quotes is the one oracle computes
    quoted = re.search(r"^# Parameters: ([0-9,]+)", header, flags=re.M)
    assert quoted and quoted.group(1) == f"{models[name].parameters:,}"


def _readme_sections() -> dict[str, str]:
    text = (MODELS_DIR / "README.md").read_text()
    parts = re.split(r"^## ", text, flags=re.M)
    out = {}
    for part in parts[1:]:
        m = re.match(r"`(\w+)`", part)
        if m:
            out[m.group(1)] = part
    return out


@pytest.mark.parametrize("name", SHIPPED)
def test_readme_quotes_oracle_numbers(models, name):
    sections = _readme_sections()
    assert name in sections, f"models/README.md has no section for `{name}`"
    section = sections[name]
    m = models[name]
    assert f"{m.parameters:,}" in section
    gflops = re.search(r"Forward GFLOPs per sample[^:]*:\s*\**\s*([0-9.,]+)", section)
    assert gflops, f"no 'Forward GFLOPs per sample' line in the `{name}` section"
    quoted = float(gflops.group(1).replace(",", ""))
    assert quoted == pytest.approx(m.flops / 1e9, abs=0.006), (name, m.flops / 1e9)


# --------------------------------------------------------------------------------------
# Inception-v3 (issue 8: a branching model with concat for the layer-wise search)
# --------------------------------------------------------------------------------------

# torchvision.models.inception_v3 has 27,161,264 parameters with its auxiliary
# classifier; AuxLogits is conv0 BasicConv2d(768, 128, 1) = 98,304 + 2*128 = 98,560,
# conv1 BasicConv2d(128, 768, 5) = 2,457,600 + 2*768 = 2,459,136 and fc 768 -> 1000 =
# 769,000, i.e. 3,326,696; without it (aux_logits=False, as shipped) 23,834,568.
INCEPTION_V3_PARAMS = 27_161_264 - (98_560 + 2_459_136 + 769_000)
# torchvision's docs: 5.71 G multiply-adds ("GFLOPS" column) at 299x299
INCEPTION_V3_GMACS = 5.71


def test_inception_v3_parameters_and_flops():
    m = load_model("inception_v3")
    assert INCEPTION_V3_PARAMS == 23_834_568
    assert m.parameters == INCEPTION_V3_PARAMS
    assert m.name == "Inception-v3"
    assert m.input_shape == (3, 299, 299)
    assert (m.dataset_name, m.dataset_samples) == ("ImageNet-1k", 1281167)
    assert m.flops == pytest.approx(2 * INCEPTION_V3_GMACS * 1e9, rel=0.015)


def test_inception_v3_structure():
    m = load_model("inception_v3")
    types = [layer.type for layer in m.layers]
    # stem 5, InceptionA 7 (x3), B 4, C 10 (x4), D 6, E 9 (x2) BasicConv2d
    assert types.count("conv") == 5 + 3 * 7 + 4 + 4 * 10 + 6 + 2 * 9 == 94
    assert types.count("batchnorm") == types.count("relu") == 94
    assert all(not layer.bias for layer in m.layers if layer.type == "conv")
    # 11 mixed blocks + the two forked pairs of each InceptionE block
    assert types.count("concat") == 11 + 2 * 2
    assert m.layers[m.index["Mixed_5b"]].inputs == (
        "Mixed_5b_branch1x1_relu",
        "Mixed_5b_branch5x5_2_relu",
        "Mixed_5b_branch3x3dbl_3_relu",
        "Mixed_5b_branch_pool_relu",
    )
    assert m.layers[m.index["Mixed_5b_branch5x5_1"]].inputs == ("maxpool2",)
    _assert_shapes(m, (
        ("Conv2d_1a_3x3", (32, 149, 149)),
        ("maxpool1", (64, 73, 73)),
        ("maxpool2", (192, 35, 35)),
        ("Mixed_5b", (256, 35, 35)),
        ("Mixed_5d", (288, 35, 35)),
        ("Mixed_6a", (768, 17, 17)),
        ("Mixed_6e", (768, 17, 17)),
        ("Mixed_7a", (1280, 8, 8)),
        ("Mixed_7b_branch3x3", (768, 8, 8)),
        ("Mixed_7c", (2048, 8, 8)),
        ("avgpool", (2048, 1, 1)),
        ("fc", (1000,)),
    ))


def test_inception_v3_header_quotes_parameters():
    text = (MODELS_DIR / "inception_v3.yaml").read_text()
    header = text.split("\nname:", 1)[0]
    assert "Source:" in header and "Choices" in header
    quoted = re.search(r"^# Parameters: ([0-9,]+)", header, flags=re.MULTILINE)
    assert quoted and quoted.group(1) == f"{INCEPTION_V3_PARAMS:,}"


# --------------------------------------------------------------------------------------
# ResNet-50 v1 and Inception-v4 (the models of tf_cnn_benchmarks' resnet50 and inception4)
# --------------------------------------------------------------------------------------


def test_resnet50_v1_moves_only_the_strides(models):
    """v1 strides the first 1x1 of a stage's first bottleneck (He et al. 2016, the authors'
    Caffe prototxt); every other layer and shape is v1.5's."""
    v1, v15 = models["resnet50_v1"], models["resnet50"]
    assert [layer.name for layer in v1.layers] == [layer.name for layer in v15.layers]
    for stage in (3, 4, 5):
        assert v1.layers[v1.index[f"res{stage}a_branch2a"]].stride == (2,)
        assert v1.layers[v1.index[f"res{stage}a_branch2b"]].stride == (1,)
        assert _info(v1, f"res{stage}a").output_shape == _info(v15, f"res{stage}a").output_shape
    # the 3x3 convs output 28x28, 14x14, 7x7 either way; what changes is the 1x1 before
    # them (branch2a), which v1 runs at a quarter of the positions: it saves
    # 2 * C_in * width * (3/4) * H * W, i.e. 2 * 256 * 128 * 2,352 = 154,140,672 in res3a,
    # and as much in res4a (512, 256, 28x28) and res5a (1024, 512, 14x14)
    saved = 2 * (256 * 128 * 56**2 + 512 * 256 * 28**2 + 1024 * 512 * 14**2) * 3 // 4
    assert saved == 3 * 154_140_672
    assert _conv_flops(v15) - _conv_flops(v1) == saved
    # torch.utils.flop_counter on torchvision's resnet50 with the strides moved: 7.716 GFLOPs
    assert v1.flops == pytest.approx(7.716e9, rel=0.01)


def test_inception_v4_structure(models):
    m = models["inception_v4"]
    assert m.input_shape == (3, 299, 299)
    types = [layer.type for layer in m.layers]
    # BasicConv2d: stem 3 + Mixed_3a 1 + Mixed_4a 6 + Mixed_5a 1, Inception-A 7 (x4),
    # Reduction-A 4, Inception-B 10 (x7), Reduction-B 6, Inception-C 10 (x3)
    assert types.count("conv") == 3 + 1 + 6 + 1 + 4 * 7 + 4 + 7 * 10 + 6 + 3 * 10 == 149
    assert types.count("batchnorm") == types.count("relu") == 149
    # 3 stem mixes + 16 blocks + the two forks of each Inception-C
    assert types.count("concat") == 3 + 16 + 3 * 2
    _assert_shapes(m, (  # the paper's figures 3-9
        ("Mixed_3a", (160, 73, 73)),
        ("Mixed_4a", (192, 71, 71)),
        ("Mixed_5a", (384, 35, 35)),
        ("Inception_A4", (384, 35, 35)),
        ("Reduction_A", (1024, 17, 17)),
        ("Inception_B7", (1024, 17, 17)),
        ("Reduction_B", (1536, 8, 8)),
        ("Inception_C3", (1536, 8, 8)),
        ("avgpool", (1536, 1, 1)),
        ("fc", (1000,)),
    ))
    # torch.utils.flop_counter on timm's inception_v4: 24.51 GFLOPs in convs and fc
    assert m.flops == pytest.approx(24.51e9, rel=0.01)
