#!/usr/bin/env bash
# The second round of accelerator checks (issues 46 item 3, 48 items 2 and 3), for a lent GPU machine,
# in priority order within one overall time limit (each step gets at most what is left):
#
#   bash benchmarks/device_check2.sh OUTDIR [SECONDS]   (SECONDS: the overall limit, default 540)
#
# 1. a smoke test: the package imports and certifies a small code on the device;
# 2. the d = 3 Tammes sweep stacked at K = 65..72 and K = 97..104 (one size bucket each, the device's
#    default population divided among the 8 pairs; benchmarks/search_stack.py), for the per-pair time
#    over K = 65..130 beside the committed K = 121..128 row;
# 3. (64, 1000) Tammes without the work limit (8 restarts, 6 hop rounds: the unlimited defaults):
#    does more annealing reach below the Kerdock subset's max cos 1/8?
# 4. the CPU's scale rows on the device, for the side-by-side table (benchmarks/scale.py);
# 5. (16, 288), the Kerdock code's full size, both problems with defaults (benchmarks/references.py).
set -u
source "$(dirname "$0")/device_common.sh"
begin "$0" "$@" || exit 1
for K in 65:73 97:105; do
    step "stack $K" 170 python3 benchmarks/search_stack.py --d 3 --K $K --stacks 8 --population 0 \
        --no-baseline --keep "$out" --out "$out/search_stack_gpu.json"
done
step unlimited 90 python3 -c "
import json, time
t = time.perf_counter()
import gnc_jax
s = gnc_jax.solve_tammes(64, 1000, seed=0, solver=gnc_jax.SolverSettings(work_limit=0))
print(json.dumps({'d': 64, 'K': 1000, 'work_limit': 0, 'max_cos': s.max_cos, 'status': s.status,
                  'restarts': s.restarts, 'wall_s': round(time.perf_counter() - t, 1)}))"
step side 150 python3 benchmarks/scale.py --pairs 64:1000,16:1000,64:10000 --out "$out/scale_gpu.json"
step kerdock288 150 python3 benchmarks/references.py --pairs 16:288 --out "$out/references_gpu.json"
