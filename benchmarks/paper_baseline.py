"""gnc_jax against the GNC paper's own HardMax solver, side by side in one run (issue 18).

The paper's algorithm (``shared/tools/paper_hardmax.py``: projected subgradient on the HardMax problem,
100k steps, torch on CPU, one thread) and ``gnc-jax solve softmax-code`` with default settings each run as
a fresh process on the same pair (default d = 10, K = 100). Both are timed as whole processes (start-up,
compilation included), and both configurations are certified the same way: the exact one-vs-rest margin
rho of eq. (3) by :func:`gnc_jax._src.geometry.separation` in float64. Written to
benchmarks/results/paper_baseline.{json,md}.

Torch is not a dependency of gnc_jax: the script uses ``--torch-python`` (default
benchmarks/.venv-torch/bin/python) and creates that environment (CPU wheel of torch) if it is missing.

Usage: python benchmarks/paper_baseline.py [--d 10] [--K 100] [--seeds 0] [--torch-python PY]
       [--variants '' '--restarts 8']  (gnc-jax runs: defaults, and a population of 8)
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT.parent / "shared" / "tools" / "paper_hardmax.py"
TORCH_ENV = ROOT / "benchmarks" / ".venv-torch"
RESULTS = ROOT / "benchmarks" / "results"


def torch_python(path: str | None) -> str:
    if path:
        return path
    py = TORCH_ENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(TORCH_ENV)], check=True)
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", "numpy", "torch"]
            + ["--extra-index-url", "https://download.pytorch.org/whl/cpu"],
            check=True,
        )
    return str(py)


def timed(cmd) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--K", type=int, default=100)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--paper-steps", type=int, default=100000)
    ap.add_argument("--torch-python", default=None)
    ap.add_argument(
        "--variants", nargs="*", default=["", "--restarts 8"], help="extra gnc-jax arguments, one run each"
    )
    a = ap.parse_args()

    import gnc_jax
    from gnc_jax._src.geometry import separation

    py = torch_python(a.torch_python)
    cli = str(Path(sys.executable).with_name("gnc-jax"))
    rows = []
    for seed in [int(s) for s in a.seeds.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            w_path = Path(tmp) / "W.npy"
            wall, out = timed(
                [py, str(PAPER), str(a.d), str(a.K), str(a.paper_steps), str(seed), str(w_path)]
            )
            W = np.load(w_path)
            sep = separation(W)
            rows.append(
                {
                    "solver": f"paper HardMax (projected subgradient, {a.paper_steps} steps, torch CPU)",
                    "seed": seed,
                    "rho": float(sep.rho_one_vs_rest),
                    "certificate_gap": float(sep.certificate_gap),
                    "min_angle_deg": float(sep.min_angle_deg),
                    "wall_s": round(wall, 1),
                    "loop_s": float(out.stdout.split()[0]),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
            for extra in a.variants:
                cmd = [cli, "solve", "softmax-code", "--d", str(a.d), "--K", str(a.K), "--seed", str(seed)]
                wall, out = timed(cmd + extra.split() + ["--format", "json", "--quiet"])
                sol = json.loads(out.stdout.strip().splitlines()[-1])
                rows.append(
                    {
                        "solver": f"gnc-jax solve softmax-code {extra or '(defaults)'}",
                        "seed": seed,
                        "rho": sol["rho_one_vs_rest"],
                        "certificate_gap": sol["certificate_gap"],
                        "min_angle_deg": sol["min_angle_deg"],
                        "wall_s": round(wall, 1),
                        "status": sol["status"],
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    data = {"d": a.d, "K": a.K, "gnc_jax_version": gnc_jax.__version__, "rows": rows}
    (RESULTS / "paper_baseline.json").write_text(json.dumps(data, indent=1) + "\n")
    lines = [
        f"# gnc_jax against the paper's HardMax solver at d = {a.d}, K = {a.K}",
        "",
        "Whole-process wall time on this machine, both margins certified in float64 (exact QPs).",
        "",
        "| solver | seed | certified rho | min angle (deg) | wall s |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['solver']} | {r['seed']} | {r['rho']:.6f} | {r['min_angle_deg']:.4f} | {r['wall_s']} |"
        )
    (RESULTS / "paper_baseline.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
