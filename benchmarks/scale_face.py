"""The paper's face-recognition shape on this CPU: softmax code and UFM at d=512, K=10,000, float32.

The reference implementation reports rho = 1 - 0.20341322 = 0.797 for (512, 10000). We run
1. the softmax-code solver (one restart, a short continuation, float32) and certify its W in float64:
   every class gets the lower bound of its solver feature h_k (min_j <w_k - w_j, h_k>), the classes
   with the smallest bounds get an exact Wolfe QP; rho_one-vs-rest lies in [rho_lower, rho];
2. the spherical UFM (eq. 2) at tau = 0.02 (the paper's BUPT-CBFace temperature), n = 1, certified
   the same way with its class means as features (GNC2).
Peak resident memory is read from getrusage after each phase (the process's high-water mark).

Writes benchmarks/results/scale_face.json after each phase.
Usage: python benchmarks/scale_face.py [--d 512] [--K 10000] [--steps 250] [--ufm-steps 200]
       [--phases code,ufm]   (a phase run alone is merged into the existing results file)
"""

import argparse
import json
import resource
import time
from pathlib import Path

import jax

import gnc_jax
from gnc_jax._src.cli import settings_from_options
from gnc_jax._src.process import tune_allocator

tune_allocator()  # as the gnc-jax command does
OUT = Path(__file__).parent / "results"
REFERENCE_RHO = 1 - 0.20341322


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--K", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=250)
    ap.add_argument("--ufm-steps", type=int, default=200)
    ap.add_argument("--tau", type=float, default=0.02)
    ap.add_argument("--out", default=str(OUT / "scale_face.json"))
    ap.add_argument("--phases", default="code,ufm")
    args = ap.parse_args()
    phases = set(args.phases.split(","))
    if not phases <= {"code", "ufm"}:
        ap.error(f"--phases: unknown phase in {args.phases!r} (code, ufm)")
    code_settings = dict(
        restarts=1,
        steps=args.steps,
        t_start=0.05,
        t_end=1e-4,
        hop_rounds=0,
        polish_steps=30,
        polish_t_end=1e-5,
        lp_polish_iters=0,
        dtype="float32",
    )
    ufm_settings = dict(restarts=1, steps=args.ufm_steps, hold_steps=args.ufm_steps // 2, dtype="float32")
    previous = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    same_shape = previous.get("d") == args.d and previous.get("K") == args.K
    result = {k: v for k, v in previous.items() if k in ("softmax_code", "ufm") and same_shape} | {
        "d": args.d,
        "K": args.K,
        "reference_rho": REFERENCE_RHO,
        "device": str(jax.devices()[0]),
        "code_settings": code_settings,
        "ufm_settings": ufm_settings | {"tau": args.tau},
    }

    def save():
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".tmp").write_text(json.dumps(result, indent=1))
        out.with_suffix(".tmp").replace(out)

    if "code" in phases:
        run_code(args, code_settings, result, save)
    if "ufm" in phases:
        run_ufm(args, ufm_settings, result, save)


def run_code(args, code_settings, result, save):
    t = time.perf_counter()
    s = gnc_jax.solve_softmax_code(
        args.d, args.K, seed=0, **settings_from_options("softmax-code", code_settings)
    )
    result["softmax_code"] = {
        "rho_lower": s.rho_lower,
        "rho_upper": s.rho_one_vs_rest,
        "certificate_gap": s.certificate_gap,
        "max_cos": s.max_cos,
        "one_minus_max_cos": 1 - s.max_cos,
        "min_angle_deg": s.min_angle_deg,
        "wall_s": time.perf_counter() - t,
        "peak_rss_gib": peak_gib(),
    }
    print(json.dumps(result["softmax_code"]), flush=True)
    save()


def run_ufm(args, ufm_settings, result, save):
    t = time.perf_counter()
    u = gnc_jax.solve_ufm(args.d, args.K, 1, args.tau, seed=0, **settings_from_options("ufm", ufm_settings))
    result["ufm"] = {
        "gnc2_lower": u.gnc2_lower,
        "gnc2_upper": u.gnc2,
        "max_cos": u.max_cos,
        "one_minus_max_cos": 1 - u.max_cos,
        "loss": u.loss,
        "log_loss": u.log_loss,
        "grad_norm": u.grad_norm,
        "status": u.status,
        "gnc3": u.gnc3,
        "ncc_accuracy": u.ncc_accuracy,
        "wall_s": time.perf_counter() - t,
        "peak_rss_gib": peak_gib(),
    }
    print(json.dumps(result["ufm"]), flush=True)
    save()


if __name__ == "__main__":
    main()
