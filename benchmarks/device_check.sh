#!/usr/bin/env bash
# The accelerator checks of issues 46 (item 3) and 48 (item 1) in one short run, for a lent GPU machine
# (about 7 minutes on one H200): each step has its own time limit and writes its results as it finishes.
#
#   bash benchmarks/device_check.sh OUTDIR
#
# 1. a smoke test: the package imports and certifies a small code on the device;
# 2. (512, 10^4) softmax code with default settings, whole process, certified (benchmarks/scale.py);
# 3. the d = 3 Tammes sweep of K = 121..128 stacked in one compiled search (benchmarks/search_stack.py,
#    the device's default population divided among the 8 pairs);
# 4. a whole solve at (512, 10^5) on a short schedule: the certification's time and memory at that K
#    (benchmarks/scale_memory.py);
# 5. (512, 10^5) softmax code with default settings, whole process, certified (benchmarks/scale.py).
set -u
out=${1:?usage: device_check.sh OUTDIR}
mkdir -p "$out"
source "$(dirname "$0")/device_common.sh"
smoke || exit 1
step face 150 python3 benchmarks/scale.py --pairs 512:10000 --problems softmax-code --out "$out/scale_gpu.json"
step stack 240 python3 benchmarks/search_stack.py --d 3 --K 121:129 --stacks 8 --population 0 \
    --no-baseline --keep "$out" --out "$out/search_stack_gpu.json"
step k1e5 130 python3 benchmarks/scale_memory.py --d 512 --K 100000 --steps 4 --polish-steps 2 \
    --out "$out/scale_memory_gpu.json"
step k1e5-defaults 300 python3 benchmarks/scale.py --pairs 512:100000 --problems softmax-code \
    --out "$out/scale_gpu.json"
