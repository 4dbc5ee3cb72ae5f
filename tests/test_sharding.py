"""The restart axis is sharded over all devices: 4 simulated CPU devices in a subprocess."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = r"""
import json, jax, numpy as np
import gnc_jax
from gnc_jax._src import batch
assert jax.device_count() == 4, jax.devices()
settings = gnc_jax.SolverSettings(
    restarts=6, steps=600, hop_rounds=1, hop_steps=300, polish_steps=300, t_end=1e-8
)
sols = gnc_jax.solve_pairs("softmax-code", [(2, 5), (2, 4)], seed=0, solver=settings)
# The program of that bucket (d <= 2, K <= 8, two pairs): does it communicate?
fn = batch._bucket_solver(gnc_jax._src.objectives.SOFTMAX_CODE, settings.replace(restarts=8), 2, 8, 4)
keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.key(0), i))(np.arange(2))
hlo = fn.lower(keys, np.array([2, 2]), np.array([5, 4])).compile().as_text()
print(json.dumps({"rho": [s.rho_one_vs_rest for s in sols], "restarts": [s.restarts for s in sols],
                  "partitioned": "all-gather" in hlo or "all-reduce" in hlo or "collective-permute" in hlo}))
"""


@pytest.mark.slow
def test_restarts_sharded_over_four_cpu_devices():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["restarts"] == [8, 8]  # 6 rounded up to a multiple of the device count
    assert res["partitioned"]  # the compiled program communicates across the 4 devices
    assert abs(res["rho"][0] - (1 - np.cos(2 * np.pi / 5))) < 1e-6
    assert abs(res["rho"][1] - 1.0) < 1e-6  # the square: 1 - cos(pi / 2)
    # Same keys and settings on one device: the same answer.
    import gnc_jax

    settings = gnc_jax.SolverSettings(
        restarts=8, steps=600, hop_rounds=1, hop_steps=300, polish_steps=300, t_end=1e-8
    )
    one = gnc_jax.solve_pairs("softmax-code", [(2, 5), (2, 4)], seed=0, solver=settings)
    np.testing.assert_allclose([s.rho_one_vs_rest for s in one], res["rho"], atol=1e-9)
