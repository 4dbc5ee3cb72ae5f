"""gnc_jax: batched JAX solvers for the geometry of generalized neural collapse.

Importing gnc_jax changes no global setting. Every public function runs with float64 enabled in JAX
for the duration of the call (``jax.enable_x64``, scoped): every reported margin, angle and distance
is certified in float64, and the caller's own JAX code keeps its settings. Solvers may still run in
float32 on request (``SolverSettings(dtype='float32')``). :func:`tune_allocator` tunes glibc's
allocator for XLA's per-step temporaries (a 2.2x speed-up on CPU); the ``gnc-jax`` command calls it,
library users may.

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
    cosines,
    max_cos,
    min_angle_deg,
    one_vs_rest_distances,
    optimal_features,
    rattlers,
    separation,
    softmax_code_margin,
    tammes_margin,
    tammes_rattlers,
)
from gnc_jax._src.metrics import (
    class_major_labels,
    class_means,
    collapse_report,
    gnc1,
    gnc2,
    gnc3,
    nc2_etf_distance,
    ncc_accuracy,
)
from gnc_jax._src.theory import (
    cross_polytope,
    regular_polygon,
    simplex_etf,
    softmax_code_bounds,
    softmax_code_closed_form,
    tammes_closed_form,
)
from gnc_jax._src.process import tune_allocator
from gnc_jax._src.registry import FAMILIES, Family
from gnc_jax._src.search import SearchSettings, energy_codes, search_tammes
from gnc_jax._src.status import SolutionCore, Status
from gnc_jax._src.sweep import sweep
from gnc_jax._src.ufm import UFMSettings, UFMSolution, solve_ufm, solve_ufm_instances

__version__ = "0.1.0"

__all__ = [
    "FAMILIES",
    "Family",
    "InvalidArgument",
    "SearchSettings",
    "SolutionCore",
    "Status",
    "energy_codes",
    "search_tammes",
    "solve_ufm_instances",
    "sweep",
    "UFMSettings",
    "UFMSolution",
    "class_major_labels",
    "class_means",
    "collapse_report",
    "gnc1",
    "gnc2",
    "gnc3",
    "nc2_etf_distance",
    "ncc_accuracy",
    "solve_hardmax",
    "solve_ufm",
    "Separation",
    "Solution",
    "SolverSettings",
    "cosines",
    "cross_polytope",
    "max_cos",
    "min_angle_deg",
    "one_vs_rest_distances",
    "optimal_features",
    "rattlers",
    "regular_polygon",
    "separation",
    "simplex_etf",
    "softmax_code_bounds",
    "softmax_code_closed_form",
    "softmax_code_margin",
    "solve",
    "solve_pairs",
    "solve_softmax_code",
    "solve_tammes",
    "tammes_closed_form",
    "tammes_margin",
    "tammes_rattlers",
    "tune_allocator",
]
