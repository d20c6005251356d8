#!/bin/sh
# Calibrate systems/abci-2020.yaml: ABCI as ParaDL's 2020 ChainerMN/ChainerMNX runs saw
# it (NCCL 2.3.5, Chainer 7), from a SMALL TRAINING SUBSET of the measured runs in
# validation/abci-paradl.csv. Every other run of that file is held out: the README's
# accuracy table reports them separately (tests/test_calibration.py checks it).
#
#   1. network: all-reduce bandwidth inside a node and across nodes, from the VGG16
#      data-parallel runs on 4 and 8 GPUs (lines 31, 32), α kept from systems/abci.yaml
#      (fitted to nccl-tests);
#   2. input: the per-process loader rate and the per-node rate from the AlexNet
#      data-parallel runs on 1 and 4 GPUs (lines 2, 4), which are input-bound;
#   3. input: the rate of a data+spatial group leader loading alone (ParaDL §3.2), from
#      the single AlexNet data+spatial run on 8 GPUs (line 14);
#   plus the documented implementation facts in systems/overlays/chainermnx-2020.yaml.
#
# Usage: sh scripts/calibrate_abci2020.sh   (needs `oracle` on PATH, e.g. the .venv)
set -eu
cd "$(dirname "$0")/.."
ORACLE=${ORACLE:-oracle}
RUNS=validation/abci-paradl.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$ORACLE fit runs $RUNS --system abci --calibrate network \
  --where model=vgg16 --where strategy=data --where gpus=4,8 -o "$tmp/net.yaml"
$ORACLE fit runs $RUNS --system "$tmp/net.yaml" --calibrate input \
  --where model=alexnet --where strategy=data --where gpus=1,4 -o "$tmp/input.yaml"
$ORACLE fit runs $RUNS --system "$tmp/input.yaml" --calibrate input \
  --where model=alexnet --where strategy=data+spatial --where gpus=8 \
  --overlay systems/overlays/chainermnx-2020.yaml \
  --name "ABCI (ChainerMN 2020)" -o systems/abci-2020.yaml
