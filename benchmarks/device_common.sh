# Shared by benchmarks/device_check*.sh (sourced): the environment, a timed step and a smoke test.
# The machine's python3 is used with this checkout on PYTHONPATH (its jax, flax, optax are the image's).
export PYTHONPATH=$PWD/benchmarks:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
step() { # step NAME SECONDS COMMAND...: run within SECONDS (and the time left before $end, if set),
    local name=$1 limit=$2 t0=$SECONDS # then log its wall time and exit status
    shift 2
    if [[ -n ${end:-} ]]; then
        local left=$((end - SECONDS))
        ((left < limit)) && limit=$left
        ((limit < 10)) && { echo "=== $name: skipped, no time left"; return 1; }
    fi
    echo "=== $name (limit $limit s): $*"
    timeout "$limit" "$@"
    local rc=$?
    echo "=== $name: exit $rc after $((SECONDS - t0)) s"
    return $rc
}
smoke() { # the package imports and certifies a small code on the device
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    step smoke 60 python3 -c "
import jax, gnc_jax
print(jax.__version__, jax.devices())
print(gnc_jax.solve_tammes(3, 12, seed=0).min_angle_deg)"
}
begin() { # begin SCRIPT OUTDIR [SECONDS]: sets $out and the overall limit $end (default 540 s), then smoke
    out=${2:?usage: $1 OUTDIR [SECONDS]}
    end=$((SECONDS + ${3:-540}))
    mkdir -p "$out"
    smoke
}
bucket() { # bucket NAME SECONDS K0:K1: one stacked search of the bucket, rows, per-round lines, codes
    local name=$1 codes=/tmp/codes_$1
    step "$name" "$2" sh -c 'exec python3 -m gnc_jax solve tammes --d 3 --K "$0" --seed 0 --search-stack 32 \
        --format json --save "$1" > "$2" 2> "$3"' "$3" "$codes" "$out/$name.jsonl" "$out/$name.log"
    tail -n 3 "$out/$name.log"
    [[ -d $codes ]] && tar czf "$out/$name.tgz" -C /tmp "codes_$name"
}
