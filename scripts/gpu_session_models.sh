#!/usr/bin/env bash
# The second script for a session lent one GPU (docs/development.md "When a session has a GPU"):
# whole training steps of the models oracle ships beyond ResNet-50/152 and VGG-16, and the
# memory format, in two calls of the device tool from the repository root (about 6 minutes each;
# a call may run 10):
#   bash scripts/gpu_session_models.sh 1;  bash scripts/gpu_session_models.sh 2
# Writes under $OUT (default ./gpu-out) env.txt and one CSV of scripts/measure_training_step.py
# rows per stage.  Stages run in order of worth, each under its own time limit: building a
# model and cuDNN's autotuning of each new shape take 10-20 s per row on an H100 (the first
# run, with 150 s for the first stage's 10 rows, lost one row to the limit).
# - models*.csv: the whole step in a CUDA graph (the GPU's own time) at a small and a large
#   per-GPU batch, to fit a per-layer GPU overhead on some models and hold the others out;
# - nchw*.csv: the same steps in NCHW (contiguous) beside the channels-last rows already in
#   validation/gpu-training-steps.csv, for the memory format's efficiency;
# - eager.csv: eager steps at batch 16 (kernels per iteration, the host's launch time).
. scripts/gpu_common.sh
FIVE="resnet101 inception_v3 mobilenet_v2 efficientnet_b0 alexnet"
if [ "${1:-1}" = 1 ]; then
  stage 230 python3 $M $FIVE --execution cuda_graph --batches 16 128 --precisions amp -o "$OUT/models_amp.csv"
  stage 120 python3 $M resnet50 --execution cuda_graph --formats contiguous --batches 16 64 256 --precisions amp fp32 -o "$OUT/nchw_resnet50.csv"
else
  stage 230 python3 $M $FIVE --execution cuda_graph --batches 16 128 --precisions fp32 -o "$OUT/models_fp32.csv"
  stage 100 python3 $M resnet152 vgg16 --execution cuda_graph --formats contiguous --batches 16 64 --precisions amp fp32 -o "$OUT/nchw_more.csv"
  stage 120 python3 $M $FIVE --batches 16 --precisions amp -o "$OUT/eager.csv"
fi
