#!/usr/bin/env bash
# Regenerate the pictures and the example report the README shows (docs/).
#
# Usage:  scripts/make_docs.sh            (from anywhere; needs oracle[plot] installed)
#
# Writes
#   docs/scaling-resnet50-abci.png   the scaling plot of the README
#   docs/example-report.html         a complete `oracle report`, measured runs included
# The plot: ResNet-50 on ABCI, 4 to 1,024 GPUs, 32 samples per GPU (memory: the framework
# model, the default). The report:
# VGG16 on the calibrated ABCI (systems/abci-2020.yaml) with the measured runs.  Outputs carry
# no timestamps, so running it again changes nothing unless the projections (or the
# matplotlib version) changed.  ORACLE=/path/to/oracle picks another executable.
set -euo pipefail

cd "$(dirname "$0")/.."
oracle=${ORACLE:-oracle}
mkdir -p docs

sweep=(-m resnet50 -s abci -p resnet50_v100 --gpus 4-1024 --batch-per-gpu 32)

"$oracle" plot scaling "${sweep[@]}" --dpi 100 -o docs/scaling-resnet50-abci.png
# the example report: VGG16 on the calibrated ABCI, whose measured runs it checks
# (its own runs, VGG16, without those the calibration used: lines 2, 4, 14, 31, 32)
"$oracle" report -m vgg16 -s abci-2020 -p vgg16_v100 --gpus 1-512 --batch-per-gpu 32 \
  --measured validation/abci-paradl.csv --where model=vgg16 --exclude line=2,4,14,31,32 -o docs/example-report.html

ls -l docs/scaling-resnet50-abci.png docs/example-report.html
