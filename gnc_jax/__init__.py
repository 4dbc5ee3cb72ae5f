"""gnc_jax: batched JAX solvers for the geometry of generalized neural collapse.

Importing gnc_jax changes no global setting. Every public function runs with float64 enabled in JAX
for the duration of the call (``jax.enable_x64``, scoped): every reported margin, angle and distance
is certified in float64, and the caller's own JAX code keeps its settings. Solvers may still run in
float32 on request (``SolverSettings(dtype='float32')``).

The public API is what this module exports, plus the namespaces :mod:`gnc_jax.theory`,
:mod:`gnc_jax.metrics`, :mod:`gnc_jax.store`, :mod:`gnc_jax.plots`, :mod:`gnc_jax.nn` and
:mod:`gnc_jax.related`; the implementation lives in ``gnc_jax._src`` (optax's layout) and may change.
"""

from gnc_jax import metrics, plots, store, theory  # noqa: F401 (public namespaces)
from gnc_jax._src.batch import Solution, solve, solve_hardmax, solve_pairs, solve_softmax_code, solve_tammes
from gnc_jax._src.driver import SolverSettings
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.geometry import (
    Separation,
    max_cos,
    min_angle_deg,
    one_vs_rest_distances,
    optimal_features,
    rattlers,
    separation,
    softmax_code_margin,
    tammes_margin,
)
from gnc_jax._src.known import known_code
from gnc_jax._src.search import SearchSettings, SearchStats
from gnc_jax._src.status import Status
from gnc_jax._src.sweep import sweep
from gnc_jax._src.ufm import UFMSettings, UFMSolution, solve_ufm

__version__ = "0.1.0"

__all__ = [
    # solvers
    "solve",
    "solve_pairs",
    "solve_tammes",
    "solve_softmax_code",
    "solve_hardmax",
    "solve_ufm",
    "sweep",
    "known_code",
    # their settings and results
    "SolverSettings",
    "SearchSettings",
    "SearchStats",
    "UFMSettings",
    "Solution",
    "UFMSolution",
    "Status",
    "InvalidArgument",
    # certification (float64, exact QPs)
    "separation",
    "Separation",
    "tammes_margin",
    "min_angle_deg",
    "max_cos",
    "softmax_code_margin",
    "one_vs_rest_distances",
    "optimal_features",
    "rattlers",
]
