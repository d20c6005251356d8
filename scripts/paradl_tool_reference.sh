#!/bin/sh
# Regenerates validation/paradl-tool-reference.csv: runs ParaDL's own tool, UNCHANGED, on its
# own inputs, for every configuration its scripts project (issue 27). The tool is not part of
# this project: TOOL_DIR is a folder holding parallel_analysis.py, ABCI.plat and model/ of
# TruongThaoNguyen/paraDL-analysis@ce36803 (the team's copy: shared/paradl-tool/).
# It needs Python 2.7 (the tool's language), given as PY2.
#   usage: PY2=/path/to/python2.7 scripts/paradl_tool_reference.sh TOOL_DIR > validation/paradl-tool-reference.csv
# Batch options: ParaDL's script/*_para_projection.sh (AlexNet --cBon=512 --cmaxB 2000000,
# VGG16 --cBon=32, ResNet-50 --cBon=64, --cmaxB 262144; channel runs use the filter_*.lc files
# as channel_para_projection.sh does); spatial and data+spatial use the spatial_*.lc files
# (the tool's README example, which also gives ResNet-50 data+spatial --cBon=256); CosmoFlow (no script) --cBon=1. All --cmaxp 2048.
set -e
TOOL_DIR=$(cd "$1" && pwd)
PY2=${PY2:-python2.7}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp "$TOOL_DIR/parallel_analysis.py" "$TOOL_DIR/ABCI.plat" "$TOOL_DIR"/model/* "$WORK"/
cp "$(dirname "$0")/paradl_tool_runner.py2" "$WORK/runner.py"  # prints repr() floats
cd "$WORK"
run() { # net lc cmaxB cBon paratype
  lcarg=""; [ "$2" != "-" ] && lcarg="--lc $2"
  "$PY2" runner.py "$1,$2,\"$5\",$3,$4" -net "./$1" -plat ABCI.plat -goal 1 --cmaxp 2048 \
    --cmaxB "$3" --cBon="$4" --paratype "$5" --debug y $lcarg | sed -n 's/^RESULT,//p'
}
echo "net_file,lc_file,paratype,cmaxB,cBon,case,B,p,memory_bytes,compute_s,communication_s"
for m in "ALEXNET_ImageNet_profall.net_sc 2000000 512 alexnet" \
         "VGG_ImageNet_profall.net_sc 262144 32 vgg" \
         "RESNET50_ImageNet_profall.net_sc 262144 64 resnet"; do
  set -- $m
  run "$1" - "$2" "$3" o,d
  for t in f c df; do run "$1" "filter_$4.lc" "$2" "$3" "$t"; done
  for t in s ds; do run "$1" "spatial_$4.lc" "$2" "$3" "$t"; done
done
# the tool's README example: ResNet-50 data+spatial at --cBon=256
run RESNET50_ImageNet_profall.net_sc spatial_resnet.lc 262144 256 ds
for net in COSMOFLOW.net COSMOFLOW.net_256; do
  run "$net" - 2000000 1 o,d
  for t in s ds; do run "$net" spatial_cosmolow.lc 2000000 1 "$t"; done
done
