#!/usr/bin/env bash
# The fourth round of accelerator checks (issue 46 item 3, issue 48 items 1 and 3), for a lent GPU
# machine, in priority order within one overall time limit (each step gets at most what is left):
#
#   bash benchmarks/device_check4.sh OUTDIR [SECONDS]   (SECONDS: the overall limit, default 540)
#
# 1. a smoke test, and the device's multiprocessors, default work limit and search population;
# 2. (512, 10^4) softmax code with default settings, whole process, certified (benchmarks/scale.py);
# 3. the d = 3 Tammes search of the size bucket K = 97..128, all 32 pairs stacked in one compiled
#    search (`gnc-jax solve tammes --search-stack 32`, the default population divided among them): a
#    JSON row per pair (its search's end and work) and the search's per-round lines, so that a run
#    stopped at its limit still shows how far each pair got; the codes come back as one archive;
# 4. the same for the bucket K = 65..96 with the time that is left.
# The device image has no highspy: carry its cp312 wheel in .whl (git-ignored) and install it first,
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
# FACE, TOP and LOW override the pairs of steps 2-4 (a dry run on a CPU: FACE=16:200 TOP=13:17 ...).
set -u
source "$(dirname "$0")/device_common.sh"
begin "$0" "$@" || exit 1
python3 -c "
import jax
from gnc_jax._src import driver, search
print('core_count', [getattr(d, 'core_count', None) for d in jax.local_devices()],
      'work_limit', driver.device_work_limit(), 'population(3, 128)', search.default_population(3, 128),
      'population(3, 96)', search.default_population(3, 96))"
step face 90 python3 benchmarks/scale.py --pairs "${FACE:-512:10000}" --problems softmax-code \
    --out "$out/scale_gpu.json"
bucket top 300 "${TOP:-97:129}"
bucket low 300 "${LOW:-65:97}"
