#!/usr/bin/env bash
# The third round of accelerator checks (issues 46 item 3, 48 items 1 and 3), for a lent GPU machine,
# in priority order within one overall time limit (each step gets at most what is left):
#
#   bash benchmarks/device_check3.sh OUTDIR [SECONDS]   (SECONDS: the overall limit, default 540)
#
# 1. a smoke test, and the device's multiprocessors and default work limit (driver.device_work_limit);
# 2. (512, 10^4) softmax code with default settings, whole process, certified (benchmarks/scale.py):
#    the work limit sized to the device instead of the CPU's 2e11;
# 3. the d = 3 Tammes sweep of K = 97..128 (one size bucket) stacked 32 pairs in one compiled search,
#    the device's default population divided among them (benchmarks/search_stack.py);
# 4. (64, 1000), both problems, with the device's work limit (benchmarks/scale.py).
set -u
source "$(dirname "$0")/device_common.sh"
begin "$0" "$@" || exit 1
python3 -c "
import jax
from gnc_jax._src import driver
print('core_count', [getattr(d, 'core_count', None) for d in jax.local_devices()],
      'work_limit', driver.device_work_limit())"
step face 100 python3 benchmarks/scale.py --pairs 512:10000 --problems softmax-code --out "$out/scale_gpu.json"
step stack32 330 python3 benchmarks/search_stack.py --d 3 --K 97:129 --stacks 32 --population 0 \
    --no-baseline --keep "$out" --out "$out/search_stack_gpu.json"
step side 150 python3 benchmarks/scale.py --pairs 64:1000 --out "$out/scale_gpu.json"
