#!/usr/bin/env bash
# The fifth round of accelerator checks (issue 46 item 3), a short one: the d = 3 Tammes bucket
# K = 97..128 stacked 32 pairs in one compiled search, as step 3 of device_check4.sh. Run on
# 2026-12-04 with the compile queue on 15 threads (commit 0af9816, not kept; docs/results.md):
#
#   bash benchmarks/device_check5.sh OUTDIR [SECONDS]   (SECONDS: the step's limit, default 150)
set -u
source "$(dirname "$0")/device_common.sh" # the environment only (no smoke test: the step gets the time)
out=${1:?usage: $0 OUTDIR [SECONDS]}
mkdir -p "$out"
echo "cores $(nproc)"
t0=$SECONDS
timeout "${2:-150}" python3 -m gnc_jax solve tammes --d 3 --K "${TOP:-97:129}" --seed 0 --search-stack 32 \
    --format json --save /tmp/codes_top > "$out/top.jsonl" 2> "$out/top.log"
echo "=== top: exit $? after $((SECONDS - t0)) s (whole process)"
grep -v "^search\|^solve" "$out/top.log" | tail -n 5
[[ -d /tmp/codes_top ]] && tar czf "$out/top.tgz" -C /tmp codes_top
