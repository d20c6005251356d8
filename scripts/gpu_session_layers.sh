#!/usr/bin/env bash
# The third script for a session lent one GPU (docs/development.md "When a session has a GPU"):
# every layer of oracle's model files timed on the GPU in AMP and in fp32 (TF32 convolutions)
# (scripts/measure_layer_kernels.py), for benchmarks/layer_kernels.py; one call of the device tool
# from the repository root, under 6 minutes each:  bash scripts/gpu_session_layers.sh [1|2]
# Writes under $OUT (default ./gpu-out) env.txt and one CSV per stage; stages run in order of
# worth, each under its own time limit: about 0.15 s per layer and precision on an H200 (with
# cuDNN's autotuning), plus ~10 s to start.
# 1: what validation/gpu-layer-kernels.csv holds (channels-last; 2026-11-27, where the first
#    limits were too short and a second call measured the cut runs);
# 2: not measured yet: NCHW (--format contiguous) beside it, for the memory format per kernel
#    type, and EfficientNet-B0 in fp32 and ResNet-152 (the SE pools and depthwise convolutions;
#    docs/development.md "Worth measuring next time").
. scripts/gpu_common.sh
L=scripts/measure_layer_kernels.py
if [ "${1:-1}" = 1 ]; then
  stage 180 python3 $L vgg16 inception_v3 resnet50 --batch 64 -o "$OUT/layers_b64.csv"
  stage 200 python3 $L mobilenet_v2 efficientnet_b0 alexnet googlenet --batch 64 -o "$OUT/layers_b64_more.csv"
  stage 70 python3 $L vgg16 inception_v3 --batch 16 -o "$OUT/layers_b16.csv"
else
  stage 180 python3 $L vgg16 inception_v3 resnet50 --batch 64 --format contiguous -o "$OUT/layers_b64_nchw.csv"
  stage 60 python3 $L efficientnet_b0 --batch 64 --precisions fp32 -o "$OUT/layers_b64_effnet_fp32.csv"
  stage 170 python3 $L resnet152 --batch 32 -o "$OUT/layers_b32_resnet152.csv"
fi
