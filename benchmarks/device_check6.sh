#!/usr/bin/env bash
# The sixth round of accelerator checks (issue 46 item 3): the d = 3 Tammes size buckets searched with
# stacked draws (the pairs that need a population draw it together, over the slots), as steps 3 and 4
# of device_check4.sh, which found the draws one pair at a time to be 229 s of the bucket 97..128:
#
#   bash benchmarks/device_check6.sh OUTDIR [SECONDS]   (SECONDS: the overall limit, default 540)
#
# 1. a smoke test; 2. the bucket K = 97..128, 32 pairs in one compiled search (at most 360 s);
# 3. the bucket K = 65..96 with the time that is left. Rows, per-round lines and codes as in
# device_check4.sh; carry highspy's wheel as that script says. TOP and LOW override the pairs.
set -u
source "$(dirname "$0")/device_common.sh"
begin "$0" "$@" || exit 1
bucket top 360 "${TOP:-97:129}"
bucket low 360 "${LOW:-65:97}"
