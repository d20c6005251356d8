#!/usr/bin/env bash
# The third script for a session lent one GPU (docs/development.md "When a session has a GPU"):
# every layer of oracle's model files timed on the GPU in AMP and in fp32 (TF32 convolutions),
# channels-last (scripts/measure_layer_kernels.py), for benchmarks/layer_kernels.py; one call of
# the device tool from the repository root, about 5 minutes:  bash scripts/gpu_session_layers.sh
# Writes under $OUT (default ./gpu-out) env.txt and one CSV per stage; stages run in order of
# worth (the models projected worst first), each under its own time limit.
. scripts/gpu_common.sh
L=scripts/measure_layer_kernels.py
stage 150 python3 $L vgg16 inception_v3 resnet50 --batch 64 -o "$OUT/layers_b64.csv"
stage 150 python3 $L mobilenet_v2 efficientnet_b0 alexnet googlenet resnet152 --batch 64 -o "$OUT/layers_b64_more.csv"
stage 70 python3 $L vgg16 inception_v3 resnet50 --batch 16 -o "$OUT/layers_b16.csv"
stage 70 python3 $L vgg16 inception_v3 resnet50 --batch 256 -o "$OUT/layers_b256.csv"
