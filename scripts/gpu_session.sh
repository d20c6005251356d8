#!/usr/bin/env bash
# What a session lent one GPU runs (docs/development.md "When a session has a GPU"), in one
# call of the device tool from the repository root:  bash scripts/gpu_session.sh
# Writes under $OUT (default ./gpu-out): env.txt (GPU, driver, host CPU), graph*.csv and
# eager.csv (scripts/measure_training_step.py rows), resnet50.yaml (oracle profile --device
# cuda) and pytest.txt (the CUDA tests).  Each stage has its own time limit, so a stage that
# hangs costs its limit, not the call.  python3 there holds PyTorch; PYTHONPATH runs this
# checkout's oracle.
. scripts/gpu_common.sh
ORACLE='import sys; from oracle.cli.main import main; sys.argv = ["oracle"] + sys.argv[1:]; main()'
# the whole step in a CUDA graph: the GPU's time with no host launching in the way
stage 170 python3 $M resnet50 --execution cuda_graph --batches 16 32 64 128 256 --precisions amp fp32 -o "$OUT/graph.csv"
stage 80 python3 $M resnet152 vgg16 --execution cuda_graph --batches 16 64 --precisions amp -o "$OUT/graph2.csv"
# eager PyTorch beside it (host launch floor, kernel counts, memory)
stage 100 python3 $M resnet50 --batches 16 64 256 --precisions amp fp32 -o "$OUT/eager.csv"
# oracle profile --device cuda: the layers' sum against the step
stage 90 python3 -c "$ORACLE" profile resnet50 --device cuda --batch 256 -o "$OUT/resnet50.yaml"
stage 90 python3 -m pytest -q -n 8 -p no:cacheprovider tests/test_profile_gpu.py tests/test_profile.py >"$OUT/pytest.txt" 2>&1
tail -3 "$OUT/pytest.txt"
